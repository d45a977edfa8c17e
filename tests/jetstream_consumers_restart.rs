//! Durable consumers survive kill -9: after a restart every acknowledged message stays
//! acknowledged, every unacknowledged one is redelivered, and the consumer resumes at
//! its position; a damaged state file does not lose the consumer.

mod common;

use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy};
use common::TestServer;
use futures::StreamExt;

const RECEIVE_TIMEOUT: Duration = Duration::from_secs(5);

async fn connect(server: &TestServer) -> jetstream::Context {
    jetstream::new(async_nats::connect(server.url()).await.expect("connect"))
}

async fn fetch_payloads(
    consumer: &jetstream::consumer::PullConsumer,
    max: usize,
    ack: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut batch = consumer.fetch().max_messages(max).messages().await.expect("fetch");
    let mut out = Vec::new();
    while let Some(message) = tokio::time::timeout(RECEIVE_TIMEOUT, batch.next()).await.expect("fetch ends") {
        let message = message.expect("message");
        let payload = String::from_utf8_lossy(&message.payload).to_string();
        if ack(&payload) {
            message.double_ack().await.expect("double ack");
        }
        out.push(payload);
    }
    out
}

async fn setup(server: &TestServer, stream: &str, messages: u32) -> jetstream::consumer::PullConsumer {
    let js = connect(server).await;
    let stream_handle = js
        .create_stream(jetstream::stream::Config {
            name: stream.to_string(),
            subjects: vec![format!("{stream}.>")],
            ..Default::default()
        })
        .await
        .expect("create stream");
    for index in 1..=messages {
        js.publish(format!("{stream}.m"), index.to_string().into()).await.unwrap().await.unwrap();
    }
    stream_handle
        .create_consumer(pull::Config {
            durable_name: Some("d".into()),
            ack_policy: AckPolicy::Explicit,
            ack_wait: Duration::from_secs(30),
            ..Default::default()
        })
        .await
        .expect("create consumer")
}

async fn reopen(server: &TestServer, stream: &str) -> jetstream::consumer::PullConsumer {
    let js = connect(server).await;
    let stream = js.get_stream(stream).await.expect("stream after restart");
    stream.get_consumer("d").await.expect("durable consumer after restart")
}

#[tokio::test]
async fn kill_and_restart_keeps_acks_and_redelivers_the_rest() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let consumer = setup(&server, "RST1", 10).await;
    let delivered = fetch_payloads(&consumer, 6, |p| ["1", "2", "3", "5"].contains(&p)).await;
    assert_eq!(delivered, ["1", "2", "3", "4", "5", "6"]);
    server.restart(); // SIGKILL, then start on the same store
    let mut consumer = reopen(&server, "RST1").await;
    let info = consumer.info().await.unwrap().clone();
    assert_eq!((info.delivered.stream_sequence, info.ack_floor.stream_sequence), (6, 3));
    assert_eq!((info.num_ack_pending, info.num_pending), (2, 4));
    let after = fetch_payloads(&consumer, 10, |_| true).await;
    assert_eq!(after, ["7", "8", "9", "10"], "resumes after its delivered position");
    let js = connect(&server).await;
    js.publish("RST1.m", "11".into()).await.unwrap().await.unwrap();
    assert_eq!(fetch_payloads(&consumer, 10, |_| true).await, ["11"]);
    // 4 and 6 were never acked: the restart gave them a fresh ack wait of 30 s.
    let info = consumer.info().await.unwrap().clone();
    assert_eq!((info.num_ack_pending, info.ack_floor.stream_sequence), (2, 3));
}

#[tokio::test]
async fn unacked_messages_are_redelivered_after_restart() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let js = connect(&server).await;
    let stream = js
        .create_stream(jetstream::stream::Config {
            name: "RST2".into(),
            subjects: vec!["RST2.>".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    for index in 1..=4u32 {
        js.publish("RST2.m", index.to_string().into()).await.unwrap().await.unwrap();
    }
    let consumer: jetstream::consumer::PullConsumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("d".into()),
            ack_policy: AckPolicy::Explicit,
            ack_wait: Duration::from_millis(700),
            ..Default::default()
        })
        .await
        .unwrap();
    let delivered = fetch_payloads(&consumer, 4, |p| p == "1" || p == "3").await;
    assert_eq!(delivered.len(), 4);
    server.restart();
    let consumer = reopen(&server, "RST2").await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    let again = fetch_payloads(&consumer, 10, |_| true).await;
    assert_eq!(again, ["2", "4"], "only the unacked ones come back");
    assert!(fetch_payloads(&consumer, 10, |_| true).await.is_empty());
}

#[tokio::test]
async fn damaged_state_file_keeps_the_consumer() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let consumer = setup(&server, "RST3", 3).await;
    assert_eq!(fetch_payloads(&consumer, 3, |_| true).await.len(), 3);
    server.kill();
    let state = server.store_dir.join("jetstream/streams/RST3/consumers/d.state");
    let mut bytes = std::fs::read(&state).expect("state file exists");
    // The first body byte (after the 16-byte checksummed prefix), not the block padding.
    bytes[16] ^= 0xFF;
    std::fs::write(&state, bytes).unwrap();
    server.restart();
    let consumer = reopen(&server, "RST3").await;
    let again = fetch_payloads(&consumer, 10, |_| true).await;
    assert_eq!(again, ["1", "2", "3"], "redelivered from an empty state, not lost");
}
