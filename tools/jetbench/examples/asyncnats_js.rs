//! JetStream through async-nats 0.51 as applications use it: `jetstream::Context::publish`
//! (a reply inbox per message, the ack awaited later) with up to WINDOW acks outstanding,
//! then a durable pull consumer (ack none) reading every message back. Issue 20's
//! "publish, then pull consume" with the official Rust client (perf/shards.py runs it).
//!
//! Usage: asyncnats_js [URL] [MESSAGES] [SIZE] [STREAM]
//!        (defaults nats://127.0.0.1:4222 200000 128 ASYNCNATS)
//! Prints one JSON line: {"client":"async-nats","publish_msgs_per_s":...,"consume_msgs_per_s":...}.

use std::collections::VecDeque;
use std::time::Instant;

use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy, stream};
use futures::StreamExt;

const DEFAULT_URL: &str = "nats://127.0.0.1:4222";
const DEFAULT_MESSAGES: u64 = 200_000;
const DEFAULT_SIZE: usize = 128;
const DEFAULT_STREAM: &str = "ASYNCNATS";
/// Publishes whose acks may be outstanding (as jetbench's js-pub window).
const WINDOW: usize = 256;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut arguments = std::env::args().skip(1);
    let url = arguments.next().unwrap_or_else(|| DEFAULT_URL.to_string());
    let messages: u64 = arguments.next().map(|text| text.parse()).transpose()?.unwrap_or(DEFAULT_MESSAGES);
    let size: usize = arguments.next().map(|text| text.parse()).transpose()?.unwrap_or(DEFAULT_SIZE);
    let name = arguments.next().unwrap_or_else(|| DEFAULT_STREAM.to_string());

    let client = async_nats::connect(url.as_str()).await?;
    let context = jetstream::new(client);
    let subject = format!("{name}.data");
    let created = context
        .create_stream(stream::Config { name: name.clone(), subjects: vec![subject.clone()], ..Default::default() })
        .await?;
    let payload = bytes::Bytes::from(vec![b'a'; size]);

    let start = Instant::now();
    let mut outstanding = VecDeque::with_capacity(WINDOW);
    for _ in 0..messages {
        if outstanding.len() == WINDOW {
            let ack: jetstream::context::PublishAckFuture = outstanding.pop_front().expect("window is full");
            ack.await?;
        }
        outstanding.push_back(context.publish(subject.clone(), payload.clone()).await?);
    }
    for ack in outstanding {
        ack.await?;
    }
    let publish_seconds = start.elapsed().as_secs_f64();

    let consumer = created
        .create_consumer(pull::Config {
            durable_name: Some("asyncnats".to_string()),
            ack_policy: AckPolicy::None,
            ..Default::default()
        })
        .await?;
    let start = Instant::now();
    let mut received: u64 = 0;
    let mut stream = consumer.messages().await?;
    while received < messages {
        match stream.next().await {
            Some(message) => {
                message?;
                received += 1;
            }
            None => break,
        }
    }
    let consume_seconds = start.elapsed().as_secs_f64();
    println!(
        "{{\"client\":\"async-nats\",\"messages\":{messages},\"received\":{received},\"publish_msgs_per_s\":{:.0},\
         \"consume_msgs_per_s\":{:.0}}}",
        messages as f64 / publish_seconds,
        received as f64 / consume_seconds
    );
    Ok(())
}
