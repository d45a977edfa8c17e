//! The loaded TLS configuration: certificate, key and CA read from their files and a
//! rustls `ServerConfig` built from them with the ring provider. Built at start (a bad file
//! stops the server with the file's name) and again on each reload, so new connections get
//! the new certificate while open ones keep theirs.

use std::fmt;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};

use super::settings::{TlsSettings, TlsVersion};

/// A loaded configuration; cheap to clone. Equal only to itself (each load is new).
#[derive(Clone)]
pub struct TlsContext {
    pub config: Arc<ServerConfig>,
    pub settings: Arc<TlsSettings>,
}

impl PartialEq for TlsContext {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.config, &other.config)
    }
}

impl fmt::Debug for TlsContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsContext").field("settings", &self.settings).finish_non_exhaustive()
    }
}

/// Why a TLS configuration could not be loaded, worded for the operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsError(pub String);

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TLS configuration: {}", self.0)
    }
}

impl std::error::Error for TlsError {}

impl TlsContext {
    pub fn load(settings: &TlsSettings) -> Result<TlsContext, TlsError> {
        let provider = Arc::new(provider_for(settings)?);
        let versions: &[&rustls::SupportedProtocolVersion] = match settings.min_version {
            Some(TlsVersion::Tls13) => &[&rustls::version::TLS13],
            _ => &[&rustls::version::TLS13, &rustls::version::TLS12],
        };
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(|error| TlsError(error.to_string()))?;
        let builder = if settings.verifies_clients() {
            let Some(ca_file) = &settings.ca_file else {
                return Err(TlsError(
                    "verify needs ca_file: the authority client certificates are checked against".into(),
                ));
            };
            let mut roots = RootCertStore::empty();
            for certificate in certificates(ca_file, "ca_file")? {
                roots.add(certificate).map_err(|error| {
                    TlsError(format!(
                        "ca_file {:?}: not a usable CA certificate: {error}",
                        ca_file.display().to_string()
                    ))
                })?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|error| TlsError(format!("client verifier: {error}")))?;
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let cert_file = settings.cert_file.as_ref().ok_or_else(|| TlsError("missing cert_file".into()))?;
        let key_file = settings.key_file.as_ref().ok_or_else(|| TlsError("missing key_file".into()))?;
        let chain = certificates(cert_file, "cert_file")?;
        let key = PrivateKeyDer::from_pem_file(key_file).map_err(|error| {
            TlsError(format!("key_file {:?}: no private key could be read: {error}", key_file.display().to_string()))
        })?;
        let config = builder.with_single_cert(chain, key).map_err(|error| {
            TlsError(format!(
                "cert_file {:?} and key_file {:?}: {error}",
                cert_file.display().to_string(),
                key_file.display().to_string()
            ))
        })?;
        for pin in &settings.pinned_certs {
            if pin.len() != 64 || !pin.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(TlsError(format!("pinned_certs: {pin:?} is not a hex SHA-256")));
            }
        }
        Ok(TlsContext { config: Arc::new(config), settings: Arc::new(settings.clone()) })
    }
}

fn certificates(path: &std::path::Path, key: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let shown = path.display().to_string();
    let iter = CertificateDer::pem_file_iter(path)
        .map_err(|error| TlsError(format!("{key} {shown:?}: cannot read: {error}")))?;
    let certificates = iter
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| TlsError(format!("{key} {shown:?}: not a PEM certificate: {error}")))?;
    if certificates.is_empty() {
        return Err(TlsError(format!("{key} {shown:?}: holds no PEM certificate")));
    }
    Ok(certificates)
}

/// ring's suites and groups, narrowed to those named. TLS 1.3 suites stay whatever
/// `cipher_suites` says, as in Go (its list applies to TLS 1.2 only).
fn provider_for(settings: &TlsSettings) -> Result<CryptoProvider, TlsError> {
    let mut provider = rustls::crypto::ring::default_provider();
    if !settings.cipher_suites.is_empty() {
        let mut chosen = Vec::new();
        for name in &settings.cipher_suites {
            let found = provider.cipher_suites.iter().find(|suite| go_suite_name(suite) == *name);
            match found {
                Some(suite) => chosen.push(*suite),
                // nats-server's wording.
                None => return Err(TlsError(format!("unrecognized cipher {name}"))),
            }
        }
        let tls13: Vec<_> = provider.cipher_suites.iter().filter(|suite| suite.tls13().is_some()).copied().collect();
        chosen.retain(|suite| suite.tls13().is_none());
        chosen.extend(tls13);
        provider.cipher_suites = chosen;
    }
    if !settings.curve_preferences.is_empty() {
        let mut chosen = Vec::new();
        for name in &settings.curve_preferences {
            let wanted = match name.as_str() {
                "X25519" => Some(rustls::NamedGroup::X25519),
                "CurveP256" | "P256" => Some(rustls::NamedGroup::secp256r1),
                "CurveP384" | "P384" => Some(rustls::NamedGroup::secp384r1),
                _ => None,
            };
            match provider.kx_groups.iter().find(|group| Some(group.name()) == wanted) {
                Some(group) => chosen.push(*group),
                None => return Err(TlsError(format!("unrecognized curve preference {name}"))),
            }
        }
        provider.kx_groups = chosen;
    }
    Ok(provider)
}

/// What `/connz` shows of a finished handshake.
pub fn facts(session: &rustls::ServerConnection, first: bool) -> crate::server::shard_ops::TlsFacts {
    let version = match session.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_2) => "1.2",
        _ => "1.3",
    };
    let cipher_suite = session.negotiated_cipher_suite().map(|suite| go_suite_name(&suite)).unwrap_or_default();
    crate::server::shard_ops::TlsFacts { version, cipher_suite, first }
}

/// The name Go (and so nats-server's configuration) gives a suite.
fn go_suite_name(suite: &rustls::SupportedCipherSuite) -> String {
    let name = suite.suite().as_str().unwrap_or_default();
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name.to_string(),
    }
}
