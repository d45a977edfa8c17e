//! Core publish: publishers write pre-encoded PUB frames as fast as the socket takes them
//! (or at `--rate`), then a PING/PONG round trip proves the server processed them all.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use super::{Context, Headline, Outcome, RunState};
use crate::connection::Connection;
use crate::error::Result;
use crate::limits::{CLOCK_CHECK_INTERVAL_MESSAGES, DRAIN_TIMEOUT, PROGRESS_BATCH_MESSAGES};
use crate::pacing::Pacer;
use crate::protocol::encode_pub;
use crate::workers::Workers;

/// What one publisher did.
pub struct PublisherReport {
    pub sent: u64,
    pub elapsed: Duration,
}

pub fn run(context: &Context) -> Result<Outcome> {
    let publishers = context.options.publishers;
    let state = RunState::with_publishers(publishers);
    let gate = Arc::new(Barrier::new(publishers));
    let mut workers = Workers::new(context.options.cpus.clone());
    for index in 0..publishers {
        let job = PublishJob::new(context, index, publishers, context.options.subject.clone());
        let (gate, state) = (gate.clone(), state.clone());
        workers.spawn(format!("pub-{index}"), move || job.run(&gate, &state));
    }
    let reports = workers.join()?;
    let published = reports.iter().map(|report| report.sent).sum();
    let elapsed = reports.iter().map(|report| report.elapsed).max().unwrap_or_default();
    Ok(Outcome {
        elapsed,
        published,
        received: 0,
        acknowledged: 0,
        headline: Headline::Published,
        latency: None,
        memory: None,
        errors: Vec::new(),
    })
}

/// One core publisher, prepared on the caller's thread and run on its own.
pub struct PublishJob {
    context: Arc<JobContext>,
    index: usize,
    publishers: usize,
    subject: String,
}

/// The parts of the run context a publisher thread needs (cheap to share).
struct JobContext {
    server: crate::connection::ServerAddress,
    limit: super::Limit,
    rate: Option<u64>,
    payload: Vec<u8>,
    counters: Arc<crate::progress::Counters>,
}

impl PublishJob {
    pub fn new(context: &Context, index: usize, publishers: usize, subject: String) -> Self {
        let job_context = JobContext {
            server: context.server.clone(),
            limit: context.limit_for(index, publishers),
            rate: context.rate_per_publisher(publishers),
            payload: context.payload(),
            counters: context.counters.clone(),
        };
        Self { context: Arc::new(job_context), index, publishers, subject }
    }

    /// Connects, waits at `gate` for the others, publishes, and drains.
    pub fn run(self, gate: &Barrier, state: &RunState) -> Result<PublisherReport> {
        let context = &self.context;
        let name = format!("jetbench-pub-{}-of-{}", self.index, self.publishers);
        let connected = Connection::connect(&context.server, &name);
        let mut frame = Vec::new();
        encode_pub(&mut frame, self.subject.as_bytes(), None, &context.payload);
        // Wait even when connecting failed, so the other workers are not stuck at the gate.
        gate.wait();
        let mut connection = connected?;
        let start = Instant::now();
        let pacer = context.rate.map(|rate| Pacer::new(rate, start));
        let mut sent = 0u64;
        loop {
            if sent % CLOCK_CHECK_INTERVAL_MESSAGES == 0 || pacer.is_some() {
                if sent % PROGRESS_BATCH_MESSAGES == 0 && sent > 0 {
                    context.counters.add_published(PROGRESS_BATCH_MESSAGES);
                }
                if context.limit.reached(sent, start, Instant::now()) {
                    break;
                }
            } else if context.limit.count_reached(sent) {
                break;
            }
            if let Some(pacer) = &pacer {
                if pacer.intended_time(sent) > Instant::now() {
                    connection.writer.flush()?;
                    pacer.sleep_until_due(sent);
                }
            }
            connection.writer.raw(&frame);
            sent += 1;
            connection.writer.flush_if_full()?;
        }
        connection.writer.flush()?;
        connection.flush_round_trip(DRAIN_TIMEOUT)?;
        let elapsed = start.elapsed();
        context.counters.add_published(sent % PROGRESS_BATCH_MESSAGES);
        state.publisher_done(sent);
        Ok(PublisherReport { sent, elapsed })
    }
}
