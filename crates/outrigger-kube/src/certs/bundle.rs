//! The pure part of certificate upkeep: what a [`CertBundle`] needs at a given time
//! ([`CertBundle::plan`]), carrying it out ([`CertBundle::apply`], [`CertBundle::refresh`]), the
//! rotation grace and the assembly of the trusted CA bundle. No I/O: the clock is a parameter,
//! so the rules are tested over years of simulated time.

use time::{Duration, OffsetDateTime};

use crate::pki::{self, cert_blocks, first, parse_certs, Result};

/// Lifetime of a generated CA.
pub(crate) const CA_LIFETIME: Duration = Duration::days(3650);
/// Lifetime of a generated serving certificate (capped by the CA's expiry).
pub(crate) const CERT_LIFETIME: Duration = Duration::days(365);
/// Delay between adding a new CA to the bundle and serving a certificate it signed.
pub(crate) const ROTATION_GRACE: Duration = Duration::hours(1);
/// Backdating of `notBefore`, for clocks slightly behind ours.
pub(crate) const CLOCK_SKEW: Duration = Duration::minutes(5);

/// The DNS names the API server may use for `service` in `namespace`.
pub fn service_dns_names(namespace: &str, service: &str) -> Vec<String> {
    vec![
        service.to_string(),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

/// The certificate material shared by the replicas (all PEM).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertBundle {
    /// Signing CA certificate.
    pub ca_cert_pem: String,
    /// Signing CA key.
    pub ca_key_pem: pki::KeyPem,
    /// Trusted CAs: the signing CA, then retired CAs that are still valid.
    pub ca_bundle_pem: String,
    /// Serving certificate.
    pub cert_pem: String,
    /// Serving key.
    pub key_pem: pki::KeyPem,
}

/// What a bundle needs at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Nothing to do.
    Keep,
    /// Issue a new serving certificate from the current CA.
    ReissueServing,
    /// Generate a new CA and add it to the bundle (serving certificate unchanged).
    RotateCa,
    /// Remove expired CAs from the bundle.
    PruneBundle,
}

/// A new self-signed CA at `now`: (certificate PEM, key PEM).
fn new_ca(now: OffsetDateTime) -> Result<pki::Pair> {
    let name = format!("outrigger-ca-{}", now.unix_timestamp());
    pki::new_ca(&name, now - CLOCK_SKEW, now + CA_LIFETIME)
}

/// A serving certificate for `dns_names` signed by the bundle's CA at `now`.
fn new_serving(b: &CertBundle, dns_names: &[String], now: OffsetDateTime) -> Result<pki::Pair> {
    let ca = pki::Pair {
        cert_pem: b.ca_cert_pem.clone(),
        key_pem: b.ca_key_pem.clone(),
    };
    pki::new_serving(&ca, dns_names, now - CLOCK_SKEW, now + CERT_LIFETIME)
}

impl CertBundle {
    /// A fresh CA and serving certificate.
    pub fn generate(dns_names: &[String], now: OffsetDateTime) -> Result<CertBundle> {
        let ca = new_ca(now)?;
        let mut b = CertBundle {
            ca_bundle_pem: ca.cert_pem.clone(),
            ca_cert_pem: ca.cert_pem,
            ca_key_pem: ca.key_pem,
            cert_pem: String::new(),
            key_pem: pki::KeyPem::default(),
        };
        let serving = new_serving(&b, dns_names, now)?;
        b.cert_pem = serving.cert_pem;
        b.key_pem = serving.key_pem;
        Ok(b)
    }

    /// What the bundle needs at `now` for `dns_names`.
    ///
    /// The serving certificate is only ever signed by a CA that has been in the bundle for
    /// [`ROTATION_GRACE`]: when it falls due together with the CA (the yearly certificate and
    /// the ten-year CA both renew at two thirds of their lives, so they do), it is renewed from
    /// the outgoing CA *before* the rotation, and moves to the new CA once the grace is over.
    /// A certificate due during the grace period itself (new DNS names) waits for its end.
    pub fn plan(&self, dns_names: &[String], now: OffsetDateTime) -> Result<Plan> {
        let ca = first(&self.ca_cert_pem)?;
        let cert = first(&self.cert_pem)?;
        let signed_by_current = cert.issuer == ca.subject;
        let grace_over = now >= ca.not_before + CLOCK_SKEW + ROTATION_GRACE;
        let cert_expiring = cert.remaining_fraction(now) < 1.0 / 3.0;
        // Only a missing name makes the certificate due: names other replicas asked for stay
        // (a reissue keeps them, [`CertBundle::apply`]), so replicas whose names differ
        // converge on the union instead of rewriting the shared Secret back and forth.
        let missing = dns_names.iter().any(|n| !cert.dns_names.contains(n));
        let cert_due = cert_expiring || missing;
        let ca_due = ca.remaining_fraction(now) < 1.0 / 3.0;
        if signed_by_current {
            // The current CA is the published one the certificate chains to: renew from it
            // first (while it is still valid), rotate after.
            if cert_due && now < ca.not_after {
                return Ok(Plan::ReissueServing);
            }
            if ca_due {
                return Ok(Plan::RotateCa);
            }
        } else if grace_over {
            // The new CA has been published long enough: move the certificate to it.
            return Ok(Plan::ReissueServing);
        } else if ca_due {
            return Ok(Plan::RotateCa);
        }
        if parse_certs(&self.ca_bundle_pem)?
            .iter()
            .any(|c| c.not_after <= now)
        {
            return Ok(Plan::PruneBundle);
        }
        Ok(Plan::Keep)
    }

    /// Carry out `plan`, returning the new bundle.
    pub fn apply(
        &self,
        plan: Plan,
        dns_names: &[String],
        now: OffsetDateTime,
    ) -> Result<CertBundle> {
        let mut b = self.clone();
        match plan {
            Plan::Keep => {}
            Plan::ReissueServing => {
                // The names asked for, then those of the current certificate (other replicas').
                let mut names: Vec<String> = dns_names.to_vec();
                if let Ok(cert) = first(&self.cert_pem) {
                    for n in cert.dns_names {
                        if !names.contains(&n) {
                            names.push(n);
                        }
                    }
                }
                let serving = new_serving(&b, &names, now)?;
                b.cert_pem = serving.cert_pem;
                b.key_pem = serving.key_pem;
            }
            Plan::RotateCa => {
                let ca = new_ca(now)?;
                let mut bundle = ca.cert_pem.clone();
                for block in cert_blocks(&self.ca_bundle_pem) {
                    if first(&block).is_ok_and(|c| c.not_after > now) {
                        bundle.push_str(&block);
                    }
                }
                b.ca_cert_pem = ca.cert_pem;
                b.ca_key_pem = ca.key_pem;
                b.ca_bundle_pem = bundle;
            }
            Plan::PruneBundle => {
                let kept: String = cert_blocks(&self.ca_bundle_pem)
                    .into_iter()
                    .filter(|block| first(block).is_ok_and(|c| c.not_after > now))
                    .collect();
                b.ca_bundle_pem = if kept.is_empty() {
                    b.ca_cert_pem.clone()
                } else {
                    kept
                };
            }
        }
        Ok(b)
    }

    /// Bring the bundle up to date at `now` (possibly in several steps, e.g. prune then reissue).
    pub(crate) fn refresh(
        &self,
        dns_names: &[String],
        now: OffsetDateTime,
    ) -> Result<Option<CertBundle>> {
        let mut current = self.clone();
        let mut changed = false;
        // Each plan step changes something a later plan reads; four steps reach a fixed point.
        for _ in 0..4 {
            match current.plan(dns_names, now)? {
                Plan::Keep => break,
                plan => {
                    current = current.apply(plan, dns_names, now)?;
                    changed = true;
                }
            }
        }
        Ok(changed.then_some(current))
    }

    /// Whether this bundle comes from an externally issued Secret (it has no CA key; outrigger
    /// neither renews nor rotates it).
    pub(crate) fn is_external(&self) -> bool {
        self.ca_key_pem.is_empty()
    }
}
/// The still-valid certificates of a PEM text, re-encoded (unparsable blocks dropped).
pub(crate) fn valid_blocks(pem: &str, now: OffsetDateTime) -> Vec<String> {
    cert_blocks(pem)
        .into_iter()
        .filter(|b| first(b).is_ok_and(|c| c.not_after > now))
        .collect()
}

/// Append to `bundle` the valid certificates of `extra` that it does not hold yet.
pub(crate) fn add_trusted(bundle: &mut CertBundle, extra: &str, now: OffsetDateTime) {
    let have: Vec<String> = cert_blocks(&bundle.ca_bundle_pem);
    for block in valid_blocks(extra, now) {
        if !have.contains(&block) {
            bundle.ca_bundle_pem.push_str(&block);
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn replicas_asking_for_different_names_converge_on_the_union() {
        let base = service_dns_names("ns", "svc");
        let mut extra = base.clone();
        extra.push("injector.example.com".to_string());
        let t = now();
        let b = CertBundle::generate(&base, t).expect("generate");
        // Replica A (extra name) reissues once; replica B (base names) then keeps it; A too.
        let a = b
            .refresh(&extra, t)
            .expect("refresh")
            .expect("missing name: reissued");
        let cert = first(&a.cert_pem).expect("cert");
        for n in &extra {
            assert!(cert.dns_names.contains(n), "{n}: {:?}", cert.dns_names);
        }
        assert_eq!(
            a.refresh(&base, t).expect("refresh"),
            None,
            "B keeps A's certificate"
        );
        assert_eq!(
            a.refresh(&extra, t).expect("refresh"),
            None,
            "A keeps it too"
        );
        // A renewal (expiry) keeps every name.
        let later = t + CERT_LIFETIME * 3 / 4;
        let renewed = a.refresh(&base, later).expect("refresh").expect("renewed");
        let cert = first(&renewed.cert_pem).expect("cert");
        assert!(cert.dns_names.contains(&"injector.example.com".to_string()));
    }

    use super::*;
    use crate::certs::testutil::now;

    #[test]
    fn generated_bundle_is_consistent() {
        let names = service_dns_names("ns", "svc");
        let b = CertBundle::generate(&names, now()).expect("generate");
        let ca = first(&b.ca_cert_pem).expect("CA");
        let cert = first(&b.cert_pem).expect("cert");
        assert_eq!(cert.issuer, ca.subject);
        assert_eq!(cert.dns_names, names);
        assert_eq!(b.ca_bundle_pem, b.ca_cert_pem);
        assert_eq!(cert.not_after, now() + CERT_LIFETIME);
        assert_eq!(b.plan(&names, now()).expect("plan"), Plan::Keep);
    }

    #[test]
    fn rotation_overlaps_the_bundle_before_switching_the_serving_cert() {
        let names = service_dns_names("ns", "svc");
        let start = now();
        let b = CertBundle::generate(&names, start).expect("generate");
        let old_ca = first(&b.ca_cert_pem).expect("CA");
        // Serving certificate renewals keep the CA.
        let t1 = start + Duration::days(300);
        assert_eq!(b.plan(&names, t1).expect("plan"), Plan::ReissueServing);
        let b1 = b.refresh(&names, t1).expect("refresh").expect("changed");
        assert_eq!(b1.ca_cert_pem, b.ca_cert_pem);
        assert_ne!(b1.cert_pem, b.cert_pem);
        // Yearly renewals keep the serving certificate fresh until late in the CA's life.
        let t_renew = start + Duration::days(2400);
        assert_eq!(
            b1.plan(&names, t_renew).expect("plan"),
            Plan::ReissueServing
        );
        let b1 = b1
            .refresh(&names, t_renew)
            .expect("refresh")
            .expect("changed");
        assert_eq!(first(&b1.cert_pem).expect("cert").issuer, old_ca.subject);
        // Past two thirds of the CA's life: a new CA joins the bundle, the old one stays,
        // the serving certificate is unchanged.
        let t2 = start + Duration::days(2440);
        assert_eq!(b1.plan(&names, t2).expect("plan"), Plan::RotateCa);
        let b2 = b1.apply(Plan::RotateCa, &names, t2).expect("rotate");
        let new_ca = first(&b2.ca_cert_pem).expect("new CA");
        assert_ne!(new_ca.subject, old_ca.subject);
        let trusted: Vec<Vec<u8>> = parse_certs(&b2.ca_bundle_pem)
            .expect("bundle")
            .into_iter()
            .map(|c| c.subject)
            .collect();
        assert_eq!(
            trusted,
            vec![new_ca.subject.clone(), old_ca.subject.clone()]
        );
        assert_eq!(
            b2.cert_pem, b1.cert_pem,
            "serving cert must stay on the old CA during the grace period"
        );
        assert_eq!(b2.plan(&names, t2).expect("plan"), Plan::Keep);
        // After the grace period the serving certificate moves to the new CA.
        let t3 = t2 + ROTATION_GRACE + CLOCK_SKEW;
        assert_eq!(b2.plan(&names, t3).expect("plan"), Plan::ReissueServing);
        let b3 = b2.refresh(&names, t3).expect("refresh").expect("changed");
        assert_eq!(first(&b3.cert_pem).expect("cert").issuer, new_ca.subject);
        // Once the old CA expires it leaves the bundle.
        let t4 = start + CA_LIFETIME + Duration::days(1);
        let b4 = b3.apply(Plan::PruneBundle, &names, t4).expect("prune");
        let trusted: Vec<Vec<u8>> = parse_certs(&b4.ca_bundle_pem)
            .expect("bundle")
            .into_iter()
            .map(|c| c.subject)
            .collect();
        assert_eq!(trusted, vec![new_ca.subject]);
    }

    /// Run the reconciliation's pure part ([`CertBundle::refresh`]) with a fake clock stepping by
    /// `step` for `years`, checking at every step that the serving certificate in use is valid
    /// and chains to a CA of the published bundle, and that every CA after the first was
    /// published at least [`ROTATION_GRACE`] before it first signed the serving certificate.
    /// Returns (CA rotations, rotations at a step where the serving certificate was due too).
    fn run_clock(step: Duration, years: i64) -> (usize, usize) {
        let names = service_dns_names("ns", "svc");
        let start = now();
        let end = start + Duration::days(365 * years);
        let mut b = CertBundle::generate(&names, start).expect("generate");
        // CA subject -> first time it was in the published bundle / signed the serving cert.
        let mut published: Vec<(Vec<u8>, OffsetDateTime)> = Vec::new();
        let mut first_use: Vec<(Vec<u8>, OffsetDateTime)> = Vec::new();
        let (mut rotations, mut coinciding) = (0, 0);
        // Parsed forms of the bundle and serving certificate, refreshed when they change.
        let mut bundle: Vec<pki::CertInfo> = parse_certs(&b.ca_bundle_pem).expect("bundle");
        let mut cert = first(&b.cert_pem).expect("serving cert");
        let mut t = start;
        while t <= end {
            let serving_due = cert.remaining_fraction(t) < 1.0 / 3.0;
            if let Some(next) = b.refresh(&names, t).expect("refresh") {
                if next.ca_cert_pem != b.ca_cert_pem {
                    rotations += 1;
                    coinciding += usize::from(serving_due);
                }
                if next.ca_bundle_pem != b.ca_bundle_pem {
                    bundle = parse_certs(&next.ca_bundle_pem).expect("bundle");
                }
                if next.cert_pem != b.cert_pem {
                    cert = first(&next.cert_pem).expect("serving cert");
                }
                b = next;
            }
            for ca in &bundle {
                if !published.iter().any(|(s, _)| *s == ca.subject) {
                    published.push((ca.subject.clone(), t));
                }
            }
            assert!(
                cert.not_before <= t && t < cert.not_after,
                "at {t}: serving certificate not valid ({} .. {})",
                cert.not_before,
                cert.not_after
            );
            let issuer = bundle
                .iter()
                .find(|ca| ca.subject == cert.issuer)
                .unwrap_or_else(|| panic!("at {t}: serving certificate's CA is not in the bundle"));
            assert!(
                issuer.not_before <= t && t < issuer.not_after,
                "at {t}: the issuing CA is not valid"
            );
            if !first_use.iter().any(|(s, _)| *s == cert.issuer) {
                first_use.push((cert.issuer.clone(), t));
            }
            t += step;
        }
        for (i, (subject, used)) in first_use.iter().enumerate().skip(1) {
            let (_, at) = published
                .iter()
                .find(|(s, _)| s == subject)
                .expect("published before use");
            assert!(
                *used - *at >= ROTATION_GRACE,
                "CA #{i} signed the serving certificate {} after it was published (grace {})",
                *used - *at,
                ROTATION_GRACE
            );
        }
        assert_eq!(first_use.len(), rotations + 1, "every new CA came into use");
        (rotations, coinciding)
    }

    #[test]
    fn ten_years_of_hourly_reconciliation_keep_the_grace_period() {
        // Hourly steps: the yearly serving certificate (renewed at 2/3 of 365 days) and the CA
        // (rotated at 2/3 of 3650 days) fall due at the same step.
        let (rotations, coinciding) = run_clock(Duration::hours(1), 10);
        assert_eq!(rotations, 1, "one CA rotation in ten years");
        assert_eq!(
            coinciding, 1,
            "the CA and the serving certificate fell due together"
        );
    }

    #[test]
    fn long_runs_with_other_clock_steps_keep_the_grace_period() {
        for (step, years) in [(Duration::hours(7), 10), (Duration::days(1), 30)] {
            let (rotations, _) = run_clock(step, years);
            assert!(rotations >= 1, "step {step}: the CA rotated");
        }
    }

    #[test]
    fn a_certificate_due_with_the_ca_is_renewed_from_the_outgoing_ca() {
        let names = service_dns_names("ns", "svc");
        let start = now();
        let b = CertBundle::generate(&names, start).expect("generate");
        let old_ca = first(&b.ca_cert_pem).expect("CA");
        // Both due: the CA past two thirds of its life, the certificate (issued at the start)
        // long expired.
        let t = start + Duration::days(2500);
        assert_eq!(b.plan(&names, t).expect("plan"), Plan::ReissueServing);
        let b1 = b.refresh(&names, t).expect("refresh").expect("changed");
        let cert = first(&b1.cert_pem).expect("cert");
        assert_eq!(cert.issuer, old_ca.subject, "renewed from the published CA");
        assert!(cert.not_after > t + Duration::days(300));
        let new_ca = first(&b1.ca_cert_pem).expect("new CA");
        assert_ne!(new_ca.subject, old_ca.subject, "and the CA rotated after");
        assert_eq!(parse_certs(&b1.ca_bundle_pem).expect("bundle").len(), 2);
        // New DNS names during the grace period wait for its end (the new CA is not trusted
        // everywhere yet, the old CA's key is gone).
        let other = service_dns_names("ns", "other");
        let during = t + Duration::minutes(30);
        assert_eq!(b1.plan(&other, during).expect("plan"), Plan::Keep);
        let after = t + ROTATION_GRACE + CLOCK_SKEW;
        let b2 = b1
            .refresh(&other, after)
            .expect("refresh")
            .expect("changed");
        let cert = first(&b2.cert_pem).expect("cert");
        assert_eq!(cert.issuer, new_ca.subject);
        assert_eq!(
            cert.dns_names[..other.len()],
            other[..],
            "the names asked for first"
        );
        assert!(
            cert.dns_names.ends_with(&names),
            "then the names kept: {:?}",
            cert.dns_names
        );
    }

    #[test]
    fn changed_dns_names_reissue() {
        let names = service_dns_names("ns", "svc");
        let b = CertBundle::generate(&names, now()).expect("generate");
        let other = service_dns_names("ns", "other");
        assert_eq!(b.plan(&other, now()).expect("plan"), Plan::ReissueServing);
    }
}
