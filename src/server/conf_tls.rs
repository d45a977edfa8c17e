//! The `tls {}` block of a configuration file, with nats-server's keys and value forms.
//! Names of suites and curves are checked when the certificates are loaded
//! ([`super::tls::TlsContext::load`]), where the provider's list is known.

use std::path::PathBuf;

use super::conf::{parse_duration, ConfError};
use super::conf_syntax::{ConfEntry, ConfValue};
use super::tls::{HandshakeFirst, TlsSettings, TlsVersion};
use crate::limits;

pub fn tls_settings(entry: &ConfEntry) -> Result<TlsSettings, ConfError> {
    let ConfValue::Map(children) = &entry.value else {
        return Err(ConfError::at(entry, "expected a block"));
    };
    let mut settings = TlsSettings::default();
    for child in children {
        match child.key.to_ascii_lowercase().as_str() {
            "cert_file" => settings.cert_file = Some(PathBuf::from(string(child)?)),
            "key_file" => settings.key_file = Some(PathBuf::from(string(child)?)),
            "ca_file" => settings.ca_file = Some(PathBuf::from(string(child)?)),
            "verify" => settings.verify = boolean(child)?,
            "verify_and_map" => settings.verify_and_map = boolean(child)?,
            "timeout" => settings.timeout = timeout(child)?,
            "handshake_first" | "first" | "immediate" => settings.handshake_first = handshake_first(child)?,
            "min_version" => settings.min_version = Some(min_version(child)?),
            "cipher_suites" => settings.cipher_suites = strings(child)?,
            "curve_preferences" => settings.curve_preferences = strings(child)?,
            "pinned_certs" => {
                settings.pinned_certs = strings(child)?.iter().map(|pin| pin.to_ascii_lowercase()).collect()
            }
            "insecure"
            | "verify_cert_and_check_known_urls"
            | "cert_store"
            | "cert_match"
            | "cert_match_by"
            | "ca_certs_match"
            | "ocsp_peer"
            | "certs"
            | "connection_rate_limit" => {
                return Err(ConfError::at(child, "a nats-server tls setting jetcore does not support yet"))
            }
            _ => return Err(ConfError::at(child, "unknown tls configuration key")),
        }
    }
    if settings.cert_file.is_none() || settings.key_file.is_none() {
        // nats-server's wording.
        return Err(ConfError::at(entry, "missing 'cert_file' or 'key_file' in TLS configuration"));
    }
    Ok(settings)
}

fn string(entry: &ConfEntry) -> Result<String, ConfError> {
    match &entry.value {
        ConfValue::String(text) => Ok(text.clone()),
        _ => Err(ConfError::at(entry, "expected a string")),
    }
}

fn boolean(entry: &ConfEntry) -> Result<bool, ConfError> {
    match &entry.value {
        ConfValue::Bool(value) => Ok(*value),
        _ => Err(ConfError::at(entry, "expected true or false")),
    }
}

fn strings(entry: &ConfEntry) -> Result<Vec<String>, ConfError> {
    match &entry.value {
        ConfValue::Array(values) => values
            .iter()
            .map(|value| match value {
                ConfValue::String(text) => Ok(text.clone()),
                _ => Err(ConfError::at(entry, "expected an array of strings")),
            })
            .collect(),
        ConfValue::String(text) => Ok(vec![text.clone()]),
        _ => Err(ConfError::at(entry, "expected an array of strings")),
    }
}

/// Seconds (a number, as nats-server's `timeout: 0.5`) or a duration string.
fn timeout(entry: &ConfEntry) -> Result<std::time::Duration, ConfError> {
    let duration = match &entry.value {
        ConfValue::Integer(seconds) if *seconds > 0 => std::time::Duration::from_secs(*seconds as u64),
        ConfValue::Float(seconds) if *seconds > 0.0 => std::time::Duration::from_secs_f64(*seconds),
        ConfValue::String(text) => parse_duration(text).map_err(|message| ConfError::at(entry, message))?,
        _ => return Err(ConfError::at(entry, "expected a positive number of seconds")),
    };
    Ok(duration)
}

/// `true`/`false`, `"auto"` (50 ms fallback) or a fallback duration, as nats-server.
fn handshake_first(entry: &ConfEntry) -> Result<HandshakeFirst, ConfError> {
    let invalid = |text: &str| ConfError::at(entry, format!("field {:?} value {text:?} is invalid", entry.key));
    match &entry.value {
        ConfValue::Bool(true) => Ok(HandshakeFirst::Always),
        ConfValue::Bool(false) => Ok(HandshakeFirst::Off),
        ConfValue::String(text) => match text.to_ascii_lowercase().as_str() {
            "true" | "on" => Ok(HandshakeFirst::Always),
            "false" | "off" => Ok(HandshakeFirst::Off),
            "auto" | "auto_fallback" => Ok(HandshakeFirst::Fallback(limits::TLS_HANDSHAKE_FIRST_FALLBACK_DEFAULT)),
            _ => parse_duration(text).map(HandshakeFirst::Fallback).map_err(|_| invalid(text)),
        },
        _ => Err(ConfError::at(entry, format!("field {:?} should be a boolean or string", entry.key))),
    }
}

fn min_version(entry: &ConfEntry) -> Result<TlsVersion, ConfError> {
    let text = match &entry.value {
        ConfValue::String(text) => text.clone(),
        ConfValue::Float(number) => format!("{number:.1}"),
        _ => return Err(ConfError::at(entry, "expected \"1.2\" or \"1.3\"")),
    };
    match text.as_str() {
        "1.2" => Ok(TlsVersion::Tls12),
        "1.3" => Ok(TlsVersion::Tls13),
        // nats-server refuses anything below 1.2 with this text.
        "1.0" | "1.1" => Err(ConfError::at(entry, "unsupported TLS version, minimum supported version is 1.2")),
        _ => Err(ConfError::at(entry, format!("unknown version: {text}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::conf_syntax;

    fn settings(text: &str) -> Result<TlsSettings, ConfError> {
        let entries = conf_syntax::parse(text).expect("syntax");
        tls_settings(&entries[0])
    }

    #[test]
    fn a_full_block_applies() {
        let settings = settings(
            "tls { cert_file: a.pem, key_file: k.pem, ca_file: ca.pem, verify_and_map: true, timeout: 0.5,\n\
             handshake_first: auto, min_version: \"1.3\", cipher_suites: [TLS_AES_128_GCM_SHA256],\n\
             curve_preferences: [X25519], pinned_certs: [ABCD] }\n",
        )
        .expect("valid");
        assert_eq!(settings.cert_file, Some(PathBuf::from("a.pem")));
        assert!(settings.verify_and_map && settings.verifies_clients());
        assert_eq!(settings.timeout, std::time::Duration::from_millis(500));
        assert_eq!(settings.handshake_first, HandshakeFirst::Fallback(limits::TLS_HANDSHAKE_FIRST_FALLBACK_DEFAULT));
        assert_eq!(settings.min_version, Some(TlsVersion::Tls13));
        assert_eq!(settings.pinned_certs, vec!["abcd".to_string()]);
    }

    #[test]
    fn handshake_first_takes_a_duration_and_refuses_words() {
        let fallback = settings("tls { cert_file: a, key_file: b, handshake_first: \"300ms\" }").expect("valid");
        assert_eq!(fallback.handshake_first, HandshakeFirst::Fallback(std::time::Duration::from_millis(300)));
        let error = settings("tls { cert_file: a, key_file: b, handshake_first: sometimes }").unwrap_err();
        assert!(error.to_string().contains("\"sometimes\" is invalid"), "{error}");
    }

    #[test]
    fn a_block_without_a_key_is_refused() {
        let error = settings("tls { cert_file: a.pem }").unwrap_err();
        assert!(error.to_string().contains("missing 'cert_file' or 'key_file'"), "{error}");
        let error = settings("tls { cert_file: a, key_file: b, min_version: \"1.1\" }").unwrap_err();
        assert!(error.to_string().contains("minimum supported version is 1.2"), "{error}");
    }
}
