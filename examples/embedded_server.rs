//! The whole jetcore server inside a tokio program, as Go programs embed nats-server: start
//! it on a free port, publish to a JetStream stream and consume it with async-nats, shut it
//! down gracefully, start it again on the same directory and find the messages and the
//! consumer's acks there.
//!
//! ```sh
//! cargo run --release --example embedded_server -- 500
//! ```

use std::path::Path;

use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy, stream};
use futures::StreamExt;

const STREAM: &str = "TELEMETRY";
const CONSUMER: &str = "archiver";

#[tokio::main]
async fn main() -> Result<(), async_nats::Error> {
    let readings: u64 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(200);
    let dir = tempfile::tempdir()?;
    let summary = run(dir.path(), readings).await?;
    println!("published {} readings, consumed and acked {}", summary.published, summary.consumed);
    println!(
        "after a restart: {} messages stored, the consumer acked through sequence {}",
        summary.stored_after_restart, summary.acked_after_restart
    );
    Ok(())
}

/// What a run saw; the integration test checks it.
#[derive(Debug, PartialEq, Eq)]
pub struct Summary {
    pub published: u64,
    pub consumed: u64,
    pub stored_after_restart: u64,
    pub acked_after_restart: u64,
}

pub async fn run(store_dir: &Path, readings: u64) -> Result<Summary, async_nats::Error> {
    // Port 0: the OS picks a free port. One shard keeps the example light; the default is one
    // per CPU. The shards are threads of their own, beside tokio's.
    let server = jetcore::Server::builder().port(0).store_dir(store_dir).shards(1).start()?;
    let client = async_nats::connect(server.client_url()).await?;
    let js = jetstream::new(client);
    let config = stream::Config { name: STREAM.into(), subjects: vec!["sensors.>".into()], ..Default::default() };
    let stream = js.get_or_create_stream(config).await?;
    for reading in 0..readings {
        let body = format!("{{\"sensor\":{},\"celsius\":{}}}", reading % 8, 20 + reading % 5);
        // The second await is the pub ack: the message is on disk (fdatasync) when it resolves.
        js.publish(format!("sensors.{}", reading % 8), body.into()).await?.await?;
    }
    let consumer = stream
        .get_or_create_consumer(
            CONSUMER,
            pull::Config { durable_name: Some(CONSUMER.into()), ack_policy: AckPolicy::Explicit, ..Default::default() },
        )
        .await?;
    let mut consumed = 0;
    while consumed < readings {
        let mut batch = consumer.fetch().max_messages(100).messages().await?;
        while let Some(message) = batch.next().await {
            // Acknowledged and confirmed by the server (AckSync).
            message?.double_ack().await?;
            consumed += 1;
        }
    }
    drop(js);
    // In-flight acks land, consumer state and checkpoints are written, the lock is released.
    tokio::task::spawn_blocking(move || server.shutdown()).await??;

    let server = jetcore::Server::builder().port(0).store_dir(store_dir).shards(1).start()?;
    let js = jetstream::new(async_nats::connect(server.client_url()).await?);
    let mut stream = js.get_stream(STREAM).await?;
    let stored_after_restart = stream.info().await?.state.messages;
    let mut archiver = stream.get_consumer::<pull::Config>(CONSUMER).await?;
    let acked_after_restart = archiver.info().await?.ack_floor.stream_sequence;
    drop(js);
    tokio::task::spawn_blocking(move || server.shutdown()).await??;
    Ok(Summary { published: readings, consumed, stored_after_restart, acked_after_restart })
}
