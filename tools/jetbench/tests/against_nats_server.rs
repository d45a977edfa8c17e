//! jetbench against a real nats-server for about a second per scenario: the JSON results
//! must show a positive rate and no warnings. Skipped (with a message) when no nats-server
//! binary is found via NATS_SERVER_BIN, PATH or perf/.venv (created by perf/compare).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SERVER_READY_TIMEOUT: Duration = Duration::from_secs(10);
const RUN_DURATION: &str = "1s";

struct NatsServer {
    child: Child,
    url: String,
    _store: tempfile::TempDir,
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find_nats_server() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("NATS_SERVER_BIN") {
        return Some(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|directory| directory.join("nats-server"))
        .find(|candidate| candidate.is_file());
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../perf/.venv/bin/nats-server");
    on_path.or_else(|| venv.is_file().then_some(venv))
}

fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("binding a probe port");
    probe.local_addr().expect("probe address").port()
}

fn start_nats_server() -> Option<NatsServer> {
    let Some(binary) = find_nats_server() else {
        eprintln!(
            "SKIPPED: no nats-server binary \
             (set NATS_SERVER_BIN, put it on PATH, or run perf/compare)"
        );
        return None;
    };
    let store = tempfile::tempdir().expect("temporary store");
    let port = free_port();
    let child = Command::new(&binary)
        .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
        .arg(store.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|error| panic!("starting {}: {error}", binary.display()));
    let server = NatsServer { child, url: format!("nats://127.0.0.1:{port}"), _store: store };
    let deadline = Instant::now() + SERVER_READY_TIMEOUT;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nats-server did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(server)
}

fn run_jetbench(server: &NatsServer, arguments: &[&str]) -> serde_json::Value {
    let output_dir = tempfile::tempdir().expect("temporary output");
    let json_path = output_dir.path().join("result.json");
    let status = Command::new(env!("CARGO_BIN_EXE_jetbench"))
        .args(arguments)
        .args(["--url", &server.url, "--duration", RUN_DURATION, "--quiet", "--json"])
        .arg(&json_path)
        .status()
        .expect("running jetbench");
    assert!(status.success(), "jetbench {arguments:?} failed: {status}");
    let text = std::fs::read_to_string(&json_path).expect("reading the JSON result");
    serde_json::from_str(&text).expect("the JSON result parses")
}

fn assert_positive_rate(result: &serde_json::Value) {
    let rate = result["msgs_per_s"].as_f64().expect("msgs_per_s is a number");
    assert!(rate > 0.0, "rate {rate} in {result}");
    assert_eq!(result["errors"], serde_json::json!([]), "warnings in {result}");
}

#[test]
fn core_publish_and_jetstream_publish_report_positive_rates() {
    let Some(server) = start_nats_server() else {
        return;
    };

    let core = run_jetbench(&server, &["pub"]);
    assert_eq!(core["scenario"], "pub");
    assert_positive_rate(&core);

    let stream = run_jetbench(&server, &["js-pub", "--storage", "memory", "--window", "64"]);
    assert_eq!(stream["scenario"], "js-pub");
    assert_positive_rate(&stream);
    assert!(stream["messages_acknowledged"].as_u64().unwrap_or(0) > 0, "no acks in {stream}");
    assert!(stream["latency"]["p99_us"].as_f64().unwrap_or(0.0) > 0.0, "no latency in {stream}");
}
