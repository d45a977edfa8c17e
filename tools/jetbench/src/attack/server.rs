//! Starts a server on a free port with a fresh store, and kills it when dropped.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub enum Kind {
    Jetcore { binary: String, shards: Option<u16> },
    NatsServer { binary: String },
}

impl Kind {
    pub fn label(&self) -> &'static str {
        match self {
            Kind::Jetcore { .. } => "jetcore",
            Kind::NatsServer { .. } => "nats-server",
        }
    }
}

pub struct Running {
    child: Child,
    pub port: u16,
    _store: tempfile::TempDir,
}

impl Running {
    pub fn start(kind: &Kind) -> std::io::Result<Running> {
        let store = tempfile::tempdir()?;
        let port = free_port()?;
        let store_dir = store.path().display().to_string();
        let port_text = port.to_string();
        let mut command = match kind {
            Kind::Jetcore { binary, shards } => {
                let mut command = Command::new(binary);
                command.args(["-p", &port_text, "-a", "127.0.0.1", "-sd", &store_dir]);
                if let Some(shards) = shards {
                    command.args(["--shards", &shards.to_string()]);
                }
                command
            }
            Kind::NatsServer { binary } => {
                let mut command = Command::new(binary);
                command.args(["-p", &port_text, "-a", "127.0.0.1", "-js", "-sd", &store_dir]);
                command
            }
        };
        let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
        let running = Running { child, port, _store: store };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err(std::io::Error::other("server did not listen within 20 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(running)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}
