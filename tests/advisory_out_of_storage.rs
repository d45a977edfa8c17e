//! `$JS.EVENT.ADVISORY.SERVER.OUT_OF_STORAGE` when a stream's writes find the disk full
//! (the `write_no_space` failpoint: several log writes in a row fail with ENOSPC): the
//! publishes that hit it are refused, the stream goes on taking publishes, and one
//! advisory arrives for the episode, not one per refused message, with the fields of
//! nats-server 2.15's `JSServerOutOfSpaceAdvisory` (`jetstream_events.go`: type
//! `io.nats.jetstream.advisory.v1.server_out_of_space`, `server`, `server_id`, `stream`,
//! `cluster` always present, `domain` when set).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

const ADVISORY_SUBJECT: &str = "$JS.EVENT.ADVISORY.SERVER.OUT_OF_STORAGE";

/// jetcore with `JETCORE_FAILPOINT=failpoint`, and the client port it reports.
fn jetcore_with(failpoint: &str, store: &std::path::Path) -> (Child, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_jetcore"))
        .args(["-p", "-1", "-a", "127.0.0.1", "--shards", "1", "-sd"])
        .arg(store)
        .env("JETCORE_FAILPOINT", failpoint)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start jetcore");
    let stderr = child.stderr.take().expect("stderr piped");
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut sender = Some(sender);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if std::env::var_os("JETCORE_TEST_LOG").is_some() {
                eprintln!("[jetcore] {line}");
            }
            let port = line.split("Listening for client connections on ").nth(1);
            let port = port.and_then(|address| address.trim().rsplit(':').next()?.parse::<u16>().ok());
            if let Some(port) = port {
                if let Some(sender) = sender.take() {
                    let _ = sender.send(port);
                }
            }
        }
    });
    let port = receiver.recv_timeout(Duration::from_secs(20)).expect("jetcore reports its port");
    (child, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_sends_one_out_of_storage_advisory_per_episode() {
    let dir = tempfile::tempdir().unwrap();
    // Log writes 3 to 6 find the disk full.
    let (mut child, port) = jetcore_with("write_no_space:3:4", &dir.path().join("store"));
    let client = async_nats::ConnectOptions::new()
        .request_timeout(Some(Duration::from_secs(5)))
        .connect(format!("nats://127.0.0.1:{port}"))
        .await
        .expect("connect");
    let mut advisories = client.subscribe(ADVISORY_SUBJECT).await.expect("subscribe");
    let create = client.request("$JS.API.STREAM.CREATE.S", r#"{"name":"S","subjects":["s.>"]}"#.into()).await;
    let create: Value = serde_json::from_slice(&create.expect("create reply").payload).unwrap();
    assert!(create.get("error").is_none(), "{create}");

    let mut refused = Vec::new();
    for index in 1..=10 {
        let reply = client.request("s.x", format!("m{index}").into()).await.expect("a pub ack");
        let ack: Value = serde_json::from_slice(&reply.payload).unwrap();
        if ack.get("error").is_some() {
            refused.push(index);
        }
    }
    assert_eq!(refused, vec![3, 4, 5, 6], "the publishes whose writes found the disk full");
    let info = client.request("$JS.API.STREAM.INFO.S", "".into()).await.expect("info");
    let info: Value = serde_json::from_slice(&info.payload).unwrap();
    assert_eq!(info["state"]["messages"], 6, "the stream took every other publish: {info}");

    let first = tokio::time::timeout(Duration::from_secs(2), advisories.next()).await;
    let first = first.expect("an OUT_OF_STORAGE advisory").expect("subscription open");
    let more = tokio::time::timeout(Duration::from_millis(500), advisories.next()).await;
    assert!(more.is_err(), "a second advisory for the same episode: {more:?}");
    let _ = child.kill();
    let _ = child.wait();

    let advisory: Value = serde_json::from_slice(&first.payload).unwrap();
    let mut fields: Vec<&str> = advisory.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["cluster", "id", "server", "server_id", "stream", "timestamp", "type"], "{advisory}");
    assert_eq!(advisory["type"], "io.nats.jetstream.advisory.v1.server_out_of_space");
    assert_eq!(advisory["stream"], "S");
    assert_eq!(advisory["cluster"], "");
    let server = client.server_info();
    assert_eq!(advisory["server_id"], server.server_id.as_str(), "{advisory}");
    assert_eq!(advisory["server"], server.server_name.as_str(), "{advisory}");
    assert!(advisory["id"].as_str().is_some_and(|id| !id.is_empty()), "{advisory}");
    assert!(advisory["timestamp"].as_str().is_some_and(|time| time.ends_with('Z')), "{advisory}");
}
