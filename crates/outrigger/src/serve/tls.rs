//! TLS: rustls with the `ring` provider, TLS 1.2/1.3, ALPN `h2` + `http/1.1`, a hot-swappable
//! serving certificate, and a self-signed CA + serving certificate generated at start-up when no
//! certificate is given.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use arc_swap::ArcSwap;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{CipherSuite, ServerConfig};

/// The serving certificate in force, swapped atomically on rotation.
pub struct CertStore {
    current: ArcSwap<Loaded>,
}

/// A loaded certificate with its expiry.
pub struct Loaded {
    /// Chain and signing key.
    pub key: Arc<CertifiedKey>,
    /// `notAfter` of the leaf as Unix seconds.
    pub not_after: i64,
}

impl fmt::Debug for CertStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertStore")
            .field("not_after", &self.current.load().not_after)
            .finish()
    }
}

impl CertStore {
    /// A store holding `loaded`.
    pub fn new(loaded: Loaded) -> Arc<CertStore> {
        Arc::new(CertStore {
            current: ArcSwap::from_pointee(loaded),
        })
    }

    /// Replace the certificate; new handshakes use it at once.
    pub fn swap(&self, loaded: Loaded) {
        self.current.store(Arc::new(loaded));
    }

    /// Expiry of the current certificate (Unix seconds).
    pub fn not_after(&self) -> i64 {
        self.current.load().not_after
    }

    /// Whether the current certificate is still valid now.
    pub fn valid_now(&self) -> bool {
        self.not_after() > unix_now()
    }
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load().key.clone())
    }
}

/// Current Unix time in seconds.
pub fn unix_now() -> i64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

/// The crypto provider: `ring`, restricted for `COMPLIANCE_POLICY=fips-140-2` (TLS 1.2 ECDHE
/// AES-GCM suites, P-256), as Istio restricts its servers.
pub fn provider(compliance_policy: &str) -> CryptoProvider {
    let mut p = rustls::crypto::ring::default_provider();
    if compliance_policy == "fips-140-2" {
        p.cipher_suites.retain(|s| {
            matches!(
                s.suite(),
                CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
                    | CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
                    | CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
                    | CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
            )
        });
        p.kx_groups = vec![rustls::crypto::ring::kx_group::SECP256R1];
    }
    p
}

/// Server config resolving the certificate from `store` on every handshake.
pub fn server_config(store: Arc<CertStore>, compliance_policy: &str) -> Result<ServerConfig> {
    let fips = compliance_policy == "fips-140-2";
    let versions: &[&rustls::SupportedProtocolVersion] = if fips {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13, &rustls::version::TLS12]
    };
    let mut cfg = ServerConfig::builder_with_provider(Arc::new(provider(compliance_policy)))
        .with_protocol_versions(versions)
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_cert_resolver(store);
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(cfg)
}

/// Load a PEM chain and key; rejects unreadable, mismatched or expired material.
pub fn load_pem(cert_pem: &[u8], key_pem: &[u8], compliance_policy: &str) -> Result<Loaded> {
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut &*cert_pem)
        .collect::<Result<_, _>>()
        .context("reading certificate PEM")?;
    let Some(leaf) = certs.first() else {
        bail!("no CERTIFICATE block in the certificate file")
    };
    let not_after = not_after(leaf).context("reading the certificate's validity")?;
    if not_after <= unix_now() {
        bail!("certificate expired at {not_after} (Unix time)");
    }
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut &*key_pem)
        .context("reading private key PEM")?
        .ok_or_else(|| anyhow!("no PRIVATE KEY block in the key file"))?;
    let signing = provider(compliance_policy)
        .key_provider
        .load_private_key(key)
        .map_err(|e| anyhow!("unsupported private key: {e}"))?;
    let ck = CertifiedKey::new(certs, signing);
    ck.keys_match()
        .map_err(|e| anyhow!("private key does not match the certificate: {e}"))?;
    Ok(Loaded {
        key: Arc::new(ck),
        not_after,
    })
}

/// Load `cert_file` and `key_file`.
pub fn load_files(cert_file: &Path, key_file: &Path, compliance_policy: &str) -> Result<Loaded> {
    let cert =
        std::fs::read(cert_file).with_context(|| format!("reading {}", cert_file.display()))?;
    let key = std::fs::read(key_file).with_context(|| format!("reading {}", key_file.display()))?;
    load_pem(&cert, &key, compliance_policy)
        .with_context(|| format!("loading {} / {}", cert_file.display(), key_file.display()))
}

/// A generated CA and a serving certificate signed by it (PEM).
pub struct Generated {
    /// CA certificate PEM (the bundle clients trust).
    pub ca_pem: String,
    /// Serving certificate PEM (leaf only).
    pub cert_pem: String,
    /// Serving key PEM (PKCS#8).
    pub key_pem: String,
}

/// Generate a self-signed CA and a serving certificate for `names` (DNS names or IP addresses),
/// valid from one hour ago for `days`.
pub fn generate(names: &[String], days: i64) -> Result<Generated> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        KeyUsagePurpose,
    };
    let now = time::OffsetDateTime::now_utc();
    let ca_key = KeyPair::generate().context("generating the CA key")?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).context("CA parameters")?;
    ca.distinguished_name
        .push(DnType::CommonName, "outrigger self-signed CA");
    ca.distinguished_name
        .push(DnType::OrganizationName, "outrigger");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca.not_before = now - time::Duration::hours(1);
    ca.not_after = now + time::Duration::days(days);
    let ca_cert = ca.self_signed(&ca_key).context("self-signing the CA")?;

    let key = KeyPair::generate().context("generating the serving key")?;
    let mut leaf = CertificateParams::new(names.to_vec()).context("serving certificate names")?;
    leaf.distinguished_name.push(
        DnType::CommonName,
        names.first().map_or("outrigger", String::as_str),
    );
    leaf.is_ca = IsCa::NoCa;
    leaf.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.not_before = now - time::Duration::hours(1);
    leaf.not_after = now + time::Duration::days(days);
    let issuer = rcgen::Issuer::from_params(&ca, &ca_key);
    let cert = leaf
        .signed_by(&key, &issuer)
        .context("signing the serving certificate")?;
    Ok(Generated {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// Write `contents` to `path` atomically (temporary file + rename), creating parent directories.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, contents).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

/// `notAfter` of a DER certificate as Unix seconds.
pub fn not_after(cert: &[u8]) -> Result<i64> {
    let (tag, cert_body, _) = tlv(cert)?;
    ensure_tag(tag, 0x30, "Certificate")?;
    let (tag, tbs, _) = tlv(cert_body)?;
    ensure_tag(tag, 0x30, "TBSCertificate")?;
    let mut rest = tbs;
    let (tag, _, r) = tlv(rest)?;
    if tag == 0xa0 {
        rest = r; // explicit version
    }
    for what in ["serialNumber", "signature", "issuer"] {
        let (_, _, r) = tlv(rest).with_context(|| format!("reading {what}"))?;
        rest = r;
    }
    let (tag, validity, _) = tlv(rest)?;
    ensure_tag(tag, 0x30, "Validity")?;
    let (_, _, r) = tlv(validity)?;
    let (tag, text, _) = tlv(r)?;
    let text = std::str::from_utf8(text).context("notAfter is not text")?;
    match tag {
        0x17 => asn1_time(text, false),
        0x18 => asn1_time(text, true),
        other => bail!("notAfter has tag {other:#x}, want UTCTime or GeneralizedTime"),
    }
}

fn ensure_tag(got: u8, want: u8, what: &str) -> Result<()> {
    if got == want {
        Ok(())
    } else {
        bail!("{what}: DER tag {got:#x}, want {want:#x}")
    }
}

/// One DER TLV: `(tag, content, rest)`.
fn tlv(buf: &[u8]) -> Result<(u8, &[u8], &[u8])> {
    let (&tag, rest) = buf.split_first().ok_or_else(|| anyhow!("truncated DER"))?;
    let (&first, rest) = rest
        .split_first()
        .ok_or_else(|| anyhow!("truncated DER length"))?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            bail!("unsupported DER length");
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        bail!("truncated DER content");
    }
    Ok((tag, &rest[..len], &rest[len..]))
}

/// `YYMMDDHHMMSSZ` (UTCTime) or `YYYYMMDDHHMMSSZ` (GeneralizedTime) → Unix seconds.
fn asn1_time(text: &str, generalized: bool) -> Result<i64> {
    let digits = text
        .strip_suffix('Z')
        .ok_or_else(|| anyhow!("time {text:?} is not UTC"))?;
    let want = if generalized { 14 } else { 12 };
    if digits.len() != want || !digits.bytes().all(|b| b.is_ascii_digit()) {
        bail!("malformed time {text:?}");
    }
    let num = |s: &str| {
        s.parse::<i64>()
            .map_err(|e| anyhow!("malformed time {text:?}: {e}"))
    };
    let (year, rest) = if generalized {
        (num(&digits[..4])?, &digits[4..])
    } else {
        let yy = num(&digits[..2])?;
        (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &digits[2..])
    };
    let (mo, d, h, mi, s) = (
        num(&rest[0..2])?,
        num(&rest[2..4])?,
        num(&rest[4..6])?,
        num(&rest[6..8])?,
        num(&rest[8..10])?,
    );
    Ok(outrigger_inject::go::time::days_from_civil(year, mo, d) * 86_400 + h * 3600 + mi * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_certificates_load_and_report_expiry() {
        let g = generate(
            &[
                "localhost".into(),
                "127.0.0.1".into(),
                "outrigger.ns.svc".into(),
            ],
            30,
        )
        .unwrap();
        let loaded = load_pem(g.cert_pem.as_bytes(), g.key_pem.as_bytes(), "").unwrap();
        let expected = unix_now() + 30 * 86_400;
        assert!(
            (loaded.not_after - expected).abs() < 120,
            "{} vs {expected}",
            loaded.not_after
        );
        assert!(
            load_pem(g.ca_pem.as_bytes(), g.key_pem.as_bytes(), "").is_err(),
            "key must match the cert"
        );
        assert!(load_pem(b"garbage", g.key_pem.as_bytes(), "").is_err());
        assert!(load_pem(g.cert_pem.as_bytes(), b"", "").is_err());
    }

    #[test]
    fn expired_certificates_are_rejected() {
        let g = generate(&["localhost".into()], -2).unwrap();
        let e = load_pem(g.cert_pem.as_bytes(), g.key_pem.as_bytes(), "")
            .err()
            .unwrap();
        assert!(e.to_string().contains("expired"), "{e}");
    }

    #[test]
    fn asn1_times() {
        assert_eq!(asn1_time("700101000000Z", false).unwrap(), 0);
        assert_eq!(asn1_time("20380119031408Z", true).unwrap(), 2_147_483_648);
        assert_eq!(asn1_time("491231235959Z", false).unwrap(), 2_524_607_999);
        assert!(asn1_time("2038", true).is_err());
        assert!(not_after(&[0x30, 0x05, 1]).is_err());
    }

    #[test]
    fn fips_policy_restricts_suites() {
        let p = provider("fips-140-2");
        assert_eq!(p.cipher_suites.len(), 4);
        assert!(provider("").cipher_suites.len() > 4);
    }
}
