//! `ConsumerConfig` as nats-server 2.15 reads and echoes it, its defaults and the checks
//! that need nothing but the parent stream's config.
//!
//! Decoding is strict like nats-server's (unknown keys are 10025).
//!
//! Field order and omit-empty rules follow Go's `ConsumerConfig` (server/consumer.go),
//! checked against recorded replies: only `deliver_policy`, `ack_policy`,
//! `replay_policy` and `num_replicas` are always written; everything else is omitted
//! when empty. Omitting matters: `"deliver_subject":""` makes async-nats treat a pull
//! consumer as push, `"deliver_group":""` makes a queue subscription with no group.
//!
//! Not checked here (the consumer engine owns them): workqueue uniqueness
//! (10099/10100), limits against the account.

use super::defaults::{
    ACK_WAIT_DEFAULT, DESCRIPTION_BYTES_MAX, EPHEMERAL_INACTIVE_THRESHOLD_DEFAULT, IDLE_HEARTBEAT_MIN,
    MAX_ACK_PENDING_DEFAULT, MAX_EXPIRES_MIN, MAX_WAITING_DEFAULT, METADATA_BYTES_MAX, NAME_BYTES_MAX,
    NANOS_PER_SECOND, PINNED_TTL_DEFAULT, PRIORITY_GROUP_NAME_BYTES_MAX,
};
use super::errors::ApiError;
use super::metadata::{self, Metadata};
use super::policies::{AckPolicy, DeliverPolicy, PriorityPolicy, ReplayPolicy, RetentionPolicy};
use super::request::go_quote;
use super::stream_config::{is_false, is_valid_name, is_zero, is_zero_u64, StreamConfig};
use super::time::Timestamp;
use crate::protocol::go_duration::format_go_duration;
use crate::subject::{is_subset, is_valid_subject};
use serde::{Deserialize, Serialize};

/// A consumer's configuration. Durations are nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsumerConfig {
    /// Set ⇔ durable. Durability is decided by this field alone.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub durable_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub deliver_policy: DeliverPolicy,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub opt_start_seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_start_time: Option<Timestamp>,
    /// Absent on input means `none` (Go's zero value); clients always send it.
    pub ack_policy: AckPolicy,
    #[serde(skip_serializing_if = "is_zero")]
    pub ack_wait: i64,
    #[serde(skip_serializing_if = "is_zero")]
    pub max_deliver: i64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backoff: Vec<i64>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub filter_subject: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub filter_subjects: Vec<String>,
    pub replay_policy: ReplayPolicy,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub rate_limit_bps: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub sample_freq: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub max_waiting: i64,
    #[serde(skip_serializing_if = "is_zero")]
    pub max_ack_pending: i64,
    #[serde(skip_serializing_if = "is_false")]
    pub flow_control: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub headers_only: bool,
    /// Pull: largest `batch` a request may ask for.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_batch: i64,
    /// Pull: longest `expires` a request may ask for.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_expires: i64,
    /// Pull: largest `max_bytes` a request may ask for.
    #[serde(skip_serializing_if = "is_zero")]
    pub max_bytes: i64,
    /// Set ⇔ push consumer.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub deliver_subject: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub deliver_group: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub idle_heartbeat: i64,
    #[serde(skip_serializing_if = "is_zero")]
    pub inactive_threshold: i64,
    /// Echoed as given; `0` means "inherit from the stream".
    pub num_replicas: i64,
    #[serde(skip_serializing_if = "is_false")]
    pub mem_storage: bool,
    /// Internal: consumers nats-server makes for mirrors and sources.
    #[serde(skip_serializing_if = "is_false")]
    pub direct: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub sourcing: bool,
    #[serde(skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_until: Option<Timestamp>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub priority_groups: Vec<String>,
    #[serde(skip_serializing_if = "PriorityPolicy::is_none")]
    pub priority_policy: PriorityPolicy,
    #[serde(skip_serializing_if = "is_zero")]
    pub priority_timeout: i64,
}

impl ConsumerConfig {
    pub fn is_durable(&self) -> bool {
        !self.durable_name.is_empty()
    }

    pub fn is_push(&self) -> bool {
        !self.deliver_subject.is_empty()
    }

    /// Fills defaults like nats-server's `setConsumerConfigDefaults` (stream
    /// `consumer_limits` first, then the server defaults), then validates like
    /// `checkConsumerCfg` as far as `stream` allows. Names must already be resolved
    /// (see `consumer_api::CreateConsumerRequest::resolve`).
    pub fn normalized(mut self, stream: &StreamConfig) -> Result<ConsumerConfig, ApiError> {
        self.apply_defaults(stream);
        // nats-server's API handler refuses this before `checkConsumerCfg` runs; jetcore
        // is always a single server.
        if self.num_replicas > 1 {
            return Err(ApiError::stream_replicas_not_supported());
        }
        self.check_names_and_numbers()?;
        if self.is_push() {
            self.check_push(&stream.subjects)?
        } else {
            self.check_pull(stream.retention)?
        }
        self.check_stream_limits(stream)?;
        if self.direct && !self.is_push() {
            return Err(ApiError::consumer_direct_requires_push());
        }
        if self.direct && self.is_durable() {
            return Err(ApiError::consumer_direct_requires_ephemeral());
        }
        self.check_filters()?;
        self.check_start_position()?;
        self.check_sample_frequency()?;
        if metadata::is_too_large(&self.metadata) {
            return Err(ApiError::consumer_metadata_length(METADATA_BYTES_MAX / 1024));
        }
        self.check_priority()?;
        if self.durable_name.len() > NAME_BYTES_MAX {
            return Err(ApiError::consumer_name_too_long(NAME_BYTES_MAX));
        }
        self.refuse_unbuilt()?;
        let level = self.required_api_level();
        metadata::set_required_level(&mut self.metadata, level);
        Ok(self)
    }

    /// Settings nats-server honours and jetcore does not build yet: refused (10012) once
    /// the config is otherwise valid, rather than accepted and served differently.
    fn refuse_unbuilt(&self) -> Result<(), ApiError> {
        let unbuilt = |what: &str| Err(ApiError::consumer_create(format!("{what} is not supported by jetcore yet")));
        if self.rate_limit_bps > 0 {
            return unbuilt("consumer rate limit (rate_limit_bps)");
        }
        Ok(())
    }

    /// `_nats.req.level`: 1 when pausing or priority groups are used (recorded).
    pub fn required_api_level(&self) -> u32 {
        u32::from(self.pause_until.is_some() || !self.priority_groups.is_empty() || !self.priority_policy.is_none())
    }

    fn apply_defaults(&mut self, stream: &StreamConfig) {
        if self.max_deliver == 0 || self.max_deliver < -1 {
            self.max_deliver = -1;
        }
        if self.max_ack_pending < -1 {
            self.max_ack_pending = -1;
        }
        // Outside pedantic mode nats-server turns a negative value into "not set".
        for value in [
            &mut self.max_waiting,
            &mut self.max_batch,
            &mut self.max_expires,
            &mut self.max_bytes,
            &mut self.idle_heartbeat,
            &mut self.inactive_threshold,
            &mut self.priority_timeout,
        ] {
            *value = (*value).max(0);
        }
        if !self.is_push() && self.max_waiting == 0 {
            self.max_waiting = MAX_WAITING_DEFAULT;
        }
        let acks = matches!(self.ack_policy, AckPolicy::Explicit | AckPolicy::All);
        if acks && self.ack_wait == 0 {
            self.ack_wait = ACK_WAIT_DEFAULT;
        }
        if let Some(&first) = self.backoff.first() {
            self.ack_wait = first;
        }
        if self.max_ack_pending == 0 {
            self.max_ack_pending = stream.consumer_limits.max_ack_pending;
        }
        if self.inactive_threshold == 0 {
            self.inactive_threshold = stream.consumer_limits.inactive_threshold;
        }
        if self.max_ack_pending == 0 && self.ack_policy != AckPolicy::None {
            self.max_ack_pending = MAX_ACK_PENDING_DEFAULT;
        }
        if !self.is_durable() && self.inactive_threshold == 0 {
            self.inactive_threshold = EPHEMERAL_INACTIVE_THRESHOLD_DEFAULT;
        }
        if self.priority_policy == PriorityPolicy::PinnedClient && self.priority_timeout == 0 {
            self.priority_timeout = PINNED_TTL_DEFAULT;
        }
        if self.ack_policy == AckPolicy::FlowControl {
            self.flow_control = true;
            self.idle_heartbeat = NANOS_PER_SECOND;
        }
    }

    fn check_names_and_numbers(&self) -> Result<(), ApiError> {
        // Length is refused apart for a durable (10102, after the other checks in
        // nats-server); its `name` is the same string.
        let long_durable = self.is_durable() && self.durable_name.len() > NAME_BYTES_MAX;
        let name_chars_ok = (long_durable && self.name == self.durable_name) || is_valid_name(&self.name);
        if !self.name.is_empty() && !name_chars_ok {
            return Err(ApiError::stream_invalid_config("consumer name can not contain '.', '*', '>', '\\', '/'"));
        }
        if self.is_durable() && !long_durable && !is_valid_name(&self.durable_name) {
            return Err(ApiError::stream_invalid_config(
                "consumer durable name can not contain '.', '*', '>', '\\', '/'",
            ));
        }
        if self.num_replicas < 0 {
            return Err(ApiError::replicas_count_cannot_be_negative());
        }
        if self.backoff.iter().any(|&delay| delay < 0) {
            return Err(ApiError::consumer_backoff_negative());
        }
        if self.ack_wait < 0 {
            return Err(ApiError::consumer_ack_wait_negative());
        }
        self.check_ack_flow_control()?;
        if !self.backoff.is_empty() && self.max_deliver != -1 && self.backoff.len() as i64 > self.max_deliver {
            return Err(ApiError::consumer_max_deliver_backoff());
        }
        if self.description.len() > DESCRIPTION_BYTES_MAX {
            return Err(ApiError::consumer_description_too_long(DESCRIPTION_BYTES_MAX));
        }
        if !self.durable_name.is_empty() && !self.name.is_empty() && self.durable_name != self.name {
            return Err(ApiError::consumer_create_durable_and_name_mismatch());
        }
        Ok(())
    }

    /// The 2.15 `flow_control` ack policy: push, flow-controlled, 1 s heartbeats (the
    /// defaults set those), acks pending bounded, no ack wait, no max deliver.
    fn check_ack_flow_control(&self) -> Result<(), ApiError> {
        if self.ack_policy != AckPolicy::FlowControl {
            return Ok(());
        }
        if !self.is_push() {
            return Err(ApiError::consumer_ack_fc_requires_push());
        }
        if !self.flow_control {
            return Err(ApiError::consumer_ack_fc_requires_fc());
        }
        if self.idle_heartbeat != NANOS_PER_SECOND {
            return Err(ApiError::stream_invalid_config("flow control ack policy heartbeat needs to be 1s"));
        }
        if self.max_ack_pending <= 0 {
            return Err(ApiError::consumer_ack_fc_requires_max_ack_pending());
        }
        if self.ack_wait != 0 || !self.backoff.is_empty() {
            return Err(ApiError::consumer_ack_fc_requires_no_ack_wait());
        }
        if self.max_deliver > 0 {
            return Err(ApiError::consumer_ack_fc_requires_no_max_deliver());
        }
        Ok(())
    }

    /// The stream's `consumer_limits` are ceilings too, not only defaults.
    fn check_stream_limits(&self, stream: &StreamConfig) -> Result<(), ApiError> {
        let limits = &stream.consumer_limits;
        if limits.max_ack_pending > 0 && self.max_ack_pending > limits.max_ack_pending {
            return Err(ApiError::consumer_max_pending_ack_excess(limits.max_ack_pending));
        }
        if limits.inactive_threshold > 0 && self.inactive_threshold > limits.inactive_threshold {
            let limit = format_go_duration(limits.inactive_threshold);
            return Err(ApiError::consumer_inactive_threshold_excess(&limit));
        }
        Ok(())
    }

    fn check_push(&self, stream_subjects: &[String]) -> Result<(), ApiError> {
        let subject = self.deliver_subject.as_str();
        if subject.split('.').any(|token| token == "*" || token == ">") {
            return Err(ApiError::consumer_deliver_to_wildcards());
        }
        if subject.split('.').any(str::is_empty) || subject.chars().any(char::is_whitespace) {
            return Err(ApiError::consumer_invalid_deliver_subject());
        }
        // Deliveries would be stored again by the stream itself.
        if stream_subjects.iter().any(|stored| is_subset(subject.as_bytes(), stored.as_bytes())) {
            return Err(ApiError::consumer_deliver_cycle());
        }
        if self.max_waiting != 0 {
            return Err(ApiError::consumer_push_max_waiting());
        }
        if self.max_ack_pending > 0 && self.ack_policy == AckPolicy::None {
            return Err(ApiError::consumer_max_pending_ack_policy_required());
        }
        if self.idle_heartbeat > 0 && self.idle_heartbeat < IDLE_HEARTBEAT_MIN {
            return Err(ApiError::consumer_small_heartbeat());
        }
        if self.flow_control && self.idle_heartbeat == 0 {
            return Err(ApiError::consumer_flow_control_needs_heartbeats());
        }
        Ok(())
    }

    fn check_pull(&self, retention: RetentionPolicy) -> Result<(), ApiError> {
        if self.ack_policy == AckPolicy::None && retention == RetentionPolicy::WorkQueue {
            return Err(ApiError::consumer_pull_requires_ack());
        }
        if self.rate_limit_bps > 0 {
            return Err(ApiError::consumer_pull_with_rate_limit());
        }
        if self.idle_heartbeat > 0 {
            return Err(ApiError::consumer_heartbeat_requires_push());
        }
        if self.flow_control {
            return Err(ApiError::consumer_flow_control_requires_push());
        }
        if self.max_expires != 0 && self.max_expires < MAX_EXPIRES_MIN {
            return Err(ApiError::consumer_max_request_expires_too_small());
        }
        Ok(())
    }

    /// nats-server's order: both forms (10136), an invalid `filter_subject` (10052), an
    /// empty entry (10139), then each filter valid and none a subset of another (10138;
    /// a repeated filter is a subset of itself).
    fn check_filters(&self) -> Result<(), ApiError> {
        if !self.filter_subject.is_empty() && !self.filter_subjects.is_empty() {
            return Err(ApiError::consumer_duplicate_filter_subjects());
        }
        let invalid = || ApiError::stream_invalid_config("invalid subject");
        if !self.filter_subject.is_empty() && !is_valid_subject(self.filter_subject.as_bytes()) {
            return Err(invalid());
        }
        if self.filter_subjects.iter().any(String::is_empty) {
            return Err(ApiError::consumer_empty_filter());
        }
        let filters = &self.filter_subjects;
        for (outer, filter) in filters.iter().enumerate() {
            if !is_valid_subject(filter.as_bytes()) {
                return Err(invalid());
            }
            let overlaps = filters
                .iter()
                .enumerate()
                .any(|(inner, other)| inner != outer && is_subset(filter.as_bytes(), other.as_bytes()));
            if overlaps {
                return Err(ApiError::consumer_overlapping_subject_filters());
            }
        }
        Ok(())
    }

    /// 10094 texts exactly as nats-server words them.
    fn check_start_position(&self) -> Result<(), ApiError> {
        let policy = match self.deliver_policy {
            DeliverPolicy::All => "all",
            DeliverPolicy::Last => "last",
            DeliverPolicy::LastPerSubject => "last per subject",
            DeliverPolicy::New => "new",
            DeliverPolicy::ByStartSequence => "by start sequence",
            DeliverPolicy::ByStartTime => "by start time",
        };
        let bad_start = |what: &str| {
            ApiError::consumer_invalid_policy(format!(
                "consumer delivery policy is deliver {policy}, but optional start {what} is also set"
            ))
        };
        let not_set = |what: &str| {
            ApiError::consumer_invalid_policy(format!(
                "consumer delivery policy is deliver {policy}, but optional {what} is not set"
            ))
        };
        match self.deliver_policy {
            DeliverPolicy::ByStartSequence if self.opt_start_seq == 0 => Err(not_set("start sequence")),
            DeliverPolicy::ByStartSequence if self.opt_start_time.is_some() => Err(bad_start("time")),
            DeliverPolicy::ByStartSequence => Ok(()),
            DeliverPolicy::ByStartTime if self.opt_start_time.is_none() => Err(not_set("start time")),
            DeliverPolicy::ByStartTime if self.opt_start_seq != 0 => Err(bad_start("start sequence")),
            DeliverPolicy::ByStartTime => Ok(()),
            _ if self.opt_start_seq > 0 => Err(bad_start("sequence")),
            _ if self.opt_start_time.is_some() => Err(bad_start("time")),
            DeliverPolicy::LastPerSubject if self.filter_subject.is_empty() && self.filter_subjects.is_empty() => {
                Err(not_set("filter subject"))
            }
            _ => Ok(()),
        }
    }

    /// `sample_freq` is a whole number, optionally followed by `%`. nats-server's text
    /// for a negative one ends in `<nil>` (its check ran with no parse error); jetcore
    /// says what is wrong instead.
    fn check_sample_frequency(&self) -> Result<(), ApiError> {
        if self.sample_freq.is_empty() {
            return Ok(());
        }
        let number = self.sample_freq.strip_suffix('%').unwrap_or(&self.sample_freq);
        match number.parse::<i64>() {
            Ok(frequency) if frequency >= 0 => Ok(()),
            Ok(_) => Err(ApiError::consumer_invalid_sampling("must not be negative")),
            Err(error) => {
                let reason = match error.kind() {
                    std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => "value out of range",
                    _ => "invalid syntax",
                };
                let detail = format!("strconv.Atoi: parsing {}: {reason}", go_quote(number));
                Err(ApiError::consumer_invalid_sampling(&detail))
            }
        }
    }

    fn check_priority(&self) -> Result<(), ApiError> {
        if self.priority_policy.is_none() {
            if !self.priority_groups.is_empty() {
                return Err(ApiError::consumer_priority_group_with_policy_none());
            }
            if self.priority_timeout > 0 {
                return Err(ApiError::consumer_pinned_ttl_without_priority_policy());
            }
            return Ok(());
        }
        if self.is_push() {
            return Err(ApiError::consumer_push_with_priority_group());
        }
        if self.priority_groups.is_empty() {
            return Err(ApiError::consumer_priority_policy_without_group());
        }
        for group in &self.priority_groups {
            if group.is_empty() {
                return Err(ApiError::consumer_empty_group_name());
            }
            if !is_valid_group_name(group) {
                return Err(ApiError::consumer_invalid_group_name());
            }
        }
        Ok(())
    }
}

/// nats-server's `validGroupName`: 1 to 16 of `A-Z a-z 0-9 - _ / =`.
pub fn is_valid_group_name(group: &str) -> bool {
    let allowed = |byte: u8| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'/' | b'=');
    (1..=PRIORITY_GROUP_NAME_BYTES_MAX).contains(&group.len()) && group.bytes().all(allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalized(json: &str) -> Result<ConsumerConfig, ApiError> {
        let stream = StreamConfig { name: "S".into(), ..StreamConfig::default() };
        serde_json::from_str::<ConsumerConfig>(json).unwrap().normalized(&stream)
    }

    #[test]
    fn durable_pull_explicit_defaults() {
        let config = normalized(r#"{"durable_name":"C1","name":"C1","ack_policy":"explicit"}"#).unwrap();
        assert_eq!((config.ack_wait, config.max_deliver, config.max_waiting), (ACK_WAIT_DEFAULT, -1, 512));
        assert_eq!((config.max_ack_pending, config.inactive_threshold), (1000, 0));
    }

    #[test]
    fn ephemeral_without_ack_policy_is_ack_none_with_reaping() {
        let config = normalized(r#"{"name":"E"}"#).unwrap();
        assert_eq!(config.ack_policy, AckPolicy::None);
        assert_eq!((config.ack_wait, config.max_ack_pending), (0, 0));
        assert_eq!(config.inactive_threshold, EPHEMERAL_INACTIVE_THRESHOLD_DEFAULT);
    }

    #[test]
    fn backoff_overrides_ack_wait_and_push_gets_no_max_waiting() {
        let config =
            normalized(r#"{"deliver_subject":"d","ack_policy":"explicit","backoff":[1000000000],"max_deliver":5}"#)
                .unwrap();
        assert_eq!((config.ack_wait, config.max_waiting), (1_000_000_000, 0));
    }

    #[test]
    fn stream_consumer_limits_take_precedence() {
        let mut stream = StreamConfig::default();
        stream.consumer_limits.max_ack_pending = 500;
        stream.consumer_limits.inactive_threshold = 10_000_000_000;
        let config: ConsumerConfig = serde_json::from_str(r#"{"durable_name":"W1","ack_policy":"explicit"}"#).unwrap();
        let config = config.normalized(&stream).unwrap();
        assert_eq!((config.max_ack_pending, config.inactive_threshold), (500, 10_000_000_000));
    }

    #[test]
    fn invalid_configs_use_go_texts_and_codes() {
        let cases = [
            (r#"{"deliver_subject":"d","max_waiting":5}"#, 10080),
            (r#"{"idle_heartbeat":5000000000,"ack_policy":"explicit"}"#, 10088),
            (r#"{"deliver_subject":"d","idle_heartbeat":1000}"#, 10083),
            (r#"{"deliver_subject":"d","flow_control":true}"#, 10108),
            (r#"{"deliver_subject":"d.*"}"#, 10079),
            (r#"{"max_deliver":1,"backoff":[1,2]}"#, 10116),
            (r#"{"filter_subject":"a","filter_subjects":["b"]}"#, 10136),
            (r#"{"name":"A","durable_name":"B"}"#, 10132),
            (r#"{"ack_wait":-1}"#, 10183),
            (r#"{"priority_groups":["g"]}"#, 10196),
            (r#"{"priority_policy":"overflow"}"#, 10159),
        ];
        for (json, code) in cases {
            assert_eq!(normalized(json).unwrap_err().err_code, code, "{json}");
        }
        let error = normalized(r#"{"durable_name":"L","deliver_policy":"last_per_subject"}"#).unwrap_err();
        assert_eq!(
            error.description,
            "consumer delivery policy is deliver last per subject, but optional filter subject is not set"
        );
        let error = normalized(r#"{"deliver_policy":"all","opt_start_seq":5}"#).unwrap_err();
        assert_eq!(
            error.description,
            "consumer delivery policy is deliver all, but optional start sequence is also set"
        );
    }
}
