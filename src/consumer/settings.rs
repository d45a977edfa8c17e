//! A consumer's configuration as the state machine uses it: normalised
//! `jetstream::ConsumerConfig` with zero/negative sentinels turned into `Option`s.

use std::rc::Rc;

use crate::jetstream::consumer_config::ConsumerConfig;
use crate::jetstream::policies::{AckPolicy, DeliverPolicy, PriorityPolicy, ReplayPolicy, RetentionPolicy};

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
    /// Interest or workqueue retention: report settled messages (`Effect::Acked`).
    pub report_acks: bool,
}

/// When an inactive consumer goes: a push consumer at its threshold, a pull consumer
/// later by nats-server's grace and jitter (see `limits::PULL_INACTIVE_GRACE_NANOS`).
fn inactive_threshold_nanos(config: &ConsumerConfig) -> Option<i64> {
    let threshold = Some(config.inactive_threshold).filter(|nanos| *nanos > 0)?;
    if config.is_push() {
        return Some(threshold);
    }
    let name = if config.name.is_empty() { &config.durable_name } else { &config.name };
    // FNV-1a: a fixed spread per name.
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3));
    let jitter = (hash % PULL_INACTIVE_JITTER_NANOS) as i64;
    Some(threshold.saturating_add(PULL_INACTIVE_GRACE_NANOS).saturating_add(jitter))
}

fn positive(value: i64) -> Option<u64> {
    u64::try_from(value).ok().filter(|value| *value > 0)
}

impl Settings {
    /// From a config already normalised by `ConsumerConfig::normalized`.
    pub fn from_config(config: &ConsumerConfig, retention: RetentionPolicy) -> Settings {
        let push = config.is_push().then(|| PushSettings {
            deliver_subject: Rc::from(config.deliver_subject.as_str()),
            deliver_group: Some(config.deliver_group.clone()).filter(|group| !group.is_empty()),
            flow_control: config.flow_control,
            idle_heartbeat_nanos: Some(config.idle_heartbeat).filter(|nanos| *nanos > 0),
        });
        Settings {
            ack_mode: match config.ack_policy {
                AckPolicy::Explicit => AckMode::Explicit,
                AckPolicy::All => AckMode::All,
                AckPolicy::None | AckPolicy::FlowControl => AckMode::None,
            },
            ack_wait_nanos: config.ack_wait,
            backoff_nanos: config.backoff.clone(),
            max_deliver: positive(config.max_deliver),
            max_ack_pending: positive(config.max_ack_pending).map(|value| value as usize),
            deliver_policy: config.deliver_policy,
            opt_start_seq: config.opt_start_seq,
            opt_start_time_nanos: config.opt_start_time.and_then(|time| time.unix_nanos()),
            replay_original: config.replay_policy == ReplayPolicy::Original,
            filters: Filters::from_config(&config.filter_subject, &config.filter_subjects),
            headers_only: config.headers_only,
            inactive_threshold_nanos: inactive_threshold_nanos(config),
            max_waiting: if config.is_push() {
                0
            } else {
                positive(config.max_waiting).unwrap_or(0) as usize
            },
            max_request_batch: positive(config.max_batch),
            max_request_expires_nanos: Some(config.max_expires).filter(|nanos| *nanos > 0),
            max_request_bytes: positive(config.max_bytes),
            push,
            priority_policy: config.priority_policy,
            report_acks: retention != RetentionPolicy::Limits,
        }
    }

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
