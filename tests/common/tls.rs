//! Certificates made for a TLS test (rcgen): a CA, a server certificate for 127.0.0.1 and
//! localhost, and client certificates, written as PEM files into a temporary directory,
//! with a `tls {}` block that names them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, SanType,
};

pub struct Authority {
    certificate: Certificate,
    key: KeyPair,
    pub dir: PathBuf,
    pub ca_file: PathBuf,
}

/// A certificate and its key, as files.
pub struct Issued {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    pub der: Vec<u8>,
    /// Hex SHA-256 of the SubjectPublicKeyInfo: a `pinned_certs` entry.
    pub pin: String,
}

impl Authority {
    pub fn new(dir: &Path, name: &str) -> Authority {
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, format!("{name} CA"));
        let certificate = params.self_signed(&key).expect("CA certificate");
        let ca_file = dir.join(format!("{name}-ca.pem"));
        std::fs::write(&ca_file, certificate.pem()).expect("write CA");
        Authority { certificate, key, dir: dir.to_path_buf(), ca_file }
    }

    pub fn server(&self, name: &str) -> Issued {
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
        params.subject_alt_names.push(SanType::IpAddress("127.0.0.1".parse().expect("ip")));
        params.distinguished_name.push(DnType::CommonName, "localhost");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.issue(name, params)
    }

    /// A client certificate with the given subject common name and alternative names.
    pub fn client(&self, name: &str, common_name: &str, emails: &[&str], dns_names: &[&str]) -> Issued {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name.push(DnType::CommonName, common_name);
        params.distinguished_name.push(DnType::OrganizationName, "Jetcore Tests");
        for email in emails {
            params.subject_alt_names.push(SanType::Rfc822Name((*email).try_into().expect("email")));
        }
        for dns_name in dns_names {
            params.subject_alt_names.push(SanType::DnsName((*dns_name).try_into().expect("dns")));
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(name, params)
    }

    /// A client certificate whose subject holds `attributes`, encoded in the order given
    /// (rcgen keeps one value per type).
    pub fn client_with_subject(&self, name: &str, attributes: &[(DnType, &str)]) -> Issued {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        for (kind, value) in attributes {
            params.distinguished_name.push(kind.clone(), *value);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(name, params)
    }

    fn issue(&self, name: &str, params: CertificateParams) -> Issued {
        let key = KeyPair::generate().expect("key");
        let certificate = params.signed_by(&key, &self.certificate, &self.key).expect("sign");
        let cert_file = self.dir.join(format!("{name}-cert.pem"));
        let key_file = self.dir.join(format!("{name}-key.pem"));
        std::fs::write(&cert_file, certificate.pem()).expect("write cert");
        std::fs::write(&key_file, key.serialize_pem()).expect("write key");
        let digest = ring::digest::digest(&ring::digest::SHA256, &key.public_key_der());
        let pin = digest.as_ref().iter().map(|byte| format!("{byte:02x}")).collect();
        Issued { cert_file, key_file, der: certificate.der().to_vec(), pin }
    }
}

/// Writes `text` as a configuration file in `dir` and returns its path.
pub fn config_file(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("server.conf");
    std::fs::write(&path, text).expect("write config");
    path
}

/// `tls { cert_file, key_file, ... }` for `server`, with `extra` lines inside the block.
pub fn tls_block(server: &Issued, extra: &str) -> String {
    format!(
        "tls {{\n  cert_file: {:?}\n  key_file: {:?}\n{extra}\n}}\n",
        server.cert_file.display().to_string(),
        server.key_file.display().to_string()
    )
}

/// A rustls client trusting `authority`, optionally presenting `client`.
pub fn client_config(authority: &Authority, client: Option<&Issued>) -> std::sync::Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for certificate in rustls::pki_types::CertificateDer::pem_file_iter(&authority.ca_file).expect("ca") {
        roots.add(certificate.expect("ca pem")).expect("add root");
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some(issued) => {
            let chain = rustls::pki_types::CertificateDer::pem_file_iter(&issued.cert_file)
                .expect("cert")
                .map(|c| c.expect("cert pem"))
                .collect();
            let key = rustls::pki_types::PrivateKeyDer::from_pem_file(&issued.key_file).expect("key");
            builder.with_client_auth_cert(chain, key).expect("client auth")
        }
    };
    std::sync::Arc::new(config)
}
