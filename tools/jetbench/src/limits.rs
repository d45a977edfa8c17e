//! Every tunable quantity of the load generator, declared once.
//!
//! Buffer sizes are chosen so the client is never the bottleneck: writes go out in large
//! batches (one `write` per [`WRITE_FLUSH_THRESHOLD_BYTES`]), reads pull whole socket buffers.

use std::time::Duration;

/// Initial capacity of a connection's outbound buffer.
pub const WRITE_BUFFER_CAPACITY_BYTES: usize = 256 * 1024;
/// A writer flushes once its buffer holds at least this much.
pub const WRITE_FLUSH_THRESHOLD_BYTES: usize = 64 * 1024;
/// Initial size of a connection's inbound buffer; it grows for larger frames.
pub const READ_BUFFER_CAPACITY_BYTES: usize = 1024 * 1024;
/// The largest inbound frame accepted (nats-server's max_payload ceiling is 64 MiB).
pub const READ_FRAME_MAX_BYTES: usize = 64 * 1024 * 1024 + 4096;
/// Longest control line accepted from the server.
pub const CONTROL_LINE_MAX_BYTES: usize = 4096;

/// How long connecting plus the INFO/CONNECT/PING/PONG handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a JetStream API request may wait for its reply.
pub const API_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// A JetStream publisher with publishes in flight fails when no ack came for this long.
pub const PUBLISH_ACK_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the final PING/PONG round trip of a publisher may take.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);
/// A receiver that saw nothing for this long gives up and reports what it missed.
pub const RECEIVE_IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// Receivers wake at least this often to check whether the run is over.
pub const RECEIVE_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Publishers look at the clock once per this many messages in duration mode.
pub const CLOCK_CHECK_INTERVAL_MESSAGES: u64 = 256;
/// Publishers publish their counters for the progress line once per this many messages.
pub const PROGRESS_BATCH_MESSAGES: u64 = 1024;
/// The progress line is printed this often.
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// Default number of messages when neither `--msgs` nor `--duration` is given.
pub const DEFAULT_MESSAGE_COUNT: u64 = 1_000_000;
/// Default JetStream async-publish window (publishes awaiting their ack, per publisher).
pub const DEFAULT_PUBLISH_WINDOW: usize = 256;
/// Default pull request batch size.
pub const DEFAULT_PULL_BATCH: usize = 500;
/// Pull requests expire after this long; the consumer re-pulls.
pub const PULL_REQUEST_EXPIRES: Duration = Duration::from_secs(2);
/// Default `max_ack_pending` of benchmark consumers.
pub const DEFAULT_MAX_ACK_PENDING: i64 = 20_000;
/// Durable consumers `js-consumers` creates by default (issue 5 measures 10 000).
pub const DEFAULT_CONSUMER_COUNT: u64 = 10_000;
/// Time the server gets after the last consumer was created before its memory is read.
pub const MEMORY_SETTLE_TIME: Duration = Duration::from_millis(500);
/// The fixed rate the `latency` scenario uses when `--rate` is not given (messages/s).
pub const DEFAULT_LATENCY_RATE: u64 = 10_000;

/// Highest latency the histograms track; larger samples are clamped to it.
pub const LATENCY_MAX_TRACKABLE: Duration = Duration::from_secs(60);
/// Significant decimal digits kept by the latency histograms.
pub const LATENCY_SIGNIFICANT_DIGITS: u8 = 3;
/// Quantiles reported in the JSON latency curve (max is added separately).
pub const LATENCY_CURVE_QUANTILES: [f64; 10] = [0.0, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999];

/// A timestamped payload carries its send time in its first bytes.
pub const TIMESTAMP_BYTES: usize = 8;

const _: () = assert!(WRITE_FLUSH_THRESHOLD_BYTES <= WRITE_BUFFER_CAPACITY_BYTES);
const _: () = assert!(CONTROL_LINE_MAX_BYTES < READ_BUFFER_CAPACITY_BYTES);
const _: () = assert!(READ_BUFFER_CAPACITY_BYTES <= READ_FRAME_MAX_BYTES);
const _: () = assert!(PROGRESS_BATCH_MESSAGES % CLOCK_CHECK_INTERVAL_MESSAGES == 0);

/// How long the `latency` scenario runs when neither `--msgs` nor `--duration` is given.
pub const DEFAULT_LATENCY_DURATION: Duration = Duration::from_secs(5);
