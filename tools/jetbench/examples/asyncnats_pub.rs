//! Core publish rate of async-nats 0.51 (tokio), to check jetbench is not the bottleneck:
//! jetbench's `pub` rate against the same server should be at least twice this.
//!
//! Usage: asyncnats_pub [URL] [MESSAGES] [SIZE]   (defaults nats://127.0.0.1:4222 1000000 128)
//! Prints one JSON line: {"client":"async-nats",...,"msgs_per_s":...}.

use std::time::Instant;

/// Defaults when arguments are omitted.
const DEFAULT_URL: &str = "nats://127.0.0.1:4222";
const DEFAULT_MESSAGES: u64 = 1_000_000;
const DEFAULT_SIZE: usize = 128;
const SUBJECT: &str = "jetbench.asyncnats";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut arguments = std::env::args().skip(1);
    let url = arguments.next().unwrap_or_else(|| DEFAULT_URL.to_string());
    let messages: u64 = arguments.next().map(|text| text.parse()).transpose()?.unwrap_or(DEFAULT_MESSAGES);
    let size: usize = arguments.next().map(|text| text.parse()).transpose()?.unwrap_or(DEFAULT_SIZE);

    let client = async_nats::connect(url.as_str()).await?;
    let payload = bytes::Bytes::from(vec![b'a'; size]);
    let start = Instant::now();
    for _ in 0..messages {
        client.publish(SUBJECT, payload.clone()).await?;
    }
    // flush() is a PING/PONG round trip: the server has processed every publish after it.
    client.flush().await?;
    let elapsed = start.elapsed().as_secs_f64();
    let rate = messages as f64 / elapsed;
    println!(
        "{{\"client\":\"async-nats\",\"messages\":{messages},\"size\":{size},\
         \"elapsed_s\":{elapsed:.4},\"msgs_per_s\":{rate:.0}}}"
    );
    Ok(())
}
