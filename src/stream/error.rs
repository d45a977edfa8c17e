//! `stream::Error`: everything a stream (and the embedded engine) can refuse, with the
//! NATS error text where one exists.

use super::config::ConfigError;
use crate::store;

/// A refused or failed stream operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    Config(ConfigError),
    StreamNotFound {
        name: String,
    },
    StreamNameInUse {
        name: String,
    },
    /// A captured subject pattern overlaps one of another stream.
    SubjectsOverlap {
        stream: String,
    },
    /// The subject is not a valid literal subject, or not captured by this stream.
    InvalidSubject {
        subject: String,
    },
    SubjectNotCaptured {
        subject: String,
    },
    MaximumMessagesExceeded,
    MaximumBytesExceeded,
    MaximumMessagesPerSubjectExceeded,
    MessageSizeExceedsMaximum {
        size: usize,
        max: usize,
    },
    WrongExpectedStream {
        actual: String,
    },
    WrongLastSequence {
        actual: u64,
    },
    WrongLastSubjectSequence {
        actual: u64,
    },
    WrongLastMsgId {
        actual: String,
    },
    NoMessageFound,
    /// `Nats-Rollup` on a stream without `allow_rollup`.
    RollupNotPermitted,
    /// `Nats-Rollup` with a value other than `sub` / `all`.
    RollupInvalid {
        value: String,
    },
    /// `Nats-TTL` on a stream without `allow_msg_ttl`.
    MessageTtlDisabled,
    /// A `Nats-TTL` value that is not `never`, nor at least one second.
    MessageTtlInvalid,
    /// `Nats-Incr` on a stream without `allow_msg_counter`.
    MessageCountersDisabled,
    /// A `Nats-Incr` value that is not a decimal integer, or one beside a header a
    /// counter refuses (`Nats-Expected-*`, `Nats-Rollup`).
    MessageCounterIncrementInvalid,
    /// A message without `Nats-Incr` to a counter stream.
    MessageCounterIncrementMissing,
    /// A `Nats-Incr` message with a body.
    MessageCounterHasPayload,
    /// A counter whose stored total or `Nats-Counter-Sources` is unreadable, or a
    /// sourced counter message whose body holds no total.
    MessageCounterBroken,
    /// A schedule (or a cancel) on a stream without `allow_msg_schedules`: 10188.
    MessageSchedulesDisabled,
    /// A `Nats-Schedule` that is no `@at`, `@every` or cron pattern: 10189.
    MessageSchedulesPatternInvalid,
    /// No `Nats-Schedule-Target`, or one that is not a literal subject of the stream: 10190.
    MessageSchedulesTargetInvalid,
    /// A `Nats-Schedule-TTL` that is no valid `Nats-TTL`: 10191.
    MessageSchedulesTtlInvalid,
    /// A schedule's rollup other than `sub`: 10192.
    MessageSchedulesRollupInvalid,
    /// A `Nats-Schedule-Source` that is not another literal subject of the stream: 10203.
    MessageSchedulesSourceInvalid,
    /// `Nats-Scheduler` / `Nats-Schedule-Next` other than a cancel of a schedule: 10212.
    MessageSchedulesSchedulerInvalid,
    /// A `Nats-Schedule-Time-Zone` jetcore cannot compute in: 10223.
    MessageSchedulesTimeZoneInvalid,
    /// An expectation that cannot hold inside an atomic batch (an expected last
    /// sequence on a later message, a subject the batch already wrote): 10164.
    WrongLastSequenceConstant,
    /// An atomic batch repeats a `Nats-Msg-Id`, or uses one already seen: 10201.
    BatchDuplicateMsgId,
    /// A sealed stream takes no publish, purge or delete.
    Sealed,
    /// A purge of a stream with `deny_purge`.
    PurgeNotPermitted,
    /// A client's delete of a message of a stream with `deny_delete`.
    DeleteNotPermitted,
    /// The stream's storage failed or refused (I/O, ENOSPC, fail-stop).
    Store(store::Error),
    /// An embedded consumer's configuration is refused (`engine::ConsumerConfig`).
    ConsumerConfigInvalid {
        field: &'static str,
        reason: String,
    },
    /// No embedded consumer of that name on that stream.
    ConsumerNotFound {
        stream: String,
        name: String,
    },
    /// An embedded consumer of that name exists with another configuration.
    ConsumerNameInUse {
        stream: String,
        name: String,
    },
}

impl From<store::Error> for Error {
    fn from(error: store::Error) -> Error {
        Error::Store(error)
    }
}

impl From<ConfigError> for Error {
    fn from(error: ConfigError) -> Error {
        Error::Config(error)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Config(error) => write!(f, "{error}"),
            Error::StreamNotFound { name } => write!(f, "stream not found: {name}"),
            Error::StreamNameInUse { name } => write!(f, "stream name already in use: {name}"),
            Error::SubjectsOverlap { stream } => {
                write!(f, "subjects overlap with an existing stream ({stream})")
            }
            Error::InvalidSubject { subject } => write!(f, "invalid subject {subject:?}"),
            Error::SubjectNotCaptured { subject } => {
                write!(f, "subject {subject:?} is not captured by the stream")
            }
            Error::MaximumMessagesExceeded => write!(f, "maximum messages exceeded"),
            Error::MaximumBytesExceeded => write!(f, "maximum bytes exceeded"),
            Error::MaximumMessagesPerSubjectExceeded => {
                write!(f, "maximum messages per subject exceeded")
            }
            Error::MessageSizeExceedsMaximum { .. } => {
                write!(f, "message size exceeds maximum allowed")
            }
            Error::WrongExpectedStream { actual } => {
                write!(f, "expected stream does not match (stream is {actual})")
            }
            Error::WrongLastSequence { actual } => write!(f, "wrong last sequence: {actual}"),
            Error::WrongLastSubjectSequence { actual } => {
                write!(f, "wrong last sequence: {actual}")
            }
            Error::WrongLastMsgId { actual } => write!(f, "wrong last msg ID: {actual}"),
            Error::NoMessageFound => write!(f, "no message found"),
            Error::RollupNotPermitted => write!(f, "rollup not permitted"),
            Error::RollupInvalid { value } => write!(f, "rollup value invalid: {value:?}"),
            Error::MessageTtlDisabled => write!(f, "per-message TTL is disabled"),
            Error::MessageTtlInvalid => write!(f, "invalid per-message TTL"),
            Error::MessageCountersDisabled => write!(f, "message counters is disabled"),
            Error::MessageCounterIncrementInvalid => write!(f, "message counter increment is invalid"),
            Error::MessageCounterIncrementMissing => write!(f, "message counter increment is missing"),
            Error::MessageCounterHasPayload => write!(f, "message counter has payload"),
            Error::MessageCounterBroken => write!(f, "message counter is broken"),
            Error::MessageSchedulesDisabled => write!(f, "message schedules is disabled"),
            Error::MessageSchedulesPatternInvalid => write!(f, "message schedules pattern is invalid"),
            Error::MessageSchedulesTargetInvalid => write!(f, "message schedules target is invalid"),
            Error::MessageSchedulesTtlInvalid => write!(f, "message schedules invalid per-message TTL"),
            Error::MessageSchedulesRollupInvalid => write!(f, "message schedules invalid rollup"),
            Error::MessageSchedulesSourceInvalid => write!(f, "message schedules source is invalid"),
            Error::MessageSchedulesSchedulerInvalid => write!(f, "message schedules invalid scheduler"),
            Error::MessageSchedulesTimeZoneInvalid => write!(f, "message schedules time zone is invalid"),
            Error::WrongLastSequenceConstant => write!(f, "wrong last sequence"),
            Error::BatchDuplicateMsgId => write!(f, "atomic publish batch contains duplicate message id"),
            Error::Sealed => write!(f, "invalid operation on sealed stream"),
            Error::PurgeNotPermitted => write!(f, "stream purge not permitted"),
            Error::DeleteNotPermitted => write!(f, "message delete not permitted"),
            Error::Store(error) => write!(f, "{error}"),
            Error::ConsumerConfigInvalid { field, reason } => {
                write!(f, "invalid consumer config field `{field}`: {reason}")
            }
            Error::ConsumerNotFound { stream, name } => write!(f, "consumer not found: {stream} > {name}"),
            Error::ConsumerNameInUse { stream, name } => {
                write!(f, "consumer {stream} > {name} exists with a different configuration")
            }
        }
    }
}

impl std::error::Error for Error {}
