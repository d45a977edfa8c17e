//! An embedded durable consumer's configuration: the few fields a program sets, checked
//! once ([`ConsumerConfig::validate`]) and turned into the state machine's
//! [`Settings`](crate::consumer::settings::Settings), the same type the server's consumers
//! run on. It is stored as JSON beside the consumer's state, so a reopened engine resumes
//! the consumer with the configuration it was created with.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::consumer::settings::{AckMode, DeliverPolicy as StartPolicy, PriorityPolicy, Settings};
use crate::consumer::Filters;
use crate::limits::CONSUMER_TICK_NANOS;
use crate::stream::config::validate_name;
use crate::stream::subject_match::{is_valid_pattern, patterns_overlap};
use crate::stream::{Error, StreamConfig};

/// Where a new consumer starts; a reopened one resumes from its saved position instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeliverPolicy {
    /// The first message of the stream.
    #[default]
    All,
    /// The last matching message.
    Last,
    /// Only messages stored after the consumer was created.
    New,
    /// From this stream sequence (1 or more).
    ByStartSequence(u64),
    /// From the first message stored at or after this time (Unix nanoseconds).
    ByStartTime(i64),
    /// The last message of every matching subject, then everything new.
    LastPerSubject,
}

/// How deliveries are acknowledged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum AckPolicy {
    /// Each message is acked on its own; an unacked one is redelivered after `ack_wait`.
    #[default]
    Explicit,
    /// Acking a message acks every message delivered before it too.
    All,
    /// A delivery counts as acknowledged: nothing is ever redelivered.
    None,
}

/// A durable consumer's configuration. Start from [`ConsumerConfig::new`] (nats-server's
/// defaults) and change fields:
///
/// ```
/// use std::time::Duration;
/// use jetcore::engine::{AckPolicy, ConsumerConfig, DeliverPolicy};
///
/// let config = ConsumerConfig {
///     filter_subjects: vec!["orders.eu.>".into()],
///     deliver_policy: DeliverPolicy::New,
///     ack_wait: Duration::from_secs(5),
///     max_deliver: Some(3),
///     ..ConsumerConfig::new("billing")
/// };
/// assert_eq!(config.ack_policy, AckPolicy::Explicit);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerConfig {
    /// The durable name: 1-255 bytes, no `.`, `*`, `>`, `/`, `\` or whitespace.
    pub name: String,
    /// Subjects (wildcards allowed) this consumer takes; empty: every subject. Each must
    /// overlap the stream's subjects, and no two may overlap each other.
    pub filter_subjects: Vec<String>,
    pub deliver_policy: DeliverPolicy,
    pub ack_policy: AckPolicy,
    /// How long a delivery may stay unacknowledged before it is redelivered (at least 1 ms).
    pub ack_wait: Duration,
    /// Deliveries of one message at most (first delivery included); `None`: unlimited.
    pub max_deliver: Option<u64>,
    /// Deliveries awaiting an ack at most; a fetch returns nothing new while at it.
    pub max_ack_pending: Option<usize>,
}

/// nats-server's defaults for `ack_wait` and `max_ack_pending`.
const ACK_WAIT_DEFAULT: Duration = Duration::from_secs(30);
const MAX_ACK_PENDING_DEFAULT: usize = 1000;

impl ConsumerConfig {
    /// Every subject from the first message, explicit acks, 30 s ack wait, unlimited
    /// deliveries, at most 1000 awaiting an ack (nats-server's defaults).
    pub fn new(name: impl Into<String>) -> ConsumerConfig {
        ConsumerConfig {
            name: name.into(),
            filter_subjects: Vec::new(),
            deliver_policy: DeliverPolicy::All,
            ack_policy: AckPolicy::Explicit,
            ack_wait: ACK_WAIT_DEFAULT,
            max_deliver: None,
            max_ack_pending: Some(MAX_ACK_PENDING_DEFAULT),
        }
    }

    /// Checks the configuration against the stream it is for;
    /// [`Error::ConsumerConfigInvalid`] names the field and says why.
    pub fn validate(&self, stream: &StreamConfig) -> Result<(), Error> {
        validate_name(&self.name).map_err(|error| invalid(error.field, error.reason))?;
        for (index, filter) in self.filter_subjects.iter().enumerate() {
            if !is_valid_pattern(filter) {
                return Err(invalid("filter_subjects", format!("invalid subject filter {filter:?}")));
            }
            if !stream.capture_patterns().iter().any(|captured| patterns_overlap(filter, captured)) {
                return Err(invalid("filter_subjects", format!("{filter:?} is not a subject of the stream")));
            }
            if let Some(other) = self.filter_subjects[..index].iter().find(|other| patterns_overlap(filter, other)) {
                return Err(invalid("filter_subjects", format!("{filter:?} overlaps {other:?}")));
            }
        }
        if self.ack_wait.as_nanos() < u128::from(CONSUMER_TICK_NANOS) {
            return Err(invalid("ack_wait", format!("must be at least {CONSUMER_TICK_NANOS} ns")));
        }
        if self.max_deliver == Some(0) {
            return Err(invalid("max_deliver", "must be at least 1; use None for unlimited"));
        }
        if self.max_ack_pending == Some(0) {
            return Err(invalid("max_ack_pending", "must be at least 1; use None for unlimited"));
        }
        if self.deliver_policy == DeliverPolicy::ByStartSequence(0) {
            return Err(invalid("deliver_policy", "a start sequence is 1 or more"));
        }
        Ok(())
    }

    /// The state machine's settings: a pull consumer whose only requests are the engine's
    /// fetches, one at a time.
    pub(super) fn settings(&self) -> Settings {
        let (deliver_policy, opt_start_seq, opt_start_time_nanos) = match self.deliver_policy {
            DeliverPolicy::All => (StartPolicy::All, 0, None),
            DeliverPolicy::Last => (StartPolicy::Last, 0, None),
            DeliverPolicy::New => (StartPolicy::New, 0, None),
            DeliverPolicy::ByStartSequence(seq) => (StartPolicy::ByStartSequence, seq, None),
            DeliverPolicy::ByStartTime(nanos) => (StartPolicy::ByStartTime, 0, Some(nanos)),
            DeliverPolicy::LastPerSubject => (StartPolicy::LastPerSubject, 0, None),
        };
        Settings {
            ack_mode: match self.ack_policy {
                AckPolicy::Explicit => AckMode::Explicit,
                AckPolicy::All => AckMode::All,
                AckPolicy::None => AckMode::None,
            },
            ack_wait_nanos: i64::try_from(self.ack_wait.as_nanos()).unwrap_or(i64::MAX),
            backoff_nanos: Vec::new(),
            max_deliver: self.max_deliver,
            max_ack_pending: self.max_ack_pending,
            deliver_policy,
            opt_start_seq,
            opt_start_time_nanos,
            replay_original: false,
            filters: Filters::new(self.filter_subjects.clone()),
            headers_only: false,
            inactive_threshold_nanos: None,
            max_waiting: 1,
            max_request_batch: None,
            max_request_expires_nanos: None,
            max_request_bytes: None,
            push: None,
            priority_policy: PriorityPolicy::None,
            priority_groups: Vec::new(),
            pinned_ttl_nanos: 0,
            report_acks: false,
            ack_sample_percent: 0,
        }
    }
}

fn invalid(field: &'static str, reason: impl Into<String>) -> Error {
    Error::ConsumerConfigInvalid { field, reason: reason.into() }
}
