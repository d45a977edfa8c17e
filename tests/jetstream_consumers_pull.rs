//! Pull consumers through an unmodified client (async-nats) against a real jetcore on
//! two shards: fetch, batch, the continuous `messages()` stream, explicit acks, nak,
//! term, in-progress, redelivery after `ack_wait`, `max_deliver`, ack none, and the
//! info counters after each step.

mod common;

use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy, AckKind};
use common::TestServer;
use futures::StreamExt;

const RECEIVE_TIMEOUT: Duration = Duration::from_secs(5);

async fn setup(server: &TestServer, stream: &str, messages: u32) -> jetstream::Context {
    let client = async_nats::connect(server.url()).await.expect("connect");
    let js = jetstream::new(client);
    js.create_stream(jetstream::stream::Config {
        name: stream.to_string(),
        subjects: vec![format!("{stream}.>")],
        ..Default::default()
    })
    .await
    .expect("create stream");
    for index in 1..=messages {
        js.publish(format!("{stream}.m"), index.to_string().into()).await.unwrap().await.unwrap();
    }
    js
}

async fn pull_consumer(
    js: &jetstream::Context,
    stream: &str,
    config: pull::Config,
) -> jetstream::consumer::PullConsumer {
    let stream = js.get_stream(stream).await.expect("stream");
    stream.create_consumer(config).await.expect("create consumer")
}

async fn fetch(consumer: &jetstream::consumer::PullConsumer, max: usize) -> Vec<jetstream::Message> {
    let mut batch = consumer.fetch().max_messages(max).messages().await.expect("fetch");
    let mut out = Vec::new();
    while let Some(message) = tokio::time::timeout(RECEIVE_TIMEOUT, batch.next()).await.expect("fetch ends") {
        out.push(message.expect("message"));
    }
    out
}

fn payloads(messages: &[jetstream::Message]) -> Vec<String> {
    messages.iter().map(|m| String::from_utf8_lossy(&m.payload).to_string()).collect()
}

#[tokio::test]
async fn fetch_delivers_in_order_and_acks_move_the_floor() {
    let server = TestServer::start(&["--shards", "2"]);
    let js = setup(&server, "PULL1", 10).await;
    let mut consumer = pull_consumer(
        &js,
        "PULL1",
        pull::Config { durable_name: Some("d".into()), ack_policy: AckPolicy::Explicit, ..Default::default() },
    )
    .await;
    assert_eq!(consumer.info().await.unwrap().num_pending, 10);
    let first = fetch(&consumer, 4).await;
    assert_eq!(payloads(&first), ["1", "2", "3", "4"]);
    assert_eq!(first[0].subject.as_str(), "PULL1.m", "stored subject, not the inbox");
    let info = first[3].info().unwrap();
    assert_eq!((info.stream_sequence, info.consumer_sequence, info.delivered, info.pending), (4, 4, 1, 6));
    for message in &first {
        message.double_ack().await.expect("double ack answered");
    }
    let info = consumer.info().await.unwrap().clone();
    assert_eq!(info.num_pending, 6);
    assert_eq!(info.num_ack_pending, 0);
    assert_eq!((info.delivered.stream_sequence, info.ack_floor.stream_sequence), (4, 4));
    let rest = fetch(&consumer, 100).await;
    assert_eq!(rest.len(), 6, "no_wait fetch ends with 404 after a partial batch");
    let info = consumer.info().await.unwrap().clone();
    assert_eq!((info.num_pending, info.num_ack_pending), (0, 6));
    assert!(fetch(&consumer, 10).await.is_empty(), "nothing left: empty fetch");
}

#[tokio::test]
async fn nak_term_and_in_progress() {
    let server = TestServer::start(&["--shards", "2"]);
    let js = setup(&server, "PULL2", 3).await;
    let mut consumer = pull_consumer(
        &js,
        "PULL2",
        pull::Config {
            durable_name: Some("d".into()),
            ack_policy: AckPolicy::Explicit,
            ack_wait: Duration::from_millis(800),
            ..Default::default()
        },
    )
    .await;
    let batch = fetch(&consumer, 3).await;
    assert_eq!(batch.len(), 3);
    batch[0].ack_with(AckKind::Nak(None)).await.unwrap();
    batch[1].ack_with(AckKind::Term).await.unwrap();
    batch[2].ack_with(AckKind::Progress).await.unwrap();
    let again = fetch(&consumer, 3).await;
    assert_eq!(payloads(&again), ["1"], "only the nak'd message comes back at once");
    let info = again[0].info().unwrap();
    assert_eq!((info.delivered, info.consumer_sequence), (2, 4));
    again[0].double_ack().await.unwrap();
    // Keep 3 in progress past its original deadline, then let it lapse.
    tokio::time::sleep(Duration::from_millis(500)).await;
    batch[2].ack_with(AckKind::Progress).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(consumer.info().await.unwrap().num_redelivered, 0, "in progress: not redelivered yet");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let late = fetch(&consumer, 3).await;
    assert_eq!(payloads(&late), ["3"]);
    assert_eq!(late[0].info().unwrap().delivered, 2);
    let info = consumer.info().await.unwrap().clone();
    assert_eq!((info.num_ack_pending, info.num_redelivered), (1, 1));
    late[0].double_ack().await.unwrap();
    let info = consumer.info().await.unwrap().clone();
    assert_eq!((info.ack_floor.stream_sequence, info.num_ack_pending), (3, 0));
}

#[tokio::test]
async fn redelivery_after_ack_wait_until_max_deliver() {
    let server = TestServer::start(&["--shards", "2"]);
    let js = setup(&server, "PULL3", 1).await;
    let mut consumer = pull_consumer(
        &js,
        "PULL3",
        pull::Config {
            durable_name: Some("d".into()),
            ack_policy: AckPolicy::Explicit,
            ack_wait: Duration::from_millis(300),
            max_deliver: 3,
            ..Default::default()
        },
    )
    .await;
    let mut messages = consumer.messages().await.expect("messages stream");
    for expected in 1..=3 {
        let message = tokio::time::timeout(RECEIVE_TIMEOUT, messages.next()).await.expect("delivery").unwrap().unwrap();
        assert_eq!(message.info().unwrap().delivered, expected);
    }
    let silent = tokio::time::timeout(Duration::from_millis(900), messages.next()).await;
    assert!(silent.is_err(), "no delivery beyond max_deliver");
    let info = consumer.info().await.unwrap().clone();
    assert_eq!(info.num_ack_pending, 0, "given up: no longer pending");
    assert_eq!(info.delivered.consumer_sequence, 3);
}

#[tokio::test]
async fn batch_and_messages_stream_with_ack_none() {
    let server = TestServer::start(&["--shards", "2"]);
    let js = setup(&server, "PULL4", 5).await;
    let mut consumer = pull_consumer(
        &js,
        "PULL4",
        pull::Config { durable_name: Some("d".into()), ack_policy: AckPolicy::None, ..Default::default() },
    )
    .await;
    let mut batch = consumer.batch().max_messages(3).expires(Duration::from_secs(1)).messages().await.unwrap();
    let mut got = Vec::new();
    while let Some(message) = tokio::time::timeout(RECEIVE_TIMEOUT, batch.next()).await.expect("batch ends") {
        got.push(message.unwrap());
    }
    assert_eq!(payloads(&got), ["1", "2", "3"]);
    let mut stream = consumer.messages().await.unwrap();
    for expected in ["4", "5"] {
        let message = tokio::time::timeout(RECEIVE_TIMEOUT, stream.next()).await.unwrap().unwrap().unwrap();
        assert_eq!(message.payload, expected.as_bytes());
    }
    js.publish("PULL4.m", "6".into()).await.unwrap().await.unwrap();
    let message = tokio::time::timeout(RECEIVE_TIMEOUT, stream.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(message.payload, "6".as_bytes(), "a waiting pull gets a new publish");
    let info = consumer.info().await.unwrap().clone();
    assert_eq!((info.ack_floor.stream_sequence, info.num_ack_pending, info.num_pending), (6, 0, 0));
}

#[tokio::test]
async fn unknown_consumer_and_stream_are_no_responders() {
    let server = TestServer::start(&["--shards", "2"]);
    let js = setup(&server, "PULL5", 1).await;
    let client = async_nats::connect(server.url()).await.unwrap();
    let error = client.request("$JS.API.CONSUMER.MSG.NEXT.PULL5.nope", "1".into()).await.unwrap_err();
    assert_eq!(error.kind(), async_nats::RequestErrorKind::NoResponders);
    let error = client.request("$JS.API.CONSUMER.MSG.NEXT.NOPE.nope", "1".into()).await.unwrap_err();
    assert_eq!(error.kind(), async_nats::RequestErrorKind::NoResponders);
    let stream = js.get_stream("PULL5").await.unwrap();
    assert!(stream.consumer_info("nope").await.is_err());
}

#[tokio::test]
async fn ephemeral_consumer_goes_after_inactive_threshold_and_durable_stays() {
    let server = TestServer::start(&["--shards", "2"]);
    let js = setup(&server, "PULL6", 1).await;
    let stream = js.get_stream("PULL6").await.unwrap();
    let ephemeral: jetstream::consumer::PullConsumer = stream
        .create_consumer(pull::Config {
            name: Some("eph".into()),
            ack_policy: AckPolicy::Explicit,
            inactive_threshold: Duration::from_millis(400),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(fetch(&ephemeral, 1).await.len(), 1, "usable while active");
    let _durable =
        pull_consumer(&js, "PULL6", pull::Config { durable_name: Some("dur".into()), ..Default::default() }).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(stream.consumer_info("eph").await.is_err(), "ephemeral reaped");
    assert!(stream.consumer_info("dur").await.is_ok(), "durable kept");
}
