//! The jetcore process of a kill -9 run: started on a data directory, restarted on the
//! same directory and port, and killed with SIGKILL. Its stderr is read by a thread
//! (a full pipe would block the server) that keeps the last lines for failure reports
//! and counts panics.
#![allow(dead_code)] // also used by tests/crash_full_disk.rs, which needs only part of it

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a start may take to report its listening port before it counts as hung.
pub const START_WAIT: Duration = Duration::from_secs(20);
/// Server log lines kept for a failure report.
const LOG_LINES_KEPT: usize = 200;

/// The server process under test.
pub struct ServerProcess {
    binary: PathBuf,
    store_dir: PathBuf,
    extra_args: Vec<String>,
    /// Environment for the next start (e.g. an armed failpoint).
    pub env: Vec<(String, String)>,
    child: Option<Child>,
    pub port: u16,
    /// Last log lines of every run, newest last.
    log: Arc<Mutex<VecDeque<String>>>,
    /// Lines containing "panicked" over all runs.
    panics: Arc<AtomicU64>,
}

/// Lifts RLIMIT_MEMLOCK so each glommio executor can register its I/O memory (the child
/// inherits it). Fails silently when not permitted; the server then warns and falls back.
pub fn raise_memlock() {
    let limit = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: setrlimit with a valid pointer to an initialised struct.
    unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &limit) };
}

impl ServerProcess {
    /// Starts `binary` on `store_dir` on a port the server picks.
    pub fn start(binary: &Path, store_dir: &Path, extra_args: &[String]) -> ServerProcess {
        raise_memlock();
        let mut server = ServerProcess {
            binary: binary.to_path_buf(),
            store_dir: store_dir.to_path_buf(),
            extra_args: extra_args.to_vec(),
            env: Vec::new(),
            child: None,
            port: 0,
            log: Arc::new(Mutex::new(VecDeque::new())),
            panics: Arc::new(AtomicU64::new(0)),
        };
        server.spawn(None).unwrap_or_else(|error| panic!("{error}\n{}", server.log_tail()));
        server
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Restarts on the same directory and port; the time the start took to listen.
    pub fn restart(&mut self) -> Result<Duration, String> {
        self.kill();
        let started = Instant::now();
        self.spawn(Some(self.port))?;
        Ok(started.elapsed())
    }

    /// SIGKILL, then reap. The process gets no chance to flush or sync anything.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends SIGKILL without reaping (the next `restart` or `kill` reaps).
    pub fn sigkill(&self) {
        if let Some(child) = &self.child {
            // SAFETY: kill has no memory-safety preconditions; the pid is our own child's,
            // not yet reaped, so it cannot name another process.
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        }
    }

    /// Whether the process exited by itself (a crash) since it was started.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut().and_then(|child| child.try_wait().ok().flatten())
    }

    pub fn panics(&self) -> u64 {
        self.panics.load(Ordering::Relaxed)
    }

    /// The last log lines, for a failure report.
    pub fn log_tail(&self) -> String {
        let log = self.log.lock().expect("log lock");
        log.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    fn spawn(&mut self, port: Option<u16>) -> Result<(), String> {
        let port_arg = port.map_or_else(|| "-1".to_string(), |p| p.to_string());
        let mut child = Command::new(&self.binary)
            .args(["-p", &port_arg, "-a", "127.0.0.1", "-sd"])
            .arg(&self.store_dir)
            .args(&self.extra_args)
            .env_remove("JETCORE_FAILPOINT")
            .envs(self.env.iter().cloned())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("start {}: {error}", self.binary.display()))?;
        let stderr = child.stderr.take().expect("stderr piped");
        let (sender, receiver) = mpsc::channel();
        let (log, panics) = (self.log.clone(), self.panics.clone());
        std::thread::spawn(move || read_log(stderr, sender, log, panics));
        match receiver.recv_timeout(START_WAIT) {
            Ok(port) => {
                self.port = port;
                self.child = Some(child);
                Ok(())
            }
            Err(_) => {
                let stacks = thread_stacks(child.id());
                let _ = child.kill();
                let status = child.wait();
                Err(format!("jetcore did not report its port within {START_WAIT:?} (exit: {status:?})\n{stacks}"))
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads the server's stderr to its end: sends the port once it is listening, keeps the
/// last lines, counts panics.
fn read_log(
    stderr: std::process::ChildStderr,
    sender: mpsc::Sender<u16>,
    log: Arc<Mutex<VecDeque<String>>>,
    panics: Arc<AtomicU64>,
) {
    let mut sender = Some(sender);
    let echo = std::env::var_os("JETCORE_TEST_LOG").is_some();
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        if echo {
            eprintln!("[jetcore] {line}");
        }
        if line.contains("panicked") {
            panics.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(address) = line.split("Listening for client connections on ").nth(1) {
            let port = address.trim().rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
            if let (Some(port), Some(sender)) = (port, sender.take()) {
                let _ = sender.send(port);
            }
        }
        let mut log = log.lock().expect("log lock");
        if log.len() == LOG_LINES_KEPT {
            log.pop_front();
        }
        log.push_back(line);
    }
}

/// Every thread's backtrace of process `pid` (gdb, if installed), each thread's kernel
/// wait channel and each io_uring's state (fdinfo): what a hung start was waiting for.
fn thread_stacks(pid: u32) -> String {
    let mut report = String::from("threads (kernel wait channel):\n");
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            let path = task.path();
            let read = |name: &str| std::fs::read_to_string(path.join(name)).unwrap_or_default();
            report.push_str(&format!(
                "  {} {} wchan={}\n",
                task.file_name().to_string_lossy(),
                read("comm").trim(),
                read("wchan")
            ));
        }
    }
    // Each io_uring's submission/completion heads and what is in flight.
    if let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
        for fd in fds.flatten() {
            let target = std::fs::read_link(fd.path()).unwrap_or_default();
            if target.to_string_lossy().contains("io_uring") {
                let name = fd.file_name().to_string_lossy().into_owned();
                let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{name}")).unwrap_or_default();
                let head: Vec<&str> = info.lines().take(40).collect();
                report.push_str(&format!("io_uring fd {name}:\n  {}\n", head.join("\n  ")));
            }
        }
    }
    let gdb = Command::new("gdb")
        .args(["-p", &pid.to_string(), "-batch", "-ex", "thread apply all bt"])
        .stdin(Stdio::null())
        .output();
    match gdb {
        Ok(output) => report.push_str(&String::from_utf8_lossy(&output.stdout)),
        Err(error) => report.push_str(&format!("(no gdb backtraces: {error})\n")),
    }
    report
}
