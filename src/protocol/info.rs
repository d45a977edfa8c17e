//! The JSON bodies of INFO (server → client) and CONNECT (client → server).
//!
//! Field names are nats-server's (`type Info`, `type ClientOpts`). Optional INFO fields
//! are omitted rather than written empty, as Go's `omitempty` does: clients read a
//! present-but-empty field differently from a missing one.

use serde::{Deserialize, Deserializer, Serialize};

/// The INFO a server sends first on every connection (wire doc §1.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerInfo {
    pub server_id: String,
    pub server_name: String,
    /// Semver of the nats-server feature level implemented; clients gate features on it.
    pub version: String,
    /// Protocol level: 1 enables async INFO and the echo option.
    pub proto: u32,
    pub go: String,
    pub host: String,
    pub port: u16,
    /// Must be true: nats-py only sends `headers`/`no_responders` when this is present.
    pub headers: bool,
    /// async-nats treats a missing value as 0 and refuses every non-empty publish.
    pub max_payload: usize,
    #[serde(skip_serializing_if = "is_false")]
    pub jetstream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_ip: Option<String>,
    #[serde(skip_serializing_if = "is_false")]
    pub auth_required: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub tls_required: bool,
    /// Client certificates are required (`tls { verify }`).
    #[serde(skip_serializing_if = "is_false")]
    pub tls_verify: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub tls_available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub connect_urls: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// JetStream API level (nats-server 2.11+: 1 or more).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_lvl: Option<u32>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// The options a client sends in CONNECT. Unknown fields are ignored and `null` counts
/// as absent, so any client's CONNECT decodes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ConnectOptions {
    /// `+OK` after each op; on unless CONNECT turns it off (nats-server's default
    /// client options, also before CONNECT).
    #[serde(default = "default_true", deserialize_with = "null_as_true")]
    pub verbose: bool,
    /// Check publish subjects (`-ERR 'Invalid Publish Subject'`); on by default, as verbose.
    #[serde(default = "default_true", deserialize_with = "null_as_true")]
    pub pedantic: bool,
    #[serde(default, deserialize_with = "null_as_default")]
    pub tls_required: bool,
    #[serde(default)]
    pub auth_token: Option<String>,
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub pass: Option<String>,
    #[serde(default)]
    pub nkey: Option<String>,
    #[serde(default)]
    pub jwt: Option<String>,
    #[serde(default)]
    pub sig: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub lang: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
    /// nats-server accepts 0 or 1 and answers anything else with
    /// `-ERR 'invalid client protocol'`; kept signed so a negative value is seen.
    #[serde(default, deserialize_with = "null_as_default")]
    pub protocol: i64,
    /// Deliver the connection's own publishes back to it (default true).
    #[serde(default = "default_true", deserialize_with = "null_as_true")]
    pub echo: bool,
    #[serde(default, deserialize_with = "null_as_default")]
    pub headers: bool,
    #[serde(default, deserialize_with = "null_as_default")]
    pub no_responders: bool,
}

impl ConnectOptions {
    /// Decode the JSON of a CONNECT (`ClientOp::Connect { json }`).
    /// Invalid UTF-8 becomes U+FFFD, as Go's decoder does, instead of refusing the CONNECT.
    pub fn from_json(json: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_str(&String::from_utf8_lossy(json))
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            verbose: true,
            pedantic: true,
            tls_required: false,
            auth_token: None,
            user: None,
            pass: None,
            nkey: None,
            jwt: None,
            sig: None,
            name: None,
            lang: None,
            version: None,
            protocol: 0,
            echo: true,
            headers: false,
            no_responders: false,
        }
    }
}

fn default_true() -> bool {
    true
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

fn null_as_true<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(deserializer)?.unwrap_or(true))
}
