//! `/healthz` and `/jsz` answer as nats-server 2.15.1 does: both servers run side by side
//! with the same accounts configuration and the same streams, and every option is asked
//! of both (`/healthz` bodies and status codes byte for byte; `/jsz` field by field, with
//! the few configuration fields that differ for a reason listed). A stream stopped by a
//! failed fdatasync (fail-stop) makes `/healthz` answer 503 and name it.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use async_nats::jetstream;
use common::hub::{binary, free_port};
use common::TestServer;
use serde_json::Value;

/// Accounts as a multi-tenant user writes them: `A` with JetStream, `B` without.
const ACCOUNTS: &str = "accounts: {\n  A { users: [{user: a, password: a}], jetstream: enabled }\n  \
                        B { users: [{user: b, password: b}] }\n}\n";

/// `ACCOUNTS` and `C`, with JetStream and no stream.
const HEALTH_ACCOUNTS: &str = "accounts: {\n  A { users: [{user: a, password: a}], jetstream: enabled }\n  \
                        B { users: [{user: b, password: b}] }\n  \
                        C { users: [{user: c, password: c}], jetstream: enabled }\n}\n";

/// GET `path` with `Connection: close`; the status code and body.
fn get(port: u16, path: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to monitor");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP response");
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("status");
    match head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        true => (status, unchunked(body)),
        false => (status, body.to_string()),
    }
}

/// A chunked body (nats-server sends larger answers so) as one string.
fn unchunked(mut body: &str) -> String {
    let mut whole = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).expect("chunk size");
        if size == 0 {
            break;
        }
        whole.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    whole
}

/// A nats-server with `ACCOUNTS` and JetStream in a temporary store; killed on drop.
struct Reference {
    child: Child,
    port: u16,
    http_port: u16,
    _dir: tempfile::TempDir,
}

impl Reference {
    fn start() -> Reference {
        Reference::start_with(ACCOUNTS)
    }

    fn start_with(accounts: &str) -> Reference {
        let dir = tempfile::tempdir().unwrap();
        let http_port = free_port();
        let store = dir.path().join("store");
        let text = format!(
            "listen: 127.0.0.1:-1\nhttp_port: {http_port}\njetstream: {{ store_dir: {:?} }}\n{accounts}",
            store.display()
        );
        let config = dir.path().join("nats.conf");
        std::fs::write(&config, text).unwrap();
        let mut command = Command::new(binary());
        command.arg("-c").arg(&config).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = command.spawn().expect("start nats-server (set NATS_SERVER)");
        let port = port_from_log(&mut child, "nats-server");
        Reference { child, port, http_port, _dir: dir }
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The client port the process logs (`Listening for client connections on HOST:PORT`).
fn port_from_log(child: &mut Child, what: &str) -> u16 {
    let stderr = child.stderr.take().expect("stderr piped");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut sender = Some(sender);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if std::env::var_os("JETCORE_TEST_LOG").is_some() {
                eprintln!("[server] {line}");
            }
            let port = line
                .split("Listening for client connections on ")
                .nth(1)
                .and_then(|address| address.trim().rsplit(':').next().and_then(|port| port.parse::<u16>().ok()));
            if let Some(port) = port {
                if let Some(sender) = sender.take() {
                    let _ = sender.send(port);
                }
            }
        }
    });
    receiver.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("{what} did not report its port"))
}

/// jetcore with `ACCOUNTS` on two shards, monitoring on a port of its own.
fn jetcore() -> (TestServer, tempfile::NamedTempFile, u16) {
    jetcore_with_accounts(ACCOUNTS)
}

fn jetcore_with_accounts(accounts: &str) -> (TestServer, tempfile::NamedTempFile, u16) {
    let http_port = free_port();
    let file = tempfile::Builder::new().suffix(".conf").tempfile().unwrap();
    std::fs::write(file.path(), accounts).unwrap();
    let path = file.path().display().to_string();
    let server = TestServer::start(&["-c", &path, "--shards", "2", "-m", &http_port.to_string()]);
    (server, file, http_port)
}

/// In account `A`: stream `S` (file, one message) with durable consumer `C`, and an
/// empty memory stream `M`.
async fn populate(port: u16) {
    let client = async_nats::ConnectOptions::with_user_and_password("a".into(), "a".into())
        .connect(format!("nats://127.0.0.1:{port}"))
        .await
        .expect("a connects");
    let context = jetstream::new(client);
    let config = jetstream::stream::Config { name: "S".into(), subjects: vec!["s.>".into()], ..Default::default() };
    let stream = context.create_stream(config).await.expect("create S");
    let memory = jetstream::stream::Config {
        name: "M".into(),
        subjects: vec!["m.>".into()],
        storage: jetstream::stream::StorageType::Memory,
        ..Default::default()
    };
    context.create_stream(memory).await.expect("create M");
    context.publish("s.1", "hello".into()).await.expect("publish").await.expect("ack");
    let consumer = jetstream::consumer::pull::Config { durable_name: Some("C".into()), ..Default::default() };
    stream.create_consumer(consumer).await.expect("create C");
}

const HEALTHZ_QUERIES: &[&str] = &[
    "",
    "?js-enabled-only=true",
    "?js-enabled=1",
    "?js-server-only=1",
    "?js-meta-only=true",
    "?details=true",
    "?account=A",
    "?account=%41",
    "?account=NOPE",
    "?account=B&details=true",
    "?account=%24G",
    "?account=A&stream=S",
    "?account=A&stream=T",
    "?account=A&stream=T&details=1",
    "?account=A&stream=S&consumer=C",
    "?account=A&stream=S&consumer=D",
    "?account=A&stream=S&consumer=D&details=true",
    "?stream=S",
    "?stream=S&details=true",
    "?account=A&consumer=C",
    "?js-enabled-only=true&account=NOPE",
    "?js-server-only=true&account=NOPE&details=true",
    "?account=we%22ird&stream=a+b",
    // nats-server finds an account by its store directory, made by its first file
    // stream: C (JetStream, no stream) is not found; a memory stream is never checked.
    "?account=C",
    "?account=C&details=true",
    "?account=C&stream=S",
    "?account=C&stream=S&consumer=C",
    "?account=A&stream=M",
    "?account=A&stream=M&details=true",
    "?account=A&stream=M&consumer=C",
    "?js-enabled-only=maybe",
    "?details=yes",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_answers_every_option_as_nats_server_does() {
    let reference = Reference::start_with(HEALTH_ACCOUNTS);
    let (server, _config, http_port) = jetcore_with_accounts(HEALTH_ACCOUNTS);
    populate(reference.port).await;
    populate(server.port).await;
    let ports = (reference.http_port, http_port);
    tokio::task::spawn_blocking(move || {
        for query in HEALTHZ_QUERIES {
            let path = format!("/healthz{query}");
            let expected = get(ports.0, &path);
            assert_eq!(get(ports.1, &path), expected, "{path}");
        }
    })
    .await
    .unwrap();
}

/// What nats-server's `/jsz` has that jetcore's does not, or the other way, for a
/// reason: nats-server's default `sync_interval` (2 minutes) against jetcore's sync
/// `always`, its `strict` API mode, and its server-wide default consumer limit.
const JSZ_FIELDS_APART: &[&str] = &[".config.strict", ".config.sync_always", ".limits.default_max_consumers"];

/// Every field path of `value` (`.a.b[0].c`), with its value when a number or string is
/// the same on every run (not times, identities or directories).
fn fields(value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let inner_path = format!("{path}.{key}");
                if !JSZ_FIELDS_APART.contains(&inner_path.as_str()) {
                    fields(inner, &inner_path, out);
                }
            }
        }
        Value::Array(items) => {
            // nats-server lists streams and consumers in its maps' (random) order.
            let mut items: Vec<&Value> = items.iter().collect();
            items.sort_by_key(|item| item.get("name").and_then(Value::as_str).map(str::to_string));
            for (index, item) in items.into_iter().enumerate() {
                fields(item, &format!("{path}[{index}]"), out);
            }
        }
        _ => {
            let varies = ["now", "created", "ts", "server_id", "store_dir", "leader", "first_ts", "last_ts"]
                .iter()
                .any(|key| path.ends_with(&format!(".{key}")))
                || path.starts_with(".config.")
                // jetcore's API level (`$JS.API` features) is its own.
                || path == ".api.level"
                || path.contains("_nats.ver")
                || path.contains("_nats.level");
            match varies {
                true => out.push(path.to_string()),
                false => out.push(format!("{path} = {value}")),
            }
        }
    }
}

const JSZ_QUERIES: &[&str] = &[
    "",
    "?acc=A",
    "?acc=NOPE",
    "?acc=B",
    "?acc=%41&streams=1",
    "?accounts=true",
    "?accounts=t&offset=1",
    "?accounts=1&limit=1",
    "?acc=A&consumers=1",
    "?acc=A&consumers=1&config=1",
    "?streams=true&config=true",
    "?acc=NOPE&streams=1",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsz_has_nats_servers_fields_for_every_option() {
    let reference = Reference::start();
    let (server, _config, http_port) = jetcore();
    populate(reference.port).await;
    populate(server.port).await;
    let ports = (reference.http_port, http_port);
    tokio::task::spawn_blocking(move || {
        for query in JSZ_QUERIES {
            let path = format!("/jsz{query}");
            let (expected_status, expected) = get(ports.0, &path);
            let (status, body) = get(ports.1, &path);
            assert_eq!((status, expected_status), (200, 200), "{path}");
            let (mut want, mut got) = (Vec::new(), Vec::new());
            fields(&serde_json::from_str(&expected).unwrap(), "", &mut want);
            fields(&serde_json::from_str(&body).unwrap(), "", &mut got);
            // Memory streams' byte counts and per-message overheads match nats-server's,
            // so even `storage` and `bytes` compare.
            assert_eq!(got, want, "{path}\njetcore: {body}\nnats-server: {expected}");
        }
        for path in ["/jsz?accounts=yes", "/jsz?offset=x", "/jsz?limit=99999999999999999999", "/jsz?config=2"] {
            assert_eq!(get(ports.1, path), get(ports.0, path), "{path}");
        }
    })
    .await
    .unwrap();
}

/// jetcore started with `JETCORE_FAILPOINT=failpoint` (e.g. `fdatasync_error:1`: the
/// first fdatasync of a stream's log fails with EIO).
fn jetcore_with(failpoint: &str, store: &std::path::Path, config: &std::path::Path, http_port: u16) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_jetcore"));
    command
        .args(["-p", "-1", "-a", "127.0.0.1", "--shards", "2", "-m", &http_port.to_string()])
        .arg("-sd")
        .arg(store)
        .arg("-c")
        .arg(config)
        .env("JETCORE_FAILPOINT", failpoint)
        .env("JETCORE_DURABLE_WRITE", "fdatasync")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command.spawn().expect("start jetcore")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_stopped_by_a_failed_fdatasync_makes_healthz_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("jetcore.conf");
    std::fs::write(&config, ACCOUNTS).unwrap();
    let http_port = free_port();
    let mut child = jetcore_with("fdatasync_error:1", &dir.path().join("store"), &config, http_port);
    let port = port_from_log(&mut child, "jetcore");
    let client = async_nats::ConnectOptions::with_user_and_password("a".into(), "a".into())
        .request_timeout(Some(Duration::from_secs(5)))
        .connect(format!("nats://127.0.0.1:{port}"))
        .await
        .expect("a connects");
    let context = jetstream::new(client);
    let config = jetstream::stream::Config { name: "S".into(), subjects: vec!["s.>".into()], ..Default::default() };
    context.create_stream(config).await.expect("create S");
    let memory = jetstream::stream::Config {
        name: "M".into(),
        subjects: vec!["m.>".into()],
        storage: jetstream::stream::StorageType::Memory,
        ..Default::default()
    };
    context.create_stream(memory).await.expect("create M");
    let before = tokio::task::spawn_blocking(move || get(http_port, "/healthz")).await.unwrap();
    assert_eq!(before, (200, r#"{"status":"ok"}"#.to_string()));

    let acked = async { context.publish("s.1", "lost".into()).await?.await.map_err(Into::into) };
    let acked: Result<_, Box<dyn std::error::Error + Send + Sync>> = acked.await;
    assert!(acked.is_err(), "a publish whose fdatasync failed was acknowledged: {acked:?}");

    let answers = tokio::task::spawn_blocking(move || {
        ["/healthz", "/healthz?details=true", "/healthz?account=A&stream=S", "/healthz?account=A&stream=M"]
            .map(|path| get(http_port, path))
    })
    .await
    .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let [plain, details, named, other] = answers;
    assert_eq!(plain.0, 503, "{plain:?}");
    let plain: Value = serde_json::from_str(&plain.1).unwrap();
    assert_eq!(plain["status"], "unavailable");
    let error = plain["error"].as_str().unwrap();
    assert!(error.starts_with("JetStream stream 'A > S' is not current: "), "{error}");
    assert!(error.contains("fdatasync"), "the error names the failure: {error}");
    assert_eq!(details.0, 503, "{details:?}");
    let details: Value = serde_json::from_str(&details.1).unwrap();
    assert_eq!(details["status"], "error");
    assert_eq!(details["errors"].as_array().map(Vec::len), Some(1), "{details}");
    assert_eq!((&details["errors"][0]["type"], &details["errors"][0]["stream"]), (&"STREAM".into(), &"S".into()));
    assert_eq!(named.0, 503, "{named:?}");
    // A memory stream is not checked (nats-server 2.15.1 answers the same 404).
    let memory = r#"{"status":"unavailable","error":"JetStream stream \"M\" not found on account \"A\""}"#;
    assert_eq!(other, (404, memory.to_string()));
}

#[test]
fn a_shard_that_does_not_answer_makes_healthz_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("jetcore.conf");
    std::fs::write(&config, ACCOUNTS).unwrap();
    let http_port = free_port();
    let mut child = jetcore_with("health_snapshot_stall:1", &dir.path().join("store"), &config, http_port);
    port_from_log(&mut child, "jetcore");
    let started = std::time::Instant::now();
    let stalled = get(http_port, "/healthz");
    let waited = started.elapsed();
    let details = get(http_port, "/healthz?details=true&js-enabled-only=true");
    let server_only = get(http_port, "/healthz?js-server-only=true");
    let _ = child.kill();
    let _ = child.wait();
    let text = "JetStream not available: the shards did not answer within 2000 ms";
    assert_eq!(stalled, (503, format!(r#"{{"status":"unavailable","error":"{text}"}}"#)));
    assert!(waited >= Duration::from_secs(2) && waited < Duration::from_secs(5), "answered after {waited:?}");
    // Only the first ask stalls: the next one is answered by every shard.
    assert_eq!(details, (200, r#"{"status":"ok"}"#.to_string()));
    assert_eq!(server_only, (200, r#"{"status":"ok"}"#.to_string()));
}

/// While the shards still recover their streams, `/healthz` answers as nats-server 2.15.1
/// does before it is ready for connections (it recovers its streams first, too): 500,
/// recorded by polling nats-server through a start with 400 streams to recover.
#[test]
fn healthz_answers_500_until_the_server_is_ready() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("jetcore.conf");
    std::fs::write(&config, ACCOUNTS).unwrap();
    let http_port = free_port();
    let mut child = jetcore_with("startup_stall:1", &dir.path().join("store"), &config, http_port);
    let ask = |path: &str| {
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", http_port)).is_ok() {
                return get(http_port, path);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the monitor never listened");
    };
    let starting = [ask("/healthz"), ask("/healthz?details=true"), ask("/healthz?js-server-only=true")];
    port_from_log(&mut child, "jetcore");
    let ready = get(http_port, "/healthz");
    let _ = child.kill();
    let _ = child.wait();
    let error = "failed to be ready for connections after 1ms: server";
    let plain = (500, format!(r#"{{"status":"error","error":"{error}"}}"#));
    let details = (500, format!(r#"{{"status":"error","errors":[{{"type":"CONNECTION","error":"{error}"}}]}}"#));
    assert_eq!(starting, [plain.clone(), details, plain]);
    assert_eq!(ready, (200, r#"{"status":"ok"}"#.to_string()));
}
