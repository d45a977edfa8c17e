//! TLS benchmark, jetcore against nats-server in the same run with the same certificate
//! (perf/tls.md): core publish and JetStream async publish with async-nats, plaintext
//! and over TLS, alternating servers; then a thousand TLS connections opened at once
//! while one more connection measures PING round trips.
//!
//! cargo run --release --example tls_bench -- NATS_SERVER_BINARY [ROUNDS] [storm]
//! (`storm`: only the thousand connections, not the throughput runs)

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CORE_MESSAGES: usize = 400_000;
const JS_MESSAGES: usize = 40_000;
const JS_WINDOW: usize = 256;
const PAYLOAD_BYTES: usize = 128;
const STORM_CONNECTIONS: usize = 1000;

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn start(binary: &str, is_nats: bool, config: &Path, store: &Path) -> Server {
    let port = free_port();
    let mut command = Command::new(binary);
    command.args(["-a", "127.0.0.1", "-p", &port.to_string(), "-sd"]).arg(store).arg("-c").arg(config);
    if is_nats {
        command.arg("-js");
    }
    let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start server");
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    std::thread::sleep(Duration::from_millis(300));
    Server { child, port }
}

fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    fields.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
        + fields.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
}

async fn client(port: u16, ca: Option<&Path>) -> async_nats::Client {
    let mut options = async_nats::ConnectOptions::new();
    if let Some(ca) = ca {
        options = options.add_root_certificates(ca.to_path_buf()).require_tls(true);
    }
    options.connect(format!("127.0.0.1:{port}")).await.expect("connect")
}

async fn core_publish(port: u16, ca: Option<&Path>) -> f64 {
    let client = client(port, ca).await;
    let payload = bytes::Bytes::from(vec![b'x'; PAYLOAD_BYTES]);
    let started = Instant::now();
    for _ in 0..CORE_MESSAGES {
        client.publish("bench.core", payload.clone()).await.unwrap();
    }
    // A request round trip: every publish before it was processed.
    let _ = client.flush().await;
    let _ = client.request("bench.none", "".into()).await;
    CORE_MESSAGES as f64 / started.elapsed().as_secs_f64()
}

async fn js_publish(port: u16, ca: Option<&Path>) -> f64 {
    let client = client(port, ca).await;
    let jetstream = async_nats::jetstream::new(client);
    let _ = jetstream.delete_stream("BENCH").await;
    jetstream
        .create_stream(async_nats::jetstream::stream::Config {
            name: "BENCH".into(),
            subjects: vec!["bench.js".into()],
            ..Default::default()
        })
        .await
        .expect("stream");
    let payload = bytes::Bytes::from(vec![b'x'; PAYLOAD_BYTES]);
    let started = Instant::now();
    let mut window = Vec::with_capacity(JS_WINDOW);
    for _ in 0..JS_MESSAGES {
        window.push(jetstream.publish("bench.js", payload.clone()).await.expect("publish"));
        if window.len() == JS_WINDOW {
            for ack in window.drain(..) {
                ack.await.expect("ack");
            }
        }
    }
    for ack in window.drain(..) {
        ack.await.expect("ack");
    }
    JS_MESSAGES as f64 / started.elapsed().as_secs_f64()
}

/// A rustls connection on its own thread sending PING and timing each PONG until told
/// to stop; returns the round trips.
fn ping_thread(
    port: u16,
    config: Arc<rustls::ClientConfig>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<Duration>> {
    std::thread::spawn(move || {
        let mut socket = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        socket.set_nodelay(true).unwrap();
        let mut byte = [0u8; 1];
        let mut line = Vec::new();
        while !line.ends_with(b"\r\n") {
            socket.read_exact(&mut byte).unwrap();
            line.push(byte[0]);
        }
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let session = rustls::ClientConnection::new(config, name).unwrap();
        let mut stream = rustls::StreamOwned::new(session, socket);
        stream.write_all(b"CONNECT {\"verbose\":false}\r\n").unwrap();
        let mut rtts = Vec::new();
        let mut buffer = [0u8; 256];
        while !stop.load(Ordering::Relaxed) {
            let sent = Instant::now();
            stream.write_all(b"PING\r\n").unwrap();
            let mut got = Vec::new();
            while !got.ends_with(b"PONG\r\n") {
                let read = stream.read(&mut buffer).unwrap();
                assert!(read > 0);
                got.extend_from_slice(&buffer[..read]);
            }
            rtts.push(sent.elapsed());
            std::thread::sleep(Duration::from_millis(2));
        }
        rtts
    })
}

async fn storm(port: u16, ca: &Path, config: Arc<rustls::ClientConfig>) -> (usize, Duration, Duration, Duration) {
    let stop = Arc::new(AtomicBool::new(false));
    let pinger = ping_thread(port, config, stop.clone());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..STORM_CONNECTIONS {
        let ca = ca.to_path_buf();
        tasks.push(tokio::spawn(async move {
            let options = async_nats::ConnectOptions::new().add_root_certificates(ca).require_tls(true);
            let client = options.connect(format!("127.0.0.1:{port}")).await.ok()?;
            client.flush().await.ok()?;
            Some(client)
        }));
    }
    let mut clients = Vec::new();
    for task in tasks {
        if let Ok(Some(client)) = task.await {
            clients.push(client);
        }
    }
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut rtts = pinger.join().unwrap();
    rtts.sort();
    let p50 = rtts.get(rtts.len() / 2).copied().unwrap_or_default();
    let max = rtts.last().copied().unwrap_or_default();
    (clients.len(), elapsed, p50, max)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let nats_binary = args.next().expect("usage: tls_bench NATS_SERVER [ROUNDS]");
    let rounds: usize = args.next().map(|r| r.parse().unwrap()).unwrap_or(2);
    let storm_only = args.next().as_deref() == Some("storm");
    let jetcore = concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/jetcore");
    let dir = tempfile::tempdir().unwrap();
    // Certificates: a CA and a server certificate for 127.0.0.1, shared by both servers.
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.subject_alt_names.push(rcgen::SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    std::fs::write(dir.path().join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
    let plain_config = dir.path().join("plain.conf");
    std::fs::write(&plain_config, "max_connections: 5000\n").unwrap();
    let tls_config = dir.path().join("tls.conf");
    std::fs::write(
        &tls_config,
        format!(
            "max_connections: 5000\ntls {{ cert_file: {:?}, key_file: {:?} }}\n",
            dir.path().join("cert.pem").display().to_string(),
            dir.path().join("key.pem").display().to_string()
        ),
    )
    .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    let client_config = Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    for round in 1..=rounds {
        for (name, binary, is_nats) in [("nats-server", nats_binary.as_str(), true), ("jetcore", jetcore, false)] {
            for (transport, config, ca) in
                [("plain", &plain_config, None), ("tls", &tls_config, Some(ca_file.as_path()))]
            {
                let store = tempfile::tempdir().unwrap();
                let server = start(binary, is_nats, config, store.path());
                if storm_only {
                    if transport == "tls" {
                        let (opened, elapsed, p50, max) = storm(server.port, &ca_file, client_config.clone()).await;
                        println!(
                            "round {round} {name:11} tls   {STORM_CONNECTIONS} connections at once: {opened} completed in {elapsed:?}; PING p50 {p50:?}, max {max:?} meanwhile"
                        );
                    }
                    continue;
                }
                let pid = server.child.id();
                let c0 = cpu_ticks(pid);
                let core = core_publish(server.port, ca).await;
                let c1 = cpu_ticks(pid);
                let js = js_publish(server.port, ca).await;
                let c2 = cpu_ticks(pid);
                let core_cpu = (c1 - c0) as f64 * 1e7 / CORE_MESSAGES as f64;
                let js_cpu = (c2 - c1) as f64 * 1e7 / JS_MESSAGES as f64;
                println!(
                    "round {round} {name:11} {transport:5} core publish {core:>10.0} msg/s ({core_cpu:.0} ns CPU/msg)  js async publish {js:>8.0} msg/s ({js_cpu:.0} ns CPU/msg)"
                );
                if transport == "tls" {
                    let (opened, elapsed, p50, max) = storm(server.port, &ca_file, client_config.clone()).await;
                    println!(
                        "round {round} {name:11} tls   {STORM_CONNECTIONS} connections at once: {opened} completed in {elapsed:?}; PING p50 {p50:?}, max {max:?} meanwhile"
                    );
                }
                drop(server);
            }
        }
    }
}
