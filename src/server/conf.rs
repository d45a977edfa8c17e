//! Applies a nats-server-syntax configuration file to [`Options`]. Only the keys jetcore
//! implements are accepted; any other key is refused with its line, so a setting is never
//! silently ignored.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::conf_syntax::{self, ConfEntry, ConfValue};
use super::options::{NkeyUser, Options, User};

#[derive(Clone, Debug, PartialEq)]
pub struct ConfError {
    pub line: usize,
    pub message: String,
}

impl ConfError {
    pub(super) fn at(entry: &ConfEntry, message: impl Into<String>) -> ConfError {
        ConfError { line: entry.line, message: format!("{}: {}", entry.key, message.into()) }
    }

    pub fn io(file: &str, error: &std::io::Error) -> ConfError {
        ConfError { line: 0, message: format!("cannot read configuration file {file:?}: {error}") }
    }
}

impl fmt::Display for ConfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "configuration: {}", self.message)
        } else {
            write!(f, "configuration line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for ConfError {}

/// nats-server settings jetcore does not implement (yet): refused by name, so a config
/// written for nats-server says what is missing rather than "unknown key".
const NOT_SUPPORTED_KEYS: &[&str] =
    &["gateway", "websocket", "mqtt", "operator", "operators", "resolver", "resolver_preload"];

fn not_supported(entry: &ConfEntry) -> ConfError {
    ConfError::at(entry, "a nats-server setting jetcore does not support yet")
}

/// Parses `text` and applies every entry to `options`.
pub fn apply(text: &str, options: &mut Options) -> Result<(), ConfError> {
    let entries = conf_syntax::parse(text).map_err(|error| ConfError { line: error.line, message: error.message })?;
    for entry in &entries {
        apply_top_level(entry, options)?;
    }
    super::conf_accounts::check(options)
}

fn apply_top_level(entry: &ConfEntry, options: &mut Options) -> Result<(), ConfError> {
    match entry.key.to_ascii_lowercase().as_str() {
        "listen" => apply_listen(entry, options)?,
        "host" | "net" => options.host = string(entry)?,
        "port" => options.port = port(entry)?,
        "server_name" => options.server_name = string(entry)?,
        "http_port" | "monitor_port" => options.http_port = port(entry)?,
        "https_port" => options.https_port = port(entry)?,
        "tls" => options.tls = Some(super::conf_tls::tls_settings(entry)?),
        "allow_non_tls" => options.allow_non_tls = boolean(entry)?,
        "max_payload" => options.max_payload = size(entry)? as usize,
        "max_control_line" => options.max_control_line = size(entry)? as usize,
        "max_pending" => options.max_pending = size(entry)? as usize,
        "max_connections" | "max_conn" => options.max_connections = size(entry)? as usize,
        "max_subscriptions" | "max_subs" => options.max_subscriptions = size(entry)? as usize,
        "write_deadline" => options.write_deadline = duration(entry)?,
        "ping_interval" => options.ping_interval = duration(entry)?,
        "ping_max" => options.ping_max_outstanding = size(entry)? as u32,
        "lame_duck_duration" => options.lame_duck_duration = duration(entry)?,
        "lame_duck_grace_period" => options.lame_duck_grace_period = duration(entry)?,
        "debug" => options.debug = boolean(entry)?,
        "trace" => options.trace = boolean(entry)?,
        "logfile" | "log_file" => options.log_file = Some(PathBuf::from(string(entry)?)),
        "pidfile" | "pid_file" => options.pid_file = Some(PathBuf::from(string(entry)?)),
        "shards" => options.shards = Some(size(entry)?.clamp(1, u16::MAX as u64) as u16),
        "jetstream" => apply_jetstream(entry, options)?,
        "authorization" => apply_authorization(entry, options)?,
        "accounts" => super::conf_accounts::apply_accounts(entry, options)?,
        "no_auth_user" => options.no_auth_user = Some(string(entry)?),
        "system_account" | "system" => options.accounts.system_account = string(entry)?,
        "leafnodes" | "leaf" => options.leafnodes = Some(super::leaf::config::leaf_settings(entry)?),
        "cluster" => options.cluster_name = super::leaf::config::cluster_name(entry)?,
        key if NOT_SUPPORTED_KEYS.contains(&key) => return Err(not_supported(entry)),
        _ => return Err(ConfError::at(entry, "unknown configuration key")),
    }
    Ok(())
}

fn apply_listen(entry: &ConfEntry, options: &mut Options) -> Result<(), ConfError> {
    let text = match &entry.value {
        ConfValue::Integer(port) => format!(":{port}"),
        _ => string(entry)?,
    };
    let (host, port_text) = text.rsplit_once(':').ok_or_else(|| ConfError::at(entry, "expected HOST:PORT"))?;
    if !host.is_empty() {
        options.host = host.to_string();
    }
    options.port = match port_text.parse::<i64>() {
        Ok(-1) | Ok(0) => None,
        Ok(port) if (1..=65535).contains(&port) => Some(port as u16),
        _ => return Err(ConfError::at(entry, format!("invalid port {port_text:?}"))),
    };
    Ok(())
}

fn apply_jetstream(entry: &ConfEntry, options: &mut Options) -> Result<(), ConfError> {
    let children = match &entry.value {
        ConfValue::Bool(on) => {
            options.jetstream = *on;
            return Ok(());
        }
        ConfValue::String(word) if word.eq_ignore_ascii_case("enabled") => {
            options.jetstream = true;
            return Ok(());
        }
        ConfValue::String(word) if word.eq_ignore_ascii_case("disabled") => {
            options.jetstream = false;
            return Ok(());
        }
        ConfValue::Map(children) => children,
        _ => return Err(ConfError::at(entry, "expected a block, true/false or enabled/disabled")),
    };
    options.jetstream = true;
    for child in children {
        match child.key.to_ascii_lowercase().as_str() {
            "store_dir" | "storedir" => options.store_dir = PathBuf::from(string(child)?),
            "max_memory_store" | "max_mem_store" | "max_mem" => options.max_memory_store = Some(size(child)?),
            "max_file_store" | "max_file" => options.max_file_store = Some(size(child)?),
            "sync_interval" | "sync" => {
                let text = match &child.value {
                    ConfValue::String(text) => text.clone(),
                    _ => return Err(ConfError::at(child, "expected a duration or `always`")),
                };
                options.sync_interval = parse_sync_interval(&text).map_err(|message| ConfError::at(child, message))?;
            }
            "enabled" | "enable" => options.jetstream = boolean(child)?,
            // nats-server's strict mode refuses unknown fields in API requests; jetcore's
            // API always does, so only `strict: true` describes it.
            "strict" if boolean(child)? => {}
            "strict" => return Err(ConfError::at(child, "jetcore's JetStream API is always strict")),
            "domain" => {
                let domain = string(child)?;
                super::leaf::config::validate_domain(&domain).map_err(|message| ConfError::at(child, message))?;
                options.jetstream_domain = Some(domain);
            }
            "unique_tag" | "max_buffered_msgs" | "max_buffered_size" => {}
            "limits" => return Err(not_supported(child)),
            _ => return Err(ConfError::at(child, "unknown jetstream configuration key")),
        }
    }
    Ok(())
}

fn apply_authorization(entry: &ConfEntry, options: &mut Options) -> Result<(), ConfError> {
    let ConfValue::Map(children) = &entry.value else {
        return Err(ConfError::at(entry, "expected a block"));
    };
    for child in children {
        match child.key.to_ascii_lowercase().as_str() {
            "token" => options.token = Some(string(child)?),
            "user" | "username" => options.user = Some(string(child)?),
            "password" | "pass" => options.pass = Some(string(child)?),
            "users" => {
                let (users, nkeys) = users(child, None)?;
                add_users(child, options, users, nkeys)?;
            }
            "timeout" => options.auth_timeout = Some(duration_seconds(child)?),
            "default_permissions" => options.default_permissions = Some(super::conf_permissions::permissions(child)?),
            // nats-server 2.15 accepts `permissions` beside a single user and ignores it
            // (checked: the user could still publish anywhere); refused here instead, so
            // nobody believes a rule holds that does not.
            "permissions" => {
                return Err(ConfError::at(child, "permissions belong in a `users` entry (or use default_permissions)"))
            }
            _ => return Err(ConfError::at(child, "unsupported authorization key")),
        }
    }
    if options.token.is_some() && !(options.users.is_empty() && options.nkeys.is_empty()) {
        return Err(ConfError::at(entry, "can not have a token and a users array"));
    }
    Ok(())
}

/// Adds users to the server's list, refusing a name or key already listed (in
/// `authorization` or in any account), as nats-server.
pub(super) fn add_users(
    entry: &ConfEntry,
    options: &mut Options,
    users: Vec<User>,
    nkeys: Vec<NkeyUser>,
) -> Result<(), ConfError> {
    for user in users {
        if options.users.iter().any(|listed| listed.name == user.name) {
            return Err(ConfError::at(entry, format!("Duplicate user {:?} detected", user.name)));
        }
        options.users.push(user);
    }
    for nkey in nkeys {
        if options.nkeys.iter().any(|listed| listed.public_key == nkey.public_key) {
            return Err(ConfError::at(entry, format!("Duplicate nkey {:?} detected", nkey.public_key)));
        }
        options.nkeys.push(nkey);
    }
    Ok(())
}

/// `users = [ {user: alice, password: s3cret, permissions: {...}}, {nkey: U...}, ... ]`:
/// password users and nkey users, with nats-server's checks and texts; `account` is the
/// account whose block lists them (`None`: `authorization`, so `$G`).
pub(super) fn users(entry: &ConfEntry, account: Option<&str>) -> Result<(Vec<User>, Vec<NkeyUser>), ConfError> {
    let ConfValue::Array(items) = &entry.value else {
        return Err(ConfError::at(entry, "expected an array of {user, password} blocks"));
    };
    let (mut users, mut nkeys) = (Vec::<User>::with_capacity(items.len()), Vec::<NkeyUser>::new());
    for item in items {
        let ConfValue::Map(fields) = item else {
            return Err(ConfError::at(entry, "expected an array of {user, password} blocks"));
        };
        let (mut name, mut password, mut nkey, mut permissions) = (None, None, None, None);
        for field in fields {
            match field.key.to_ascii_lowercase().as_str() {
                "user" | "username" => name = Some(string(field)?),
                "password" | "pass" => password = Some(string(field)?),
                "nkey" => nkey = Some(string(field)?),
                "permission" | "permissions" => permissions = Some(super::conf_permissions::permissions(field)?),
                _ => return Err(ConfError::at(field, "unsupported user key")),
            }
        }
        if let Some(public_key) = nkey {
            if super::nkey::user_public_key(&public_key).is_none() {
                return Err(ConfError::at(entry, "Not a valid public nkey for a user"));
            }
            if name.is_some() || password.is_some() {
                return Err(ConfError::at(entry, "Nkey users do not take usernames or passwords"));
            }
            if nkeys.iter().any(|listed| listed.public_key == public_key) {
                return Err(ConfError::at(entry, format!("Duplicate nkey {public_key:?} detected")));
            }
            nkeys.push(NkeyUser { public_key, permissions, account: account.map(str::to_string) });
            continue;
        }
        let Some(name) = name else {
            return Err(ConfError::at(entry, "a user entry lacks `user`"));
        };
        if users.iter().any(|listed| listed.name == name) {
            return Err(ConfError::at(entry, format!("Duplicate user {name:?} detected")));
        }
        let password = password.unwrap_or_default();
        users.push(User { name, password, permissions, account: account.map(str::to_string) });
    }
    Ok((users, nkeys))
}

/// `always` means fdatasync before every acknowledgement (returned as `None`).
pub fn parse_sync_interval(text: &str) -> Result<Option<Duration>, String> {
    if text.eq_ignore_ascii_case("always") {
        return Ok(None);
    }
    parse_duration(text).map(Some)
}

/// Go-style durations: `1h`, `2m`, `30s`, `100ms`, `10us`, `5ns`, combined (`1m30s`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let invalid = || format!("invalid duration {text:?}");
    let mut total = Duration::ZERO;
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(invalid)?;
        let number: f64 = rest[..digits].parse().map_err(|_| invalid())?;
        rest = &rest[digits..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return Err(invalid()),
        };
        total += Duration::from_secs_f64(number * seconds_per_unit);
        rest = &rest[unit_end..];
    }
    Ok(total)
}

pub(super) fn string(entry: &ConfEntry) -> Result<String, ConfError> {
    match &entry.value {
        ConfValue::String(text) => Ok(text.clone()),
        ConfValue::Integer(number) => Ok(number.to_string()),
        _ => Err(ConfError::at(entry, "expected a string")),
    }
}

pub(super) fn boolean(entry: &ConfEntry) -> Result<bool, ConfError> {
    match &entry.value {
        ConfValue::Bool(on) => Ok(*on),
        _ => Err(ConfError::at(entry, "expected true or false")),
    }
}

pub(super) fn size(entry: &ConfEntry) -> Result<u64, ConfError> {
    match &entry.value {
        ConfValue::Integer(number) if *number >= 0 => Ok(*number as u64),
        ConfValue::String(text) => match conf_syntax::parse_size(text) {
            Some(number) if number >= 0 => Ok(number as u64),
            _ => Err(ConfError::at(entry, format!("invalid size {text:?}"))),
        },
        _ => Err(ConfError::at(entry, "expected a non-negative number (suffixes K, MB, G allowed)")),
    }
}

fn port(entry: &ConfEntry) -> Result<Option<u16>, ConfError> {
    match &entry.value {
        ConfValue::Integer(-1) | ConfValue::Integer(0) => Ok(None),
        ConfValue::Integer(port) if (1..=65535).contains(port) => Ok(Some(*port as u16)),
        _ => Err(ConfError::at(entry, "expected a port from 1 to 65535, or -1")),
    }
}

/// A duration string, or a bare number of seconds (as nats-server accepts for timeouts).
pub(super) fn duration(entry: &ConfEntry) -> Result<Duration, ConfError> {
    match &entry.value {
        ConfValue::String(text) => parse_duration(text).map_err(|message| ConfError::at(entry, message)),
        _ => duration_seconds(entry),
    }
}

fn duration_seconds(entry: &ConfEntry) -> Result<Duration, ConfError> {
    match &entry.value {
        ConfValue::Integer(seconds) if *seconds >= 0 => Ok(Duration::from_secs(*seconds as u64)),
        ConfValue::Float(seconds) if *seconds >= 0.0 => Ok(Duration::from_secs_f64(*seconds)),
        ConfValue::String(_) => duration(entry),
        _ => Err(ConfError::at(entry, "expected a duration")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typical_file_applies() {
        let text = "listen: 127.0.0.1:-1\nserver_name: n1\nmax_payload: 2MB\n\
                    jetstream {\n store_dir: \"/tmp/js\"\n max_file_store: 10G\n sync_interval: 2m\n}\n\
                    authorization { user: alice, password: secret }\nshards: 2\n";
        let mut options = Options::default();
        apply(text, &mut options).unwrap();
        assert_eq!(options.port, None);
        assert_eq!(options.server_name, "n1");
        assert_eq!(options.max_payload, 2 << 20);
        assert_eq!(options.store_dir, PathBuf::from("/tmp/js"));
        assert_eq!(options.max_file_store, Some(10 << 30));
        assert_eq!(options.sync_interval, Some(Duration::from_secs(120)));
        assert_eq!(options.user.as_deref(), Some("alice"));
        assert_eq!(options.pass.as_deref(), Some("secret"));
        assert_eq!(options.shards, Some(2));
    }

    #[test]
    fn a_users_array_applies_and_permissions_beside_one_user_are_refused() {
        let text = "authorization {\n users = [\n  {user: alice, password: one}\n  {user: bob, password: two}\n ]\n}\n";
        let mut options = Options::default();
        apply(text, &mut options).unwrap();
        let names: Vec<(&str, &str)> = options.users.iter().map(|u| (u.name.as_str(), u.password.as_str())).collect();
        assert_eq!(names, vec![("alice", "one"), ("bob", "two")]);
        let text = "authorization {\n user: alice, password: one, permissions: {}\n}\n";
        let error = apply(text, &mut Options::default()).unwrap_err();
        assert!(error.to_string().contains("permissions"), "{error}");
        let error = apply("authorization { token: t, users = [{user: a}] }\n", &mut Options::default()).unwrap_err();
        assert!(error.to_string().contains("token"), "{error}");
    }

    #[test]
    fn unknown_keys_are_refused_with_their_line() {
        let mut options = Options::default();
        let error = apply("port: 4222\n\ngateway { port: 6222 }\n", &mut options).unwrap_err();
        assert_eq!(error.line, 3);
        assert!(error.to_string().contains("gateway"), "{error}");
        let error = apply("jetstream {\n  store_dir: x\n  bogus: 1\n}\n", &mut options).unwrap_err();
        assert_eq!(error.line, 3);
        let error = apply("port: 1\nleafnodes { listen: 127.0.0.1:7422 }\n", &mut options).unwrap_err();
        assert_eq!(
            error.to_string(),
            "configuration line 2: listen: jetcore is a leaf node only (the spoke): it does not accept leaf connections"
        );
        let error = apply("jetstream { limits { max_request_batch: 100 } }\n", &mut options).unwrap_err();
        assert!(error.to_string().contains("limits: a nats-server setting"), "{error}");
        let error = apply("jetstream { strict: false }\n", &mut options).unwrap_err();
        assert!(error.to_string().contains("always strict"), "{error}");
    }

    #[test]
    fn the_async_nats_suite_jetstream_block_applies() {
        let text = "jetstream: {\n  strict: true,\n  max_mem_store:  64MiB,\n  max_file_store: 10GiB\n}\n";
        let mut options = Options::default();
        apply(text, &mut options).unwrap();
        assert!(options.jetstream);
        assert_eq!(options.max_memory_store, Some(64 << 20));
        assert_eq!(options.max_file_store, Some(10 << 30));
    }

    #[test]
    fn bad_values_are_refused() {
        let mut options = Options::default();
        assert!(apply("port: 99999\n", &mut options).is_err());
        assert!(apply("jetstream { sync_interval: sometimes }\n", &mut options).is_err());
        assert!(apply("debug: 3\n", &mut options).is_err());
    }

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse_duration("10").is_err());
        assert_eq!(parse_sync_interval("always").unwrap(), None);
    }

    #[test]
    fn the_example_deployment_config_parses() {
        let mut options = Options::default();
        apply(include_str!("../../deploy/jetcore.conf"), &mut options).expect("deploy/jetcore.conf is valid");
        assert_eq!(options.http_port, Some(8222));
        assert_eq!(options.lame_duck_grace_period, Duration::from_secs(10));
        assert_eq!(options.token.as_deref(), Some("change-me"));
    }
}
