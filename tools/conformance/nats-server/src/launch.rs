//! Starting and killing one server process with nats-server's command line.

use std::fs;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::log_scan;

/// How long a start may take before the test fails. Generous: CI machines are small and
/// several tests start servers at once.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// A fixed port may still be held by the process just killed; a start that fails to bind
/// is tried again until this much time has passed.
const BIND_RETRY_TIMEOUT: Duration = Duration::from_secs(10);
const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// How long a killed server's listening socket may outlive it (see [`Running::kill`]).
const PORT_RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// The server binary: `JETCORE_BIN`, else this repository's `target/release/jetcore`.
pub fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("JETCORE_BIN") {
        return PathBuf::from(path);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../target/release/jetcore")
}

/// What stays the same across restarts: the configuration file and the directory with
/// the store, the log, the pid file and the process's own output.
pub struct Launch {
    config: String,
    directory: PathBuf,
}

/// A started, ready process.
pub struct Running {
    child: Option<Child>,
    /// `HOST:PORT` clients connect to.
    pub address: String,
}

enum StartFailure {
    /// The process exited before it was ready; the text is its log and output.
    Exited(String),
}

impl Launch {
    pub fn new(config: &str) -> Launch {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |t| t.subsec_nanos());
        let id = format!(
            "{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let directory = std::env::temp_dir().join(format!("jetcore-conformance-{id}"));
        fs::create_dir_all(&directory)
            .unwrap_or_else(|error| panic!("cannot create {directory:?}: {error}"));
        Launch { config: config.to_string(), directory }
    }

    pub fn store_dir(&self) -> PathBuf {
        self.directory.join("store")
    }

    fn log_file(&self) -> PathBuf {
        self.directory.join("server.log")
    }

    fn pid_file(&self) -> PathBuf {
        self.directory.join("server.pid")
    }

    fn output_file(&self) -> PathBuf {
        self.directory.join("server.out")
    }

    pub fn read_pid_file(&self) -> u32 {
        let text = fs::read_to_string(self.pid_file())
            .unwrap_or_else(|error| panic!("cannot read pid file {:?}: {error}", self.pid_file()));
        text.trim().parse().unwrap_or_else(|_| panic!("pid file holds {text:?}"))
    }

    pub fn remove_files(&self) {
        let _ = fs::remove_dir_all(&self.directory);
    }

    /// Starts the server; a start on a fixed port that fails to bind is retried.
    pub fn start_retrying(&self, port: Option<&str>) -> Running {
        let deadline = Instant::now() + BIND_RETRY_TIMEOUT;
        loop {
            match self.start(port) {
                Ok(running) => return running,
                Err(StartFailure::Exited(output))
                    if port.is_some() && is_bind_failure(&output) && Instant::now() < deadline =>
                {
                    thread::sleep(Duration::from_millis(100));
                }
                Err(StartFailure::Exited(output)) => panic!(
                    "{:?} exited before it was ready (config {:?}):\n{output}",
                    binary(),
                    self.config
                ),
            }
        }
    }

    fn start(&self, port: Option<&str>) -> Result<Running, StartFailure> {
        // Each start writes a fresh log so only this start's lines are read.
        let _ = fs::remove_file(self.log_file());
        let _ = fs::remove_file(self.pid_file());
        let output = fs::File::create(self.output_file())
            .unwrap_or_else(|error| panic!("cannot create {:?}: {error}", self.output_file()));
        let mut command = Command::new(binary());
        command
            .arg("--store_dir")
            .arg(self.store_dir())
            .arg("-p")
            .arg(port.unwrap_or("-1"))
            .arg("-l")
            .arg(self.log_file())
            .arg("-P")
            .arg(self.pid_file());
        if !self.config.is_empty() {
            command.arg("-c").arg(&self.config);
        }
        if let Ok(extra) = std::env::var("JETCORE_ARGS") {
            command.args(extra.split_whitespace());
        }
        let error_output = output.try_clone().expect("clone of an open file");
        command.stdin(Stdio::null()).stdout(output).stderr(error_output);
        let child = command
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {:?}: {error}", binary()));
        self.wait_ready(child)
    }

    fn wait_ready(&self, mut child: Child) -> Result<Running, StartFailure> {
        let started = Instant::now();
        loop {
            let log = fs::read_to_string(self.log_file()).unwrap_or_default();
            if let Some(address) = log_scan::ready_address(&log) {
                return Ok(Running { child: Some(child), address });
            }
            if let Ok(Some(status)) = child.try_wait() {
                return Err(StartFailure::Exited(format!("{status}\n{}", self.output_of_run())));
            }
            if started.elapsed() > START_TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{:?} was not ready after {START_TIMEOUT:?}:\n{}",
                    binary(),
                    self.output_of_run()
                );
            }
            thread::sleep(POLL_INTERVAL);
        }
    }

    fn output_of_run(&self) -> String {
        let log = fs::read_to_string(self.log_file()).unwrap_or_default();
        let output = fs::read_to_string(self.output_file()).unwrap_or_default();
        format!("--- log\n{log}--- output\n{output}")
    }
}

impl Running {
    pub fn port(&self) -> u16 {
        let (_, port) = self.address.rsplit_once(':').expect("HOST:PORT");
        port.parse().expect("a port number")
    }

    /// SIGKILL, then reap, then wait until the port refuses connections. Safe to call twice.
    ///
    /// The wait matters: the kernel tears down an exited process's io_uring instances
    /// asynchronously, and a listening socket that one holds keeps completing handshakes for
    /// a few milliseconds after the process is gone. A test that drops a server expects it
    /// gone, and a restart must not share the port with the dying socket.
    pub fn kill(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        let _ = child.kill();
        let _ = child.wait();
        let deadline = Instant::now() + PORT_RELEASE_TIMEOUT;
        while TcpStream::connect(self.address.as_str()).is_ok() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(1));
        }
    }
}

fn is_bind_failure(output: &str) -> bool {
    output.contains("in use") || output.contains("EADDRINUSE")
}
