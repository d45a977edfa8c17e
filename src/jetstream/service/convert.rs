//! Between the wire's stream config and state (what clients see) and the engine's (what
//! is enforced). Features the engine does not enforce yet are refused here with a clear
//! error rather than accepted and silently ignored.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::jetstream::errors::ApiError;
use crate::jetstream::policies::{Compression, DiscardPolicy, PersistMode, RetentionPolicy, StorageType};
use crate::jetstream::stream_config::StreamConfig as WireConfig;
use crate::jetstream::stream_info::{LostStreamData, StreamState as WireState};
use crate::jetstream::Timestamp;
use crate::stream::{self, StorageKind, StreamConfig, StreamState, SyncPolicy};
use crate::subject::SubjectTransform;

/// The rules the stream's owner applies to writes, from a config that
/// `stream_transforms::normalize` accepted (an invalid transform is left out).
pub fn stream_rules(wire: &WireConfig) -> stream::StreamRules {
    let ingest = wire
        .subject_transform
        .as_ref()
        .filter(|transform| !transform.dest.is_empty())
        .and_then(|transform| SubjectTransform::new(&transform.src, &transform.dest).ok());
    let republish = wire.republish.as_ref().filter(|republish| !republish.dest.is_empty()).and_then(|republish| {
        let transform = SubjectTransform::new_lenient(&republish.src, &republish.dest).ok()?;
        Some(stream::RepublishRule { transform, headers_only: republish.headers_only })
    });
    stream::StreamRules {
        sealed: wire.sealed,
        deny_delete: wire.deny_delete,
        deny_purge: wire.deny_purge,
        may_replace: wire.max_msgs_per_subject > 0 || wire.allow_rollup_hdrs,
        retention: retention(wire.retention),
        allow_atomic: wire.allow_atomic,
        allow_batched: wire.allow_batched,
        no_ack: wire.no_ack,
        ingest,
        republish,
    }
}

pub fn retention(wire: RetentionPolicy) -> stream::Retention {
    match wire {
        RetentionPolicy::Limits => stream::Retention::Limits,
        RetentionPolicy::Interest => stream::Retention::Interest,
        RetentionPolicy::WorkQueue => stream::Retention::WorkQueue,
    }
}

/// The stream layer's name for a wire storage type.
pub fn storage_kind(storage: StorageType) -> StorageKind {
    match storage {
        StorageType::File => StorageKind::File,
        StorageType::Memory => StorageKind::Memory,
    }
}

/// The engine config that enforces `wire`, or why jetcore cannot honour it yet.
pub fn engine_config(wire: &WireConfig, sync: SyncPolicy) -> Result<StreamConfig, ApiError> {
    refuse_unsupported(wire)?;
    let mut config = StreamConfig::new(wire.name.clone(), &[]);
    config.subjects = wire.subjects.clone();
    config.storage = storage_kind(wire.storage);
    config.max_msgs = positive(wire.max_msgs);
    config.max_bytes = positive(wire.max_bytes);
    config.max_age = positive(wire.max_age).map(Duration::from_nanos);
    config.max_msgs_per_subject = positive(wire.max_msgs_per_subject);
    config.max_msg_size = positive(wire.max_msg_size).map(|size| size.min(u64::from(u32::MAX)) as u32);
    config.discard = match wire.discard {
        DiscardPolicy::Old => stream::DiscardPolicy::Old,
        DiscardPolicy::New => stream::DiscardPolicy::New,
    };
    config.duplicate_window = Duration::from_nanos(wire.duplicate_window.max(0) as u64);
    if let Some(age) = config.max_age {
        config.duplicate_window = config.duplicate_window.min(age);
    }
    config.discard_new_per_subject = wire.discard_new_per_subject;
    config.allow_rollup = wire.allow_rollup_hdrs;
    config.allow_msg_ttl = wire.allow_msg_ttl;
    config.subject_delete_marker_ttl = positive(wire.subject_delete_marker_ttl).map(Duration::from_nanos);
    config.allow_atomic = wire.allow_atomic;
    config.allow_msg_counter = wire.allow_msg_counter;
    config.allow_msg_schedules = wire.allow_msg_schedules;
    config.first_seq = wire.first_seq;
    config.cache_reads = wire.allow_direct || wire.mirror_direct;
    config.sourced_only = wire.subjects.is_empty() && (wire.mirror.is_some() || !wire.sources.is_empty());
    config.sync = sync_policy(wire, sync);
    if config.storage == StorageKind::Memory {
        config.segment_size_bytes = memory_segment_bytes(config.max_msg_size);
    }
    config.validate().map_err(|error| ApiError::stream_invalid_config(error.to_string()))?;
    Ok(config)
}

/// The server's `sync` policy, except that a `persist_mode: async` file stream never
/// waits for fdatasync before its acks (nats-server turns `sync_always` off for it too).
fn sync_policy(wire: &WireConfig, sync: SyncPolicy) -> SyncPolicy {
    match (wire.persist_mode, wire.storage, sync) {
        (PersistMode::Async, StorageType::File, SyncPolicy::Always) => {
            SyncPolicy::Interval(crate::limits::PERSIST_ASYNC_SYNC_INTERVAL)
        }
        _ => sync,
    }
}

/// Smallest segment of a memory stream. The in-memory store holds a segment's full size
/// from the moment it is opened (what a file segment preallocates on disk, it zero-fills
/// in RAM), so the 64 MiB file default cost every memory stream 64 MiB of RAM at creation
/// (300 empty memory streams: ~19 GB). 2 MiB still holds any message within the default
/// `max_payload` (1 MiB) with room for its record overhead.
const MEMORY_SEGMENT_BYTES_MIN: u64 = 2 * 1024 * 1024;
const _: () = assert!(MEMORY_SEGMENT_BYTES_MIN >= 2 * crate::limits::PAYLOAD_BYTES_DEFAULT as u64);
const _: () = assert!(MEMORY_SEGMENT_BYTES_MIN % crate::limits::DIRECT_IO_ALIGNMENT as u64 == 0);

/// A memory stream's segment size: small, but room for two of its largest messages.
fn memory_segment_bytes(max_msg_size: Option<u32>) -> u64 {
    let alignment = crate::limits::DIRECT_IO_ALIGNMENT as u64;
    let wanted = max_msg_size.map_or(0, |max| 2 * (u64::from(max) + alignment));
    let aligned = wanted.div_ceil(alignment) * alignment;
    aligned.clamp(MEMORY_SEGMENT_BYTES_MIN, crate::limits::SEGMENT_SIZE_BYTES_DEFAULT)
}

fn positive(value: i64) -> Option<u64> {
    (value > 0).then_some(value as u64)
}

fn refuse_unsupported(wire: &WireConfig) -> Result<(), ApiError> {
    let unsupported =
        |what: &str| Err(ApiError::stream_invalid_config(format!("{what} is not supported by jetcore yet")));
    // A setting jetcore would accept and then not honour is refused instead, so a client
    // learns at create time rather than from data handled differently.
    // nats-server compresses file stores only; a memory stream echoes `s2` and stores
    // plainly there too.
    if wire.compression == Compression::S2 && wire.storage == StorageType::File {
        return unsupported("stream compression s2");
    }
    Ok(())
}

/// The wire state of a stream, as nats-server reports it (zero times when empty).
pub fn wire_state(state: &StreamState, subjects: BTreeMap<String, u64>, consumer_count: u64) -> WireState {
    let time = |ns: i64| if ns == 0 { Timestamp::ZERO } else { Timestamp::from_unix_nanos(ns) };
    let empty = state.messages == 0;
    let lost_seqs: Vec<u64> = state
        .lost
        .iter()
        .filter_map(|range| range.seqs)
        .flat_map(|(first, last)| first..=last.min(first + crate::limits::LOST_SEQUENCES_REPORTED_MAX))
        .collect();
    WireState {
        messages: state.messages,
        bytes: state.bytes,
        first_seq: if empty && state.last_seq == 0 { 0 } else { state.first_seq },
        first_ts: if empty { Timestamp::ZERO } else { time(state.first_timestamp_ns) },
        last_seq: state.last_seq,
        last_ts: time(state.last_timestamp_ns),
        num_subjects: state.num_subjects,
        subjects,
        num_deleted: state.num_deleted,
        deleted: Vec::new(),
        lost: (!state.lost.is_empty()).then(|| LostStreamData { msgs: lost_seqs, bytes: 0 }),
        consumer_count,
    }
}

/// The API error for an engine refusal.
pub fn api_error(error: &stream::Error) -> ApiError {
    use crate::jetstream::errors::err_code as ec;
    use stream::Error as E;
    let schedules = |err_code| ApiError::message_schedules(err_code, &error.to_string());
    match error {
        E::Config(config) => ApiError::stream_invalid_config(config.to_string()),
        E::StreamNotFound { .. } => ApiError::stream_not_found(),
        E::StreamNameInUse { .. } => ApiError::stream_name_exist(),
        E::SubjectsOverlap { .. } => ApiError::stream_subject_overlap(),
        E::MaximumMessagesExceeded => ApiError::maximum_messages_exceeded(),
        E::MaximumBytesExceeded => ApiError::maximum_bytes_exceeded(),
        E::MaximumMessagesPerSubjectExceeded => ApiError::maximum_messages_per_subject_exceeded(),
        E::MessageSizeExceedsMaximum { .. } => ApiError::message_exceeds_maximum(),
        E::WrongExpectedStream { .. } => ApiError::stream_not_match(),
        E::WrongLastSequence { actual } | E::WrongLastSubjectSequence { actual } => {
            ApiError::wrong_last_sequence(*actual)
        }
        E::WrongLastMsgId { actual } => ApiError::wrong_last_msg_id(actual),
        E::NoMessageFound => ApiError::no_message_found(),
        E::RollupNotPermitted | E::RollupInvalid { .. } => ApiError::rollup_failed(error.to_string()),
        E::MessageTtlDisabled => ApiError::message_ttl_disabled(),
        E::MessageTtlInvalid => ApiError::message_ttl_invalid(),
        E::MessageCountersDisabled => ApiError::message_counters_disabled(),
        E::MessageCounterIncrementInvalid => ApiError::message_counter_increment_invalid(),
        E::MessageCounterIncrementMissing => ApiError::message_counter_increment_missing(),
        E::MessageCounterHasPayload => ApiError::message_counter_has_payload(),
        E::MessageCounterBroken => ApiError::new(400, ec::MESSAGE_COUNTER_BROKEN, "message counter is broken"),
        E::MessageSchedulesDisabled => ApiError::message_schedules_disabled(),
        E::MessageSchedulesPatternInvalid => schedules(ec::MESSAGE_SCHEDULES_PATTERN_INVALID),
        E::MessageSchedulesTargetInvalid => schedules(ec::MESSAGE_SCHEDULES_TARGET_INVALID),
        E::MessageSchedulesTtlInvalid => schedules(ec::MESSAGE_SCHEDULES_TTL_INVALID),
        E::MessageSchedulesRollupInvalid => schedules(ec::MESSAGE_SCHEDULES_ROLLUP_INVALID),
        E::MessageSchedulesSourceInvalid => schedules(ec::MESSAGE_SCHEDULES_SOURCE_INVALID),
        E::MessageSchedulesSchedulerInvalid => schedules(ec::MESSAGE_SCHEDULES_SCHEDULER_INVALID),
        E::MessageSchedulesTimeZoneInvalid => schedules(ec::MESSAGE_SCHEDULES_TIME_ZONE_INVALID),
        E::WrongLastSequenceConstant => ApiError::wrong_last_sequence_constant(),
        E::BatchDuplicateMsgId => ApiError::atomic_publish_duplicate_msg_id(),
        E::Sealed => ApiError::stream_sealed(),
        E::PurgeNotPermitted => ApiError::stream_purge_not_permitted(),
        E::DeleteNotPermitted => ApiError::message_delete_not_permitted(),
        E::InvalidSubject { .. } | E::SubjectNotCaptured { .. } | E::Store(_) => {
            ApiError::stream_store_failed(error.to_string())
        }
        // The embedded engine's consumers; the wire API has its own.
        E::ConsumerConfigInvalid { .. } | E::ConsumerNotFound { .. } | E::ConsumerNameInUse { .. } => {
            ApiError::stream_store_failed(error.to_string())
        }
    }
}
