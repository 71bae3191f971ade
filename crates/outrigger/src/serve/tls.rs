//! TLS: rustls with the `ring` provider, TLS 1.2/1.3, ALPN `h2` + `http/1.1`, and a
//! hot-swappable serving certificate (read and checked with [`crate::pki`]).

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use arc_swap::ArcSwap;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{CipherSuite, ServerConfig};

use crate::pki;

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

    /// The issuer (DER distinguished name) of the served leaf certificate.
    pub fn leaf_issuer(&self) -> Option<Vec<u8>> {
        let current = self.current.load();
        let leaf = current.key.cert.first()?;
        crate::pki::cert_info(leaf.as_ref()).ok().map(|c| c.issuer)
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

/// Server config resolving the certificate from `store` on every handshake; with `client_auth`,
/// every handshake requires a client certificate it accepts.
pub fn server_config(
    store: Arc<CertStore>,
    compliance_policy: &str,
    client_auth: Option<Arc<super::client_auth::ClientAuth>>,
) -> Result<ServerConfig> {
    let fips = compliance_policy == "fips-140-2";
    let versions: &[&rustls::SupportedProtocolVersion] = if fips {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13, &rustls::version::TLS12]
    };
    let cfg = ServerConfig::builder_with_provider(Arc::new(provider(compliance_policy)))
        .with_protocol_versions(versions)
        .context("TLS protocol versions")?;
    let builder = match client_auth {
        Some(v) => cfg.with_client_cert_verifier(v),
        None => cfg.with_no_client_auth(),
    };
    let mut cfg = builder.with_cert_resolver(store);
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(cfg)
}

/// Load a PEM chain and key; rejects unreadable, mismatched or expired material.
pub fn load_pem(cert_pem: &[u8], key_pem: &[u8], compliance_policy: &str) -> Result<Loaded> {
    load_named(
        ("the certificate", cert_pem),
        ("the key", key_pem),
        compliance_policy,
    )
}

/// [`load_pem`] with the names of the two sources (file paths) in its errors: each error names
/// the file at fault and what is wrong with it.
pub fn load_named(
    (cert_name, cert_pem): (&str, &[u8]),
    (key_name, key_pem): (&str, &[u8]),
    compliance_policy: &str,
) -> Result<Loaded> {
    let certs = pki::read_chain(cert_pem).map_err(|e| anyhow!("{cert_name}: {}", e.cause()))?;
    let leaf = pki::cert_info(&certs[0]).map_err(|e| {
        anyhow!(
            "{cert_name}: reading the certificate's validity: {}",
            e.cause()
        )
    })?;
    let not_after = leaf.not_after.unix_timestamp();
    if not_after <= unix_now() {
        bail!(
            "{cert_name}: certificate expired at {not_after} (Unix time; {})",
            leaf.not_after
        );
    }
    let key = pki::read_key(key_pem).map_err(|e| anyhow!("{key_name}: {}", e.cause()))?;
    let signing = provider(compliance_policy)
        .key_provider
        .load_private_key(key)
        .map_err(|e| anyhow!("{key_name}: unsupported private key: {e}"))?;
    let ck = CertifiedKey::new(certs, signing);
    ck.keys_match().map_err(|e| {
        anyhow!("{key_name}: private key does not match the certificate {cert_name}: {e}")
    })?;
    Ok(Loaded {
        key: Arc::new(ck),
        not_after,
    })
}

/// Load `cert_file` and `key_file`; errors name the file at fault.
pub fn load_files(cert_file: &Path, key_file: &Path, compliance_policy: &str) -> Result<Loaded> {
    let cert =
        std::fs::read(cert_file).with_context(|| format!("reading {}", cert_file.display()))?;
    // The key file's bytes are zeroized once loaded.
    let key = zeroize::Zeroizing::new(
        std::fs::read(key_file).with_context(|| format!("reading {}", key_file.display()))?,
    );
    load_named(
        (&cert_file.display().to_string(), &cert),
        (&key_file.display().to_string(), &key),
        compliance_policy,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        vec![
            "localhost".into(),
            "127.0.0.1".into(),
            "outrigger.ns.svc".into(),
        ]
    }

    #[test]
    fn generated_certificates_load_and_report_expiry() {
        let g = pki::self_signed(&names(), 30).unwrap();
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
        let g = pki::self_signed(&["localhost".into()], -2).unwrap();
        let e = load_pem(g.cert_pem.as_bytes(), g.key_pem.as_bytes(), "")
            .err()
            .unwrap();
        assert!(e.to_string().contains("expired"), "{e}");
    }

    /// Errors of files name the file at fault and what is wrong with it.
    #[test]
    fn file_errors_name_the_file_and_the_cause() {
        let dir = std::env::temp_dir().join(format!("outrigger-tls-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let g = pki::self_signed(&names(), 30).unwrap();
        let expired = pki::self_signed(&names(), -2).unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let (cert, key) = (write("tls.crt", &g.cert_pem), write("tls.key", &g.key_pem));
        let empty = write("empty.pem", "");
        let garbage = write("garbage.pem", "this is not PEM\n");
        let old = write("old.crt", &expired.cert_pem);
        let other_key = write("other.key", &expired.key_pem);
        let err = |c: &Path, k: &Path| format!("{:#}", load_files(c, k, "").err().unwrap());
        let d = |p: &Path| p.display().to_string();
        assert_eq!(
            err(&empty, &key),
            format!("{}: no CERTIFICATE block (it is empty)", d(&empty))
        );
        assert_eq!(
            err(&key, &key),
            format!(
                "{}: no CERTIFICATE block (it holds 1 PRIVATE KEY block)",
                d(&key)
            ),
            "a key where the certificate belongs"
        );
        assert_eq!(
            err(&cert, &cert),
            format!(
                "{}: no PRIVATE KEY block (it holds 1 CERTIFICATE block)",
                d(&cert)
            ),
            "a certificate without its key"
        );
        assert_eq!(
            err(&garbage, &key),
            format!(
                "{}: no CERTIFICATE block (it holds no PEM block (not a PEM file?))",
                d(&garbage)
            )
        );
        assert_eq!(
            err(&cert, &garbage),
            format!(
                "{}: no PRIVATE KEY block (it holds no PEM block (not a PEM file?))",
                d(&garbage)
            )
        );
        let e = err(&old, &other_key);
        assert!(
            e.starts_with(&format!("{}: certificate expired at ", d(&old))),
            "{e}"
        );
        let e = err(&cert, &other_key);
        assert!(
            e.starts_with(&format!(
                "{}: private key does not match the certificate {}",
                d(&other_key),
                d(&cert)
            )),
            "{e}"
        );
        let missing = dir.join("missing.crt");
        assert!(err(&missing, &key).starts_with(&format!("reading {}: ", d(&missing))));
        assert!(load_files(&cert, &key, "").is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn fips_policy_restricts_suites() {
        let p = provider("fips-140-2");
        assert_eq!(p.cipher_suites.len(), 4);
        assert!(provider("").cipher_suites.len() > 4);
    }
}
