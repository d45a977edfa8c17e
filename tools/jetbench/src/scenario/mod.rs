//! The benchmark scenarios and what they share: run limits, payloads, shared run state and
//! the outcome each returns.

mod consumer_memory;
mod core_publish;
mod end_to_end;
mod fanout;
mod loopback;
mod prefill;
mod pull_consume;
mod push_consume;
mod receive;
mod request_reply;
mod stream_publish;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cli::{Options, Scenario};
use crate::connection::ServerAddress;
use crate::error::{BenchError, Result};
use crate::latency::LatencyRecorder;
use crate::limits::{DEFAULT_MESSAGE_COUNT, TIMESTAMP_BYTES};
use crate::progress::Counters;

/// Which count is the scenario's headline rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Headline {
    /// Messages published (and flushed through the server) per second.
    Published,
    /// Messages received by all subscribers together per second.
    Received,
    /// Publishes acknowledged (JetStream) or requests answered per second.
    Acknowledged,
    /// Objects (consumers) created per second.
    Created,
}

/// What a scenario measured.
pub struct Outcome {
    pub elapsed: Duration,
    pub published: u64,
    pub received: u64,
    pub acknowledged: u64,
    pub headline: Headline,
    pub latency: Option<LatencyRecorder>,
    /// Non-fatal problems (missed messages, publish errors): the numbers are suspect.
    pub errors: Vec<String>,
    /// The server's resident memory growth, when measured (`js-consumers --server-pid`).
    pub memory: Option<MemoryGrowth>,
}

/// Resident memory of the server process before and after a scenario's objects existed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MemoryGrowth {
    pub rss_before_bytes: u64,
    pub rss_after_bytes: u64,
    /// Growth divided by the number of objects created.
    pub bytes_per_object: f64,
}

impl Outcome {
    pub fn headline_count(&self) -> u64 {
        match self.headline {
            Headline::Published => self.published,
            Headline::Received => self.received,
            Headline::Acknowledged | Headline::Created => self.acknowledged,
        }
    }
}

/// Everything a scenario needs to run, resolved from the command line.
pub struct Context {
    pub options: Options,
    pub server: ServerAddress,
    pub counters: Arc<Counters>,
}

impl Context {
    pub fn new(options: Options, counters: Arc<Counters>) -> Result<Self> {
        let server = ServerAddress::parse(&options.url)?;
        validate(&options)?;
        Ok(Self { options, server, counters })
    }

    /// The run's bound for publisher `index` of `publishers`.
    pub fn limit_for(&self, index: usize, publishers: usize) -> Limit {
        match (self.options.duration, self.options.msgs) {
            (Some(duration), count) => {
                Limit { count: count.map(|c| share(c, publishers, index)), duration: Some(duration) }
            }
            (None, count) => {
                Limit { count: Some(share(count.unwrap_or(DEFAULT_MESSAGE_COUNT), publishers, index)), duration: None }
            }
        }
    }

    /// The total count when the run is bounded by count only.
    pub fn total_count(&self) -> u64 {
        self.options.msgs.unwrap_or(DEFAULT_MESSAGE_COUNT)
    }

    /// A payload of `--size` bytes.
    pub fn payload(&self) -> Vec<u8> {
        (0..self.options.size).map(|index| b'a' + (index % 26) as u8).collect()
    }

    /// The per-publisher rate in fixed-rate mode.
    pub fn rate_per_publisher(&self, publishers: usize) -> Option<u64> {
        self.options.rate.map(|rate| (rate / publishers as u64).max(1))
    }

    pub fn stream_name(&self, index: usize) -> String {
        format!("{}_{index}", self.options.stream)
    }

    pub fn stream_subject(&self, index: usize) -> String {
        format!("{}.stream.{index}", self.options.subject)
    }
}

fn validate(options: &Options) -> Result<()> {
    let invalid = |text: &str| Err(BenchError::InvalidOption(text.into()));
    if options.publishers == 0 || options.subscribers == 0 || options.streams == 0 {
        return invalid("--publishers, --subscribers and --streams must be at least 1");
    }
    if options.window == 0 || options.batch == 0 {
        return invalid("--window and --batch must be at least 1");
    }
    if options.rate == Some(0) {
        return invalid("--rate must be positive");
    }
    if options.msgs == Some(0) {
        return invalid("--msgs must be positive");
    }
    Ok(())
}

/// Splits `total` into `parts` near-equal shares; share `index` gets the remainder first.
pub fn share(total: u64, parts: usize, index: usize) -> u64 {
    let parts = parts as u64;
    total / parts + u64::from((index as u64) < total % parts)
}

/// When a publisher stops: after `count` messages or after `duration`, whichever is first.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    pub count: Option<u64>,
    pub duration: Option<Duration>,
}

impl Limit {
    pub fn reached(&self, sent: u64, start: Instant, now: Instant) -> bool {
        self.count.is_some_and(|count| sent >= count)
            || self.duration.is_some_and(|duration| now.duration_since(start) >= duration)
    }

    pub fn count_reached(&self, sent: u64) -> bool {
        self.count.is_some_and(|count| sent >= count)
    }
}

/// State shared between publishers and receivers of one run.
#[derive(Default)]
pub struct RunState {
    /// Messages published by all publishers so far (exact once they are done).
    pub published: AtomicU64,
    /// Publishers still running.
    pub publishers_running: AtomicU64,
    /// Set when receivers should stop.
    pub stop: AtomicBool,
}

impl RunState {
    pub fn with_publishers(publishers: usize) -> Arc<Self> {
        let state = Self::default();
        state.publishers_running.store(publishers as u64, Ordering::SeqCst);
        Arc::new(state)
    }

    pub fn publisher_done(&self, published: u64) {
        self.published.fetch_add(published, Ordering::SeqCst);
        self.publishers_running.fetch_sub(1, Ordering::SeqCst);
    }

    /// `Some(total)` once every publisher finished.
    pub fn final_published(&self) -> Option<u64> {
        (self.publishers_running.load(Ordering::SeqCst) == 0).then(|| self.published.load(Ordering::SeqCst))
    }
}

/// Nanoseconds since `epoch`, written into the front of a timestamped payload.
pub fn stamp(payload: &mut [u8], epoch: Instant, at: Instant) {
    let nanos = at.duration_since(epoch).as_nanos() as u64;
    payload[..TIMESTAMP_BYTES].copy_from_slice(&nanos.to_le_bytes());
}

/// The instant written by [`stamp`], if the payload is long enough to carry one.
pub fn read_stamp(payload: &[u8], epoch: Instant) -> Option<Instant> {
    let bytes: [u8; TIMESTAMP_BYTES] = payload.get(..TIMESTAMP_BYTES)?.try_into().ok()?;
    Some(epoch + Duration::from_nanos(u64::from_le_bytes(bytes)))
}

/// Runs `scenario`.
pub fn run(scenario: Scenario, context: &Context) -> Result<Outcome> {
    match scenario {
        Scenario::Pub => core_publish::run(context),
        Scenario::Pubsub => fanout::run(context),
        Scenario::Req => request_reply::run(context),
        Scenario::JsPub => stream_publish::run(context, context.options.window),
        Scenario::JsPubSync => stream_publish::run(context, 1),
        Scenario::JsPull => pull_consume::run(context),
        Scenario::JsPush => push_consume::run(context),
        Scenario::Latency if context.options.via == crate::cli::LatencyPath::Loopback => loopback::run(context),
        Scenario::Latency => end_to_end::run(context),
        Scenario::JsConsumers => consumer_memory::run(context),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_to_the_total() {
        let shares: Vec<u64> = (0..3).map(|index| share(10, 3, index)).collect();
        assert_eq!(shares, vec![4, 3, 3]);
    }

    #[test]
    fn stamps_round_trip() {
        let epoch = Instant::now();
        let at = epoch + Duration::from_micros(1234);
        let mut payload = vec![0u8; 16];
        stamp(&mut payload, epoch, at);
        assert_eq!(read_stamp(&payload, epoch), Some(at));
        assert_eq!(read_stamp(&payload[..4], epoch), None);
    }
}
