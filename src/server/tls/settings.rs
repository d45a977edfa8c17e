//! What a `tls {}` block (or the `--tls*` flags) asks for, as written: paths and names.
//! Loading the files and checking the names is [`super::context`]'s job, at start and on
//! each reload.

use std::path::PathBuf;
use std::time::Duration;

use crate::limits;

#[derive(Clone, Debug, PartialEq)]
pub struct TlsSettings {
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    pub ca_file: Option<PathBuf>,
    /// Require a client certificate signed by `ca_file`.
    pub verify: bool,
    /// `verify`, and the client's user is named by its certificate.
    pub verify_and_map: bool,
    /// The handshake must finish within this (counted from when it starts).
    pub timeout: Duration,
    pub handshake_first: HandshakeFirst,
    /// `None`: TLS 1.2 and 1.3.
    pub min_version: Option<TlsVersion>,
    /// Go names (`TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`); empty: the provider's default.
    pub cipher_suites: Vec<String>,
    /// Go names (`X25519`, `CurveP256`, `CurveP384`); empty: the provider's default.
    pub curve_preferences: Vec<String>,
    /// Hex SHA-256 of client certificates' SubjectPublicKeyInfo; empty: any certificate.
    pub pinned_certs: Vec<String>,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            cert_file: None,
            key_file: None,
            ca_file: None,
            verify: false,
            verify_and_map: false,
            timeout: limits::TLS_TIMEOUT_DEFAULT,
            handshake_first: HandshakeFirst::Off,
            min_version: None,
            cipher_suites: Vec::new(),
            curve_preferences: Vec::new(),
            pinned_certs: Vec::new(),
        }
    }
}

impl TlsSettings {
    /// Whether client certificates are requested and checked.
    pub fn verifies_clients(&self) -> bool {
        self.verify || self.verify_and_map
    }
}

/// Which side speaks first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandshakeFirst {
    /// Plaintext INFO, then the client starts TLS.
    Off,
    /// The TLS handshake first, INFO inside it.
    Always,
    /// TLS first when the client sends within this delay, else the plaintext INFO.
    Fallback(Duration),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}
