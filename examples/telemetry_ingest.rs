//! Telemetry ingest against jetcore (or nats-server): sensors publish readings into a
//! stream with a retention limit, pipelining their pub acks; a durable pull consumer
//! aggregates per-sensor averages and acknowledges what it has folded in. Stop it and
//! run it again: the aggregator resumes where its acks left off.
//!
//! ```sh
//! cargo run --release                        # jetcore on 127.0.0.1:4222, in another shell
//! cargo run --release --example telemetry_ingest -- 20000
//! NATS_URL=nats://host:4222 cargo run --release --example telemetry_ingest
//! ```

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy, stream};
use futures::StreamExt;

const STREAM: &str = "TELEMETRY";
const SENSORS: u32 = 16;
/// Pub acks awaited at once: the publisher keeps this many publishes in flight, so the
/// server's group commit can fold them into one fdatasync.
const IN_FLIGHT: usize = 256;

#[tokio::main]
async fn main() -> Result<(), async_nats::Error> {
    let url = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    let readings: u32 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let client = async_nats::ConnectOptions::new().name("telemetry-ingest").connect(&url).await?;
    let js = jetstream::new(client);
    js.get_or_create_stream(stream::Config {
        name: STREAM.into(),
        subjects: vec!["telemetry.>".into()],
        max_age: Duration::from_secs(3600),
        max_messages_per_subject: 100_000,
        ..Default::default()
    })
    .await?;

    let started = Instant::now();
    publish_readings(&js, readings).await?;
    let elapsed = started.elapsed();
    println!(
        "published {readings} readings in {elapsed:?} ({:.0}/s, each durable before its ack)",
        f64::from(readings) / elapsed.as_secs_f64()
    );

    aggregate(&js).await
}

/// Publishes `count` readings round-robin over the sensors, `IN_FLIGHT` acks at a time.
async fn publish_readings(js: &jetstream::Context, count: u32) -> Result<(), async_nats::Error> {
    let mut pending = Vec::with_capacity(IN_FLIGHT);
    for index in 0..count {
        let sensor = index % SENSORS;
        let celsius = 20.0 + f64::from(sensor) + f64::from(index % 7) * 0.1;
        let body = format!("{{\"sensor\":{sensor},\"celsius\":{celsius:.2}}}");
        pending.push(js.publish(format!("telemetry.site1.sensor{sensor}"), body.into()).await?);
        if pending.len() == IN_FLIGHT {
            for ack in pending.drain(..) {
                ack.await?;
            }
        }
    }
    for ack in pending {
        ack.await?;
    }
    Ok(())
}

/// Drains the stream through the durable `aggregator`, acknowledging each batch.
async fn aggregate(js: &jetstream::Context) -> Result<(), async_nats::Error> {
    let stream = js.get_stream(STREAM).await?;
    let consumer = stream
        .get_or_create_consumer(
            "aggregator",
            pull::Config { durable_name: Some("aggregator".into()), ack_policy: AckPolicy::All, ..Default::default() },
        )
        .await?;
    let mut sums: BTreeMap<String, (f64, u64)> = BTreeMap::new();
    loop {
        let mut batch = consumer.fetch().max_messages(1000).expires(Duration::from_millis(500)).messages().await?;
        let mut last = None;
        while let Some(message) = batch.next().await {
            let message = message?;
            let reading: serde_json::Value = serde_json::from_slice(&message.payload)?;
            let entry = sums.entry(message.subject.to_string()).or_default();
            entry.0 += reading["celsius"].as_f64().unwrap_or(0.0);
            entry.1 += 1;
            last = Some(message);
        }
        // AckPolicy::All: one ack covers the whole batch.
        match last {
            Some(message) => message.double_ack().await?,
            None => break,
        }
    }
    for (subject, (sum, count)) in &sums {
        println!("{subject}: {count} readings, mean {:.2} °C", sum / *count as f64);
    }
    if sums.is_empty() {
        println!("nothing new for the aggregator (it resumes after its last ack)");
    }
    Ok(())
}
