//! Issue 20's "publish, then pull consume" as applications write it with async-nats 0.51,
//! shared by `asyncnats_js` (against a server) and `js_ceiling` (against a stand-in
//! server that does no work, which leaves the client's own ceiling).

use std::collections::VecDeque;
use std::time::Instant;

use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy, stream};
use futures::StreamExt;

pub type Failure = Box<dyn std::error::Error>;

/// Publishes whose acks may be outstanding (as jetbench's js-pub window).
pub const WINDOW: usize = 256;

/// Creates stream `name` on `{name}.data`, publishes `messages` of `size` bytes with
/// `jetstream::Context::publish` (a reply inbox per message, the ack awaited later, up to
/// [`WINDOW`] outstanding), then reads them back through a durable pull consumer (ack
/// none). Returns the publish and the consume phase's messages per second, and how many
/// were received. Writes `published N` to stderr between the phases.
pub async fn publish_then_consume(
    client: async_nats::Client,
    name: &str,
    messages: u64,
    size: usize,
) -> Result<(f64, f64, u64), Failure> {
    let context = jetstream::new(client);
    let subject = format!("{name}.data");
    let created = context
        .create_stream(stream::Config { name: name.to_string(), subjects: vec![subject.clone()], ..Default::default() })
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
    // The phase boundary, for a harness that reads the server's CPU per phase
    // (perf/shards.py).
    eprintln!("published {messages}");

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
    Ok((messages as f64 / publish_seconds, received as f64 / consume_seconds, received))
}
