//! A client-certificate CA for tests of `--clientCaFile`: the API server's side of mutual TLS.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};

/// A CA (certificate PEM) and a function issuing client certificates (chain PEM, key PEM) with a
/// common name and DNS names.
pub struct TestCa {
    /// The CA certificate (PEM), for `--clientCaFile`.
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl TestCa {
    /// A CA named `name`.
    pub fn new(name: &str) -> TestCa {
        let mut p = CertificateParams::default();
        p.distinguished_name.push(DnType::CommonName, name);
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate().expect("CA key");
        let cert = p.self_signed(&key).expect("CA certificate");
        TestCa {
            pem: cert.pem(),
            issuer: Issuer::new(p, key),
        }
    }

    /// A client certificate (chain PEM, key PEM) with a common name and DNS names.
    pub fn client(&self, common_name: &str, dns: &[&str]) -> (String, String) {
        let mut p = CertificateParams::new(dns.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .expect("names");
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name.push(DnType::CommonName, common_name);
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate().expect("client key");
        let cert = p.signed_by(&key, &self.issuer).expect("client certificate");
        (cert.pem(), key.serialize_pem())
    }
}
