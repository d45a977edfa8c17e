//! Numbers fixed by the JetStream wire contract: defaults nats-server fills into configs,
//! page sizes, and bounds it validates against. Declared once here (STYLE habit 2).
//! Durations are nanoseconds, like on the wire.

pub const NANOS_PER_MILLISECOND: i64 = 1_000_000;
pub const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// Stream `duplicate_window` when unset (capped at `max_age` when that is smaller).
pub const DUPLICATE_WINDOW_DEFAULT: i64 = 120 * NANOS_PER_SECOND;
/// Smallest non-zero `max_age` and `duplicate_window`.
pub const STREAM_DURATION_MIN: i64 = 100 * NANOS_PER_MILLISECOND;

/// Consumer `ack_wait` for ack policies `explicit` and `all`.
pub const ACK_WAIT_DEFAULT: i64 = 30 * NANOS_PER_SECOND;
/// Consumer `max_ack_pending` when the ack policy is not `none`.
pub const MAX_ACK_PENDING_DEFAULT: i64 = 1000;
/// Pull consumer `max_waiting` (`JSWaitQueueDefaultMax`).
pub const MAX_WAITING_DEFAULT: i64 = 512;
/// `inactive_threshold` given to ephemeral consumers that set none.
pub const EPHEMERAL_INACTIVE_THRESHOLD_DEFAULT: i64 = 5 * NANOS_PER_SECOND;
/// `priority_timeout` for `pinned_client` priority policy when unset.
pub const PINNED_TTL_DEFAULT: i64 = 120 * NANOS_PER_SECOND;
/// Smallest push `idle_heartbeat`.
pub const IDLE_HEARTBEAT_MIN: i64 = 100 * NANOS_PER_MILLISECOND;
/// Smallest non-zero pull `max_expires`.
pub const MAX_EXPIRES_MIN: i64 = NANOS_PER_MILLISECOND;

/// Page size of `STREAM.NAMES` / `CONSUMER.NAMES`.
pub const NAMES_PAGE_LIMIT: u64 = 1024;
/// Page size of `STREAM.LIST` / `CONSUMER.LIST`.
pub const LIST_PAGE_LIMIT: u64 = 256;
/// Page size of `state.subjects` in `STREAM.INFO` with `subjects_filter`.
pub const SUBJECT_DETAILS_PAGE_LIMIT: u64 = 100_000;
/// Longest stream or consumer `description`, in bytes.
pub const DESCRIPTION_BYTES_MAX: usize = 4 * 1024;
/// Longest stream or consumer name, in bytes.
pub const NAME_BYTES_MAX: usize = 255;

const _: () = assert!(STREAM_DURATION_MIN < DUPLICATE_WINDOW_DEFAULT);
const _: () = assert!(LIST_PAGE_LIMIT <= NAMES_PAGE_LIMIT);
/// Largest `metadata` of a stream or consumer: keys plus values, bytes (nats-server's
/// `JSMaxMetadataLen`; the consumer error reports it as "128KB").
pub const METADATA_BYTES_MAX: usize = 128 * 1024;
/// Longest priority group name (nats-server's `validGroupName` allows 1 to 16 bytes).
pub const PRIORITY_GROUP_NAME_BYTES_MAX: usize = 16;
