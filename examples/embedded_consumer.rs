//! A work queue inside the program, with no network: jobs are appended to a stream with
//! durable acks, and a durable consumer hands them to a worker, which acks each job or
//! NAKs it to have it again (every seventh job fails once). Halfway through, the engine is
//! closed and reopened, as after a restart: the consumer resumes after the last job it
//! acked, and no acked job is handed out twice.
//!
//! The engine runs on a shard thread of its own (`EngineHandle`), so this is a plain
//! program: no glommio, no tokio. A glommio program uses `Engine::create_consumer` and
//! `DurableConsumer` directly.
//!
//! ```sh
//! cargo run --release --example embedded_consumer -- 5000
//! ```

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use jetcore::engine::{ConsumerConfig, EngineHandle, Settle};
use jetcore::stream::StreamConfig;

const STREAM: &str = "JOBS";
const WORKER: &str = "workers";
const FETCH_BATCH: usize = 64;
/// How long a job may go unacknowledged before it is handed out again.
const ACK_WAIT: Duration = Duration::from_secs(1);
/// A worker with nothing to do looks again after this long.
const IDLE_POLL: Duration = Duration::from_millis(50);
/// Jobs whose sequence is a multiple of this fail on their first delivery.
const FAILING_EVERY: u64 = 7;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let jobs: u64 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(1000);
    let dir = tempfile::tempdir()?;
    let summary = run(dir.path(), jobs)?;
    println!(
        "published {} jobs; {} done, {} failed once and were redelivered",
        summary.published, summary.done, summary.naked
    );
    println!(
        "acks before the restart: {}; after: {}; acked twice: {}",
        summary.done_before_restart,
        summary.done - summary.done_before_restart,
        summary.acked_twice
    );
    Ok(())
}

/// What a run saw; the integration test checks it.
#[derive(Debug, PartialEq, Eq)]
pub struct Summary {
    pub published: u64,
    /// Distinct jobs acked.
    pub done: u64,
    pub done_before_restart: u64,
    pub naked: u64,
    /// Jobs handed out again after they were acked (never, if acks are durable).
    pub acked_twice: u64,
    /// Redeliveries seen (delivery count above 1): each NAKed job once, and any job
    /// whose ack wait passed before it was acked.
    pub redelivered: u64,
}

pub fn run(dir: &Path, jobs: u64) -> Result<Summary, Box<dyn std::error::Error>> {
    let engine = EngineHandle::open(dir)?;
    engine.create_stream(StreamConfig::new(STREAM, &["jobs.>"])).wait()?;
    // All in flight together: they share fdatasyncs (group commit).
    let publishes: Vec<_> =
        (1..=jobs).map(|job| engine.publish(STREAM, "jobs.resize", format!("photo-{job}").as_bytes())).collect();
    for ack in publishes {
        ack.wait()?;
    }
    engine.create_consumer(STREAM, worker_config()).wait()?;
    let mut work = Work::default();
    work.until(&engine, jobs / 2)?;
    let done_before_restart = work.done.len() as u64;
    engine.close()?;

    let engine = EngineHandle::open(dir)?;
    // The same name and configuration: the consumer as it was left.
    engine.create_consumer(STREAM, worker_config()).wait()?;
    work.until(&engine, jobs)?;
    engine.close()?;
    let Work { done, naked, acked_twice, redelivered } = work;
    Ok(Summary { published: jobs, done: done.len() as u64, done_before_restart, naked, acked_twice, redelivered })
}

fn worker_config() -> ConsumerConfig {
    ConsumerConfig { ack_wait: ACK_WAIT, ..ConsumerConfig::new(WORKER) }
}

#[derive(Default)]
struct Work {
    done: BTreeSet<u64>,
    naked: u64,
    acked_twice: u64,
    redelivered: u64,
}

impl Work {
    /// Fetches and settles jobs until `target` are done.
    fn until(&mut self, engine: &EngineHandle, target: u64) -> Result<(), jetcore::stream::Error> {
        while (self.done.len() as u64) < target {
            let batch = engine.fetch(STREAM, WORKER, FETCH_BATCH).wait()?;
            if batch.is_empty() {
                // Jobs delivered before a restart and not acked (NAKed ones too: the NAK
                // is not saved, the delivery is) come back once their ack wait is over.
                std::thread::sleep(IDLE_POLL);
                continue;
            }
            for job in batch {
                let (seq, delivery) = (job.delivery.stream_seq.get(), job.delivery);
                self.redelivered += u64::from(delivery.delivery_count > 1);
                if seq % FAILING_EVERY == 0 && delivery.delivery_count == 1 {
                    engine.settle(STREAM, WORKER, delivery, Settle::Nak).wait()?;
                    self.naked += 1;
                    continue;
                }
                // Resolves once the ack is on disk.
                engine.ack(STREAM, WORKER, delivery).wait()?;
                if !self.done.insert(seq) {
                    self.acked_twice += 1;
                }
            }
        }
        Ok(())
    }
}
