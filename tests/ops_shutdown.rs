//! Graceful shutdown: SIGTERM while clients publish with acks leaves every acknowledged
//! message on disk (checked after a restart), a consumer's acks survive SIGTERM, and the
//! process exits 0.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy};
use common::TestServer;
use futures::StreamExt;

const PUBLISHERS: usize = 4;
const EXIT_WAIT: Duration = Duration::from_secs(15);

async fn connect(server: &TestServer) -> jetstream::Context {
    jetstream::new(async_nats::connect(server.url()).await.expect("connect"))
}

/// Publishes with acks until the connection fails; records every acked sequence.
async fn publish_until_stopped(js: jetstream::Context, publisher: usize, acked: Arc<Mutex<Vec<u64>>>) {
    for index in 0u64.. {
        let subject = format!("load.{publisher}");
        let Ok(pending) = js.publish(subject, format!("{publisher}-{index}").into()).await else { return };
        match tokio::time::timeout(Duration::from_secs(5), pending).await {
            Ok(Ok(ack)) => acked.lock().unwrap().push(ack.sequence),
            _ => return,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_publish_load_keeps_every_acked_message() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let js = connect(&server).await;
    js.create_stream(jetstream::stream::Config {
        name: "LOAD".into(),
        subjects: vec!["load.>".into()],
        ..Default::default()
    })
    .await
    .expect("create stream");
    let acked = Arc::new(Mutex::new(Vec::new()));
    let mut publishers = Vec::new();
    for publisher in 0..PUBLISHERS {
        // Separate connections, so they land on both shards.
        let js = connect(&server).await;
        publishers.push(tokio::spawn(publish_until_stopped(js, publisher, acked.clone())));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while acked.lock().unwrap().len() < 2_000 {
        assert!(std::time::Instant::now() < deadline, "publishers stalled at {} acks", acked.lock().unwrap().len());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.signal(libc::SIGTERM);
    let status = tokio::task::spawn_blocking(move || {
        let status = server.wait_exit(EXIT_WAIT);
        (server, status)
    });
    let (mut server, status) = status.await.unwrap();
    let status = status.expect("jetcore exits after SIGTERM");
    assert_eq!(status.code(), Some(0), "graceful shutdown exits 0");
    for publisher in publishers {
        publisher.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 2_000);

    server.restart();
    let js = connect(&server).await;
    let mut stream = js.get_stream("LOAD").await.expect("stream after restart");
    let state = stream.info().await.expect("info").state.clone();
    let highest = *acked.iter().max().unwrap();
    assert!(state.last_sequence >= highest, "acked up to {highest}, stream ends at {}", state.last_sequence);
    assert_eq!(state.first_sequence, 1);
    assert_eq!(state.messages, state.last_sequence, "no gaps: every stored sequence is present");
    // Spot-check the acked messages themselves, the last ones most of all.
    let mut sorted = acked.clone();
    sorted.sort_unstable();
    let tail = sorted.iter().rev().take(200);
    let sample = sorted.iter().step_by(97);
    for seq in tail.chain(sample) {
        let message = stream.get_raw_message(*seq).await.unwrap_or_else(|e| panic!("acked seq {seq} lost: {e}"));
        assert!(message.subject.starts_with("load."), "seq {seq} is {:?}", message.subject);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_acks_survive_sigterm() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let js = connect(&server).await;
    let stream = js
        .create_stream(jetstream::stream::Config {
            name: "ACKS".into(),
            subjects: vec!["acks.>".into()],
            ..Default::default()
        })
        .await
        .expect("create stream");
    for index in 1..=20 {
        js.publish("acks.m", index.to_string().into()).await.unwrap().await.unwrap();
    }
    let consumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("d".into()),
            ack_policy: AckPolicy::Explicit,
            ack_wait: Duration::from_secs(30),
            ..Default::default()
        })
        .await
        .expect("create consumer");
    let mut batch = consumer.fetch().max_messages(10).messages().await.expect("fetch");
    while let Some(message) = tokio::time::timeout(Duration::from_secs(5), batch.next()).await.expect("fetch ends") {
        // A plain ack (no reply awaited): only a graceful shutdown makes sure it is on disk.
        message.expect("message").ack().await.expect("ack");
    }
    js.get_stream("ACKS").await.expect("a round trip, so the acks were read");
    server.signal(libc::SIGTERM);
    let status = server.wait_exit(EXIT_WAIT).expect("jetcore exits after SIGTERM");
    assert_eq!(status.code(), Some(0));

    server.restart();
    let js = connect(&server).await;
    let mut consumer: jetstream::consumer::PullConsumer =
        js.get_stream("ACKS").await.unwrap().get_consumer("d").await.expect("consumer after restart");
    let info = consumer.info().await.expect("consumer info").clone();
    assert_eq!(info.ack_floor.stream_sequence, 10, "{info:?}");
    let mut batch = consumer.fetch().max_messages(1).messages().await.expect("fetch");
    let next = tokio::time::timeout(Duration::from_secs(5), batch.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(&next.payload[..], b"11", "resumes after the acked messages");
}

#[test]
fn a_second_signal_exits_at_once() {
    let mut server = TestServer::start(&["-c", &lame_duck_config(60, 30)]);
    let (_client, _info) = common::RawClient::connect(&server.address());
    server.signal(libc::SIGUSR2);
    std::thread::sleep(Duration::from_millis(300));
    // Lame duck is waiting out its grace period; SIGTERM now means "stop" and the
    // server is already stopping, so it exits at once and reports it was not clean.
    server.signal(libc::SIGTERM);
    let status = server.wait_exit(Duration::from_secs(5)).expect("exits at once");
    assert_eq!(status.code(), Some(1));
}

#[test]
fn lame_duck_tells_clients_refuses_new_ones_and_exits() {
    let mut server = TestServer::start(&["-c", &lame_duck_config(2, 1)]);
    let (mut client, _info) = common::RawClient::connect(&server.address());
    client.send(b"CONNECT {\"verbose\":false}\r\nPING\r\n");
    assert_eq!(client.line(), "PONG\r\n");
    // nats-server's way: `--signal ldm=PID` (it sends SIGUSR2).
    let sent = std::process::Command::new(env!("CARGO_BIN_EXE_jetcore"))
        .args(["--signal", &format!("ldm={}", server.pid())])
        .status()
        .expect("run jetcore --signal");
    assert!(sent.success());
    let line = client.line();
    assert!(line.starts_with("INFO ") && line.contains("\"ldm\":true"), "{line}");
    std::thread::sleep(Duration::from_millis(200));
    let refused = std::net::TcpStream::connect(server.address()).map(|stream| {
        stream.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut byte = [0u8; 1];
        std::io::Read::read(&mut &stream, &mut byte).unwrap_or(0)
    });
    assert!(matches!(refused, Err(_) | Ok(0)), "a new connection gets no INFO in lame duck");
    assert_eq!(client.line(), "", "the client is closed within the lame duck duration");
    let status = server.wait_exit(Duration::from_secs(10)).expect("exits after lame duck");
    assert_eq!(status.code(), Some(0));
}

/// A config file (leaked temp file: it must outlive the server) with lame duck timing.
fn lame_duck_config(duration_seconds: u64, grace_seconds: u64) -> String {
    let file = tempfile::Builder::new().suffix(".conf").tempfile().unwrap();
    let text = format!("lame_duck_duration: \"{duration_seconds}s\"\nlame_duck_grace_period: \"{grace_seconds}s\"\n");
    std::fs::write(file.path(), text).unwrap();
    let (_, path) = file.keep().unwrap();
    path.display().to_string()
}
