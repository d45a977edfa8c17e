//! The pending set: messages delivered and not yet acknowledged, the ack floor below
//! which everything is settled, and the redelivery queue.
//!
//! Invariants (DESIGN §8), asserted after every change:
//! - `ack_floor <= delivered` (both the stream and the consumer sequence);
//! - every pending stream sequence lies in `(ack_floor.stream, delivered.stream]`, and
//!   its first consumer sequence in `(ack_floor.consumer, delivered.consumer]`;
//! - the redelivery queue holds only pending sequences.
//!
//! `delivered <= stream last sequence` needs the stream and is asserted by the consumer.
//!
//! The floor only moves forward: when the lowest pending message is settled it moves
//! to just below the next pending one, or up to `delivered` when nothing is pending
//! (nats-server's `asflr`/`adflr`).

use std::collections::{BTreeMap, BTreeSet};

use super::sequence::{ConsumerSeq, DeliveryCount, StreamSeq, Tick};
use super::timer_wheel::TimerId;

/// A (stream sequence, consumer sequence) pair: `delivered` or `ack_floor`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    pub stream: StreamSeq,
    pub consumer: ConsumerSeq,
}

/// One delivered, unacknowledged message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingEntry {
    /// Consumer sequence of its first delivery (kept across redeliveries, as Go does).
    pub consumer_seq: ConsumerSeq,
    /// Deliveries so far (1 after the first).
    pub delivery_count: DeliveryCount,
    /// The ack deadline or backoff retry on the shard's wheel, if one is armed.
    pub timer: Option<TimerId>,
    /// When it was last delivered, for ack metrics (`sample_freq`); `Tick::ZERO` when
    /// not recorded (no sampling, or restored from disk).
    pub delivered_at: Tick,
}

/// See the module docs.
#[derive(Clone, Debug, Default)]
pub struct PendingSet {
    entries: BTreeMap<StreamSeq, PendingEntry>,
    redelivery_queue: BTreeSet<StreamSeq>,
    delivered: Position,
    ack_floor: Position,
    /// Entries with `delivery_count > 1` (`num_redelivered`).
    redelivered: u64,
}

impl PendingSet {
    /// Nothing delivered yet; the next delivery's stream sequence is `start.next()` or later.
    pub fn starting_after(start: StreamSeq) -> PendingSet {
        let position = Position { stream: start, consumer: ConsumerSeq::ZERO };
        PendingSet { delivered: position, ack_floor: position, ..PendingSet::default() }
    }

    /// Rebuilds a set from persisted parts; checks the invariants (a bad state is a bug in
    /// the caller, which validates decoded state first: see `state_codec`).
    pub fn restore(
        delivered: Position,
        ack_floor: Position,
        entries: impl IntoIterator<Item = (StreamSeq, ConsumerSeq, DeliveryCount)>,
    ) -> PendingSet {
        let mut set = PendingSet { delivered, ack_floor, ..PendingSet::default() };
        for (stream_seq, consumer_seq, delivery_count) in entries {
            set.redelivered += u64::from(delivery_count > 1);
            let entry = PendingEntry { consumer_seq, delivery_count, timer: None, delivered_at: Tick::ZERO };
            set.entries.insert(stream_seq, entry);
        }
        set.check_invariants();
        set
    }

    pub fn delivered(&self) -> Position {
        self.delivered
    }

    pub fn ack_floor(&self) -> Position {
        self.ack_floor
    }

    /// `num_ack_pending`.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `num_redelivered`: pending messages delivered more than once.
    pub fn redelivered_count(&self) -> u64 {
        self.redelivered
    }

    pub fn get(&self, stream_seq: StreamSeq) -> Option<&PendingEntry> {
        self.entries.get(&stream_seq)
    }

    /// Pending entries in stream order.
    pub fn iter(&self) -> impl Iterator<Item = (StreamSeq, &PendingEntry)> {
        self.entries.iter().map(|(seq, entry)| (*seq, entry))
    }

    /// Records a delivery and returns its consumer sequence. With `tracked` (ack policy
    /// explicit/all) the message becomes or stays pending with `delivery_count`; without
    /// (ack none) it counts as acknowledged at once.
    pub fn record_delivery(
        &mut self,
        stream_seq: StreamSeq,
        delivery_count: DeliveryCount,
        tracked: bool,
    ) -> ConsumerSeq {
        assert!(delivery_count >= 1, "delivery count starts at 1");
        let consumer_seq = self.delivered.consumer.next();
        self.delivered.consumer = consumer_seq;
        self.delivered.stream = self.delivered.stream.max(stream_seq);
        if !tracked {
            self.ack_floor = self.delivered;
        } else if let Some(entry) = self.entries.get_mut(&stream_seq) {
            if entry.delivery_count == 1 && delivery_count > 1 {
                self.redelivered += 1;
            }
            entry.delivery_count = delivery_count;
        } else {
            assert!(stream_seq > self.ack_floor.stream, "delivery at or below the ack floor");
            self.redelivered += u64::from(delivery_count > 1);
            let entry = PendingEntry { consumer_seq, delivery_count, timer: None, delivered_at: Tick::ZERO };
            self.entries.insert(stream_seq, entry);
        }
        self.check_invariants();
        consumer_seq
    }

    /// Records when a pending message was last delivered (ack metrics).
    pub fn stamp_delivery(&mut self, stream_seq: StreamSeq, at: Tick) {
        if let Some(entry) = self.entries.get_mut(&stream_seq) {
            entry.delivered_at = at;
        }
    }

    /// Arms (or clears) the timer of a pending message; returns the previous one.
    pub fn set_timer(&mut self, stream_seq: StreamSeq, timer: Option<TimerId>) -> Option<TimerId> {
        let entry = self.entries.get_mut(&stream_seq)?;
        std::mem::replace(&mut entry.timer, timer)
    }

    /// Settles one message (ack, term, max deliveries reached, or gone from the stream);
    /// returns its entry if it was pending. The caller cancels the entry's timer.
    pub fn settle(&mut self, stream_seq: StreamSeq) -> Option<PendingEntry> {
        let entry = self.entries.remove(&stream_seq)?;
        self.forget(stream_seq, &entry);
        self.advance_floor();
        self.check_invariants();
        Some(entry)
    }

    /// Settles every pending message at or below `stream_seq` (ack policy `all`).
    pub fn settle_through(&mut self, stream_seq: StreamSeq) -> Vec<(StreamSeq, PendingEntry)> {
        let above = self.entries.split_off(&stream_seq.next());
        let settled = std::mem::replace(&mut self.entries, above);
        for (seq, entry) in &settled {
            self.forget(*seq, entry);
        }
        self.advance_floor();
        self.check_invariants();
        settled.into_iter().collect()
    }

    /// Queues a pending message for redelivery (ordered by stream sequence); false if it
    /// is not pending.
    pub fn queue_redelivery(&mut self, stream_seq: StreamSeq) -> bool {
        if !self.entries.contains_key(&stream_seq) {
            return false;
        }
        self.redelivery_queue.insert(stream_seq);
        true
    }

    /// The lowest sequence waiting for redelivery.
    pub fn next_redelivery(&self) -> Option<StreamSeq> {
        self.redelivery_queue.first().copied()
    }

    /// Takes `stream_seq` off the redelivery queue.
    pub fn unqueue_redelivery(&mut self, stream_seq: StreamSeq) -> bool {
        self.redelivery_queue.remove(&stream_seq)
    }

    pub fn is_queued_for_redelivery(&self, stream_seq: StreamSeq) -> bool {
        self.redelivery_queue.contains(&stream_seq)
    }

    pub fn redelivery_queue_len(&self) -> usize {
        self.redelivery_queue.len()
    }

    /// The stream dropped everything below `first_seq`: pending messages there are
    /// settled and the ack floor moves past them, never beyond `delivered`. Only a purge
    /// moves both positions up to `first_seq - 1` (nats-server's consumer `purge`);
    /// limits and deletes leave `delivered` where it was. Returns the settled entries so
    /// their timers can be cancelled.
    pub fn drop_below(&mut self, first_seq: StreamSeq, purged: bool) -> Vec<(StreamSeq, PendingEntry)> {
        let kept = self.entries.split_off(&first_seq);
        let dropped = std::mem::replace(&mut self.entries, kept);
        for (seq, entry) in &dropped {
            self.forget(*seq, entry);
        }
        let floor = first_seq.previous();
        if purged {
            self.delivered.stream = self.delivered.stream.max(floor);
        }
        if self.entries.is_empty() {
            self.ack_floor = self.delivered;
        } else if purged && self.ack_floor.stream < floor {
            self.ack_floor.stream = floor;
        }
        self.advance_floor();
        self.check_invariants();
        dropped.into_iter().collect()
    }

    fn forget(&mut self, stream_seq: StreamSeq, entry: &PendingEntry) {
        self.redelivery_queue.remove(&stream_seq);
        if entry.delivery_count > 1 {
            self.redelivered -= 1;
        }
    }

    fn advance_floor(&mut self) {
        let candidate = match self.entries.first_key_value() {
            None => self.delivered,
            Some((seq, entry)) => Position { stream: seq.previous(), consumer: entry.consumer_seq.previous() },
        };
        if candidate.stream > self.ack_floor.stream {
            self.ack_floor.stream = candidate.stream;
        }
        if candidate.consumer > self.ack_floor.consumer {
            self.ack_floor.consumer = candidate.consumer;
        }
    }

    /// O(log n) checks always; the O(n) ones in debug builds.
    pub fn check_invariants(&self) {
        let (floor, delivered) = (self.ack_floor, self.delivered);
        assert!(floor.stream <= delivered.stream, "ack floor {floor:?} above delivered {delivered:?}");
        assert!(floor.consumer <= delivered.consumer, "ack floor {floor:?} above delivered {delivered:?}");
        if let (Some((first, _)), Some((last, _))) = (self.entries.first_key_value(), self.entries.last_key_value()) {
            assert!(*first > floor.stream, "pending {first} at or below ack floor {floor:?}");
            assert!(*last <= delivered.stream, "pending {last} above delivered {delivered:?}");
        }
        assert!(self.redelivery_queue.len() <= self.entries.len(), "redelivery queue too long");
        if cfg!(debug_assertions) {
            for (seq, entry) in &self.entries {
                assert!(
                    entry.consumer_seq > floor.consumer && entry.consumer_seq <= delivered.consumer,
                    "pending {seq} has consumer seq {} outside ({floor:?}, {delivered:?}]",
                    entry.consumer_seq
                );
            }
            assert!(self.redelivery_queue.iter().all(|seq| self.entries.contains_key(seq)));
            let redelivered = self.entries.values().filter(|entry| entry.delivery_count > 1).count();
            assert_eq!(redelivered as u64, self.redelivered, "redelivered count drifted");
        }
    }
}
