//! Interest and workqueue retention: a message stays only while some consumer still needs
//! it. Three moments decide (as in nats-server):
//! - publish: on an interest stream, a message no consumer's filter matches is skipped
//!   (its sequence is used, nothing is stored; the stream's owner decides, asking
//!   [`ConsumerRegistry::interested_in`]);
//! - ack (or delivery, for ack none): the message goes once no other consumer needs it
//!   (workqueue: at once, its one consumer is done);
//! - consumer deletion: what only the deleted consumer still held goes; with no consumer
//!   left the stream is purged.

use super::consumers::{ConsumerEntry, ConsumerRegistry};
use super::StreamService;
use crate::consumer::{ConsumerId, StreamSeq};
use crate::stream::{PurgeRequest, Retention, Stream};

/// Sequences examined after a consumer deletion at most; the rest go as the remaining
/// consumers ack them (nats-server defers the same way).
const CLEANUP_SCAN_MAX: u64 = 100_000;

/// Whether `entry` will still deliver or wait for an ack of message `seq` on `subject`.
fn still_needs(entry: &ConsumerEntry, seq: u64, subject: &str) -> bool {
    if !entry.consumer.settings().filters.matches(subject.as_bytes()) {
        return false;
    }
    let pending = entry.consumer.pending_set();
    pending.delivered().stream.get() < seq || pending.get(StreamSeq(seq)).is_some()
}

impl ConsumerRegistry {
    /// Whether some consumer of `stream` takes messages on `subject`.
    pub fn interested_in(&self, stream: &str, subject: &str) -> bool {
        let registry = self.registry.borrow();
        let Some(consumers) = registry.streams.get(stream) else { return false };
        consumers.by_name.values().any(|id| {
            registry
                .consumers
                .get(id)
                .is_some_and(|entry| entry.consumer.settings().filters.matches(subject.as_bytes()))
        })
    }

    /// Whether a consumer of `stream` other than `except` still needs message `seq`.
    pub fn needed_by_any(&self, stream: &str, seq: u64, subject: &str, except: Option<ConsumerId>) -> bool {
        let registry = self.registry.borrow();
        let Some(consumers) = registry.streams.get(stream) else { return false };
        consumers
            .by_name
            .values()
            .filter(|id| Some(**id) != except)
            .filter_map(|id| registry.consumers.get(id))
            .any(|entry| still_needs(entry, seq, subject))
    }
}

impl StreamService {
    /// Consumers of `stream` for its info: its own, and the mirrors and sources
    /// following it (nats-server's source consumers).
    pub(super) fn consumer_count_with_followers(&self, stream: &str) -> u64 {
        (self.consumers.ids_of(stream).len() + self.sourcing.followers.count(stream)) as u64
    }

    /// Consumer `id` settled message `seq` (acked, terminated, or delivered with ack none).
    pub(super) async fn retention_acked(&self, stream_name: &str, id: ConsumerId, seq: u64) {
        let Some(owner) = self.owner(stream_name) else { return };
        let stream = owner.stream();
        let removable = match owner.rules().retention {
            Retention::WorkQueue => true,
            Retention::Interest => stream
                .with_subject(seq, |subject| {
                    !self.consumers.needed_by_any(stream_name, seq, subject, Some(id))
                        && !self.sourcing.followers.needs(stream_name, seq, subject, None)
                })
                .unwrap_or(false),
            Retention::Limits => false,
        };
        if removable {
            self.remove_for_retention(stream, seq).await;
        }
    }

    /// After a consumer of an interest stream is deleted: drops what nobody needs now,
    /// from `from` (the deleted consumer's ack floor + 1); everything if no consumer is left.
    pub(super) async fn interest_cleanup(&self, stream: &Stream, from: u64) {
        let name = stream.name();
        let Some(owner) = self.owner(&name) else { return };
        if owner.rules().retention != Retention::Interest {
            return;
        }
        if self.consumers.ids_of(&name).is_empty() && self.sourcing.followers.count(&name) == 0 {
            if let Err(error) = stream.purge(PurgeRequest::default()).await {
                tracing::warn!(stream = %name, %error, "interest retention could not purge a stream without consumers");
            }
            self.consumers.stream_maybe_removed(stream);
            return;
        }
        let from = from.max(stream.state_first_seq());
        let last = stream.last_seq().min(from.saturating_add(CLEANUP_SCAN_MAX));
        let unneeded: Vec<u64> = (from..=last)
            .filter(|seq| {
                stream
                    .with_subject(*seq, |subject| {
                        !self.consumers.needed_by_any(&name, *seq, subject, None)
                            && !self.sourcing.followers.needs(&name, *seq, subject, None)
                    })
                    .unwrap_or(false)
            })
            .collect();
        for seq in unneeded {
            self.remove_for_retention(stream, seq).await;
        }
    }

    pub(super) async fn remove_for_retention(&self, stream: &Stream, seq: u64) {
        if let Err(error) = stream.delete_message(seq).await {
            tracing::warn!(stream = %stream.name(), seq, %error, "retention could not remove a settled message");
        }
        self.consumers.stream_maybe_removed(stream);
    }
}
