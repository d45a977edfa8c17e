//! A consumer's wire config as the consumer state machine takes it
//! ([`consumer::settings::Settings`]): zero and negative sentinels become `Option`s, wire
//! policies become the consumer's own.

use std::rc::Rc;

use crate::consumer::settings::{self, AckMode, PushSettings, Settings};
use crate::consumer::stream_view::Filters;

use super::consumer_config::ConsumerConfig;
use super::policies::{AckPolicy, DeliverPolicy, PriorityPolicy, ReplayPolicy, RetentionPolicy};

fn positive(value: i64) -> Option<u64> {
    u64::try_from(value).ok().filter(|value| *value > 0)
}

/// The settings of `config` (already normalised by `ConsumerConfig::normalized`) on a
/// stream with `retention`.
pub fn settings(config: &ConsumerConfig, retention: RetentionPolicy) -> Settings {
    let push = config.is_push().then(|| PushSettings {
        deliver_subject: Rc::from(config.deliver_subject.as_str()),
        deliver_group: Some(config.deliver_group.clone()).filter(|group| !group.is_empty()),
        flow_control: config.flow_control,
        idle_heartbeat_nanos: Some(config.idle_heartbeat).filter(|nanos| *nanos > 0),
    });
    let name = if config.name.is_empty() { &config.durable_name } else { &config.name };
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
        deliver_policy: deliver_policy(config.deliver_policy),
        opt_start_seq: config.opt_start_seq,
        opt_start_time_nanos: config.opt_start_time.and_then(|time| time.unix_nanos()),
        replay_original: config.replay_policy == ReplayPolicy::Original,
        filters: Filters::from_config(&config.filter_subject, &config.filter_subjects),
        headers_only: config.headers_only,
        inactive_threshold_nanos: settings::inactive_threshold_nanos(config.inactive_threshold, config.is_push(), name),
        max_waiting: if config.is_push() { 0 } else { positive(config.max_waiting).unwrap_or(0) as usize },
        max_request_batch: positive(config.max_batch),
        max_request_expires_nanos: Some(config.max_expires).filter(|nanos| *nanos > 0),
        max_request_bytes: positive(config.max_bytes),
        push,
        priority_policy: priority_policy(config.priority_policy),
        priority_groups: config.priority_groups.clone(),
        pinned_ttl_nanos: config.priority_timeout,
        report_acks: retention != RetentionPolicy::Limits,
        ack_sample_percent: sample_percent(&config.sample_freq),
    }
}

/// `sample_freq` (`"50"`, `"50%"`; checked at create) as a percentage capped at 100.
fn sample_percent(sample_freq: &str) -> u8 {
    let number = sample_freq.trim().strip_suffix('%').unwrap_or(sample_freq.trim());
    number.parse::<u64>().map_or(0, |percent| percent.min(100) as u8)
}

fn deliver_policy(policy: DeliverPolicy) -> settings::DeliverPolicy {
    match policy {
        DeliverPolicy::All => settings::DeliverPolicy::All,
        DeliverPolicy::Last => settings::DeliverPolicy::Last,
        DeliverPolicy::New => settings::DeliverPolicy::New,
        DeliverPolicy::ByStartSequence => settings::DeliverPolicy::ByStartSequence,
        DeliverPolicy::ByStartTime => settings::DeliverPolicy::ByStartTime,
        DeliverPolicy::LastPerSubject => settings::DeliverPolicy::LastPerSubject,
    }
}

fn priority_policy(policy: PriorityPolicy) -> settings::PriorityPolicy {
    match policy {
        PriorityPolicy::None => settings::PriorityPolicy::None,
        PriorityPolicy::Overflow => settings::PriorityPolicy::Overflow,
        PriorityPolicy::PinnedClient => settings::PriorityPolicy::PinnedClient,
        PriorityPolicy::Prioritized => settings::PriorityPolicy::Prioritized,
    }
}
