//! The `leafnodes { }` block: which hubs jetcore joins as a leaf node (the spoke), and
//! with which credentials. jetcore is never the hub: a `listen`/`port` here is refused.

use std::time::Duration;

use super::super::conf::{parse_duration, string, ConfError};
use super::super::conf_syntax::{ConfEntry, ConfValue};
use crate::limits;

/// The leaf node settings of a configuration file.
#[derive(Clone, Debug, PartialEq)]
pub struct LeafSettings {
    pub remotes: Vec<LeafRemote>,
    /// Wait between attempts to dial a remote.
    pub reconnect_interval: Duration,
}

/// One hub to join: its URLs, tried in turn, and the local account the link binds to.
#[derive(Clone, Debug, PartialEq)]
pub struct LeafRemote {
    pub urls: Vec<LeafUrl>,
    /// The local account whose subjects cross this link; `$G` (the global account) when
    /// none is named. The account engine resolves it; until accounts exist only `$G` is.
    pub account: String,
}

/// A hub address with the credentials written in its URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafUrl {
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<String>,
    pub token: Option<String>,
}

impl LeafUrl {
    /// `nats-leaf://[user:password@ | token@]host[:port]` (schemes `nats` and `nats-leaf`).
    pub fn parse(text: &str) -> Result<LeafUrl, String> {
        let text = text.trim();
        let rest = match text.split_once("://") {
            Some((scheme, rest)) => match scheme.to_ascii_lowercase().as_str() {
                "nats-leaf" | "nats" => rest,
                "tls" | "ws" | "wss" => return Err(format!("url {text:?}: scheme {scheme:?} is not supported yet")),
                _ => return Err(format!("url {text:?}: unknown scheme {scheme:?}")),
            },
            None => text,
        };
        let rest = rest.trim_end_matches('/');
        let (credentials, address) = match rest.rsplit_once('@') {
            Some((credentials, address)) => (Some(credentials), address),
            None => (None, rest),
        };
        let (host, port) = match address.rsplit_once(':') {
            Some((host, port)) => {
                let port = port.parse::<u16>().ok().filter(|port| *port > 0);
                (host, port.ok_or_else(|| format!("url {text:?}: invalid port"))?)
            }
            None => (address, limits::LEAF_PORT_DEFAULT),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(format!("url {text:?}: missing host"));
        }
        let mut url = LeafUrl { host: host.to_string(), port, user: None, password: None, token: None };
        match credentials.map(|credentials| credentials.split_once(':')) {
            None => {}
            Some(Some((user, password))) => {
                url.user = Some(user.to_string());
                url.password = Some(password.to_string());
            }
            Some(None) => url.token = credentials.map(str::to_string),
        }
        Ok(url)
    }

    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Parses a `leafnodes { remotes: [...], reconnect: ... }` entry.
pub fn leaf_settings(entry: &ConfEntry) -> Result<LeafSettings, ConfError> {
    let ConfValue::Map(children) = &entry.value else {
        return Err(ConfError::at(entry, "expected a block"));
    };
    let mut settings =
        LeafSettings { remotes: Vec::new(), reconnect_interval: limits::LEAF_RECONNECT_INTERVAL_DEFAULT };
    for child in children {
        match child.key.to_ascii_lowercase().as_str() {
            "remotes" => settings.remotes = remotes(child)?,
            "reconnect" | "reconnect_delay" => settings.reconnect_interval = interval(child)?,
            "listen" | "port" | "host" | "advertise" | "no_advertise" | "authorization" => {
                return Err(ConfError::at(
                    child,
                    "jetcore is a leaf node only (the spoke): it does not accept leaf connections",
                ))
            }
            _ => return Err(ConfError::at(child, "unknown leafnodes configuration key")),
        }
    }
    Ok(settings)
}

fn remotes(entry: &ConfEntry) -> Result<Vec<LeafRemote>, ConfError> {
    let ConfValue::Array(items) = &entry.value else {
        return Err(ConfError::at(entry, "expected an array of remotes"));
    };
    items.iter().map(|item| remote(entry, item)).collect()
}

fn remote(entry: &ConfEntry, item: &ConfValue) -> Result<LeafRemote, ConfError> {
    let ConfValue::Map(children) = item else {
        return Err(ConfError::at(entry, "each remote must be a block"));
    };
    let mut remote = LeafRemote { urls: Vec::new(), account: "$G".to_string() };
    let (mut user, mut password) = (None, None);
    for child in children {
        match child.key.to_ascii_lowercase().as_str() {
            "url" | "urls" => remote.urls.extend(urls(child)?),
            "account" | "local" => remote.account = string(child)?,
            "user" | "username" => user = Some(string(child)?),
            "password" | "pass" => password = Some(string(child)?),
            "credentials" | "tls" | "ws_compression" | "compression" | "hub" | "deny_imports" | "deny_exports" => {
                return Err(ConfError::at(child, "a nats-server leaf remote setting jetcore does not support yet"))
            }
            _ => return Err(ConfError::at(child, "unknown leafnode remote configuration key")),
        }
    }
    if remote.urls.is_empty() {
        return Err(ConfError::at(entry, "a remote needs a url"));
    }
    for url in &mut remote.urls {
        if url.user.is_none() && url.token.is_none() {
            url.user = user.clone();
            url.password = password.clone();
        }
    }
    Ok(remote)
}

fn urls(entry: &ConfEntry) -> Result<Vec<LeafUrl>, ConfError> {
    let texts: Vec<String> = match &entry.value {
        ConfValue::String(text) => vec![text.clone()],
        ConfValue::Array(items) => items
            .iter()
            .map(|item| match item {
                ConfValue::String(text) => Ok(text.clone()),
                _ => Err(ConfError::at(entry, "expected URL strings")),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(ConfError::at(entry, "expected a URL or an array of URLs")),
    };
    texts.iter().map(|text| LeafUrl::parse(text).map_err(|message| ConfError::at(entry, message))).collect()
}

fn interval(entry: &ConfEntry) -> Result<Duration, ConfError> {
    match &entry.value {
        ConfValue::Integer(seconds) if *seconds > 0 => Ok(Duration::from_secs(*seconds as u64)),
        ConfValue::String(text) => parse_duration(text).map_err(|message| ConfError::at(entry, message)),
        _ => Err(ConfError::at(entry, "expected a positive duration")),
    }
}

/// `cluster { name: N }`: only the name, which a hub uses to tell leafs apart. jetcore
/// has no cluster routes of its own, so any other cluster setting is refused.
pub fn cluster_name(entry: &ConfEntry) -> Result<Option<String>, ConfError> {
    let ConfValue::Map(children) = &entry.value else {
        return Err(ConfError::at(entry, "expected a block"));
    };
    let mut name = None;
    for child in children {
        match child.key.to_ascii_lowercase().as_str() {
            "name" => {
                let text = string(child)?;
                if text.contains(char::is_whitespace) {
                    return Err(ConfError::at(child, "cluster name cannot contain spaces or new lines"));
                }
                name = Some(text);
            }
            _ => return Err(ConfError::at(child, "jetcore has no cluster routes: only the cluster name is accepted")),
        }
    }
    Ok(name)
}

/// nats-server's check of `jetstream { domain }`: the domain becomes a subject token.
pub fn validate_domain(domain: &str) -> Result<(), String> {
    if domain.is_empty() || domain.contains(['.', '*', '>']) || domain.contains(char::is_whitespace) {
        return Err(format!("invalid domain name: {domain:?} may not contain ., * or > or whitespace"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::conf_syntax;

    fn settings(text: &str) -> Result<LeafSettings, ConfError> {
        let entries = conf_syntax::parse(text).unwrap();
        leaf_settings(&entries[0])
    }

    #[test]
    fn urls_carry_credentials_and_default_port() {
        let url = LeafUrl::parse("nats-leaf://a:b@127.0.0.1").unwrap();
        assert_eq!((url.port, url.user.as_deref(), url.password.as_deref()), (7422, Some("a"), Some("b")));
        let url = LeafUrl::parse("nats://s3cret@hub:7000").unwrap();
        assert_eq!((url.host.as_str(), url.port, url.token.as_deref()), ("hub", 7000, Some("s3cret")));
        assert!(LeafUrl::parse("tls://hub:7422").is_err());
        assert!(LeafUrl::parse("nats://hub:x").is_err());
    }

    #[test]
    fn remotes_and_reconnect_apply() {
        let parsed = settings(
            "leafnodes { reconnect: \"250ms\", remotes: [ { urls: [\"nats://h1:1\", \"nats://h2:2\"], \
             user: u, password: p } ] }",
        )
        .unwrap();
        assert_eq!(parsed.reconnect_interval, Duration::from_millis(250));
        assert_eq!(parsed.remotes[0].urls.len(), 2);
        assert_eq!(parsed.remotes[0].urls[1].user.as_deref(), Some("u"));
        assert_eq!(parsed.remotes[0].account, "$G");
    }

    #[test]
    fn the_hub_side_is_refused() {
        let error = settings("leafnodes { port: 7422 }").unwrap_err();
        assert!(error.message.contains("leaf node only"), "{error}");
        assert!(settings("leafnodes { remotes: [ { account: A } ] }").is_err());
    }

    #[test]
    fn domains_must_be_one_token() {
        assert!(validate_domain("edge").is_ok());
        assert!(validate_domain("a.b").is_err());
        assert!(validate_domain("a*").is_err());
    }
}
