//! Idle durable consumers: creates `--consumers` durable pull consumers on one stream, one
//! API request at a time, and (with `--server-pid`) reads the server's resident memory
//! before and after, giving the memory an idle durable consumer costs (issue 5: ≤ 4 KiB).

use std::time::Instant;

use super::{Context, Headline, MemoryGrowth, Outcome};
use crate::cli::AckPolicy;
use crate::error::{BenchError, Result};
use crate::jetstream::{ApiClient, ConsumerSpec, StreamSpec};
use crate::limits::{MEMORY_SETTLE_TIME, PROGRESS_BATCH_MESSAGES};

/// Bytes per KiB, as /proc reports resident memory.
const BYTES_PER_KIB: u64 = 1024;

pub fn run(context: &Context) -> Result<Outcome> {
    let options = &context.options;
    let mut api = ApiClient::connect(&context.server)?;
    let (name, subject) = (context.stream_name(0), context.stream_subject(0));
    api.recreate_stream(&StreamSpec {
        name: &name,
        subjects: vec![subject],
        storage: options.storage,
        max_consumers: Some(options.consumers),
    })?;
    std::thread::sleep(MEMORY_SETTLE_TIME);
    let rss_before = options.server_pid.map(resident_bytes).transpose()?;
    let start = Instant::now();
    for index in 0..options.consumers {
        let durable = format!("C{index}");
        api.create_consumer(&ConsumerSpec {
            stream: &name,
            durable: &durable,
            ack: AckPolicy::Explicit,
            max_ack_pending: options.max_ack_pending,
            deliver_subject: None,
            deliver_group: None,
        })?;
        if (index + 1) % PROGRESS_BATCH_MESSAGES == 0 {
            context.counters.add_published(PROGRESS_BATCH_MESSAGES);
        }
    }
    let elapsed = start.elapsed();
    std::thread::sleep(MEMORY_SETTLE_TIME);
    let rss_after = options.server_pid.map(resident_bytes).transpose()?;
    api.delete_stream(&name)?;
    let memory = rss_before.zip(rss_after).map(|(before, after)| MemoryGrowth {
        rss_before_bytes: before,
        rss_after_bytes: after,
        bytes_per_object: after.saturating_sub(before) as f64 / options.consumers.max(1) as f64,
    });
    Ok(Outcome {
        elapsed,
        published: 0,
        received: 0,
        acknowledged: options.consumers,
        headline: Headline::Created,
        latency: None,
        errors: Vec::new(),
        memory,
    })
}

/// VmRSS of a process, from /proc/<pid>/status.
fn resident_bytes(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let failure = |reason: String| BenchError::ServerMemory { path: path.clone(), reason };
    let status = std::fs::read_to_string(&path).map_err(|error| failure(error.to_string()))?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .map(|value| value.trim().trim_end_matches("kB").trim())
        .and_then(|digits| digits.parse::<u64>().ok());
    kib.map(|kib| kib * BYTES_PER_KIB).ok_or_else(|| failure("no VmRSS line (is --server-pid right?)".into()))
}
