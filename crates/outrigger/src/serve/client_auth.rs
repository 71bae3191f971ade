//! Client-certificate authentication of the webhook's callers (`--clientCaFile`): the TLS
//! handshake requires a client certificate that chains to the CA bundle in the file (rustls'
//! WebPKI verifier), optionally one whose subject common name or a subject alternative name
//! (DNS, URI, email, IP) is among `--client-allowed-names`. The CA bundle is swapped in place
//! when the file changes (the reloader calls [`ClientAuth::reload`]); a bundle that does not
//! load keeps the one in force.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use arc_swap::ArcSwap;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};

use crate::pki;

/// The client-certificate verifier in force.
pub struct ClientAuth {
    file: PathBuf,
    allowed: Vec<String>,
    provider: Arc<rustls::crypto::CryptoProvider>,
    current: ArcSwap<Loaded>,
}

/// One loaded CA bundle.
struct Loaded {
    verifier: Arc<dyn ClientCertVerifier>,
    pem: Vec<u8>,
}

impl fmt::Debug for ClientAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientAuth")
            .field("file", &self.file)
            .field("allowed", &self.allowed)
            .finish_non_exhaustive()
    }
}

/// Build a verifier from the PEM CA bundle `pem` read from `name`.
fn verifier(
    name: &str,
    pem: &[u8],
    provider: &Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>> {
    let certs = pki::read_chain(pem).map_err(|e| anyhow!("{name}: {}", e.cause()))?;
    let mut roots = rustls::RootCertStore::empty();
    for (i, c) in certs.into_iter().enumerate() {
        roots
            .add(c)
            .map_err(|e| anyhow!("{name}: certificate {i} is not a usable CA: {e}"))?;
    }
    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| anyhow!("{name}: {e}"))
}

impl ClientAuth {
    /// Load the CA bundle `file`; `allowed` (empty: any name) restricts the accepted
    /// certificates by name.
    pub fn load(
        file: &Path,
        allowed: Vec<String>,
        provider: Arc<rustls::crypto::CryptoProvider>,
    ) -> Result<Arc<ClientAuth>> {
        let pem = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
        let v = verifier(&file.display().to_string(), &pem, &provider)?;
        Ok(Arc::new(ClientAuth {
            file: file.to_path_buf(),
            allowed,
            provider,
            current: ArcSwap::from_pointee(Loaded { verifier: v, pem }),
        }))
    }

    /// The CA bundle file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Re-read the CA bundle: `Ok(true)` when a changed bundle was loaded, `Ok(false)` when it
    /// did not change, an error naming the file when it does not load (the one in force stays).
    pub fn reload(&self) -> Result<bool> {
        let pem = std::fs::read(&self.file)
            .with_context(|| format!("reading {}", self.file.display()))?;
        if pem == self.current.load().pem {
            return Ok(false);
        }
        let v = verifier(&self.file.display().to_string(), &pem, &self.provider)?;
        self.current.store(Arc::new(Loaded { verifier: v, pem }));
        Ok(true)
    }

    /// Whether `names` (of a certificate) pass `--client-allowed-names`.
    fn allows(&self, names: &[String]) -> bool {
        self.allowed.is_empty() || names.iter().any(|n| self.allowed.contains(n))
    }
}

/// The subject common names and subject alternative names (DNS, URI, email, IP) of a DER
/// certificate.
pub fn certificate_names(der: &[u8]) -> Vec<String> {
    use x509_parser::extensions::GeneralName;
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(der) else {
        return Vec::new();
    };
    let mut names: Vec<String> = cert
        .subject()
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok().map(str::to_string))
        .collect();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for n in &san.value.general_names {
            match n {
                GeneralName::DNSName(s) | GeneralName::URI(s) | GeneralName::RFC822Name(s) => {
                    names.push(s.to_string())
                }
                GeneralName::IPAddress(b) => {
                    if let Ok(a) = <[u8; 4]>::try_from(*b) {
                        names.push(std::net::IpAddr::from(a).to_string());
                    } else if let Ok(a) = <[u8; 16]>::try_from(*b) {
                        names.push(std::net::IpAddr::from(a).to_string());
                    }
                }
                _ => {}
            }
        }
    }
    names
}

impl ClientCertVerifier for ClientAuth {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        true
    }

    /// No CA names are sent: clients present the certificate they are configured with (as
    /// Go's TLS client does when the list is empty), and the bundle can change under a handshake.
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified =
            self.current
                .load()
                .verifier
                .verify_client_cert(end_entity, intermediates, now)?;
        let names = certificate_names(end_entity);
        if !self.allows(&names) {
            tracing::warn!(names = ?names, allowed = ?self.allowed, "client certificate refused: none of its names is in --client-allowed-names");
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ));
        }
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current
            .load()
            .verifier
            .verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current
            .load()
            .verifier
            .verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.current.load().verifier.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> Arc<rustls::crypto::CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    #[test]
    fn names_are_the_common_name_and_the_alternative_names() {
        let g = pki::self_signed(&["localhost".into(), "127.0.0.1".into()], 1).unwrap();
        let der = pki::read_chain(g.cert_pem.as_bytes()).unwrap();
        let names = certificate_names(&der[0]);
        assert!(names.contains(&"localhost".to_string()), "{names:?}");
        assert!(names.contains(&"127.0.0.1".to_string()), "{names:?}");
    }

    #[test]
    fn bundles_that_do_not_load_name_the_file_and_keep_the_one_in_force() {
        let dir = std::env::temp_dir().join(format!("outrigger-client-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("ca.pem");
        let g = pki::self_signed(&["localhost".into()], 1).unwrap();
        std::fs::write(&file, &g.ca_pem).unwrap();
        let auth = ClientAuth::load(&file, vec![], provider()).expect("loads");
        assert!(!auth.reload().unwrap(), "unchanged");
        std::fs::write(&file, "not PEM\n").unwrap();
        let e = format!("{:#}", auth.reload().unwrap_err());
        assert!(e.starts_with(&file.display().to_string()), "{e}");
        assert!(e.contains("no CERTIFICATE block"), "{e}");
        assert_eq!(auth.current.load().pem, g.ca_pem.as_bytes(), "kept");
        let e = format!(
            "{:#}",
            ClientAuth::load(&dir.join("missing.pem"), vec![], provider()).unwrap_err()
        );
        assert!(e.starts_with("reading "), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn allowed_names_restrict_when_given() {
        let dir = std::env::temp_dir().join(format!("outrigger-client-an-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("ca.pem");
        let g = pki::self_signed(&["localhost".into()], 1).unwrap();
        std::fs::write(&file, &g.ca_pem).unwrap();
        let any = ClientAuth::load(&file, vec![], provider()).unwrap();
        assert!(any.allows(&["x".into()]));
        let some = ClientAuth::load(&file, vec!["kube-apiserver".into()], provider()).unwrap();
        assert!(some.allows(&["a".into(), "kube-apiserver".into()]));
        assert!(!some.allows(&["kube-apiserver.evil".into()]));
        assert!(!some.allows(&[]));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
