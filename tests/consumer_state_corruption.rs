//! A durable consumer's state file corrupted or truncated while the server was down
//! (reliability matrix row 14): after the restart the consumer still exists (never
//! deleted because its file looks damaged, unlike nats-server #7691), the damage is
//! logged, and it falls back to its config's start: every message not acknowledged is
//! delivered again (duplicates of acknowledged ones are allowed, losses are not).

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_nats::jetstream::consumer::{pull, AckPolicy, PullConsumer};
use async_nats::jetstream::Context;
use common::jetstream::{connect, publish, stream_config};
use common::TestServer;
use futures::StreamExt;

const MESSAGES: u64 = 20;
const ACKED: u64 = 10;

/// Ways to damage a file, each applied to a fresh server's consumer state.
#[derive(Debug, Clone, Copy)]
enum Damage {
    FlipMiddleByte,
    TruncateToHalf,
    TruncateToZero,
    Garbage,
}

fn damage(path: &Path, damage: Damage) {
    let mut bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    // The file: "JCMF", body length (u64), CRC32C (u32), body, zero padding to 4 KiB.
    // Damage lands in the written part, not in the padding.
    assert!(bytes.len() >= 16, "state file too short before damage");
    let body_len = u64::from_le_bytes(bytes[4..12].try_into().expect("8 bytes")) as usize;
    let written = 16 + body_len;
    match damage {
        Damage::FlipMiddleByte => bytes[16 + body_len / 2] ^= 0x5A,
        Damage::TruncateToHalf => bytes.truncate(written / 2),
        Damage::TruncateToZero => bytes.clear(),
        Damage::Garbage => bytes.iter_mut().enumerate().for_each(|(i, b)| *b = (i * 31 % 251) as u8),
    }
    std::fs::write(path, bytes).expect("write damaged state");
}

fn state_file(store_dir: &Path) -> PathBuf {
    store_dir.join("jetstream/streams/CS/consumers/READER.state")
}

/// Fetches until `expires` passes with nothing new; the stream sequences delivered.
async fn fetch_all(consumer: &PullConsumer, ack: bool) -> Vec<u64> {
    let mut delivered = Vec::new();
    loop {
        let mut batch =
            consumer.fetch().max_messages(64).expires(Duration::from_millis(500)).messages().await.expect("fetch");
        let before = delivered.len();
        while let Some(message) = batch.next().await {
            let message = message.expect("message");
            delivered.push(message.info().expect("info").stream_sequence);
            if ack {
                message.double_ack().await.expect("double ack");
            }
        }
        if delivered.len() == before {
            return delivered;
        }
    }
}

async fn consumer(context: &Context) -> PullConsumer {
    let stream = context.get_stream("CS").await.expect("stream");
    stream.get_consumer("READER").await.expect("the durable consumer still exists after its state was damaged")
}

async fn damaged_state_falls_back_and_redelivers(how: Damage) {
    let mut server = TestServer::start(&[]);
    let (_client, context) = connect(&server).await;
    let stream = context.create_stream(stream_config("CS", &["cs.>"])).await.expect("create");
    let config =
        pull::Config { durable_name: Some("READER".into()), ack_policy: AckPolicy::Explicit, ..Default::default() };
    let reader: PullConsumer = stream.create_consumer(config).await.expect("consumer");
    for index in 1..=MESSAGES {
        publish(&context, "cs.x", &format!("message {index}")).await;
    }
    let mut batch = reader.fetch().max_messages(ACKED as usize).messages().await.expect("fetch");
    while let Some(message) = batch.next().await {
        message.expect("message").double_ack().await.expect("double ack");
    }
    server.kill();
    damage(&state_file(&server.store_dir), how);

    server.restart();
    let (_client, context) = connect(&server).await;
    let reader = consumer(&context).await;
    let delivered = fetch_all(&reader, true).await;
    for seq in ACKED + 1..=MESSAGES {
        assert!(
            delivered.contains(&seq),
            "{how:?}: unacknowledged seq {seq} not delivered after the restart: {delivered:?}"
        );
    }
    assert!(delivered.iter().all(|seq| (1..=MESSAGES).contains(seq)), "{how:?}: {delivered:?}");
    // The consumer works on: its new acks hold across another restart.
    server.restart();
    let (_client, context) = connect(&server).await;
    let again = fetch_all(&consumer(&context).await, false).await;
    assert!(again.is_empty(), "{how:?}: acknowledged after the fallback, delivered again: {again:?}");
}

#[tokio::test]
async fn bit_flip_in_consumer_state() {
    damaged_state_falls_back_and_redelivers(Damage::FlipMiddleByte).await;
}

#[tokio::test]
async fn consumer_state_truncated_to_half() {
    damaged_state_falls_back_and_redelivers(Damage::TruncateToHalf).await;
}

#[tokio::test]
async fn consumer_state_truncated_to_zero() {
    damaged_state_falls_back_and_redelivers(Damage::TruncateToZero).await;
}

#[tokio::test]
async fn consumer_state_overwritten_with_garbage() {
    damaged_state_falls_back_and_redelivers(Damage::Garbage).await;
}
