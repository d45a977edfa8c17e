//! The `nats_server` helper that async-nats's integration tests call, for jetcore.
//!
//! async-nats's tests (`tests/*.rs` in the published crate) start servers through a small
//! unpublished crate of this name. This one offers the same calls, written from how the
//! tests use them, and starts the jetcore binary instead of `nats-server`, with
//! nats-server's own flags: `--store_dir DIR -p PORT -l LOG -P PID [-c CONFIG]`.
//!
//! - Which binary: `JETCORE_BIN`, else `target/release/jetcore` in this repository. Since
//!   the flags are nats-server's, `JETCORE_BIN=/path/to/nats-server` runs the same tests
//!   against nats-server for comparison.
//! - `JETCORE_ARGS`: extra arguments (split on whitespace) appended to every start, e.g.
//!   `--shards 1`.
//! - Every start waits until the log says `Server is ready`, and takes the address from
//!   `Listening for client connections on HOST:PORT`; a server that exits first (say, it
//!   refused the config file) panics the test with the server's own output.
//! - Drop kills the process with SIGKILL (no graceful shutdown) and removes its files.
//! - [`Server::restart`] kills it the same way and starts it again on the same port with the
//!   same store directory, so everything the server made durable must still be there.

mod launch;
mod log_scan;

use std::path::PathBuf;
use std::process::Command;

use launch::{Launch, Running};

/// One server process and the directory holding its store, log and pid file.
pub struct Server {
    launch: Launch,
    running: Running,
}

impl Server {
    /// `nats://HOST:PORT`, with a wildcard host (`0.0.0.0`) replaced by `127.0.0.1`.
    pub fn client_url(&self) -> String {
        format!("nats://{}", self.running.address)
    }

    pub fn client_port(&self) -> u16 {
        self.running.port()
    }

    /// The process id from the server's pid file (`-P`).
    pub fn client_pid(&self) -> u32 {
        self.launch.read_pid_file()
    }

    /// Kills the server (SIGKILL) and starts it again on the same port with the same store
    /// directory and configuration. Returns once the new process is ready.
    pub fn restart(&mut self) {
        self.running.kill();
        let port = self.running.port().to_string();
        self.running = self.launch.start_retrying(Some(&port));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.running.kill();
        self.launch.remove_files();
    }
}

/// Several servers that form one cluster. jetcore is a single server, so
/// [`run_cluster`] never returns one; the type exists for the tests that name it.
pub struct Cluster {
    servers: Vec<Server>,
}

impl Cluster {
    pub fn client_url(&self) -> String {
        self.servers[0].client_url()
    }
}

/// Starts a server with a configuration file (`""` for none) on a random port.
pub fn run_server(config: &str) -> Server {
    run_server_with_port(config, None)
}

/// Starts a server with no configuration file on a random port.
pub fn run_basic_server() -> Server {
    run_server("")
}

/// Starts a server on `port` (a number as text; `None` picks a free port).
pub fn run_server_with_port(config: &str, port: Option<&str>) -> Server {
    let launch = Launch::new(config);
    let running = launch.start_retrying(port);
    Server { launch, running }
}

/// A three-node cluster in nats-server's helper. jetcore has no clustering (one server
/// serves every stream; replication is not built), so this panics with that reason.
pub fn run_cluster(config: &str) -> Cluster {
    panic!(
        "run_cluster({config:?}): jetcore does not support clustering \
         (a test that needs more than one clustered server cannot run against it)"
    );
}

/// Puts the server into lame duck mode the way nats-server's helper does: by running the
/// binary with `--signal ldm=PID`.
pub fn set_lame_duck_mode(server: &Server) {
    let pid = server.client_pid();
    let status = Command::new(launch::binary())
        .arg("--signal")
        .arg(format!("ldm={pid}"))
        .status()
        .unwrap_or_else(|error| panic!("cannot run {:?} --signal: {error}", launch::binary()));
    assert!(status.success(), "`--signal ldm={pid}` failed: {status}");
}

/// The store directory of a server (for tests of this helper).
pub fn store_dir(server: &Server) -> PathBuf {
    server.launch.store_dir()
}
