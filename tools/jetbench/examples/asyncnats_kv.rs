//! Key-value put and get through async-nats 0.51's KV API (issue 9's targets): puts with
//! one in flight (each waits for its ack), then gets of random existing keys, one at a
//! time. Run it against each server with the same arguments.
//!
//! Usage: asyncnats_kv [URL] [PUTS] [GETS] [SIZE]   (defaults nats://127.0.0.1:4222 3000 20000 128)
//! With `ASYNCNATS_KV_REUSE=1` it puts into the bucket an earlier run left (made if missing)
//! and leaves it: a second run then measures puts alone, as `perf/results/*/cg.sh` does.
//! Prints one JSON line: {"client":"async-nats-kv","put_per_s":..,"put_p50_us":..,..}.

use std::time::{Duration, Instant};

use async_nats::jetstream::{self, kv};
use hdrhistogram::Histogram;

const DEFAULT_URL: &str = "nats://127.0.0.1:4222";
const DEFAULT_PUTS: u64 = 3_000;
const DEFAULT_GETS: u64 = 20_000;
const DEFAULT_SIZE: usize = 128;
const BUCKET: &str = "jetbench_kv";
/// Distinct keys written (each put goes to key `k<n % KEYS>`).
const KEYS: u64 = 1_000;

fn argument<T: std::str::FromStr>(arguments: &[String], index: usize, default: T) -> T {
    arguments.get(index).and_then(|text| text.parse().ok()).unwrap_or(default)
}

fn micros(histogram: &Histogram<u64>, quantile: f64) -> f64 {
    histogram.value_at_quantile(quantile) as f64 / 1_000.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let url = arguments.first().cloned().unwrap_or_else(|| DEFAULT_URL.to_string());
    let puts: u64 = argument(&arguments, 1, DEFAULT_PUTS);
    let gets: u64 = argument(&arguments, 2, DEFAULT_GETS);
    let size: usize = argument(&arguments, 3, DEFAULT_SIZE);

    let context = jetstream::new(async_nats::connect(url.as_str()).await?);
    let reuse = std::env::var("ASYNCNATS_KV_REUSE").as_deref() == Ok("1");
    let config = kv::Config { bucket: BUCKET.to_string(), history: 1, ..Default::default() };
    let store = match reuse {
        true => match context.get_key_value(BUCKET).await {
            Ok(store) => store,
            Err(_) => context.create_key_value(config).await?,
        },
        false => {
            let _ = context.delete_key_value(BUCKET).await;
            context.create_key_value(config).await?
        }
    };
    let value = bytes::Bytes::from(vec![b'v'; size]);

    let mut put_latency = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    let started = Instant::now();
    for index in 0..puts {
        let sent = Instant::now();
        store.put(format!("k{}", index % KEYS), value.clone()).await?;
        put_latency.record(sent.elapsed().as_nanos() as u64)?;
    }
    let put_rate = puts as f64 / started.elapsed().as_secs_f64();

    let mut get_latency = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let written = puts.min(KEYS);
    for _ in 0..gets {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let key = format!("k{}", state % written);
        let sent = Instant::now();
        let found = store.get(key.as_str()).await?;
        get_latency.record(sent.elapsed().as_nanos() as u64)?;
        if found.is_none() {
            return Err(format!("key {key} was written but not found").into());
        }
    }
    if !reuse {
        let _ = tokio::time::timeout(Duration::from_secs(5), context.delete_key_value(BUCKET)).await;
    }
    println!(
        "{{\"client\":\"async-nats-kv\",\"puts\":{puts},\"put_per_s\":{put_rate:.0},\"put_p50_us\":{:.1},\"put_p99_us\":{:.1},\"gets\":{gets},\"get_p50_us\":{:.1},\"get_p99_us\":{:.1}}}",
        micros(&put_latency, 0.5),
        micros(&put_latency, 0.99),
        micros(&get_latency, 0.5),
        micros(&get_latency, 0.99),
    );
    Ok(())
}
