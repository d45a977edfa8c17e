//! The Go structs nats-server 2.15 decodes `$JS.API` request bodies into, for wording
//! decoding errors as Go does (`go_json.rs`). Field names are the JSON names, types the
//! Go types as `encoding/json` prints them (pointers are dereferenced: `*Placement`
//! prints `server.Placement`). Fields missing here are skipped by the walk, so a table
//! that lags nats-server only loses the Go wording for that field.

use crate::protocol::go_json::{EnumText, GoRequest, GoShaped, GoStruct, GoType};

const INT: GoType = GoType::Int("int", 64);
const INT32: GoType = GoType::Int("int32", 32);
const INT64: GoType = GoType::Int("int64", 64);
const UINT64: GoType = GoType::Uint("uint64", 64);
const DURATION: GoType = GoType::Int("time.Duration", 64);
const STRINGS: GoType = GoType::Slice("[]string", &GoType::String);
const POLICY: GoType = GoType::Enum(EnumText::Quoted);
const METADATA: GoType = GoType::Map("map[string]string", &GoType::String);

static PLACEMENT: GoStruct = GoStruct {
    go_name: "server.Placement",
    fields: &[("cluster", GoType::String), ("tags", STRINGS), ("preferred", GoType::String)],
};

static SUBJECT_TRANSFORM: GoStruct =
    GoStruct { go_name: "server.SubjectTransformConfig", fields: &[("src", GoType::String), ("dest", GoType::String)] };

static EXTERNAL_STREAM: GoStruct =
    GoStruct { go_name: "server.ExternalStream", fields: &[("api", GoType::String), ("deliver", GoType::String)] };

static STREAM_SOURCE: GoStruct = GoStruct {
    go_name: "server.StreamSource",
    fields: &[
        ("name", GoType::String),
        ("opt_start_seq", UINT64),
        ("opt_start_time", GoType::Time),
        ("filter_subject", GoType::String),
        ("subject_transforms", GoType::Slice("[]server.SubjectTransformConfig", &GoType::Struct(&SUBJECT_TRANSFORM))),
        ("external", GoType::Struct(&EXTERNAL_STREAM)),
    ],
};

static REPUBLISH: GoStruct = GoStruct {
    go_name: "server.RePublish",
    fields: &[("src", GoType::String), ("dest", GoType::String), ("headers_only", GoType::Bool)],
};

static STREAM_CONSUMER_LIMITS: GoStruct = GoStruct {
    go_name: "server.StreamConsumerLimits",
    fields: &[("inactive_threshold", DURATION), ("max_ack_pending", INT)],
};

static STREAM_CONFIG_REQUEST: GoStruct = GoStruct {
    go_name: "server.StreamConfigRequest",
    fields: &[
        ("name", GoType::String),
        ("description", GoType::String),
        ("subjects", STRINGS),
        ("retention", POLICY),
        ("max_consumers", INT),
        ("max_msgs", INT64),
        ("max_bytes", INT64),
        ("max_age", DURATION),
        ("max_msgs_per_subject", INT64),
        ("max_msg_size", INT32),
        ("discard", POLICY),
        ("storage", POLICY),
        ("num_replicas", INT),
        ("no_ack", GoType::Bool),
        ("template_owner", GoType::String),
        ("duplicate_window", DURATION),
        ("placement", GoType::Struct(&PLACEMENT)),
        ("mirror", GoType::Struct(&STREAM_SOURCE)),
        ("sources", GoType::Slice("[]*server.StreamSource", &GoType::Struct(&STREAM_SOURCE))),
        ("compression", GoType::CustomString),
        ("first_seq", UINT64),
        ("subject_transform", GoType::Struct(&SUBJECT_TRANSFORM)),
        ("republish", GoType::Struct(&REPUBLISH)),
        ("allow_direct", GoType::Bool),
        ("mirror_direct", GoType::Bool),
        ("discard_new_per_subject", GoType::Bool),
        ("sealed", GoType::Bool),
        ("deny_delete", GoType::Bool),
        ("deny_purge", GoType::Bool),
        ("allow_rollup_hdrs", GoType::Bool),
        ("consumer_limits", GoType::Struct(&STREAM_CONSUMER_LIMITS)),
        ("allow_msg_ttl", GoType::Bool),
        ("subject_delete_marker_ttl", DURATION),
        ("allow_msg_counter", GoType::Bool),
        ("allow_atomic", GoType::Bool),
        ("allow_msg_schedules", GoType::Bool),
        ("persist_mode", POLICY),
        ("allow_batched", GoType::Bool),
        ("metadata", METADATA),
        ("pedantic", GoType::Bool),
    ],
};

static CONSUMER_CONFIG: GoStruct = GoStruct {
    go_name: "server.ConsumerConfig",
    fields: &[
        ("durable_name", GoType::String),
        ("name", GoType::String),
        ("description", GoType::String),
        ("deliver_policy", POLICY),
        ("opt_start_seq", UINT64),
        ("opt_start_time", GoType::Time),
        ("ack_policy", POLICY),
        ("ack_wait", DURATION),
        ("max_deliver", INT),
        ("backoff", GoType::Slice("[]time.Duration", &DURATION)),
        ("filter_subject", GoType::String),
        ("filter_subjects", STRINGS),
        ("replay_policy", POLICY),
        ("rate_limit_bps", UINT64),
        ("sample_freq", GoType::String),
        ("max_waiting", INT),
        ("max_ack_pending", INT),
        ("flow_control", GoType::Bool),
        ("headers_only", GoType::Bool),
        ("max_batch", INT),
        ("max_expires", DURATION),
        ("max_bytes", INT),
        ("deliver_subject", GoType::String),
        ("deliver_group", GoType::String),
        ("idle_heartbeat", DURATION),
        ("inactive_threshold", DURATION),
        ("num_replicas", INT),
        ("mem_storage", GoType::Bool),
        ("direct", GoType::Bool),
        ("metadata", METADATA),
        ("pause_until", GoType::Time),
        ("priority_groups", STRINGS),
        ("priority_policy", GoType::Enum(EnumText::Prefixed("unknown priority policy: "))),
        ("priority_timeout", DURATION),
    ],
};

static CREATE_CONSUMER_REQUEST: GoStruct = GoStruct {
    go_name: "server.CreateConsumerRequest",
    fields: &[
        ("stream_name", GoType::String),
        ("config", GoType::Struct(&CONSUMER_CONFIG)),
        ("action", GoType::Enum(EnumText::Prefixed("unknown consumer action: "))),
        ("pedantic", GoType::Bool),
    ],
};

static MSG_GET_REQUEST: GoStruct = GoStruct {
    go_name: "server.JSApiMsgGetRequest",
    fields: &[
        ("seq", UINT64),
        ("last_by_subj", GoType::String),
        ("next_by_subj", GoType::String),
        ("batch", INT),
        ("max_bytes", INT),
        ("start_time", GoType::Time),
        ("multi_last", STRINGS),
        ("up_to_seq", UINT64),
        ("up_to_time", GoType::Time),
        ("no_hdr", GoType::Bool),
    ],
};

static MSG_DELETE_REQUEST: GoStruct =
    GoStruct { go_name: "server.JSApiMsgDeleteRequest", fields: &[("seq", UINT64), ("no_erase", GoType::Bool)] };

static PURGE_REQUEST: GoStruct = GoStruct {
    go_name: "server.JSApiStreamPurgeRequest",
    fields: &[("filter", GoType::String), ("seq", UINT64), ("keep", UINT64)],
};

static STREAM_INFO_REQUEST: GoStruct = GoStruct {
    go_name: "server.JSApiStreamInfoRequest",
    fields: &[("offset", INT), ("deleted_details", GoType::Bool), ("subjects_filter", GoType::String)],
};

static STREAM_NAMES_REQUEST: GoStruct =
    GoStruct { go_name: "server.JSApiStreamNamesRequest", fields: &[("offset", INT), ("subject", GoType::String)] };

static CONSUMERS_REQUEST: GoStruct = GoStruct { go_name: "server.JSApiConsumersRequest", fields: &[("offset", INT)] };

static PAUSE_REQUEST: GoStruct =
    GoStruct { go_name: "server.JSApiConsumerPauseRequest", fields: &[("pause_until", GoType::Time)] };

static UNPIN_REQUEST: GoStruct =
    GoStruct { go_name: "server.JSApiConsumerUnpinRequest", fields: &[("group", GoType::String)] };

/// `CONSUMER.UNPIN` bodies (decoded by `UnpinRequest::decode`).
pub static UNPIN_REQUEST_SHAPE: GoRequest = GoRequest { name: "JSApiConsumerUnpinRequest", body: &UNPIN_REQUEST };

static RESET_REQUEST: GoStruct = GoStruct { go_name: "server.JSApiConsumerResetRequest", fields: &[("seq", UINT64)] };

/// Implements `GoShaped` for a request type: Go's struct name in errors, and its fields.
macro_rules! go_shaped {
    ($type:ty, $name:literal, $body:ident) => {
        impl GoShaped for $type {
            fn go_shape() -> &'static GoRequest {
                static SHAPE: GoRequest = GoRequest { name: $name, body: &$body };
                &SHAPE
            }
        }
    };
}

/// `STREAM.CREATE` / `STREAM.UPDATE` bodies (decoded into `StreamConfig` here).
pub static STREAM_CONFIG_SHAPE: GoRequest = GoRequest { name: "StreamConfigRequest", body: &STREAM_CONFIG_REQUEST };

go_shaped!(super::consumer_api::CreateConsumerRequest, "CreateConsumerRequest", CREATE_CONSUMER_REQUEST);
go_shaped!(super::stream_api::MsgGetRequest, "JSApiMsgGetRequest", MSG_GET_REQUEST);
go_shaped!(super::stream_api::MsgDeleteRequest, "JSApiMsgDeleteRequest", MSG_DELETE_REQUEST);
go_shaped!(super::stream_api::PurgeRequest, "JSApiStreamPurgeRequest", PURGE_REQUEST);
go_shaped!(super::stream_api::StreamInfoRequest, "JSApiStreamInfoRequest", STREAM_INFO_REQUEST);
go_shaped!(super::stream_api::StreamNamesRequest, "JSApiStreamNamesRequest", STREAM_NAMES_REQUEST);
go_shaped!(super::consumer_api::ConsumerNamesRequest, "JSApiConsumersRequest", CONSUMERS_REQUEST);
go_shaped!(super::consumer_api::PauseRequest, "JSApiConsumerPauseRequest", PAUSE_REQUEST);
go_shaped!(super::consumer_api::ResetRequest, "JSApiConsumerResetRequest", RESET_REQUEST);
