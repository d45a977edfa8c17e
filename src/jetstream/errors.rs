//! The JetStream API error object and the catalogue of errors jetcore answers with.
//!
//! Codes, `err_code`s and description templates are copied from nats-server
//! `server/errors.json` (nats-io/nats-server, read at commit 00903595eaba, the file
//! 2.15.x ships) and checked against replies recorded from nats-server 2.15.1
//! (`tests/data/jsapi/tour.json`). Clients match on all three: nats.js compares the
//! description text ("stream not found"), async-nats the `err_code`, nats-py the `code`.
//!
//! On the wire the object has exactly the keys `code`, `err_code`, `description`:
//! nats-py builds its exception with `**error` and rejects any other key.

use serde::{Deserialize, Serialize};
use std::fmt;

/// One JetStream API error: `{"code":N,"err_code":N,"description":"..."}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// HTTP-like status (400, 404, 409, 500, 503).
    pub code: u16,
    /// NATS error code, `10xxx`.
    pub err_code: u16,
    pub description: String,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (err_code {}, code {})", self.description, self.err_code, self.code)
    }
}

impl std::error::Error for ApiError {}

/// `err_code` values, named after nats-server's constants (without `JS` and `Err`).
pub mod err_code {
    pub const BAD_REQUEST: u16 = 10003;
    pub const CONSUMER_CREATE: u16 = 10012;
    pub const CONSUMER_NAME_EXIST: u16 = 10013;
    pub const CONSUMER_NOT_FOUND: u16 = 10014;
    pub const CONSUMER_DURABLE_NAME_NOT_MATCH_SUBJECT: u16 = 10017;
    pub const CONSUMER_DURABLE_NAME_NOT_SET: u16 = 10018;
    pub const CONSUMER_EPHEMERAL_WITH_DURABLE_NAME: u16 = 10020;
    pub const INVALID_JSON: u16 = 10025;
    pub const MAXIMUM_CONSUMERS_LIMIT: u16 = 10026;
    pub const MAXIMUM_STREAMS_LIMIT: u16 = 10027;
    pub const MEMORY_RESOURCES_EXCEEDED: u16 = 10028;
    pub const STORAGE_RESOURCES_EXCEEDED: u16 = 10047;
    pub const STREAM_MAX_BYTES_REQUIRED: u16 = 10113;
    pub const STREAM_MAX_STREAM_BYTES_EXCEEDED: u16 = 10122;
    pub const NO_MESSAGE_FOUND: u16 = 10037;
    pub const NOT_EMPTY_REQUEST: u16 = 10038;
    pub const NOT_ENABLED_FOR_ACCOUNT: u16 = 10039;
    pub const SEQUENCE_NOT_FOUND: u16 = 10043;
    pub const STREAM_INVALID_CONFIG: u16 = 10052;
    pub const STREAM_MESSAGE_EXCEEDS_MAXIMUM: u16 = 10054;
    pub const STREAM_MISMATCH: u16 = 10056;
    pub const STREAM_MSG_DELETE_FAILED: u16 = 10057;
    pub const STREAM_NAME_EXIST: u16 = 10058;
    pub const STREAM_NOT_FOUND: u16 = 10059;
    pub const STREAM_NOT_MATCH: u16 = 10060;
    pub const STREAM_SUBJECT_OVERLAP: u16 = 10065;
    pub const STREAM_UPDATE: u16 = 10069;
    pub const STREAM_WRONG_LAST_MSG_ID: u16 = 10070;
    pub const STREAM_WRONG_LAST_SEQUENCE: u16 = 10071;
    pub const STREAM_REPLICAS_NOT_SUPPORTED: u16 = 10074;
    pub const NOT_ENABLED: u16 = 10076;
    pub const STREAM_STORE_FAILED: u16 = 10077;
    pub const CONSUMER_CONFIG_REQUIRED: u16 = 10078;
    pub const CONSUMER_DELIVER_TO_WILDCARDS: u16 = 10079;
    pub const CONSUMER_PUSH_MAX_WAITING: u16 = 10080;
    pub const CONSUMER_DELIVER_CYCLE: u16 = 10081;
    pub const CONSUMER_MAX_PENDING_ACK_POLICY_REQUIRED: u16 = 10082;
    pub const CONSUMER_SMALL_HEARTBEAT: u16 = 10083;
    pub const CONSUMER_PULL_REQUIRES_ACK: u16 = 10084;
    pub const CONSUMER_PULL_WITH_RATE_LIMIT: u16 = 10086;
    pub const CONSUMER_MAX_WAITING_NEGATIVE: u16 = 10087;
    pub const CONSUMER_HEARTBEAT_REQUIRES_PUSH: u16 = 10088;
    pub const CONSUMER_FLOW_CONTROL_REQUIRES_PUSH: u16 = 10089;
    pub const CONSUMER_INVALID_POLICY: u16 = 10094;
    pub const STREAM_HEADER_EXCEEDS_MAXIMUM: u16 = 10097;
    pub const CONSUMER_WORKQUEUE_REQUIRES_EXPLICIT_ACK: u16 = 10098;
    pub const CONSUMER_WORKQUEUE_MULTIPLE_UNFILTERED: u16 = 10099;
    pub const CONSUMER_WORKQUEUE_NOT_UNIQUE: u16 = 10100;
    pub const CONSUMER_WORKQUEUE_NOT_DELIVER_ALL: u16 = 10101;
    pub const CONSUMER_NAME_TOO_LONG: u16 = 10102;
    pub const CONSUMER_DESCRIPTION_TOO_LONG: u16 = 10107;
    pub const CONSUMER_FLOW_CONTROL_NEEDS_HEARTBEATS: u16 = 10108;
    pub const STREAM_SEALED: u16 = 10109;
    pub const STREAM_PURGE_FAILED: u16 = 10110;
    pub const STREAM_ROLLUP_FAILED: u16 = 10111;
    pub const CONSUMER_INVALID_DELIVER_SUBJECT: u16 = 10112;
    pub const CONSUMER_MAX_REQUEST_BATCH_NEGATIVE: u16 = 10114;
    pub const CONSUMER_MAX_REQUEST_EXPIRES_TOO_SMALL: u16 = 10115;
    pub const CONSUMER_MAX_DELIVER_BACKOFF: u16 = 10116;
    pub const CONSUMER_CREATE_FILTER_SUBJECT_MISMATCH: u16 = 10131;
    pub const CONSUMER_CREATE_DURABLE_AND_NAME_MISMATCH: u16 = 10132;
    pub const REPLICAS_COUNT_CANNOT_BE_NEGATIVE: u16 = 10133;
    pub const CONSUMER_DUPLICATE_FILTER_SUBJECTS: u16 = 10136;
    pub const CONSUMER_MULTIPLE_FILTERS_NOT_ALLOWED: u16 = 10137;
    pub const CONSUMER_OVERLAPPING_SUBJECT_FILTERS: u16 = 10138;
    pub const CONSUMER_EMPTY_FILTER: u16 = 10139;
    pub const CONSUMER_ALREADY_EXISTS: u16 = 10148;
    pub const CONSUMER_DOES_NOT_EXIST: u16 = 10149;
    pub const CONSUMER_PRIORITY_POLICY_WITHOUT_GROUP: u16 = 10159;
    pub const STREAM_WRONG_LAST_SEQUENCE_CONSTANT: u16 = 10164;
    pub const MESSAGE_TTL_INVALID: u16 = 10165;
    pub const ATOMIC_PUBLISH_DISABLED: u16 = 10174;
    pub const ATOMIC_PUBLISH_MISSING_SEQ: u16 = 10175;
    pub const ATOMIC_PUBLISH_INCOMPLETE_BATCH: u16 = 10176;
    pub const ATOMIC_PUBLISH_UNSUPPORTED_HEADER: u16 = 10177;
    pub const ATOMIC_PUBLISH_INVALID_BATCH_ID: u16 = 10179;
    pub const ATOMIC_PUBLISH_TOO_LARGE_BATCH: u16 = 10199;
    pub const ATOMIC_PUBLISH_INVALID_BATCH_COMMIT: u16 = 10200;
    pub const ATOMIC_PUBLISH_DUPLICATE_MSG_ID: u16 = 10201;
    pub const BATCH_PUBLISH_DISABLED: u16 = 10205;
    pub const BATCH_PUBLISH_INVALID_PATTERN: u16 = 10206;
    pub const BATCH_PUBLISH_INVALID_BATCH_ID: u16 = 10207;
    pub const BATCH_PUBLISH_UNKNOWN_BATCH_ID: u16 = 10208;
    pub const MIRROR_WITH_BATCH_PUBLISH: u16 = 10209;
    pub const BATCH_PUBLISH_TOO_MANY_INFLIGHT: u16 = 10211;
    pub const MESSAGE_TTL_DISABLED: u16 = 10166;
    pub const REQUIRED_API_LEVEL: u16 = 10185;
    pub const MESSAGE_COUNTERS_DISABLED: u16 = 10168;
    pub const MESSAGE_COUNTER_INCREMENT_MISSING: u16 = 10169;
    pub const MESSAGE_COUNTER_HAS_PAYLOAD: u16 = 10170;
    pub const MESSAGE_COUNTER_INCREMENT_INVALID: u16 = 10171;
    pub const MESSAGE_COUNTER_BROKEN: u16 = 10172;
    pub const MESSAGE_SCHEDULES_DISABLED: u16 = 10188;
    pub const MESSAGE_SCHEDULES_PATTERN_INVALID: u16 = 10189;
    pub const MESSAGE_SCHEDULES_TARGET_INVALID: u16 = 10190;
    pub const MESSAGE_SCHEDULES_TTL_INVALID: u16 = 10191;
    pub const MESSAGE_SCHEDULES_ROLLUP_INVALID: u16 = 10192;
    pub const MESSAGE_SCHEDULES_SOURCE_INVALID: u16 = 10203;
    pub const MESSAGE_SCHEDULES_SCHEDULER_INVALID: u16 = 10212;
    pub const MESSAGE_SCHEDULES_TIME_ZONE_INVALID: u16 = 10223;
    pub const MIRROR_WITH_MSG_SCHEDULES: u16 = 10186;
    pub const SOURCE_WITH_MSG_SCHEDULES: u16 = 10187;
    pub const CONSUMER_PUSH_WITH_PRIORITY_GROUP: u16 = 10178;
    pub const CONSUMER_ACK_WAIT_NEGATIVE: u16 = 10183;
    pub const CONSUMER_BACKOFF_NEGATIVE: u16 = 10184;
    pub const CONSUMER_PRIORITY_GROUP_WITH_POLICY_NONE: u16 = 10196;
    pub const STREAM_TRANSFORM_INVALID_SOURCE: u16 = 10155;
    pub const STREAM_TRANSFORM_INVALID_DESTINATION: u16 = 10156;
    pub const CONSUMER_INVALID_RESET: u16 = 10204;
    pub const CONSUMER_DIRECT_REQUIRES_PUSH: u16 = 10090;
    pub const CONSUMER_INVALID_SAMPLING: u16 = 10095;
    pub const CONSUMER_METADATA_LENGTH: u16 = 10135;
    pub const CONSUMER_DIRECT_REQUIRES_EPHEMERAL: u16 = 10091;
    pub const CONSUMER_MAX_PENDING_ACK_EXCESS: u16 = 10121;
    pub const CONSUMER_INACTIVE_THRESHOLD_EXCESS: u16 = 10153;
    pub const CONSUMER_INVALID_PRIORITY_GROUP: u16 = 10160;
    pub const CONSUMER_EMPTY_GROUP_NAME: u16 = 10161;
    pub const CONSUMER_INVALID_GROUP_NAME: u16 = 10162;
    pub const CONSUMER_PINNED_TTL_WITHOUT_PRIORITY_POLICY: u16 = 10197;
    pub const CONSUMER_ACK_FC_REQUIRES_PUSH: u16 = 10218;
    pub const CONSUMER_ACK_FC_REQUIRES_FC: u16 = 10219;
    pub const CONSUMER_ACK_FC_REQUIRES_MAX_ACK_PENDING: u16 = 10220;
    pub const CONSUMER_ACK_FC_REQUIRES_NO_ACK_WAIT: u16 = 10221;
    pub const CONSUMER_ACK_FC_REQUIRES_NO_MAX_DELIVER: u16 = 10222;
}

use err_code as ec;

impl ApiError {
    pub fn new(code: u16, err_code: u16, description: impl Into<String>) -> ApiError {
        ApiError { code, err_code, description: description.into() }
    }

    // ---- general ----
    /// 10003: unknown API, conflicting options (purge with seq and keep, msg get combos).
    pub fn bad_request() -> ApiError {
        ApiError::new(400, ec::BAD_REQUEST, "bad request")
    }
    /// 10025: `detail` is Go's decoder message, e.g. `unexpected EOF`.
    pub fn invalid_json(detail: &str) -> ApiError {
        ApiError::new(400, ec::INVALID_JSON, format!("invalid JSON: {detail}"))
    }
    pub fn not_empty_request() -> ApiError {
        ApiError::new(400, ec::NOT_EMPTY_REQUEST, "expected an empty request payload")
    }
    pub fn not_enabled_for_account() -> ApiError {
        ApiError::new(503, ec::NOT_ENABLED_FOR_ACCOUNT, "JetStream not enabled for account")
    }
    pub fn not_enabled() -> ApiError {
        ApiError::new(503, ec::NOT_ENABLED, "JetStream not enabled")
    }
    pub fn replicas_count_cannot_be_negative() -> ApiError {
        ApiError::new(400, ec::REPLICAS_COUNT_CANNOT_BE_NEGATIVE, "replicas count cannot be negative")
    }

    // ---- streams ----
    pub fn stream_not_found() -> ApiError {
        ApiError::new(404, ec::STREAM_NOT_FOUND, "stream not found")
    }
    pub fn stream_name_exist() -> ApiError {
        ApiError::new(400, ec::STREAM_NAME_EXIST, "stream name already in use with a different configuration")
    }
    /// 10056: the stream name in the subject differs from the one in the body.
    pub fn stream_mismatch() -> ApiError {
        ApiError::new(400, ec::STREAM_MISMATCH, "stream name in subject does not match request")
    }
    pub fn stream_subject_overlap() -> ApiError {
        ApiError::new(400, ec::STREAM_SUBJECT_OVERLAP, "subjects overlap with an existing stream")
    }
    /// 10052 with nats-server's validation text, e.g. `max age needs to be >= 100ms`.
    pub fn stream_invalid_config(reason: impl Into<String>) -> ApiError {
        ApiError::new(500, ec::STREAM_INVALID_CONFIG, reason)
    }
    pub fn stream_update(reason: impl Into<String>) -> ApiError {
        ApiError::new(500, ec::STREAM_UPDATE, reason)
    }
    pub fn stream_replicas_not_supported() -> ApiError {
        ApiError::new(500, ec::STREAM_REPLICAS_NOT_SUPPORTED, "replicas > 1 not supported in non-clustered mode")
    }
    pub fn maximum_streams_limit() -> ApiError {
        ApiError::new(400, ec::MAXIMUM_STREAMS_LIMIT, "maximum number of streams reached")
    }
    pub fn memory_resources_exceeded() -> ApiError {
        ApiError::new(500, ec::MEMORY_RESOURCES_EXCEEDED, "insufficient memory resources available")
    }
    pub fn storage_resources_exceeded() -> ApiError {
        ApiError::new(500, ec::STORAGE_RESOURCES_EXCEEDED, "insufficient storage resources available")
    }
    pub fn stream_max_bytes_required() -> ApiError {
        ApiError::new(400, ec::STREAM_MAX_BYTES_REQUIRED, "account requires a stream config to have max bytes set")
    }
    pub fn stream_max_stream_bytes_exceeded() -> ApiError {
        let text = "stream max bytes exceeds account limit max stream bytes";
        ApiError::new(400, ec::STREAM_MAX_STREAM_BYTES_EXCEEDED, text)
    }
    pub fn stream_sealed() -> ApiError {
        ApiError::new(400, ec::STREAM_SEALED, "invalid operation on sealed stream")
    }
    /// 10110 `stream purge not permitted` (`deny_purge`).
    pub fn stream_purge_not_permitted() -> ApiError {
        ApiError::new(500, ec::STREAM_PURGE_FAILED, "stream purge not permitted")
    }
    /// 10057 with a reason: `message delete not permitted` (`deny_delete`) or `no message found`.
    pub fn stream_msg_delete_failed(reason: impl Into<String>) -> ApiError {
        ApiError::new(500, ec::STREAM_MSG_DELETE_FAILED, reason)
    }
    pub fn message_delete_not_permitted() -> ApiError {
        ApiError::stream_msg_delete_failed("message delete not permitted")
    }
    pub fn no_message_found() -> ApiError {
        ApiError::new(404, ec::NO_MESSAGE_FOUND, "no message found")
    }
    pub fn sequence_not_found(seq: u64) -> ApiError {
        ApiError::new(400, ec::SEQUENCE_NOT_FOUND, format!("sequence {seq} not found"))
    }

    // ---- publish (carried inside a pub ack) ----
    /// 10060 `Nats-Expected-Stream` mismatch.
    pub fn stream_not_match() -> ApiError {
        ApiError::new(400, ec::STREAM_NOT_MATCH, "expected stream does not match")
    }
    /// 10071 with the stream's (or subject's) actual last sequence.
    pub fn wrong_last_sequence(actual: u64) -> ApiError {
        ApiError::new(400, ec::STREAM_WRONG_LAST_SEQUENCE, format!("wrong last sequence: {actual}"))
    }
    pub fn wrong_last_sequence_constant() -> ApiError {
        ApiError::new(400, ec::STREAM_WRONG_LAST_SEQUENCE_CONSTANT, "wrong last sequence")
    }
    /// 10070 with the msg id of the last stored message (empty when it had none).
    pub fn wrong_last_msg_id(actual: &str) -> ApiError {
        ApiError::new(400, ec::STREAM_WRONG_LAST_MSG_ID, format!("wrong last msg ID: {actual}"))
    }
    pub fn message_exceeds_maximum() -> ApiError {
        ApiError::new(400, ec::STREAM_MESSAGE_EXCEEDS_MAXIMUM, "message size exceeds maximum allowed")
    }
    pub fn header_exceeds_maximum() -> ApiError {
        ApiError::new(400, ec::STREAM_HEADER_EXCEEDS_MAXIMUM, "header size exceeds maximum allowed of 64k")
    }
    /// 10077 discard-new refusals: `maximum messages exceeded`, `maximum bytes exceeded`,
    /// `maximum messages per subject exceeded`.
    pub fn stream_store_failed(reason: impl Into<String>) -> ApiError {
        ApiError::new(503, ec::STREAM_STORE_FAILED, reason)
    }
    pub fn maximum_messages_exceeded() -> ApiError {
        ApiError::stream_store_failed("maximum messages exceeded")
    }
    pub fn maximum_bytes_exceeded() -> ApiError {
        ApiError::stream_store_failed("maximum bytes exceeded")
    }
    pub fn maximum_messages_per_subject_exceeded() -> ApiError {
        ApiError::stream_store_failed("maximum messages per subject exceeded")
    }
    /// 10111 `Nats-Rollup` refused, e.g. `rollup not permitted`.
    pub fn rollup_failed(reason: impl Into<String>) -> ApiError {
        ApiError::new(500, ec::STREAM_ROLLUP_FAILED, reason)
    }
    pub fn message_ttl_disabled() -> ApiError {
        ApiError::new(400, ec::MESSAGE_TTL_DISABLED, "per-message TTL is disabled")
    }
    pub fn message_ttl_invalid() -> ApiError {
        ApiError::new(400, ec::MESSAGE_TTL_INVALID, "invalid per-message TTL")
    }
    /// 10185 `Nats-Required-Api-Level` above jetcore's level (`api_level`).
    pub fn required_api_level() -> ApiError {
        ApiError::new(412, ec::REQUIRED_API_LEVEL, "JetStream minimum api level required")
    }
    /// 10168 `Nats-Incr` on a stream without `allow_msg_counter`.
    pub fn message_counters_disabled() -> ApiError {
        ApiError::new(400, ec::MESSAGE_COUNTERS_DISABLED, "message counters is disabled")
    }
    /// 10171 a `Nats-Incr` value that is not a decimal integer.
    pub fn message_counter_increment_invalid() -> ApiError {
        ApiError::new(400, ec::MESSAGE_COUNTER_INCREMENT_INVALID, "message counter increment is invalid")
    }
    /// 10169 a message without `Nats-Incr` to a counter stream.
    pub fn message_counter_increment_missing() -> ApiError {
        ApiError::new(400, ec::MESSAGE_COUNTER_INCREMENT_MISSING, "message counter increment is missing")
    }
    /// 10170 a `Nats-Incr` message with a body.
    pub fn message_counter_has_payload() -> ApiError {
        ApiError::new(400, ec::MESSAGE_COUNTER_HAS_PAYLOAD, "message counter has payload")
    }
    /// 10188 `Nats-Schedule` on a stream without `allow_msg_schedules`.
    pub fn message_schedules_disabled() -> ApiError {
        ApiError::new(400, ec::MESSAGE_SCHEDULES_DISABLED, "message schedules is disabled")
    }
    /// A refused schedule header (10189-10223, texts recorded from nats-server 2.15.1).
    pub fn message_schedules(err_code: u16, description: &str) -> ApiError {
        ApiError::new(400, err_code, description)
    }

    // ---- atomic batch publish (texts and codes recorded from nats-server 2.15.1) ----
    pub fn atomic_publish_disabled() -> ApiError {
        ApiError::new(400, ec::ATOMIC_PUBLISH_DISABLED, "atomic publish is disabled")
    }
    pub fn atomic_publish_missing_seq() -> ApiError {
        ApiError::new(400, ec::ATOMIC_PUBLISH_MISSING_SEQ, "atomic publish sequence is missing")
    }
    pub fn atomic_publish_incomplete_batch() -> ApiError {
        ApiError::new(400, ec::ATOMIC_PUBLISH_INCOMPLETE_BATCH, "atomic publish batch is incomplete")
    }
    pub fn atomic_publish_unsupported_header(header: &str) -> ApiError {
        ApiError::new(
            400,
            ec::ATOMIC_PUBLISH_UNSUPPORTED_HEADER,
            format!("atomic publish unsupported header used: {header}"),
        )
    }
    pub fn atomic_publish_invalid_batch_id() -> ApiError {
        ApiError::new(400, ec::ATOMIC_PUBLISH_INVALID_BATCH_ID, "atomic publish batch ID is invalid")
    }
    pub fn atomic_publish_too_large_batch(max: usize) -> ApiError {
        ApiError::new(400, ec::ATOMIC_PUBLISH_TOO_LARGE_BATCH, format!("atomic publish batch is too large: {max}"))
    }
    pub fn atomic_publish_invalid_batch_commit() -> ApiError {
        ApiError::new(400, ec::ATOMIC_PUBLISH_INVALID_BATCH_COMMIT, "atomic publish batch commit is invalid")
    }
    pub fn atomic_publish_duplicate_msg_id() -> ApiError {
        ApiError::new(400, ec::ATOMIC_PUBLISH_DUPLICATE_MSG_ID, "atomic publish batch contains duplicate message id")
    }

    // ---- fast batch publish (texts and codes recorded from nats-server 2.15.1) ----
    /// 10205 a fast batch message (reply ending `.$FI`) to a stream without `allow_batched`.
    pub fn batch_publish_disabled() -> ApiError {
        ApiError::new(400, ec::BATCH_PUBLISH_DISABLED, "batch publish is disabled")
    }
    /// 10206 a fast batch reply subject that does not parse.
    pub fn batch_publish_invalid_pattern() -> ApiError {
        ApiError::new(400, ec::BATCH_PUBLISH_INVALID_PATTERN, "batch publish pattern is invalid")
    }
    /// 10207 a fast batch id longer than 64 bytes.
    pub fn batch_publish_invalid_batch_id() -> ApiError {
        ApiError::new(400, ec::BATCH_PUBLISH_INVALID_BATCH_ID, "batch publish ID is invalid")
    }
    /// 10208 a message of a fast batch that is not open (never started, ended, abandoned).
    pub fn batch_publish_unknown_batch_id() -> ApiError {
        ApiError::new(400, ec::BATCH_PUBLISH_UNKNOWN_BATCH_ID, "batch publish ID unknown")
    }
    /// 10209 `allow_batched` on a mirror.
    pub fn mirror_with_batch_publish() -> ApiError {
        ApiError::new(400, ec::MIRROR_WITH_BATCH_PUBLISH, "stream mirrors can not also use batch publishing")
    }
    /// 10211 a fast batch start past the open batches' limit.
    pub fn batch_publish_too_many_inflight() -> ApiError {
        ApiError::new(429, ec::BATCH_PUBLISH_TOO_MANY_INFLIGHT, "batch publish too many inflight")
    }

    // ---- consumers ----
    pub fn consumer_not_found() -> ApiError {
        ApiError::new(404, ec::CONSUMER_NOT_FOUND, "consumer not found")
    }
    pub fn consumer_name_exist() -> ApiError {
        ApiError::new(400, ec::CONSUMER_NAME_EXIST, "consumer name already in use")
    }
    /// 10012 with a reason, e.g. a disallowed change on update.
    pub fn consumer_create(reason: impl Into<String>) -> ApiError {
        ApiError::new(500, ec::CONSUMER_CREATE, reason)
    }
    pub fn consumer_already_exists() -> ApiError {
        ApiError::new(400, ec::CONSUMER_ALREADY_EXISTS, "consumer already exists")
    }
    pub fn consumer_does_not_exist() -> ApiError {
        ApiError::new(400, ec::CONSUMER_DOES_NOT_EXIST, "consumer does not exist")
    }
    pub fn consumer_durable_name_not_match_subject() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_DURABLE_NAME_NOT_MATCH_SUBJECT,
            "consumer name in subject does not match durable name in request",
        )
    }
    pub fn consumer_durable_name_not_set() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_DURABLE_NAME_NOT_SET,
            "consumer expected to be durable but a durable name was not set",
        )
    }
    pub fn consumer_ephemeral_with_durable_name() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_EPHEMERAL_WITH_DURABLE_NAME,
            "consumer expected to be ephemeral but a durable name was set in request",
        )
    }
    pub fn consumer_create_filter_subject_mismatch() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_CREATE_FILTER_SUBJECT_MISMATCH,
            "Consumer create request did not match filtered subject from create subject",
        )
    }
    pub fn consumer_create_durable_and_name_mismatch() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_CREATE_DURABLE_AND_NAME_MISMATCH,
            "Consumer Durable and Name have to be equal if both are provided",
        )
    }
    pub fn maximum_consumers_limit() -> ApiError {
        ApiError::new(400, ec::MAXIMUM_CONSUMERS_LIMIT, "maximum consumers limit reached")
    }
    pub fn consumer_config_required() -> ApiError {
        ApiError::new(400, ec::CONSUMER_CONFIG_REQUIRED, "consumer config required")
    }
    pub fn consumer_deliver_to_wildcards() -> ApiError {
        ApiError::new(400, ec::CONSUMER_DELIVER_TO_WILDCARDS, "consumer deliver subject has wildcards")
    }
    pub fn consumer_invalid_deliver_subject() -> ApiError {
        ApiError::new(400, ec::CONSUMER_INVALID_DELIVER_SUBJECT, "invalid push consumer deliver subject")
    }
    pub fn consumer_deliver_cycle() -> ApiError {
        ApiError::new(400, ec::CONSUMER_DELIVER_CYCLE, "consumer deliver subject forms a cycle")
    }
    pub fn consumer_push_max_waiting() -> ApiError {
        ApiError::new(400, ec::CONSUMER_PUSH_MAX_WAITING, "consumer in push mode can not set max waiting")
    }
    pub fn consumer_max_pending_ack_policy_required() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_MAX_PENDING_ACK_POLICY_REQUIRED,
            "consumer requires ack policy for max ack pending",
        )
    }
    pub fn consumer_small_heartbeat() -> ApiError {
        ApiError::new(400, ec::CONSUMER_SMALL_HEARTBEAT, "consumer idle heartbeat needs to be >= 100ms")
    }
    pub fn consumer_pull_requires_ack() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_PULL_REQUIRES_ACK,
            "consumer in pull mode requires explicit ack policy on workqueue stream",
        )
    }
    pub fn consumer_pull_with_rate_limit() -> ApiError {
        ApiError::new(400, ec::CONSUMER_PULL_WITH_RATE_LIMIT, "consumer in pull mode can not have rate limit set")
    }
    pub fn consumer_max_waiting_negative() -> ApiError {
        ApiError::new(400, ec::CONSUMER_MAX_WAITING_NEGATIVE, "consumer max waiting needs to be positive")
    }
    pub fn consumer_heartbeat_requires_push() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_HEARTBEAT_REQUIRES_PUSH,
            "consumer idle heartbeat requires a push based consumer",
        )
    }
    pub fn consumer_flow_control_requires_push() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_FLOW_CONTROL_REQUIRES_PUSH,
            "consumer flow control requires a push based consumer",
        )
    }
    pub fn consumer_flow_control_needs_heartbeats() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_FLOW_CONTROL_NEEDS_HEARTBEATS,
            "consumer with flow control also needs heartbeats",
        )
    }
    /// 10094 with Go's text, e.g. `consumer delivery policy is deliver all, but optional
    /// start sequence is also set`.
    pub fn consumer_invalid_policy(reason: impl Into<String>) -> ApiError {
        ApiError::new(400, ec::CONSUMER_INVALID_POLICY, reason)
    }
    pub fn consumer_workqueue_requires_explicit_ack() -> ApiError {
        ApiError::new(400, ec::CONSUMER_WORKQUEUE_REQUIRES_EXPLICIT_ACK, "workqueue stream requires explicit ack")
    }
    pub fn consumer_workqueue_multiple_unfiltered() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_WORKQUEUE_MULTIPLE_UNFILTERED,
            "multiple non-filtered consumers not allowed on workqueue stream",
        )
    }
    pub fn consumer_workqueue_not_unique() -> ApiError {
        ApiError::new(400, ec::CONSUMER_WORKQUEUE_NOT_UNIQUE, "filtered consumer not unique on workqueue stream")
    }
    pub fn consumer_workqueue_not_deliver_all() -> ApiError {
        ApiError::new(400, ec::CONSUMER_WORKQUEUE_NOT_DELIVER_ALL, "consumer must be deliver all on workqueue stream")
    }
    pub fn consumer_name_too_long(max: usize) -> ApiError {
        ApiError::new(400, ec::CONSUMER_NAME_TOO_LONG, format!("consumer name is too long, maximum allowed is {max}"))
    }
    pub fn consumer_description_too_long(max: usize) -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_DESCRIPTION_TOO_LONG,
            format!("consumer description is too long, maximum allowed is {max}"),
        )
    }
    pub fn consumer_max_request_batch_negative() -> ApiError {
        ApiError::new(400, ec::CONSUMER_MAX_REQUEST_BATCH_NEGATIVE, "consumer max request batch needs to be > 0")
    }
    pub fn consumer_max_request_expires_too_small() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_MAX_REQUEST_EXPIRES_TOO_SMALL,
            "consumer max request expires needs to be >= 1ms",
        )
    }
    pub fn consumer_max_deliver_backoff() -> ApiError {
        ApiError::new(400, ec::CONSUMER_MAX_DELIVER_BACKOFF, "max deliver is required to be > length of backoff values")
    }
    pub fn consumer_duplicate_filter_subjects() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_DUPLICATE_FILTER_SUBJECTS,
            "consumer cannot have both FilterSubject and FilterSubjects specified",
        )
    }
    pub fn consumer_multiple_filters_not_allowed() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_MULTIPLE_FILTERS_NOT_ALLOWED,
            "consumer with multiple subject filters cannot use subject based API",
        )
    }
    pub fn consumer_overlapping_subject_filters() -> ApiError {
        ApiError::new(400, ec::CONSUMER_OVERLAPPING_SUBJECT_FILTERS, "consumer subject filters cannot overlap")
    }
    pub fn consumer_ack_wait_negative() -> ApiError {
        ApiError::new(400, ec::CONSUMER_ACK_WAIT_NEGATIVE, "consumer ack wait needs to be positive")
    }
    pub fn consumer_backoff_negative() -> ApiError {
        ApiError::new(400, ec::CONSUMER_BACKOFF_NEGATIVE, "consumer backoff needs to be positive")
    }
    pub fn consumer_priority_policy_without_group() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_PRIORITY_POLICY_WITHOUT_GROUP,
            "Setting PriorityPolicy requires at least one PriorityGroup to be set",
        )
    }
    pub fn consumer_priority_group_with_policy_none() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_PRIORITY_GROUP_WITH_POLICY_NONE,
            "consumer can not have priority groups when policy is none",
        )
    }
    pub fn consumer_push_with_priority_group() -> ApiError {
        ApiError::new(400, ec::CONSUMER_PUSH_WITH_PRIORITY_GROUP, "priority groups can not be used with push consumers")
    }
    pub fn consumer_empty_filter() -> ApiError {
        ApiError::new(400, ec::CONSUMER_EMPTY_FILTER, "consumer filter in FilterSubjects cannot be empty")
    }
}

/// Consumer config checks: direct, stream limits, priority group names,
/// the 2.15 `flow_control` ack policy (all 400, texts from nats-server's errors.json).
impl ApiError {
    /// `detail` is why `sample_freq` (without a trailing `%`) is not a whole number >= 0.
    pub fn consumer_invalid_sampling(detail: &str) -> ApiError {
        let text = format!("failed to parse consumer sampling configuration: {detail}");
        ApiError::new(400, ec::CONSUMER_INVALID_SAMPLING, text)
    }
    pub fn consumer_metadata_length(max_kib: usize) -> ApiError {
        let text = format!("consumer metadata exceeds maximum size of {max_kib}KB");
        ApiError::new(400, ec::CONSUMER_METADATA_LENGTH, text)
    }
    pub fn consumer_direct_requires_push() -> ApiError {
        ApiError::new(400, ec::CONSUMER_DIRECT_REQUIRES_PUSH, "consumer direct requires a push based consumer")
    }
    pub fn consumer_direct_requires_ephemeral() -> ApiError {
        ApiError::new(400, ec::CONSUMER_DIRECT_REQUIRES_EPHEMERAL, "consumer direct requires an ephemeral consumer")
    }
    pub fn consumer_max_pending_ack_excess(limit: i64) -> ApiError {
        let text = format!("consumer max ack pending exceeds system limit of {limit}");
        ApiError::new(400, ec::CONSUMER_MAX_PENDING_ACK_EXCESS, text)
    }
    /// `limit` already in Go's duration form (`10s`).
    pub fn consumer_inactive_threshold_excess(limit: &str) -> ApiError {
        let text = format!("consumer inactive threshold exceeds system limit of {limit}");
        ApiError::new(400, ec::CONSUMER_INACTIVE_THRESHOLD_EXCESS, text)
    }
    pub fn consumer_empty_group_name() -> ApiError {
        ApiError::new(400, ec::CONSUMER_EMPTY_GROUP_NAME, "Group name cannot be an empty string")
    }
    /// `CONSUMER.UNPIN` naming a group the consumer does not have.
    pub fn consumer_invalid_priority_group() -> ApiError {
        let text = "Provided priority group does not exist for this consumer";
        ApiError::new(400, ec::CONSUMER_INVALID_PRIORITY_GROUP, text)
    }
    pub fn consumer_invalid_group_name() -> ApiError {
        let text = "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters";
        ApiError::new(400, ec::CONSUMER_INVALID_GROUP_NAME, text)
    }
    pub fn consumer_pinned_ttl_without_priority_policy() -> ApiError {
        let text = "PinnedTTL cannot be set when PriorityPolicy is none";
        ApiError::new(400, ec::CONSUMER_PINNED_TTL_WITHOUT_PRIORITY_POLICY, text)
    }
    pub fn consumer_ack_fc_requires_push() -> ApiError {
        ApiError::new(400, ec::CONSUMER_ACK_FC_REQUIRES_PUSH, "flow control ack policy requires a push based consumer")
    }
    pub fn consumer_ack_fc_requires_fc() -> ApiError {
        ApiError::new(400, ec::CONSUMER_ACK_FC_REQUIRES_FC, "flow control ack policy requires flow control")
    }
    pub fn consumer_ack_fc_requires_max_ack_pending() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_ACK_FC_REQUIRES_MAX_ACK_PENDING,
            "flow control ack policy requires max ack pending",
        )
    }
    pub fn consumer_ack_fc_requires_no_ack_wait() -> ApiError {
        ApiError::new(400, ec::CONSUMER_ACK_FC_REQUIRES_NO_ACK_WAIT, "flow control ack policy requires unset ack wait")
    }
    pub fn consumer_ack_fc_requires_no_max_deliver() -> ApiError {
        ApiError::new(
            400,
            ec::CONSUMER_ACK_FC_REQUIRES_NO_MAX_DELIVER,
            "flow control ack policy requires unset max deliver",
        )
    }
}

/// Stream transforms and consumer reset (nats-server 2.10 / 2.14).
impl ApiError {
    /// 10155, e.g. `stream transform source: invalid subject a..b`.
    pub fn stream_transform_invalid_source(source: &str) -> ApiError {
        let description = format!("stream transform source: invalid subject {source}");
        ApiError::new(400, ec::STREAM_TRANSFORM_INVALID_SOURCE, description)
    }
    /// 10156 with the transform's error, e.g. `stream transform: invalid subject`.
    pub fn stream_transform_invalid_destination(error: impl fmt::Display) -> ApiError {
        let description = format!("stream transform: {error}");
        ApiError::new(400, ec::STREAM_TRANSFORM_INVALID_DESTINATION, description)
    }
    /// 10204, e.g. `invalid reset: below start seq`.
    pub fn consumer_invalid_reset(reason: &str) -> ApiError {
        ApiError::new(400, ec::CONSUMER_INVALID_RESET, format!("invalid reset: {reason}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_object_has_exactly_three_keys() {
        let text = serde_json::to_string(&ApiError::stream_not_found()).unwrap();
        assert_eq!(text, r#"{"code":404,"err_code":10059,"description":"stream not found"}"#);
    }

    #[test]
    fn templates_interpolate_like_go() {
        assert_eq!(ApiError::wrong_last_sequence(3).description, "wrong last sequence: 3");
        assert_eq!(ApiError::wrong_last_msg_id("m1").description, "wrong last msg ID: m1");
        assert_eq!(ApiError::sequence_not_found(2).description, "sequence 2 not found");
        assert_eq!(ApiError::invalid_json("unexpected EOF").description, "invalid JSON: unexpected EOF");
    }
}
