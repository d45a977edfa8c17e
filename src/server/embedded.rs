//! The whole server inside another program, as Go programs embed nats-server: the same
//! [`Options`] the command line parses into, the same start-up as the binary (which runs
//! through [`Server`] too), and a graceful shutdown.
//!
//! CONTRACT: [`ServerBuilder::start`] returns once every shard listens, with the bound port
//! (port 0: the OS picks one). The shards are threads of their own (pinned glommio
//! executors), so the calling program may run any runtime, or none: `start` and
//! [`Server::shutdown`] block the calling thread (from async code, call them where blocking
//! is allowed, e.g. `tokio::task::spawn_blocking`, or accept a short block). `shutdown` runs
//! the steps SIGTERM runs (`shutdown.rs`: in-flight publishes get their acks, consumer state
//! and checkpoints are written, connections are closed), then the shard threads end and
//! the store directory's lock is released, so a new server may open it. Dropping a
//! `Server` shuts it down the same way.
//!
//! An embedded server leaves the process's signals alone unless asked
//! ([`ServerBuilder::handle_signals`]), and logs through `tracing` to whatever subscriber
//! the program installed. The monitoring ports (`http_port`, `https_port`), when set, stop
//! with `shutdown` too, so the next server may bind them.
//!
//! ```no_run
//! let dir = tempfile::tempdir().unwrap();
//! let server = jetcore::Server::builder().port(0).store_dir(dir.path()).shards(1).start().unwrap();
//! println!("clients connect to {}", server.client_url());
//! server.shutdown().unwrap();
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::options::{CliError, Command, Options};
use super::run::{self, Running, Signals, StartError};

/// A running server; see the module documentation.
pub struct Server {
    /// `None` once shut down (or waited for).
    running: Option<Running>,
    host: String,
    port: u16,
    store_dir: PathBuf,
}

/// Options for a [`Server`], starting from the command line's defaults.
#[derive(Clone, Debug)]
pub struct ServerBuilder {
    options: Options,
    signals: Signals,
}

impl Server {
    /// A builder with the command line's defaults: `127.0.0.1:4222`, JetStream on, store
    /// in `./data`, one shard per CPU, fdatasync before every ack.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::from_options(Options::default())
    }

    /// The bound client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The address clients connect to, `nats://HOST:PORT`.
    pub fn client_url(&self) -> String {
        format!("nats://{}:{}", self.host, self.port)
    }

    /// The JetStream store directory.
    pub fn store_dir(&self) -> &Path {
        &self.store_dir
    }

    /// Shuts the server down gracefully and waits until its shard threads have ended.
    /// Blocks the calling thread, for up to `limits::SHUTDOWN_STEP_TIMEOUT` per step.
    pub fn shutdown(mut self) -> Result<(), StartError> {
        match self.running.take() {
            Some(running) => running.shut_down(),
            None => Ok(()),
        }
    }

    /// Blocks until the server stops; for a program whose only job is the server and
    /// whose signals the server handles (the `jetcore` binary).
    pub fn wait(mut self) -> Result<(), StartError> {
        match self.running.take() {
            Some(running) => running.wait(),
            None => Ok(()),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            if let Err(error) = running.shut_down() {
                tracing::error!("embedded server shutdown: {error}");
            }
        }
    }
}

impl ServerBuilder {
    /// Starts from options built elsewhere (a parsed command line or config file).
    pub fn from_options(options: Options) -> ServerBuilder {
        ServerBuilder { options, signals: Signals::Leave }
    }

    /// Parses nats-server's flags as the binary does (`["-js", "-p", "0", "-sd", DIR]`,
    /// `-c FILE` included). `--help`, `--version` and `--signal` are refused here.
    pub fn from_args<I, S>(args: I) -> Result<ServerBuilder, CliError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        match super::options::parse_args(args)? {
            Command::Run(options) => Ok(ServerBuilder::from_options(*options)),
            Command::Help | Command::Version | Command::Signal { .. } => {
                Err(CliError::UnexpectedArgument("--help, --version or --signal: they start no server".to_string()))
            }
        }
    }

    /// The options as they stand, to change any of them.
    pub fn options_mut(&mut self) -> &mut Options {
        &mut self.options
    }

    /// The address to listen on (`-a`).
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.options.host = host.into();
        self
    }

    /// The client port (`-p`); 0 lets the OS pick a free one ([`Server::port`] tells which).
    pub fn port(mut self, port: u16) -> Self {
        self.options.port = Some(port);
        self
    }

    /// The JetStream store directory (`-sd`).
    pub fn store_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.options.store_dir = dir.as_ref().to_path_buf();
        self
    }

    /// JetStream on or off (`-js`); on by default.
    pub fn jetstream(mut self, enabled: bool) -> Self {
        self.options.jetstream = enabled;
        self
    }

    /// Number of shards, each a pinned thread (`--shards`); default one per CPU.
    pub fn shards(mut self, shards: u16) -> Self {
        self.options.shards = Some(shards);
        self
    }

    /// fdatasync every `interval` instead of before every ack (`--sync_interval`): faster,
    /// and acknowledged messages of the last interval may be lost on power loss.
    pub fn sync_interval(mut self, interval: Duration) -> Self {
        self.options.sync_interval = Some(interval);
        self
    }

    /// The name reported in INFO and the monitoring endpoints (`-n`).
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.options.server_name = name.into();
        self
    }

    /// Takes SIGTERM and SIGINT (graceful shutdown, then the process exits), SIGUSR2 (lame
    /// duck) and SIGHUP (reload) as the binary does. Off by default: the program's signals
    /// stay its own.
    pub fn handle_signals(mut self, handle: bool) -> Self {
        self.signals = if handle { Signals::Handle } else { Signals::Leave };
        self
    }

    /// Starts the server; returns once every shard listens. Blocks the calling thread
    /// while the shards open their streams.
    pub fn start(self) -> Result<Server, StartError> {
        let host = self.options.host.clone();
        let store_dir = self.options.store_dir.clone();
        let running = run::start(self.options, self.signals)?;
        let port = running.port();
        Ok(Server { running: Some(running), host, port, store_dir })
    }
}
