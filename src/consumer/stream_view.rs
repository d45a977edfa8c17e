//! What a consumer needs to know about its stream and about subscriptions, as read-only
//! traits the shard implements over its stream store and subscription table. Queries
//! only: the consumer never changes the stream through them.

use crate::subject;

use super::sequence::StreamSeq;

/// A stored message as the consumer sees it: where it is, when it was stored, how big
/// it is on the wire (for pull `max_bytes` and push flow control). The shard loads the
/// bytes itself when it carries out a `Delivery`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageMeta {
    pub seq: StreamSeq,
    /// Stored time, Unix nanoseconds (the ack subject's timestamp token).
    pub timestamp_nanos: i64,
    pub subject_bytes: u32,
    pub header_bytes: u32,
    pub payload_bytes: u32,
}

/// The consumer's subject filters (`filter_subject` or `filter_subjects`); empty = all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filters {
    subjects: Vec<String>,
}

impl Filters {
    pub fn new(subjects: Vec<String>) -> Filters {
        Filters { subjects }
    }

    /// From a config: `filter_subject` if set, else `filter_subjects`.
    pub fn from_config(filter_subject: &str, filter_subjects: &[String]) -> Filters {
        if filter_subject.is_empty() {
            Filters::new(filter_subjects.to_vec())
        } else {
            Filters::new(vec![filter_subject.to_string()])
        }
    }

    /// True when there are no filters.
    pub fn is_all(&self) -> bool {
        self.subjects.is_empty()
    }

    pub fn subjects(&self) -> &[String] {
        &self.subjects
    }

    /// Whether a stored message's subject is for this consumer.
    pub fn matches(&self, subject: &[u8]) -> bool {
        self.is_all() || self.subjects.iter().any(|filter| subject::matches(filter.as_bytes(), subject))
    }
}

/// Read-only view of the consumer's stream. Sequences are the stream's own; "matching"
/// means matching `filters`.
pub trait StreamView {
    /// First stored sequence (`last_seq + 1` when the stream is empty).
    fn first_seq(&self) -> StreamSeq;
    /// Last assigned sequence (0 before the first message).
    fn last_seq(&self) -> StreamSeq;
    /// A stored message, or `None` if it was deleted or never existed.
    fn message(&self, seq: StreamSeq) -> Option<MessageMeta>;
    /// The first stored matching message at or after `from`.
    fn next_matching(&self, from: StreamSeq, filters: &Filters) -> Option<MessageMeta>;
    /// The first sequence stored at or after `unix_nanos`.
    fn seq_for_time(&self, unix_nanos: i64) -> Option<StreamSeq>;
    /// The last sequence of every matching subject, ascending.
    fn last_per_subject(&self, filters: &Filters) -> Vec<StreamSeq>;
    /// Stored matching messages at or after `from`.
    fn num_pending(&self, from: StreamSeq, filters: &Filters) -> u64;
}

/// Whether anyone is subscribed to a subject (the shard's subscription table); used to
/// drop pull requests whose inbox went away, as nats-server does.
pub trait InterestView {
    fn has_interest(&self, subject: &str) -> bool;
}

/// Interest in every subject: for embedded use and tests that do not model interest.
pub struct AlwaysInterested;

impl InterestView for AlwaysInterested {
    fn has_interest(&self, _subject: &str) -> bool {
        true
    }
}
