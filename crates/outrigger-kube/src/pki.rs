//! Keys and certificates, in one place for the whole binary.
//!
//! * **Generation** with `rcgen`: a self-signed CA ([`new_ca`]) and a serving certificate it
//!   signs ([`new_serving`]); [`self_signed`] is the pair `serve` makes at start-up without
//!   `--tlsCertFile`, and the Secret-backed certificates of `serve --kube` use the same two.
//! * **Facts** of a certificate (validity, subject/issuer, SANs, CA-ness) read with
//!   `x509-parser` ([`cert_info`], [`parse_certs`]).
//! * **PEM** read through `rustls-pki-types`' [`PemObject`] only ([`read_chain`], [`read_key`],
//!   [`cert_ders`]), and written in the layout `rcgen` writes ([`pem_encode_cert`]).
//!
//! Reading errors say what the text holds instead of what was wanted (a key where a certificate
//! was expected, an empty file, text that is not PEM), so that callers can name the file.

use std::fmt;
use std::net::IpAddr;

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::{self, PemObject, SectionKind};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use time::OffsetDateTime;

/// Errors of key and certificate handling.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    /// Key or certificate generation failed.
    #[error("generating certificates: {0}")]
    Generate(#[from] rcgen::Error),
    /// A certificate or key is unusable.
    #[error("invalid certificate data: {0}")]
    Invalid(String),
}

impl PkiError {
    /// The message without the variant's prefix (for callers that add their own context).
    pub fn cause(&self) -> String {
        match self {
            PkiError::Invalid(m) => m.clone(),
            PkiError::Generate(e) => e.to_string(),
        }
    }
}

/// Result alias of this module.
pub type Result<T, E = PkiError> = std::result::Result<T, E>;

fn invalid(what: impl fmt::Display) -> PkiError {
    PkiError::Invalid(what.to_string())
}

/// The PEM text of a private key: printed as `KeyPem(<redacted>)` by `Debug`, overwritten with
/// zeros when dropped (every copy: `Clone` makes a new zeroized buffer). Read it as a `str`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct KeyPem(zeroize::Zeroizing<String>);

impl KeyPem {
    /// Take ownership of `pem` (it is zeroized with this value).
    pub fn new(pem: String) -> KeyPem {
        KeyPem(zeroize::Zeroizing::new(pem))
    }
}

/// The key is zeroized when the value is dropped (its `Zeroizing` buffer).
impl zeroize::ZeroizeOnDrop for KeyPem {}

impl fmt::Debug for KeyPem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyPem(<redacted>)")
    }
}

impl std::ops::Deref for KeyPem {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<[u8]> for KeyPem {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl From<String> for KeyPem {
    fn from(pem: String) -> KeyPem {
        KeyPem::new(pem)
    }
}

impl From<&str> for KeyPem {
    fn from(pem: &str) -> KeyPem {
        KeyPem::new(pem.to_string())
    }
}

/// A certificate and its private key (both PEM; the key PKCS#8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// Certificate PEM.
    pub cert_pem: String,
    /// Private key PEM (PKCS#8).
    pub key_pem: KeyPem,
}

/// A self-signed CA (common name `common_name`, organisation `outrigger`) valid from
/// `not_before` to `not_after`.
pub fn new_ca(
    common_name: &str,
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<Pair> {
    let mut p = CertificateParams::default();
    p.distinguished_name
        .push(DnType::CommonName, common_name.to_string());
    p.distinguished_name
        .push(DnType::OrganizationName, "outrigger");
    // pathLen 0: the CA signs serving certificates only, never another CA.
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.not_before = not_before;
    p.not_after = not_after;
    let key = KeyPair::generate()?;
    let cert = p.self_signed(&key)?;
    Ok(Pair {
        cert_pem: cert.pem(),
        key_pem: KeyPem::new(key.serialize_pem()),
    })
}

/// A serving certificate for `names` (DNS names, or IP addresses when they parse as one) signed
/// by `ca`, valid from `not_before` to `not_after` but never beyond the CA's own `notAfter`.
/// Its common name is the first name (`outrigger` without names).
pub fn new_serving(
    ca: &Pair,
    names: &[String],
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<Pair> {
    let ca_der = first_cert_der(ca.cert_pem.as_bytes())?;
    let ca_not_after = cert_info(&ca_der)?.not_after;
    let ca_key = key_pair(ca.key_pem.as_bytes()).map_err(|e| invalid(format!("CA key: {e}")))?;
    let issuer = Issuer::from_ca_cert_der(&ca_der, ca_key)?;
    let mut p = CertificateParams::new(names.to_vec())?;
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name.push(
        DnType::CommonName,
        names.first().map_or("outrigger", String::as_str),
    );
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    p.not_before = not_before;
    p.not_after = not_after.min(ca_not_after);
    let key = KeyPair::generate()?;
    let cert = p.signed_by(&key, &issuer)?;
    Ok(Pair {
        cert_pem: cert.pem(),
        key_pem: KeyPem::new(key.serialize_pem()),
    })
}

/// A generated CA and a serving certificate signed by it (PEM).
#[derive(Debug, Clone)]
pub struct SelfSigned {
    /// CA certificate PEM (the bundle clients trust).
    pub ca_pem: String,
    /// Serving certificate PEM (leaf only).
    pub cert_pem: String,
    /// Serving key PEM (PKCS#8).
    pub key_pem: KeyPem,
}

/// A self-signed CA ("outrigger self-signed CA") and a serving certificate for `names`, both
/// valid from one hour ago for `days`.
pub fn self_signed(names: &[String], days: i64) -> Result<SelfSigned> {
    let now = OffsetDateTime::now_utc();
    let from = now - time::Duration::hours(1);
    let until = now + time::Duration::days(days);
    let ca = new_ca("outrigger self-signed CA", from, until)?;
    let serving = new_serving(&ca, names, from, until)?;
    Ok(SelfSigned {
        ca_pem: ca.cert_pem,
        cert_pem: serving.cert_pem,
        key_pem: serving.key_pem,
    })
}

/// Facts read from one certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    /// Raw DER of the subject name.
    pub subject: Vec<u8>,
    /// Raw DER of the issuer name.
    pub issuer: Vec<u8>,
    /// Start of validity.
    pub not_before: OffsetDateTime,
    /// End of validity.
    pub not_after: OffsetDateTime,
    /// DNS subject alternative names.
    pub dns_names: Vec<String>,
    /// IP address subject alternative names.
    pub ip_addresses: Vec<IpAddr>,
    /// Whether basicConstraints says this is a CA.
    pub is_ca: bool,
    /// basicConstraints' pathLenConstraint (`None`: absent, no limit).
    pub path_len: Option<u32>,
}

impl CertInfo {
    /// The part of the validity still ahead at `now` (1 at `notBefore`, 0 at `notAfter`,
    /// negative after it).
    pub(crate) fn remaining_fraction(&self, now: OffsetDateTime) -> f64 {
        let total = (self.not_after - self.not_before).as_seconds_f64();
        if total <= 0.0 {
            return 0.0;
        }
        (self.not_after - now).as_seconds_f64() / total
    }
}

/// The facts of one DER certificate.
pub fn cert_info(der: &[u8]) -> Result<CertInfo> {
    use x509_parser::extensions::GeneralName;
    let (_, cert) = x509_parser::parse_x509_certificate(der).map_err(invalid)?;
    let time = |t: i64| OffsetDateTime::from_unix_timestamp(t).map_err(invalid);
    let (mut dns_names, mut ip_addresses) = (Vec::new(), Vec::new());
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(d) => dns_names.push(d.to_string()),
                GeneralName::IPAddress(b) => match b.len() {
                    4 => ip_addresses.push(IpAddr::from(<[u8; 4]>::try_from(*b).map_err(invalid)?)),
                    16 => {
                        ip_addresses.push(IpAddr::from(<[u8; 16]>::try_from(*b).map_err(invalid)?))
                    }
                    _ => {}
                },
                _ => {}
            }
        }
    }
    Ok(CertInfo {
        subject: cert.subject().as_raw().to_vec(),
        issuer: cert.issuer().as_raw().to_vec(),
        not_before: time(cert.validity().not_before.timestamp())?,
        not_after: time(cert.validity().not_after.timestamp())?,
        dns_names,
        ip_addresses,
        is_ca: cert.is_ca(),
        path_len: cert
            .basic_constraints()
            .ok()
            .flatten()
            .and_then(|b| b.value.path_len_constraint),
    })
}

/// The facts of every CERTIFICATE block of a PEM text (at least one).
pub fn parse_certs(pem: &str) -> Result<Vec<CertInfo>> {
    let ders = cert_ders(pem.as_bytes())?;
    if ders.is_empty() {
        return Err(invalid("no PEM CERTIFICATE block"));
    }
    ders.iter()
        .enumerate()
        .map(|(i, d)| cert_info(d).map_err(|e| invalid(format!("certificate {i}: {e}"))))
        .collect()
}

/// The facts of the first certificate of a PEM text.
pub fn first(pem: &str) -> Result<CertInfo> {
    let der = first_cert_der(pem.as_bytes())?;
    cert_info(&der)
}

fn first_cert_der(pem: &[u8]) -> Result<CertificateDer<'static>> {
    cert_ders(pem)?
        .into_iter()
        .next()
        .ok_or_else(|| invalid("no PEM CERTIFICATE block"))
}

/// Every CERTIFICATE block of a PEM text (possibly none); other blocks are skipped.
pub fn cert_ders(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    CertificateDer::pem_slice_iter(pem)
        .enumerate()
        .map(|(i, c)| c.map_err(|e| invalid(format!("PEM block {i}: {}", pem_error(&e)))))
        .collect()
}

/// A DER certificate as PEM, laid out as `rcgen` writes it (64-column base64, LF line ends).
pub(crate) fn pem_encode_cert(der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::with_capacity(b64.len() + b64.len() / 64 + 60);
    out.push_str("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// The CERTIFICATE blocks of a PEM text, each re-encoded with [`pem_encode_cert`] (text outside
/// the blocks, other blocks and undecodable blocks are dropped).
pub(crate) fn cert_blocks(pem: &str) -> Vec<String> {
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .filter_map(|c| c.ok())
        .map(|c| pem_encode_cert(&c))
        .collect()
}

/// What a PEM text holds, for error messages: "an empty file", "no PEM block", or the labels
/// of its blocks ("1 PRIVATE KEY block").
pub(crate) fn describe_pem(pem: &[u8]) -> String {
    if pem.iter().all(u8::is_ascii_whitespace) {
        return "it is empty".into();
    }
    let mut labels: Vec<(&'static str, usize)> = Vec::new();
    for section in <(SectionKind, Vec<u8>)>::pem_slice_iter(pem) {
        let label = match section {
            Ok((kind, _)) => kind_label(kind),
            Err(_) => "undecodable",
        };
        match labels.iter_mut().find(|(l, _)| *l == label) {
            Some((_, n)) => *n += 1,
            None => labels.push((label, 1)),
        }
    }
    if labels.is_empty() {
        return "it holds no PEM block (not a PEM file?)".into();
    }
    let parts: Vec<String> = labels
        .iter()
        .map(|(l, n)| format!("{n} {l} block{}", if *n == 1 { "" } else { "s" }))
        .collect();
    format!("it holds {}", parts.join(", "))
}

fn kind_label(kind: SectionKind) -> &'static str {
    match kind {
        SectionKind::Certificate => "CERTIFICATE",
        SectionKind::PublicKey => "PUBLIC KEY",
        SectionKind::RsaPrivateKey => "RSA PRIVATE KEY",
        SectionKind::PrivateKey => "PRIVATE KEY",
        SectionKind::EcPrivateKey => "EC PRIVATE KEY",
        SectionKind::Crl => "X509 CRL",
        SectionKind::Csr => "CERTIFICATE REQUEST",
        _ => "other",
    }
}

fn pem_error(e: &pem::Error) -> String {
    match e {
        pem::Error::MissingSectionEnd { end_marker } => {
            format!("no end marker {:?}", String::from_utf8_lossy(end_marker))
        }
        pem::Error::IllegalSectionStart { line } => {
            format!("malformed BEGIN line {:?}", String::from_utf8_lossy(line))
        }
        pem::Error::Base64Decode(m) => format!("bad base64 ({m})"),
        other => other.to_string(),
    }
}

/// A certificate chain (leaf first) from PEM: at least one CERTIFICATE block, each parsing as a
/// certificate.
pub fn read_chain(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>> {
    let certs = cert_ders(pem)?;
    if certs.is_empty() {
        return Err(invalid(format!(
            "no CERTIFICATE block ({})",
            describe_pem(pem)
        )));
    }
    for (i, c) in certs.iter().enumerate() {
        cert_info(c).map_err(|e| invalid(format!("certificate {i}: {e}")))?;
    }
    Ok(certs)
}

/// The first private key of a PEM text (PKCS#8, PKCS#1 or SEC1).
pub fn read_key(pem: &[u8]) -> Result<PrivateKeyDer<'static>> {
    match PrivateKeyDer::from_pem_slice(pem) {
        Ok(k) => Ok(k),
        Err(pem::Error::NoItemsFound) => Err(invalid(format!(
            "no PRIVATE KEY block ({})",
            describe_pem(pem)
        ))),
        Err(e) => Err(invalid(pem_error(&e))),
    }
}

/// A signing key pair from PEM (what `rcgen` signs with).
pub(crate) fn key_pair(pem: &[u8]) -> Result<KeyPair> {
    let key = read_key(pem)?;
    KeyPair::try_from(&key).map_err(|e| invalid(format!("unsupported private key: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(unix: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(unix).expect("valid time")
    }

    #[test]
    fn generated_ca_and_serving_certificate_facts() {
        let ca = new_ca("test CA", at(1_800_000_000), at(1_900_000_000)).expect("CA");
        let names = vec!["svc.ns.svc".to_string(), "127.0.0.1".to_string()];
        let leaf = new_serving(&ca, &names, at(1_800_000_000), at(2_000_000_000)).expect("leaf");
        let ca_info = first(&ca.cert_pem).expect("CA facts");
        let info = first(&leaf.cert_pem).expect("leaf facts");
        assert!(ca_info.is_ca);
        assert_eq!(ca_info.path_len, Some(0), "the CA signs no other CA");
        assert!(!info.is_ca);
        assert_eq!(info.issuer, ca_info.subject);
        assert_eq!(info.dns_names, ["svc.ns.svc"]);
        assert_eq!(info.ip_addresses, [IpAddr::from([127, 0, 0, 1])]);
        assert_eq!(info.not_before, at(1_800_000_000));
        assert_eq!(
            info.not_after,
            at(1_900_000_000),
            "capped at the CA's notAfter"
        );
        assert!((info.remaining_fraction(at(1_850_000_000)) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn expired_certificate_facts() {
        // Valid 2020-09-13 .. 2021-01-01 (Unix 1.6e9 .. 1_609_459_200).
        let ca = new_ca("old CA", at(1_600_000_000), at(1_609_459_200)).expect("CA");
        let leaf =
            new_serving(&ca, &["old".into()], at(1_600_000_000), at(1_700_000_000)).expect("leaf");
        let info = first(&leaf.cert_pem).expect("facts");
        assert_eq!(info.not_after, at(1_609_459_200));
        let now = OffsetDateTime::now_utc();
        assert!(info.not_after < now);
        assert!(info.remaining_fraction(now) < 0.0);
        let g = self_signed(&["localhost".into()], -2).expect("generate");
        assert!(first(&g.cert_pem).expect("facts").not_after < now);
    }

    #[test]
    fn pem_encoding_matches_rcgen() {
        let ca = new_ca("x", at(1_800_000_000), at(1_900_000_000)).expect("CA");
        let blocks = cert_blocks(&format!("junk\n{}trailer\n{}", ca.cert_pem, &*ca.key_pem));
        assert_eq!(blocks, vec![ca.cert_pem]);
    }

    #[test]
    fn reading_errors_say_what_the_text_holds() {
        let g = self_signed(&["localhost".into()], 1).expect("generate");
        let msg = |r: Result<Vec<CertificateDer<'static>>>| r.expect_err("refused").to_string();
        assert_eq!(
            msg(read_chain(b"")),
            "invalid certificate data: no CERTIFICATE block (it is empty)"
        );
        assert_eq!(
            msg(read_chain(b"not a certificate at all\n")),
            "invalid certificate data: no CERTIFICATE block (it holds no PEM block (not a PEM file?))"
        );
        assert_eq!(
            msg(read_chain(g.key_pem.as_bytes())),
            "invalid certificate data: no CERTIFICATE block (it holds 1 PRIVATE KEY block)"
        );
        let key_err = read_key(g.cert_pem.as_bytes())
            .expect_err("no key")
            .to_string();
        assert_eq!(
            key_err,
            "invalid certificate data: no PRIVATE KEY block (it holds 1 CERTIFICATE block)"
        );
        let truncated = &g.cert_pem[..g.cert_pem.len() - 10];
        let e = msg(read_chain(truncated.as_bytes()));
        assert!(e.contains("no end marker"), "{e}");
        let not_der = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let e = msg(read_chain(not_der.as_bytes()));
        assert!(
            e.starts_with("invalid certificate data: certificate 0: "),
            "{e}"
        );
        assert!(read_chain(g.cert_pem.as_bytes()).is_ok());
        assert!(key_pair(g.key_pem.as_bytes()).is_ok());
    }

    #[test]
    fn private_keys_are_redacted_in_debug_and_zeroized_on_drop() {
        fn zeroized_on_drop<T: zeroize::ZeroizeOnDrop>() {}
        zeroized_on_drop::<KeyPem>();
        let g = self_signed(&["outrigger.default.svc".into()], 1).expect("generated");
        let body = g.key_pem.lines().nth(1).expect("a base64 line").to_string();
        let pair = Pair {
            cert_pem: g.cert_pem.clone(),
            key_pem: g.key_pem.clone(),
        };
        for shown in [
            format!("{g:?}"),
            format!("{pair:?}"),
            format!("{:#?}", g.key_pem),
        ] {
            assert!(!shown.contains(&body), "key material in {shown}");
            assert!(!shown.contains("PRIVATE KEY"), "{shown}");
            assert!(shown.contains("KeyPem(<redacted>)"), "{shown}");
        }
        // The certificate is public and still printed.
        assert!(format!("{g:?}").contains("BEGIN CERTIFICATE"));
    }
}
