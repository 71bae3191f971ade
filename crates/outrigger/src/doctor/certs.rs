//! The serving certificate (the Secret `serve --kube` serves from) against the caBundle of
//! every injecting entry, verified as the API server verifies the call (the chain to a CA of
//! the bundle, for `<service>.<namespace>.svc`, now), and its expiry and its issuer's.

use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use time::OffsetDateTime;

use super::facts::Facts;
use super::{selection, Check, Verdict};
use crate::pki;

/// Names of the checks.
pub const CA_BUNDLE: &str = "ca-bundle";
/// See [`CA_BUNDLE`].
pub const EXPIRY: &str = "certificate-expiry";

/// Whether `chain` (leaf first) verifies against the CAs of `bundle` (PEM) for `host` at `now`;
/// the verifier's reason when not.
pub fn verify(
    chain: &[CertificateDer<'static>],
    bundle: &[u8],
    host: &str,
    now: OffsetDateTime,
) -> Result<(), String> {
    let cas = pki::cert_ders(bundle).map_err(|e| format!("caBundle: {e}"))?;
    if cas.is_empty() {
        return Err("caBundle is empty".into());
    }
    let mut roots = rustls::RootCertStore::empty();
    for ca in cas {
        roots
            .add(ca)
            .map_err(|e| format!("caBundle: a certificate is not usable as a CA: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| e.to_string())?;
    let (leaf, rest) = chain.split_first().ok_or("no certificate")?;
    let name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
    let at = UnixTime::since_unix_epoch(Duration::from_secs(
        u64::try_from(now.unix_timestamp()).unwrap_or(0),
    ));
    verifier
        .verify_server_cert(leaf, rest, &name, &[], at)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The serving chain of the Secret (`tls.crt`), or a check saying why there is none.
fn serving_chain(facts: &Facts, name: &'static str) -> Result<Vec<CertificateDer<'static>>, Check> {
    let secret = format!("{}/{}", facts.namespace, facts.secret_name);
    let s = match &facts.secret {
        Err(e) => {
            return Err(Check::with(
                name,
                Verdict::Skipped,
                e.clone(),
                "doctor needs get on the Secret",
            ))
        }
        Ok(None) => {
            return Err(Check::with(
                name,
                Verdict::Skipped,
                format!(
                    "Secret {secret} not found: the server's certificate is not read from the \
                     cluster (files given with --tlsCertFile, or not created yet)"
                ),
                "the probe (--probe-namespace) checks trust end to end",
            ))
        }
        Ok(Some(s)) => s,
    };
    let pem = s
        .data
        .as_ref()
        .and_then(|d| d.get("tls.crt"))
        .map(|b| b.0.clone())
        .unwrap_or_default();
    match pki::cert_ders(&pem) {
        Ok(chain) if !chain.is_empty() => Ok(chain),
        Ok(_) => Err(Check::with(
            name,
            Verdict::Fail,
            format!("Secret {secret} has no certificate in tls.crt"),
            "delete tls.crt from the Secret: a running replica issues a new one",
        )),
        Err(e) => Err(Check::with(
            name,
            Verdict::Fail,
            format!("Secret {secret}: tls.crt: {e}"),
            "delete tls.crt from the Secret: a running replica issues a new one",
        )),
    }
}

/// The caBundle of every injecting entry of outrigger's configuration.
fn bundles(facts: &Facts) -> Vec<(String, Vec<u8>)> {
    facts
        .ours()
        .into_iter()
        .flat_map(selection::entries)
        .filter(|e| selection::is_injector(e))
        .map(|e| {
            (
                e.name.clone(),
                e.client_config
                    .ca_bundle
                    .as_ref()
                    .map(|b| b.0.clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// The `ca-bundle` and `certificate-expiry` checks.
pub fn checks(facts: &Facts, now: OffsetDateTime, warn_within: Duration) -> Vec<Check> {
    let chain = match serving_chain(facts, CA_BUNDLE) {
        Ok(c) => c,
        Err(c) => {
            let mut e = c.clone();
            e.name = EXPIRY;
            return vec![c, e];
        }
    };
    vec![
        ca_bundle(facts, &chain, now),
        expiry(facts, &chain, now, warn_within),
    ]
}

fn ca_bundle(facts: &Facts, chain: &[CertificateDer<'static>], now: OffsetDateTime) -> Check {
    let host = format!("{}.{}.svc", facts.service_name, facts.namespace);
    let entries = bundles(facts);
    if entries.is_empty() {
        return Check::with(
            CA_BUNDLE,
            Verdict::Skipped,
            "no injecting entry to check",
            "",
        );
    }
    let bad: Vec<String> = entries
        .iter()
        .filter_map(|(name, b)| {
            verify(chain, b, &host, now)
                .err()
                .map(|e| format!("{name} ({e})"))
        })
        .collect();
    if bad.is_empty() {
        return Check::pass(
            CA_BUNDLE,
            format!(
                "the serving certificate of Secret {}/{} verifies for {host} against the caBundle \
                 of all {} injecting entries",
                facts.namespace,
                facts.secret_name,
                entries.len()
            ),
        );
    }
    let hint = if facts.server.ca_external {
        "the caBundle is managed externally (--ca-bundle-managed-externally): publish the CA of \
         the Secret's ca-bundle.crt into it"
            .to_string()
    } else {
        format!(
            "a running replica restores the caBundle from the Secret within seconds; if it does \
             not, see its log (it needs patch on mutatingwebhookconfigurations {})",
            facts.webhook_config_name
        )
    };
    Check::with(
        CA_BUNDLE,
        Verdict::Fail,
        format!(
            "the serving certificate of Secret {}/{} does not verify against the caBundle of \
             {}: the API server refuses the TLS handshake",
            facts.namespace,
            facts.secret_name,
            bad.join(", ")
        ),
        hint,
    )
}

fn expiry(
    facts: &Facts,
    chain: &[CertificateDer<'static>],
    now: OffsetDateTime,
    warn_within: Duration,
) -> Check {
    let mut certs: Vec<(String, pki::CertInfo)> = Vec::new();
    if let Ok(leaf) = pki::cert_info(&chain[0]) {
        let issuer = leaf.issuer.clone();
        certs.push(("serving certificate".into(), leaf));
        // Its issuer(s), from the entries' bundles.
        for (_, b) in bundles(facts) {
            for der in pki::cert_ders(&b).unwrap_or_default() {
                if let Ok(ca) = pki::cert_info(&der) {
                    if ca.subject == issuer && !certs.iter().any(|(_, c)| *c == ca) {
                        certs.push(("its CA".into(), ca));
                    }
                }
            }
        }
    }
    let Some(soonest) = certs.iter().min_by_key(|(_, c)| c.not_after) else {
        return Check::with(
            EXPIRY,
            Verdict::Fail,
            format!(
                "Secret {}/{}: tls.crt does not parse",
                facts.namespace, facts.secret_name
            ),
            "delete tls.crt from the Secret: a running replica issues a new one",
        );
    };
    let (what, c) = soonest;
    let left = c.not_after - now;
    let date = c
        .not_after
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let days = left.whole_days();
    let secret = format!("{}/{}", facts.namespace, facts.secret_name);
    if left.is_negative() {
        return Check::with(
            EXPIRY,
            Verdict::Fail,
            format!("the {what} of Secret {secret} expired at {date}: the API server refuses the TLS handshake"),
            "a running replica renews it; if none does, delete tls.crt from the Secret and \
             restart the Deployment",
        );
    }
    if left.unsigned_abs() <= warn_within {
        return Check::with(
            EXPIRY,
            Verdict::Warn,
            format!("the {what} of Secret {secret} expires at {date} (in {days} days)"),
            "outrigger renews when a third of the lifetime remains: a certificate this close to \
             its end was not renewed (an externally issued one is its issuer's to renew); see \
             the server's log",
        );
    }
    Check::pass(
        EXPIRY,
        format!("the {what} of Secret {secret} expires first, at {date} (in {days} days)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::facts::test_facts;
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::ByteString;
    use serde_json::json;
    use time::Duration as Span;

    /// A CA and a serving certificate for `outrigger.outrigger.svc` valid from `from` for `days`.
    fn issued(from: OffsetDateTime, days: i64) -> (pki::Pair, pki::Pair) {
        let ca = pki::new_ca("test CA", from, from + Span::days(3650)).expect("CA");
        let names = vec!["outrigger.outrigger.svc".to_string()];
        let serving = pki::new_serving(&ca, &names, from, from + Span::days(days)).expect("cert");
        (ca, serving)
    }

    fn facts(bundle: &str, cert: &str) -> Facts {
        let config = serde_json::from_value(json!({
            "metadata": {"name": "outrigger-sidecar-injector"},
            "webhooks": [{"name": "namespace.sidecar-injector.istio.io", "admissionReviewVersions": ["v1"],
                "sideEffects": "None", "clientConfig": {"service": {"name": "outrigger", "namespace": "outrigger"},
                "caBundle": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bundle)}}]
        }))
        .expect("configuration");
        let secret = Secret {
            data: Some([("tls.crt".to_string(), ByteString(cert.as_bytes().to_vec()))].into()),
            ..Secret::default()
        };
        test_facts(vec![config], Some(secret))
    }

    #[test]
    fn trust_and_expiry_follow_the_bundle_and_the_clock() {
        let now = OffsetDateTime::now_utc();
        let (ca, serving) = issued(now - Span::days(1), 365);
        let warn = Duration::from_secs(30 * 24 * 3600);
        let verdicts = |f: &Facts, at: OffsetDateTime| -> Vec<(Verdict, String)> {
            checks(f, at, warn)
                .into_iter()
                .map(|c| (c.verdict, c.finding))
                .collect()
        };
        let good = facts(&ca.cert_pem, &serving.cert_pem);
        let v = verdicts(&good, now);
        assert_eq!((v[0].0, v[1].0), (Verdict::Pass, Verdict::Pass), "{v:?}");
        // 20 days before the end: a warning; after it: a failure (the API server refuses it).
        let v = verdicts(&good, now + Span::days(344) - Span::hours(1));
        assert_eq!(v[1].0, Verdict::Warn, "{v:?}");
        assert!(v[1].1.contains("(in 20 days)"), "{v:?}");
        let v = verdicts(&good, now + Span::days(400));
        assert_eq!((v[0].0, v[1].0), (Verdict::Fail, Verdict::Fail), "{v:?}");
        assert!(
            v[1].1.starts_with(
                "the serving certificate of Secret outrigger/outrigger-tls expired at "
            ),
            "{v:?}"
        );
        // Another CA in the bundle: the entry is named.
        let (other, _) = issued(now, 365);
        let v = verdicts(&facts(&other.cert_pem, &serving.cert_pem), now);
        assert_eq!(v[0].0, Verdict::Fail);
        assert!(
            v[0].1
                .contains("the caBundle of namespace.sidecar-injector.istio.io ("),
            "{v:?}"
        );
        // No Secret: both skipped, with the probe as the way to check trust.
        let mut none = good.clone();
        none.secret = Ok(None);
        let c = checks(&none, now, warn);
        assert_eq!(
            (c[0].verdict, c[1].verdict),
            (Verdict::Skipped, Verdict::Skipped)
        );
        assert_eq!(c[1].name, EXPIRY);
    }
}
