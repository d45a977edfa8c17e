//! Push consumers through async-nats against jetcore on two shards: a durable push
//! consumer on a deliver subject with explicit acks and redelivery, delivery held until
//! someone subscribes, a queue group, and ordered consumers (push and pull flavours, and
//! a KV watch built on them).

mod common;

use std::time::Duration;

use async_nats::jetstream::{self, consumer::push, consumer::AckPolicy};
use common::TestServer;
use futures::StreamExt;

const RECEIVE_TIMEOUT: Duration = Duration::from_secs(5);

async fn setup(server: &TestServer, stream: &str, messages: u32) -> (async_nats::Client, jetstream::Context) {
    let client = async_nats::connect(server.url()).await.expect("connect");
    let js = jetstream::new(client.clone());
    js.create_stream(jetstream::stream::Config {
        name: stream.to_string(),
        subjects: vec![format!("{stream}.>")],
        ..Default::default()
    })
    .await
    .expect("create stream");
    for index in 1..=messages {
        js.publish(format!("{stream}.{}", index % 2), index.to_string().into()).await.unwrap().await.unwrap();
    }
    (client, js)
}

async fn next_message(
    messages: &mut (impl futures::Stream<Item = Result<jetstream::Message, impl std::fmt::Debug>> + Unpin),
) -> jetstream::Message {
    tokio::time::timeout(RECEIVE_TIMEOUT, messages.next())
        .await
        .expect("delivery in time")
        .expect("open")
        .expect("message")
}

#[tokio::test]
async fn durable_push_consumer_delivers_acks_and_redelivers() {
    let server = TestServer::start(&["--shards", "2"]);
    let (client, js) = setup(&server, "PUSH1", 4).await;
    let stream = js.get_stream("PUSH1").await.unwrap();
    let deliver_subject = client.new_inbox();
    let mut consumer: jetstream::consumer::PushConsumer = stream
        .create_consumer(push::Config {
            durable_name: Some("p".into()),
            deliver_subject: deliver_subject.clone(),
            ack_policy: AckPolicy::Explicit,
            ack_wait: Duration::from_millis(500),
            ..Default::default()
        })
        .await
        .expect("create push consumer");
    // Created before anyone subscribes: nothing may be lost meanwhile.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!consumer.info().await.unwrap().push_bound);
    let mut messages = consumer.messages().await.expect("subscribe");
    let mut seen = Vec::new();
    for _ in 0..4 {
        let message = next_message(&mut messages).await;
        seen.push(String::from_utf8_lossy(&message.payload).to_string());
        if message.payload.as_ref() != b"2" {
            message.ack().await.unwrap();
        }
    }
    assert_eq!(seen, ["1", "2", "3", "4"]);
    let again = next_message(&mut messages).await;
    assert_eq!(again.payload.as_ref(), b"2", "the unacked one comes back after ack_wait");
    assert_eq!(again.info().unwrap().delivered, 2);
    again.double_ack().await.unwrap();
    let info = consumer.info().await.unwrap().clone();
    assert!(info.push_bound);
    assert_eq!((info.ack_floor.stream_sequence, info.num_ack_pending, info.num_pending), (4, 0, 0));
    js.publish("PUSH1.x", "5".into()).await.unwrap().await.unwrap();
    assert_eq!(next_message(&mut messages).await.payload.as_ref(), b"5");
}

#[tokio::test]
async fn push_consumer_with_queue_group_splits_messages() {
    let server = TestServer::start(&["--shards", "2"]);
    let (_, js) = setup(&server, "PUSH2", 0).await;
    let stream = js.get_stream("PUSH2").await.unwrap();
    let config = push::Config {
        durable_name: Some("q".into()),
        deliver_subject: "deliver.q".into(),
        deliver_group: Some("workers".into()),
        ack_policy: AckPolicy::Explicit,
        ..Default::default()
    };
    let consumer: jetstream::consumer::PushConsumer = stream.create_consumer(config).await.unwrap();
    let other_client = async_nats::connect(server.url()).await.unwrap();
    let mut first = consumer.messages().await.unwrap();
    let mut second = other_client.queue_subscribe("deliver.q", "workers".into()).await.unwrap();
    other_client.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    for index in 0..40 {
        js.publish("PUSH2.x", index.to_string().into()).await.unwrap().await.unwrap();
    }
    let mut counts = (0, 0);
    let deadline = tokio::time::Instant::now() + RECEIVE_TIMEOUT;
    while counts.0 + counts.1 < 40 && tokio::time::Instant::now() < deadline {
        tokio::select! {
            Some(Ok(message)) = first.next() => { message.ack().await.unwrap(); counts.0 += 1; }
            Some(message) = second.next() => {
                if let Some(reply) = message.reply { other_client.publish(reply, "".into()).await.unwrap(); }
                counts.1 += 1;
            }
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
    assert_eq!(counts.0 + counts.1, 40, "each message to one member: {counts:?}");
    assert!(counts.0 > 0 && counts.1 > 0, "both members served: {counts:?}");
}

#[tokio::test]
async fn ordered_push_consumer_reads_everything_in_order() {
    let server = TestServer::start(&["--shards", "2"]);
    let (client, js) = setup(&server, "ORD1", 50).await;
    let stream = js.get_stream("ORD1").await.unwrap();
    let consumer = stream
        .create_consumer(push::OrderedConfig { deliver_subject: client.new_inbox(), ..Default::default() })
        .await
        .expect("ordered consumer");
    let mut messages = consumer.messages().await.unwrap();
    for expected in 1..=50u32 {
        let message = tokio::time::timeout(RECEIVE_TIMEOUT, messages.next()).await.unwrap().unwrap().unwrap();
        assert_eq!(message.payload, expected.to_string().as_bytes());
        assert_eq!(message.subject.as_str(), format!("ORD1.{}", expected % 2));
    }
}

#[tokio::test]
async fn ordered_pull_consumer_reads_everything_in_order() {
    let server = TestServer::start(&["--shards", "2"]);
    let (_, js) = setup(&server, "ORD2", 30).await;
    let stream = js.get_stream("ORD2").await.unwrap();
    let consumer = stream
        .create_consumer(jetstream::consumer::pull::OrderedConfig {
            filter_subject: "ORD2.1".into(),
            ..Default::default()
        })
        .await
        .expect("ordered pull consumer");
    let mut messages = consumer.messages().await.unwrap();
    for expected in (1..=30u32).filter(|i| i % 2 == 1) {
        let message = tokio::time::timeout(RECEIVE_TIMEOUT, messages.next()).await.unwrap().unwrap().unwrap();
        assert_eq!(message.payload, expected.to_string().as_bytes());
    }
}

#[tokio::test]
async fn kv_watch_and_history() {
    let server = TestServer::start(&["--shards", "2"]);
    let client = async_nats::connect(server.url()).await.unwrap();
    let js = jetstream::new(client);
    let kv = js
        .create_key_value(jetstream::kv::Config { bucket: "cfg".into(), history: 5, ..Default::default() })
        .await
        .expect("create bucket");
    kv.put("a", "1".into()).await.unwrap();
    kv.put("a", "2".into()).await.unwrap();
    let mut history = kv.history("a").await.expect("history");
    let mut values = Vec::new();
    while let Some(entry) = tokio::time::timeout(RECEIVE_TIMEOUT, history.next()).await.expect("history ends") {
        values.push(String::from_utf8_lossy(&entry.unwrap().value).to_string());
    }
    assert_eq!(values, ["1", "2"]);
    let mut watch = kv.watch("a").await.expect("watch");
    kv.put("a", "3".into()).await.unwrap();
    let entry = tokio::time::timeout(RECEIVE_TIMEOUT, watch.next()).await.unwrap().unwrap().unwrap();
    assert_eq!((entry.key.as_str(), entry.value.as_ref()), ("a", b"3".as_ref()));
}
