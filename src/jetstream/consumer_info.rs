//! `ConsumerInfo`: what `CONSUMER.CREATE`, `CONSUMER.INFO` and `CONSUMER.LIST` report.
//!
//! Field order and omit-empty rules follow Go's `ConsumerInfo` (server/consumer.go) as
//! recorded from nats-server 2.15.1. async-nats requires `stream_name, name, created,
//! config, delivered, ack_floor, num_ack_pending, num_redelivered, num_waiting,
//! num_pending`; all are always written.

use super::consumer_config::ConsumerConfig;
use super::stream_config::{is_false, is_zero};
use super::stream_info::ClusterInfo;
use super::time::Timestamp;
use serde::{Deserialize, Serialize};

/// A (consumer sequence, stream sequence) position; `last_active` is omitted until the
/// consumer delivered (for `delivered`) or received an ack (for `ack_floor`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceInfo {
    pub consumer_seq: u64,
    pub stream_seq: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_active: Option<Timestamp>,
}

/// State of one priority group (2.11+). Go writes `pinned_ts` even when zero.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriorityGroupState {
    pub group: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pinned_client_id: String,
    pub pinned_ts: Timestamp,
}

/// A consumer's config and counters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerInfo {
    pub stream_name: String,
    pub name: String,
    pub created: Timestamp,
    pub config: ConsumerConfig,
    /// Last delivered position (next to deliver minus one).
    pub delivered: SequenceInfo,
    /// Everything at or below this position is acknowledged.
    pub ack_floor: SequenceInfo,
    pub num_ack_pending: u64,
    pub num_redelivered: u64,
    pub num_waiting: u64,
    pub num_pending: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterInfo>,
    /// Push consumers: someone is subscribed to the deliver subject.
    #[serde(default, skip_serializing_if = "is_false")]
    pub push_bound: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub paused: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pause_remaining: i64,
    /// When the info was gathered.
    pub ts: Timestamp,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub priority_groups: Vec<PriorityGroupState>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_info_omits_last_active_until_active() {
        let idle = SequenceInfo { consumer_seq: 0, stream_seq: 3, last_active: None };
        assert_eq!(serde_json::to_string(&idle).unwrap(), r#"{"consumer_seq":0,"stream_seq":3}"#);
        let active = SequenceInfo { last_active: Some(Timestamp::from_unix_nanos(1_500_000_000)), ..idle };
        assert!(serde_json::to_string(&active).unwrap().ends_with(r#""last_active":"1970-01-01T00:00:01.5Z"}"#));
    }
}
