//! Server options and the command line, compatible with nats-server's flags so tools and
//! test harnesses that launch `nats-server` can launch jetcore.
//!
//! Go's `flag` package rules apply: a flag may start with `-` or `--`, its value may follow
//! as the next argument or after `=` (`-sd=DIR`), and boolean flags take no value
//! (`-js`, or `-js=true`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::permissions::Permissions;
use crate::limits;

/// Everything the server needs to start. Built from defaults, then a config file
/// (`-c`), then command-line flags, in that order: flags win, as in nats-server.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub host: String,
    /// `None` means "pick a free port" (`-p -1`, as nats-server's RANDOM_PORT).
    pub port: Option<u16>,
    pub server_name: String,
    pub jetstream: bool,
    pub store_dir: PathBuf,
    pub http_port: Option<u16>,
    pub user: Option<String>,
    pub pass: Option<String>,
    pub token: Option<String>,
    /// `authorization { users = [...] }`: each may connect with its own password.
    pub users: Vec<User>,
    /// `authorization { users = [ {nkey: U...} ] }`: each proves its key by signing the
    /// nonce sent in INFO.
    pub nkeys: Vec<NkeyUser>,
    /// `authorization { default_permissions }`: for listed users without their own.
    pub default_permissions: Option<Permissions>,
    /// `accounts { ... }` and `system_account`; `$G` alone when none is configured.
    pub accounts: super::account::Accounts,
    /// `no_auth_user`: a client that presents no credentials connects as this user.
    pub no_auth_user: Option<String>,
    pub log_file: Option<PathBuf>,
    pub pid_file: Option<PathBuf>,
    pub debug: bool,
    pub trace: bool,
    pub config_file: Option<PathBuf>,
    /// Number of shards (pinned executors); `None` means one per CPU.
    pub shards: Option<u16>,
    pub max_payload: usize,
    pub max_control_line: usize,
    pub max_pending: usize,
    pub max_connections: usize,
    /// Subscriptions one connection may hold (`max_subs`); 0: no limit (nats-server's default).
    pub max_subscriptions: usize,
    pub write_deadline: Duration,
    /// `authorization { timeout }`; `None`: see [`Options::auth_timeout`].
    pub auth_timeout: Option<Duration>,
    pub ping_interval: Duration,
    pub ping_max_outstanding: u32,
    /// `None`: fdatasync before every acknowledgement (the durable default).
    pub sync_interval: Option<Duration>,
    pub max_memory_store: Option<u64>,
    pub max_file_store: Option<u64>,
    pub lame_duck_duration: Duration,
    /// Lame duck waits this long before closing clients (nats-server's grace period).
    pub lame_duck_grace_period: Duration,
    /// `tls {}` (or `--tls*`): TLS on the client port, and HTTPS on `https_port`.
    pub tls: Option<super::tls::TlsSettings>,
    /// `tls` loaded from its files: set at start and on each reload, never by parsing.
    pub tls_context: Option<super::tls::TlsContext>,
    /// With `tls`: plaintext clients are served too (the first byte tells them apart).
    pub allow_non_tls: bool,
    /// Monitoring over HTTPS, with `tls`'s certificate.
    pub https_port: Option<u16>,
    /// The arguments the options came from, so a reload (SIGHUP) can read them again.
    pub command_line: Vec<String>,
    /// `leafnodes { remotes }`: the hubs this server joins as a leaf node.
    pub leafnodes: Option<super::leaf::config::LeafSettings>,
    /// `jetstream { domain }`: this server's JetStream domain (`$JS.<domain>.API`).
    pub jetstream_domain: Option<String>,
    /// `cluster { name }`: sent to a hub; each jetcore needs its own (leafnode.md, loops).
    pub cluster_name: Option<String>,
}

/// One entry of `authorization { users = [...] }` or of an account's `users`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub password: String,
    /// `None`: the default permissions, if any, else everything.
    pub permissions: Option<Permissions>,
    /// The account whose `users` list names this user; `None`: `$G`.
    pub account: Option<String>,
}

/// An nkey entry of `authorization { users = [...] }` or of an account's `users`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NkeyUser {
    /// The user's public key, `U…` (checked when the configuration is read).
    pub public_key: String,
    /// `None`: the default permissions, if any, else everything.
    pub permissions: Option<Permissions>,
    /// The account whose `users` list names this key; `None`: `$G`.
    pub account: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            host: "127.0.0.1".to_string(),
            port: Some(4222),
            server_name: String::new(),
            jetstream: true,
            store_dir: PathBuf::from("./data"),
            http_port: None,
            user: None,
            pass: None,
            token: None,
            users: Vec::new(),
            nkeys: Vec::new(),
            default_permissions: None,
            accounts: super::account::Accounts::default(),
            no_auth_user: None,
            log_file: None,
            pid_file: None,
            debug: false,
            trace: false,
            config_file: None,
            shards: None,
            max_payload: limits::PAYLOAD_BYTES_DEFAULT,
            max_control_line: limits::CONTROL_LINE_BYTES_MAX,
            max_pending: limits::CONNECTION_PENDING_BYTES_MAX,
            max_connections: limits::CONNECTIONS_MAX_DEFAULT,
            max_subscriptions: 0,
            write_deadline: limits::WRITE_DEADLINE_DEFAULT,
            auth_timeout: None,
            ping_interval: limits::PING_INTERVAL_DEFAULT,
            ping_max_outstanding: limits::PINGS_OUTSTANDING_MAX,
            sync_interval: None,
            max_memory_store: None,
            max_file_store: None,
            lame_duck_duration: limits::LAME_DUCK_DURATION_DEFAULT,
            lame_duck_grace_period: limits::LAME_DUCK_GRACE_PERIOD_DEFAULT,
            tls: None,
            tls_context: None,
            allow_non_tls: false,
            https_port: None,
            command_line: Vec::new(),
            leafnodes: None,
            jetstream_domain: None,
            cluster_name: None,
        }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub enum Command {
    Run(Box<Options>),
    Help,
    Version,
    /// `--signal COMMAND=PID` (or `--ldm PID`): send a running server a signal.
    Signal {
        command: String,
        pid: i32,
    },
}

/// A command-line mistake, worded for the person who typed it.
#[derive(Debug, PartialEq)]
pub enum CliError {
    UnknownFlag(String),
    MissingValue(String),
    BadValue {
        flag: String,
        value: String,
        expected: &'static str,
    },
    UnexpectedArgument(String),
    Config(super::conf::ConfError),
    /// The working directory is gone or unreadable, so relative paths mean nothing.
    WorkingDirectory(String),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::UnknownFlag(flag) => write!(f, "flag provided but not defined: -{flag}"),
            CliError::MissingValue(flag) => write!(f, "flag needs an argument: -{flag}"),
            CliError::BadValue { flag, value, expected } => {
                write!(f, "invalid value {value:?} for flag -{flag}: expected {expected}")
            }
            CliError::UnexpectedArgument(arg) => write!(f, "unexpected argument {arg:?}"),
            CliError::Config(error) => write!(f, "{error}"),
            CliError::WorkingDirectory(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for CliError {}

pub const USAGE: &str = "\
Usage: jetcore [options]

Server options:
    -a, --addr, --net <host>         Bind to host address (default: 127.0.0.1)
    -p, --port <port>                Use port for clients (default: 4222; -1 picks a free port)
    -n, --name, --server_name <name> Server name (default: generated)
    -P, --pid <file>                 File to store PID
    -m, --http_port <port>           Use port for http monitoring
    -ms, --https_port <port>         Use port for https monitoring
    -c, --config <file>              Configuration file (nats-server syntax)
    -l, --log <file>                 File to redirect log output
    -D, --debug                      Enable debugging output
    -V, --trace                      Trace the raw protocol
    -DV                              Debug and trace
    --shards <n>                     Number of shards, one pinned core each (default: all CPUs)

JetStream options:
    -js, --jetstream                 Enable JetStream (always on in jetcore)
    -sd, --store_dir <dir>           Storage directory (default: ./data)
    --sync_interval <duration>       fdatasync every interval instead of before each ack
                                     (faster, loses the last interval on power loss); default: always

Authorization options:
    --user <user>                    User required for connections
    --pass <password>                Password required for connections
    --auth <token>                   Authorization token required for connections

Signal a running server:
    -sl, --signal <cmd>=<pid>        Send a signal: ldm (lame duck), quit, term, stop, reload
    --ldm <pid>                      Put the server with this pid into lame duck mode
                                     (the same as --signal ldm=<pid>; SIGUSR2 does it too)

TLS options:
    --tls                            Enable TLS, do not verify clients (default: false)
    --tlscert <file>                 Server certificate file
    --tlskey <file>                  Private key for server certificate
    --tlsverify                      Enable TLS, verify client certificates
    --tlscacert <file>               Client certificate CA for verification

Common options:
    -h, --help                       Show this message
    -v, --version                    Show version
";

/// Flags that take a value.
const VALUE_FLAGS: &[&str] = &[
    "a",
    "addr",
    "net",
    "p",
    "port",
    "n",
    "name",
    "server_name",
    "P",
    "pid",
    "m",
    "http_port",
    "c",
    "config",
    "l",
    "log",
    "sd",
    "store_dir",
    "user",
    "pass",
    "auth",
    "shards",
    "sync_interval",
    "sl",
    "signal",
    "ldm",
    "ms",
    "https_port",
    "tlscert",
    "tlskey",
    "tlscacert",
];
/// Flags that take no value.
const BOOLEAN_FLAGS: &[&str] =
    &["js", "jetstream", "D", "debug", "V", "trace", "DV", "h", "help", "v", "version", "tls", "tlsverify"];

/// Parses nats-server-style arguments (without the program name). A `-c FILE` is read and
/// applied before the other flags, whatever its position.
pub fn parse_args<I, S>(args: I) -> Result<Command, CliError>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let command_line: Vec<String> = args.into_iter().map(Into::into).collect();
    let pairs = split_flags(command_line.clone())?;
    let mut options = Options { command_line, ..Options::default() };
    if let Some((_, file)) = pairs.iter().find(|(flag, _)| flag == "c" || flag == "config") {
        let file = file.clone().unwrap_or_default();
        let text = std::fs::read_to_string(&file)
            .map_err(|error| CliError::Config(super::conf::ConfError::io(&file, &error)))?;
        super::conf::apply(&text, &mut options).map_err(CliError::Config)?;
        options.config_file = Some(PathBuf::from(file));
    }
    for (flag, value) in pairs {
        match flag.as_str() {
            "h" | "help" => return Ok(Command::Help),
            "v" | "version" => return Ok(Command::Version),
            "c" | "config" => {}
            "sl" | "signal" | "ldm" => return signal_command(&flag, value.unwrap_or_default()),
            _ => apply_flag(&mut options, &flag, value)?,
        }
    }
    if options.tls.as_ref().is_some_and(|tls| tls.cert_file.is_none() || tls.key_file.is_none()) {
        return Err(CliError::Config(super::conf::ConfError {
            line: 0,
            message: "TLS Server certificate must be present and valid".to_string(),
        }));
    }
    options.resolve_paths().map_err(CliError::WorkingDirectory)?;
    Ok(Command::Run(Box::new(options)))
}

impl Options {
    /// How long a client has to authenticate: as set, else nats-server's default, the
    /// TLS handshake timeout plus one second with TLS and 2 s without.
    pub fn auth_timeout(&self) -> Duration {
        match (self.auth_timeout, &self.tls) {
            (Some(timeout), _) => timeout,
            (None, Some(tls)) => tls.timeout + Duration::from_secs(1),
            (None, None) => limits::AUTH_TIMEOUT_DEFAULT,
        }
    }

    /// Makes every path a user gave (store directory, config, log and pid files) absolute
    /// against the working directory the server was started in, once, before anything
    /// opens them: glommio's `Directory::open` cannot open a relative path (DESIGN §9),
    /// and a path logged or shown in `/jsz` should say where the data really is.
    fn resolve_paths(&mut self) -> Result<(), String> {
        let absolute = |path: &Path| {
            std::path::absolute(path)
                .map_err(|error| format!("cannot resolve {:?}: {error}", path.display().to_string()))
        };
        self.store_dir = absolute(&self.store_dir)?;
        for path in [&mut self.config_file, &mut self.log_file, &mut self.pid_file].into_iter().flatten() {
            *path = absolute(path)?;
        }
        Ok(())
    }
}

/// Turns the argument list into (flag, value) pairs, following Go's `flag` rules.
fn split_flags(args: Vec<String>) -> Result<Vec<(String, Option<String>)>, CliError> {
    let mut pairs = Vec::new();
    let mut iter = args.into_iter();
    while let Some(arg) = iter.next() {
        let Some(stripped) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            return Err(CliError::UnexpectedArgument(arg));
        };
        if stripped.is_empty() {
            return Err(CliError::UnexpectedArgument(arg));
        }
        let (name, inline_value) = match stripped.split_once('=') {
            Some((name, value)) => (name.to_string(), Some(value.to_string())),
            None => (stripped.to_string(), None),
        };
        if !BOOLEAN_FLAGS.contains(&name.as_str()) && !VALUE_FLAGS.contains(&name.as_str()) {
            return Err(CliError::UnknownFlag(name));
        }
        let value = if BOOLEAN_FLAGS.contains(&name.as_str()) || inline_value.is_some() {
            inline_value
        } else {
            Some(iter.next().ok_or_else(|| CliError::MissingValue(name.clone()))?)
        };
        pairs.push((name, value));
    }
    Ok(pairs)
}

fn apply_flag(options: &mut Options, flag: &str, value: Option<String>) -> Result<(), CliError> {
    let value_of = |value: Option<String>| value.ok_or_else(|| CliError::MissingValue(flag.to_string()));
    match flag {
        "a" | "addr" | "net" => options.host = value_of(value)?,
        "p" | "port" => options.port = parse_port(flag, &value_of(value)?)?,
        "n" | "name" | "server_name" => options.server_name = value_of(value)?,
        "P" | "pid" => options.pid_file = Some(PathBuf::from(value_of(value)?)),
        "m" | "http_port" => options.http_port = parse_port(flag, &value_of(value)?)?,
        "ms" | "https_port" => options.https_port = parse_port(flag, &value_of(value)?)?,
        "tls" | "tlsverify" => {
            if parse_bool(flag, value)? {
                let tls = options.tls.get_or_insert_with(Default::default);
                tls.verify |= flag == "tlsverify";
            }
        }
        "tlscert" => options.tls.get_or_insert_with(Default::default).cert_file = Some(PathBuf::from(value_of(value)?)),
        "tlskey" => options.tls.get_or_insert_with(Default::default).key_file = Some(PathBuf::from(value_of(value)?)),
        "tlscacert" => options.tls.get_or_insert_with(Default::default).ca_file = Some(PathBuf::from(value_of(value)?)),
        "l" | "log" => options.log_file = Some(PathBuf::from(value_of(value)?)),
        "D" | "debug" => options.debug = parse_bool(flag, value)?,
        "V" | "trace" => options.trace = parse_bool(flag, value)?,
        "DV" => {
            let on = parse_bool(flag, value)?;
            options.debug = on;
            options.trace = on;
        }
        "js" | "jetstream" => options.jetstream = parse_bool(flag, value)?,
        "sd" | "store_dir" => options.store_dir = PathBuf::from(value_of(value)?),
        "user" => options.user = Some(value_of(value)?),
        "pass" => options.pass = Some(value_of(value)?),
        "auth" => options.token = Some(value_of(value)?),
        "shards" => {
            let text = value_of(value)?;
            let shards = text.parse::<u16>().ok().filter(|n| *n > 0);
            let expected = "a shard count from 1 to 65535";
            let bad = || CliError::BadValue { flag: flag.to_string(), value: text.clone(), expected };
            options.shards = Some(shards.ok_or_else(bad)?);
        }
        "sync_interval" => {
            let text = value_of(value)?;
            options.sync_interval = super::conf::parse_sync_interval(&text).map_err(|_| CliError::BadValue {
                flag: flag.to_string(),
                value: text.clone(),
                expected: "a duration such as 2m or 100ms, or `always`",
            })?;
        }
        _ => return Err(CliError::UnknownFlag(flag.to_string())),
    }
    Ok(())
}

/// `--signal ldm=1234` (nats-server's form) or `--ldm 1234`.
fn signal_command(flag: &str, value: String) -> Result<Command, CliError> {
    let (command, pid) = match flag {
        "ldm" => ("ldm".to_string(), value.clone()),
        _ => match value.split_once('=') {
            Some((command, pid)) => (command.to_string(), pid.to_string()),
            None => (value.clone(), String::new()),
        },
    };
    let expected = "COMMAND=PID, COMMAND one of ldm, quit, term, stop, reload";
    let bad = || CliError::BadValue { flag: flag.to_string(), value: value.clone(), expected };
    if super::signals::for_command(&command).is_none() {
        return Err(bad());
    }
    let pid = pid.parse::<i32>().ok().filter(|pid| *pid > 0).ok_or_else(bad)?;
    Ok(Command::Signal { command, pid })
}

/// `-1` asks for a random free port, as nats-server's RANDOM_PORT does.
fn parse_port(flag: &str, text: &str) -> Result<Option<u16>, CliError> {
    if text == "-1" || text == "0" {
        return Ok(None);
    }
    text.parse::<u16>().map(Some).map_err(|_| CliError::BadValue {
        flag: flag.to_string(),
        value: text.to_string(),
        expected: "a port from 1 to 65535, or -1 for a random port",
    })
}

fn parse_bool(flag: &str, value: Option<String>) -> Result<bool, CliError> {
    match value.as_deref() {
        None | Some("true") | Some("1") | Some("t") | Some("T") | Some("TRUE") | Some("True") => Ok(true),
        Some("false") | Some("0") | Some("f") | Some("F") | Some("FALSE") | Some("False") => Ok(false),
        Some(other) => {
            Err(CliError::BadValue { flag: flag.to_string(), value: other.to_string(), expected: "true or false" })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Options {
        match parse_args(args.iter().copied()).expect("valid arguments") {
            Command::Run(options) => *options,
            other => panic!("expected Run, got {other:?}"),
        }
    }

    #[test]
    fn the_auth_timeout_defaults_to_the_tls_timeout_plus_one_second_with_tls() {
        let plain = Options::default();
        assert_eq!(plain.auth_timeout(), limits::AUTH_TIMEOUT_DEFAULT);
        let tls = super::super::tls::TlsSettings { timeout: Duration::from_secs(5), ..Default::default() };
        let with_tls = Options { tls: Some(tls), ..Options::default() };
        assert_eq!(with_tls.auth_timeout(), Duration::from_secs(6));
        let set = Options { auth_timeout: Some(Duration::from_secs(9)), ..with_tls };
        assert_eq!(set.auth_timeout(), Duration::from_secs(9));
    }

    #[test]
    fn nats_server_harness_flags_are_accepted() {
        let options = run(&["--store_dir", "/tmp/x", "-p", "-1", "-l", "log", "-P", "pid", "-js"]);
        assert_eq!(options.store_dir, PathBuf::from("/tmp/x"));
        assert_eq!(options.port, None);
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(options.log_file, Some(cwd.join("log")));
        assert_eq!(options.pid_file, Some(cwd.join("pid")));
        assert!(options.jetstream);
    }

    #[test]
    fn relative_paths_are_resolved_against_the_working_directory() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(run(&[]).store_dir, cwd.join("data"));
        assert_eq!(run(&["-sd", "d3"]).store_dir, cwd.join("d3"));
        assert_eq!(run(&["-sd", "./d2"]).store_dir, cwd.join("d2"));
        assert!(run(&["-sd", "../up"]).store_dir.is_absolute());
    }

    #[test]
    fn inline_values_and_double_dashes_work() {
        let options = run(&["-sd=/data/js", "--port=4333", "-a", "0.0.0.0", "-DV", "--shards=2"]);
        assert_eq!(options.store_dir, PathBuf::from("/data/js"));
        assert_eq!(options.port, Some(4333));
        assert_eq!(options.host, "0.0.0.0");
        assert!(options.debug && options.trace);
        assert_eq!(options.shards, Some(2));
    }

    #[test]
    fn bad_input_names_the_flag() {
        assert_eq!(parse_args(["--bogus"]).unwrap_err(), CliError::UnknownFlag("bogus".to_string()));
        assert_eq!(parse_args(["-p"]).unwrap_err(), CliError::MissingValue("p".to_string()));
        let error = parse_args(["-p", "70000"]).unwrap_err();
        assert!(error.to_string().contains("-p"), "{error}");
        assert!(matches!(parse_args(["--shards", "0"]), Err(CliError::BadValue { .. })));
        assert!(matches!(parse_args(["stray"]), Err(CliError::UnexpectedArgument(_))));
    }

    #[test]
    fn signal_commands_name_a_pid() {
        let ldm = Command::Signal { command: "ldm".into(), pid: 42 };
        assert_eq!(parse_args(["--signal", "ldm=42"]).unwrap(), ldm);
        assert_eq!(parse_args(["--ldm", "42"]).unwrap(), ldm);
        assert!(parse_args(["-sl", "ldm"]).is_err());
        assert!(parse_args(["-sl", "dance=42"]).is_err());
    }

    #[test]
    fn help_and_version() {
        assert_eq!(parse_args(["-h"]).unwrap(), Command::Help);
        assert_eq!(parse_args(["--version"]).unwrap(), Command::Version);
    }
}
