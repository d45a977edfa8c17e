//! Starts a real jetcore server process for a test: a fresh data directory, a random
//! port found from the server's own log line, SIGKILL on drop.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub struct TestServer {
    child: Option<Child>,
    pub port: u16,
    pub store_dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
    extra_args: Vec<String>,
    /// Environment variables set for the server process (and kept across restarts).
    env: Vec<(String, String)>,
    /// Set by `start_in`: the server runs there with no `-sd` of the harness's own.
    working_dir: Option<PathBuf>,
}

impl TestServer {
    /// A server with its own temporary store and the given extra flags.
    pub fn start(extra_args: &[&str]) -> TestServer {
        TestServer::start_with_env(extra_args, &[])
    }

    /// Like `start`, with environment variables (`(name, value)`) set for the server.
    pub fn start_with_env(extra_args: &[&str], env: &[(&str, &str)]) -> TestServer {
        let temp = tempfile::tempdir().expect("temp dir");
        let store_dir = temp.path().join("store");
        let extra_args: Vec<String> = extra_args.iter().map(|s| s.to_string()).collect();
        let env: Vec<(String, String)> =
            env.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect();
        let (child, port) = spawn(Launch::Store(&store_dir), None, &extra_args, &env);
        TestServer { child: Some(child), port, store_dir, _temp: Some(temp), extra_args, env, working_dir: None }
    }

    /// A server started as a user starts it: from `working_dir`, with only `args` (plus a
    /// random port), so the store is wherever those arguments (or the default) put it.
    pub fn start_in(working_dir: &Path, args: &[&str]) -> TestServer {
        let extra_args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (child, port) = spawn(Launch::WorkingDir(working_dir), None, &extra_args, &[]);
        let working_dir = Some(working_dir.to_path_buf());
        let store_dir = working_dir.clone().unwrap();
        TestServer { child: Some(child), port, store_dir, _temp: None, extra_args, env: Vec::new(), working_dir }
    }

    fn launch(&self) -> Launch<'_> {
        match &self.working_dir {
            Some(dir) => Launch::WorkingDir(dir),
            None => Launch::Store(&self.store_dir),
        }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Stops the process with SIGKILL (no chance to flush anything).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Restarts on the same port and store.
    pub fn restart(&mut self) {
        self.kill();
        let (child, port) = spawn(self.launch(), Some(self.port), &self.extra_args, &self.env);
        self.child = Some(child);
        self.port = port;
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Where a test server's data goes: a store directory the harness names (`-sd`), or
/// wherever the server's own arguments put it when started from a working directory.
#[derive(Clone, Copy)]
enum Launch<'a> {
    Store(&'a Path),
    WorkingDir(&'a Path),
}

fn spawn(launch: Launch<'_>, port: Option<u16>, extra_args: &[String], env: &[(String, String)]) -> (Child, u16) {
    match try_spawn(launch, port, extra_args, env, Duration::from_secs(20), false) {
        Ok(started) => started,
        Err(status) => {
            panic!("jetcore did not report its port within 20 s (exit: {status:?}); run with JETCORE_TEST_LOG=1")
        }
    }
}

/// Starts jetcore; on no port report within `wait` (or, with `refuse_failed_opens`, when
/// it logged a stream that failed to open), kills it and returns its exit status.
fn try_spawn(
    launch: Launch<'_>,
    port: Option<u16>,
    extra_args: &[String],
    env: &[(String, String)],
    wait: Duration,
    refuse_failed_opens: bool,
) -> Result<(Child, u16), std::io::Result<std::process::ExitStatus>> {
    let port_arg = port.map(|p| p.to_string()).unwrap_or_else(|| "-1".to_string());
    let mut command = Command::new(env!("CARGO_BIN_EXE_jetcore"));
    command.args(["-p", &port_arg, "-a", "127.0.0.1", "-V"]);
    match launch {
        Launch::Store(store_dir) => {
            command.arg("-sd").arg(store_dir);
        }
        Launch::WorkingDir(dir) => {
            command.current_dir(dir);
        }
    }
    command.args(extra_args).envs(env.iter().cloned()).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("start jetcore");
    let stderr = child.stderr.take().expect("stderr piped");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut sender = Some(sender);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if std::env::var_os("JETCORE_TEST_LOG").is_some() {
                eprintln!("[jetcore] {line}");
            }
            if refuse_failed_opens && line.contains("stream failed to open") {
                eprintln!("[jetcore] {line}");
                sender.take();
            }
            if let Some(address) = line.split("Listening for client connections on ").nth(1) {
                let port = address.trim().rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
                if let (Some(port), Some(sender)) = (port, sender.take()) {
                    let _ = sender.send(port);
                }
            }
        }
    });
    match receiver.recv_timeout(wait) {
        Ok(port) => Ok((child, port)),
        Err(_) => {
            let _ = child.kill();
            Err(child.wait())
        }
    }
}

/// A raw protocol connection for wire tests: reads the INFO line, then sends what it's told.
pub struct RawClient {
    pub stream: std::net::TcpStream,
    reader: BufReader<std::net::TcpStream>,
}

impl RawClient {
    pub fn connect(address: &str) -> (RawClient, String) {
        let stream = std::net::TcpStream::connect(address).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut info = String::new();
        reader.read_line(&mut info).expect("INFO line");
        (RawClient { stream, reader }, info)
    }

    pub fn send(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.stream.write_all(bytes).expect("write");
    }

    /// The next line, CRLF included; empty when the server closed the connection. The
    /// server's own PINGs are answered and skipped, as every client library does: jetcore
    /// sends one to a connection it is about to move to another shard (ARCHITECTURE,
    /// "Connection handoff"), at any point between two messages.
    pub fn line(&mut self) -> String {
        loop {
            let line = self.line_as_sent();
            if line != "PING\r\n" {
                return line;
            }
            self.send(b"PONG\r\n");
        }
    }

    /// The next line exactly as the server sent it, a PING included.
    pub fn line_as_sent(&mut self) -> String {
        let mut line = String::new();
        let _ = self.reader.read_line(&mut line);
        line
    }

    pub fn exact(&mut self, count: usize) -> Vec<u8> {
        use std::io::Read;
        let mut bytes = vec![0u8; count];
        self.reader.read_exact(&mut bytes).expect("read bytes");
        bytes
    }
}

/// Waits until `publisher`'s publishes reach subscriptions that `subscriber` made so far.
/// async-nats' `flush()` only writes its buffer (no PING round trip), so a publish from
/// another connection can race a SUB on any server; jetcore's shards learn each other's
/// interest over the mesh, which widens that window. A probe subscription made after
/// the others becomes visible after them (interest changes apply in order), so once a
/// probe message arrives, every earlier subscription is routable too.
pub async fn await_interest(subscriber: &async_nats::Client, publisher: &async_nats::Client) {
    use futures::StreamExt;
    let probe = subscriber.new_inbox();
    let mut probe_subscription = subscriber.subscribe(probe.clone()).await.expect("probe sub");
    subscriber.flush().await.expect("flush");
    for _ in 0..500 {
        publisher.publish(probe.clone(), "probe".into()).await.expect("probe publish");
        publisher.flush().await.expect("flush");
        let wait = Duration::from_millis(10);
        if let Ok(Some(_)) = tokio::time::timeout(wait, probe_subscription.next()).await {
            let _ = probe_subscription.unsubscribe().await;
            return;
        }
    }
    panic!("subscriptions never became visible to the publisher");
}

impl TestServer {
    /// The server process's resident memory in bytes (Linux `/proc`).
    pub fn resident_bytes(&self) -> u64 {
        let pid = self.child.as_ref().expect("server running").id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS line");
        let kib: u64 = line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("VmRSS value");
        kib * 1024
    }

    /// Restarts on the same port and store with different extra flags (e.g. another
    /// `--shards` count); later `restart()`s keep them.
    pub fn restart_with(&mut self, extra_args: &[&str]) {
        self.extra_args = extra_args.iter().map(|s| s.to_string()).collect();
        self.restart();
    }
}

impl TestServer {
    /// Like `restart_with`, but a start that does not report its port within a few
    /// seconds, or logs that a stream failed to open, is killed and tried again (up to a
    /// few times), reporting each on stderr. For tests whose subject is what survives a restart, not the start itself:
    /// jetcore's reopening of existing streams sometimes hangs or panics (see
    /// tests/jetstream_restart_startup.rs, which pins that bug down).
    pub fn restart_retrying(&mut self, extra_args: &[&str]) {
        const ATTEMPTS: usize = 8;
        self.extra_args = extra_args.iter().map(|s| s.to_string()).collect();
        self.kill();
        for attempt in 1..=ATTEMPTS {
            let wait = Duration::from_secs(4);
            match try_spawn(self.launch(), Some(self.port), &self.extra_args, &self.env, wait, true) {
                Ok((child, port)) => {
                    self.child = Some(child);
                    self.port = port;
                    return;
                }
                Err(status) => eprintln!(
                    "jetcore restart attempt {attempt} hung or failed to open a stream ({status:?}); retrying"
                ),
            }
        }
        panic!("jetcore did not restart in {ATTEMPTS} attempts");
    }
}

pub mod accounts;
pub mod hub;
pub mod jetstream;
pub mod session_recorder;
pub mod start_refusal;

impl TestServer {
    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("server running").id()
    }

    /// Sends `signal` (e.g. `libc::SIGTERM`) to the server process.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill has no memory-safety preconditions.
        let sent = unsafe { libc::kill(self.pid() as i32, signal) };
        assert_eq!(sent, 0, "signal {signal} to jetcore");
    }

    /// Waits up to `wait` for the process to exit by itself; its status, or `None` if it
    /// is still running (it is then left running).
    pub fn wait_exit(&mut self, wait: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + wait;
        loop {
            let child = self.child.as_mut()?;
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
