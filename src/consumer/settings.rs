//! A consumer's configuration as the state machine uses it: limits as `Option`s, durations
//! in nanoseconds. The `$JS.API` layer builds it from its wire config
//! (`jetstream::consumer_settings`); nothing here knows the wire form.

use std::rc::Rc;

use crate::limits::{PULL_INACTIVE_GRACE_NANOS, PULL_INACTIVE_JITTER_NANOS};

use super::sequence::DeliveryCount;
use super::stream_view::Filters;

/// How acknowledgements are tracked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckMode {
    /// Delivered = acknowledged (`none`; also 2.15's `flow_control` ack policy, whose
    /// flow-control-driven acks jetcore does not implement yet).
    None,
    /// Acking N acks everything up to N.
    All,
    Explicit,
}

/// Where a new consumer starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeliverPolicy {
    #[default]
    All,
    Last,
    New,
    ByStartSequence,
    ByStartTime,
    LastPerSubject,
}

/// Which waiting pull request a message is offered to (see `pull`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PriorityPolicy {
    #[default]
    None,
    Overflow,
    PinnedClient,
    Prioritized,
}

/// Push-only settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushSettings {
    pub deliver_subject: Rc<str>,
    pub deliver_group: Option<String>,
    pub flow_control: bool,
    pub idle_heartbeat_nanos: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub ack_mode: AckMode,
    pub ack_wait_nanos: i64,
    pub backoff_nanos: Vec<i64>,
    pub max_deliver: Option<DeliveryCount>,
    pub max_ack_pending: Option<usize>,
    pub deliver_policy: DeliverPolicy,
    pub opt_start_seq: u64,
    pub opt_start_time_nanos: Option<i64>,
    pub replay_original: bool,
    pub filters: Filters,
    pub headers_only: bool,
    pub inactive_threshold_nanos: Option<i64>,
    /// Pull only (0 for push): most waiting requests.
    pub max_waiting: usize,
    pub max_request_batch: Option<u64>,
    pub max_request_expires_nanos: Option<i64>,
    pub max_request_bytes: Option<u64>,
    pub push: Option<PushSettings>,
    /// Pull only: which waiting request a message is offered to (see `pull`).
    pub priority_policy: PriorityPolicy,
    /// The priority groups a pull request may name (`group`), when a policy is set.
    pub priority_groups: Vec<String>,
    /// `pinned_client`: how long a pin is held after its client's last pull request
    /// (`priority_timeout`; see `pinning`).
    pub pinned_ttl_nanos: i64,
    /// Interest or workqueue retention: report settled messages (`Effect::Acked`).
    pub report_acks: bool,
    /// `sample_freq` as a percentage (0: no ack metrics): explicit acks of pending
    /// messages are sampled into `$JS.EVENT.METRIC.CONSUMER.ACK` at this rate.
    pub ack_sample_percent: u8,
}

/// When an inactive consumer goes, given its configured `threshold_nanos` (0 or less:
/// never): a push consumer at its threshold, a pull consumer later by nats-server's grace
/// and a jitter fixed per `name` (see `limits::PULL_INACTIVE_GRACE_NANOS`).
pub fn inactive_threshold_nanos(threshold_nanos: i64, is_push: bool, name: &str) -> Option<i64> {
    let threshold = Some(threshold_nanos).filter(|nanos| *nanos > 0)?;
    if is_push {
        return Some(threshold);
    }
    // FNV-1a: a fixed spread per name.
    let hash = name
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3));
    let jitter = (hash % PULL_INACTIVE_JITTER_NANOS) as i64;
    Some(threshold.saturating_add(PULL_INACTIVE_GRACE_NANOS).saturating_add(jitter))
}

impl Settings {
    pub fn tracks_acks(&self) -> bool {
        self.ack_mode != AckMode::None
    }

    /// The ack wait after delivery number `delivery_count`: `backoff[min(n-1, len-1)]`
    /// when a backoff is set, else `ack_wait`.
    pub fn ack_wait_for(&self, delivery_count: DeliveryCount) -> i64 {
        match self.backoff_nanos.len() {
            0 => self.ack_wait_nanos,
            steps => {
                let step = (delivery_count.max(1) - 1).min(steps as u64 - 1) as usize;
                self.backoff_nanos[step]
            }
        }
    }
}
