//! JetStream through async-nats 0.51 as applications use it: `jetstream::Context::publish`
//! (a reply inbox per message, the ack awaited later) with up to WINDOW acks outstanding,
//! then a durable pull consumer (ack none) reading every message back. Issue 20's
//! "publish, then pull consume" with the official Rust client (perf/shards.py runs it;
//! `js_ceiling` runs the same phases against a stand-in server for the client's ceiling).
//!
//! Usage: asyncnats_js [URL] [MESSAGES] [SIZE] [STREAM]
//!        (defaults nats://127.0.0.1:4222 200000 128 ASYNCNATS)
//! Prints one JSON line: {"client":"async-nats","publish_msgs_per_s":...,"consume_msgs_per_s":...}.

#[path = "js/phases.rs"]
mod phases;

const DEFAULT_URL: &str = "nats://127.0.0.1:4222";
const DEFAULT_MESSAGES: u64 = 200_000;
const DEFAULT_SIZE: usize = 128;
const DEFAULT_STREAM: &str = "ASYNCNATS";

#[tokio::main]
async fn main() -> Result<(), phases::Failure> {
    let mut arguments = std::env::args().skip(1);
    let url = arguments.next().unwrap_or_else(|| DEFAULT_URL.to_string());
    let messages: u64 = arguments.next().map(|text| text.parse()).transpose()?.unwrap_or(DEFAULT_MESSAGES);
    let size: usize = arguments.next().map(|text| text.parse()).transpose()?.unwrap_or(DEFAULT_SIZE);
    let name = arguments.next().unwrap_or_else(|| DEFAULT_STREAM.to_string());

    let client = async_nats::connect(url.as_str()).await?;
    let (publish, consume, received) = phases::publish_then_consume(client, &name, messages, size).await?;
    println!(
        "{{\"client\":\"async-nats\",\"messages\":{messages},\"received\":{received},\"publish_msgs_per_s\":{publish:.0},\
         \"consume_msgs_per_s\":{consume:.0}}}"
    );
    Ok(())
}
