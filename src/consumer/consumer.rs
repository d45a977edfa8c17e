//! The consumer state machine: what to deliver next, to whom, and what to remember.
//!
//! A `Consumer` is owned by its stream's shard and changed only through the `on_*`
//! calls, each given a [`Context`] (tick, stream view, interest, the shard's timer wheel,
//! the effect list). Every call ends by delivering whatever it can ("pumping"):
//! redeliveries first (lowest stream sequence first), then `last_per_subject` starts,
//! then new matching messages, while a taker exists (push: interest and flow-control
//! window; pull: a waiting request) and `max_ack_pending` allows.
//!
//! Split by concern: acks in `ack_processing`, pull requests in `pull`, push interest,
//! flow control and heartbeats in `push`, inactivity cleanup in `inactivity`, replay
//! pacing in `replay`.

use std::collections::VecDeque;

use super::ack::{AckNumbers, AckSubjectBuilder};
use super::effect::{Advisory, Context, Delivery, Effect, StatusReply};
use super::inactivity::Inactivity;
use super::pending::{PendingSet, Position};
use super::pull::{Taken, WaitQueue};
use super::push::PushState;
use super::replay::ReplayPacer;
use super::sequence::{ConsumerId, ConsumerSeq, DeliveryCount, StreamSeq, Tick};
use super::settings::Settings;
use super::start_position::StartPosition;
use super::state_codec::{ConsumerState, PendingRecord};
use super::stream_view::MessageMeta;
use super::timer_key::{TimerKey, TimerKind};

/// Bytes `headers_only` adds when the message had no headers: `NATS/1.0\r\n` + `\r\n`.
const EMPTY_HEADER_BLOCK_BYTES: u64 = 12;
/// `Nats-Msg-Size: ` + `\r\n`.
const MSG_SIZE_HEADER_BYTES: u64 = 17;

/// Where the next message to deliver comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Source {
    Redelivery,
    LastPerSubject,
    New,
}

/// The next message to deliver, not yet committed.
#[derive(Clone, Copy, Debug)]
pub(super) struct Candidate {
    pub meta: MessageMeta,
    pub delivery_count: DeliveryCount,
    pub source: Source,
}

/// Why nothing can be delivered right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dry {
    /// Nothing left to deliver.
    EndOfStream,
    /// `max_ack_pending` reached (no-wait pulls keep waiting, as in nats-server).
    MaxAckPending,
}

/// Info counters (the dynamic part of `ConsumerInfo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counters {
    pub delivered: Position,
    pub ack_floor: Position,
    pub num_ack_pending: u64,
    pub num_redelivered: u64,
    pub num_waiting: u64,
    pub num_pending: u64,
    pub push_bound: bool,
}

/// Restoring persisted state against a stream that does not have what it claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestoreError {
    /// The state says more was delivered than the stream holds.
    AheadOfStream { delivered: StreamSeq, last: StreamSeq },
}

/// See the module docs.
pub struct Consumer {
    pub(super) id: ConsumerId,
    pub(super) stream_name: String,
    pub(super) name: String,
    pub(super) settings: Settings,
    pub(super) ack_subjects: AckSubjectBuilder,
    pub(super) pending: PendingSet,
    /// First stream sequence not yet looked at for new messages.
    pub(super) next_seq: StreamSeq,
    /// Matching messages not yet delivered (`num_pending`), kept incrementally.
    pub(super) num_pending: u64,
    pub(super) last_per_subject: VecDeque<StreamSeq>,
    pub(super) waiting: Option<WaitQueue>,
    pub(super) push: Option<PushState>,
    pub(super) replay: ReplayPacer,
    pub(super) inactivity: Inactivity,
    /// Nothing is delivered before this tick (`pause_until`; see `pause`).
    pub(super) paused_until: Option<Tick>,
    pub(super) pause_timer: Option<super::timer_wheel::TimerId>,
    /// `pinned_client`: the group's pin, in memory only (see `pinning`).
    pub(super) pin: Option<super::pinning::Pin>,
    /// State changed since the last `Effect::StateChanged`.
    pub(super) dirty: bool,
    pub(super) deleted: bool,
    /// xorshift state for ack sampling (`sample_freq`): no clock, no global generator.
    pub(super) sample_state: u64,
}

impl Consumer {
    /// A new consumer positioned by its deliver policy.
    pub fn new(id: ConsumerId, stream_name: &str, name: &str, settings: Settings, cx: &mut Context<'_>) -> Consumer {
        Consumer::new_paused(id, stream_name, name, settings, None, cx)
    }

    /// [`Consumer::new`], paused until `paused_until` (the shard's tick for the config's
    /// wall-clock `pause_until`), so nothing is delivered before it.
    pub fn new_paused(
        id: ConsumerId,
        stream_name: &str,
        name: &str,
        settings: Settings,
        paused_until: Option<Tick>,
        cx: &mut Context<'_>,
    ) -> Consumer {
        let start = StartPosition::resolve(&settings, cx.stream);
        let num_pending = if start.last_per_subject.is_empty() {
            cx.stream.num_pending(start.next_seq, &settings.filters)
        } else {
            start.last_per_subject.len() as u64
        };
        let pending = PendingSet::starting_after(start.floor);
        let mut consumer = Consumer::assemble(id, stream_name, name, settings, pending, start.next_seq, cx);
        consumer.num_pending = num_pending;
        consumer.last_per_subject = start.last_per_subject.into();
        consumer.dirty = true;
        consumer.pause(paused_until, cx);
        if consumer.paused_until.is_some() {
            cx.emit(Effect::Advisory(Advisory::Pause { paused: true }));
        }
        consumer
    }

    /// A consumer resuming from persisted state: acknowledged messages stay settled;
    /// every pending one gets a fresh ack deadline and is redelivered when it passes.
    pub fn restore(
        id: ConsumerId,
        stream_name: &str,
        name: &str,
        settings: Settings,
        state: &ConsumerState,
        cx: &mut Context<'_>,
    ) -> Result<Consumer, RestoreError> {
        let last = cx.stream.last_seq();
        // A consumer that delivered nothing may sit past the end (a future start).
        if state.delivered.consumer > ConsumerSeq::ZERO && state.delivered.stream > last {
            return Err(RestoreError::AheadOfStream { delivered: state.delivered.stream, last });
        }
        let records = state.pending.iter().map(|r| (r.stream_seq, r.consumer_seq, r.delivery_count));
        let pending = PendingSet::restore(state.delivered, state.ack_floor, records);
        let next_seq = state.delivered.stream.next().max(cx.stream.first_seq());
        let mut consumer = Consumer::assemble(id, stream_name, name, settings, pending, next_seq, cx);
        consumer.num_pending = cx.stream.num_pending(next_seq, &consumer.settings.filters);
        let seqs: Vec<StreamSeq> = consumer.pending.iter().map(|(seq, _)| seq).collect();
        for seq in seqs {
            let count = consumer.pending.get(seq).map_or(1, |entry| entry.delivery_count);
            consumer.arm_ack_deadline(seq, count, cx);
        }
        consumer.on_stream_removed(cx);
        Ok(consumer)
    }

    fn assemble(
        id: ConsumerId,
        stream_name: &str,
        name: &str,
        settings: Settings,
        pending: PendingSet,
        next_seq: StreamSeq,
        cx: &mut Context<'_>,
    ) -> Consumer {
        let waiting = settings.push.is_none().then(|| WaitQueue::new(settings.max_waiting));
        let push = settings.push.clone().map(|push| PushState::new(push, stream_name, name));
        let mut consumer = Consumer {
            id,
            stream_name: stream_name.to_string(),
            name: name.to_string(),
            ack_subjects: AckSubjectBuilder::new(stream_name, name),
            replay: ReplayPacer::new(settings.replay_original, cx.stream.last_seq()),
            settings,
            pending,
            next_seq,
            num_pending: 0,
            last_per_subject: VecDeque::new(),
            waiting,
            push,
            inactivity: Inactivity::new(cx.now),
            paused_until: None,
            pause_timer: None,
            pin: None,
            dirty: false,
            deleted: false,
            sample_state: id.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
        };
        consumer.arm_inactivity(cx);
        consumer.arm_push_heartbeat(cx);
        consumer
    }

    /// Applies an updated config (the API layer has already checked which fields may
    /// change). Position, pending set and waiting requests are kept; new limits apply
    /// from now on. A changed deliver subject needs a fresh `on_interest_change`.
    pub fn update_config(&mut self, settings: Settings, cx: &mut Context<'_>) {
        if let Some(queue) = self.waiting.as_mut() {
            queue.set_max_waiting(settings.max_waiting);
        }
        let heartbeat_was_armed = self.push.as_ref().is_some_and(|push| push.has_heartbeat());
        if let (Some(push), Some(push_settings)) = (self.push.as_mut(), settings.push.clone()) {
            push.update_settings(push_settings);
        }
        self.settings = settings;
        self.settle_pin_policy(cx);
        if !heartbeat_was_armed {
            self.arm_push_heartbeat(cx);
        }
        self.pump(cx);
        self.finish(cx);
    }

    pub fn id(&self) -> ConsumerId {
        self.id
    }

    pub fn stream_name(&self) -> &str {
        &self.stream_name
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn pending_set(&self) -> &PendingSet {
        &self.pending
    }

    pub fn counters(&self) -> Counters {
        Counters {
            delivered: self.pending.delivered(),
            ack_floor: self.pending.ack_floor(),
            num_ack_pending: self.pending.len() as u64,
            num_redelivered: self.pending.redelivered_count(),
            num_waiting: self.waiting.as_ref().map_or(0, |queue| queue.len() as u64),
            num_pending: self.num_pending,
            push_bound: self.push.as_ref().is_some_and(|push| push.is_active()),
        }
    }

    /// The state to persist (see `state_codec`).
    pub fn state(&self) -> ConsumerState {
        ConsumerState {
            delivered: self.pending.delivered(),
            ack_floor: self.pending.ack_floor(),
            pending: self
                .pending
                .iter()
                .map(|(stream_seq, entry)| PendingRecord {
                    stream_seq,
                    consumer_seq: entry.consumer_seq,
                    delivery_count: entry.delivery_count,
                })
                .collect(),
        }
    }

    /// The stream stored a message (after it became durable). Call for every consumer
    /// of the stream; the consumer checks its filters.
    pub fn on_stream_append(&mut self, meta: &MessageMeta, subject: &[u8], cx: &mut Context<'_>) {
        if self.deleted || meta.seq < self.next_seq || !self.settings.filters.matches(subject) {
            return; // Nothing new for this consumer: no need to look for work.
        }
        self.num_pending += 1;
        self.pump(cx);
        self.finish(cx);
    }

    /// The stream removed messages (limits, age, delete): settle pending ones that are
    /// gone from the front and recount `num_pending`.
    pub fn on_stream_removed(&mut self, cx: &mut Context<'_>) {
        self.settle_removed(false, cx);
    }

    /// The stream was purged: as [`Consumer::on_stream_removed`], and the delivered
    /// position and ack floor move up to the new first sequence - 1.
    pub fn on_stream_purged(&mut self, cx: &mut Context<'_>) {
        self.settle_removed(true, cx);
    }

    fn settle_removed(&mut self, purged: bool, cx: &mut Context<'_>) {
        let first = cx.stream.first_seq();
        if first > self.pending.ack_floor().stream.next() {
            let before = (self.pending.delivered(), self.pending.ack_floor());
            for (_, entry) in self.pending.drop_below(first, purged) {
                self.cancel_timer(entry.timer, cx);
            }
            if (self.pending.delivered(), self.pending.ack_floor()) != before {
                self.dirty = true;
            }
        }
        self.next_seq = self.next_seq.max(first);
        self.last_per_subject.retain(|seq| *seq >= first);
        self.num_pending =
            self.last_per_subject.len() as u64 + cx.stream.num_pending(self.next_seq, &self.settings.filters);
        self.pump(cx);
        self.finish(cx);
    }

    /// A timer of this consumer expired (the shard routes `TimerKey::kind` here).
    pub fn on_timer(&mut self, kind: TimerKind, cx: &mut Context<'_>) {
        self.on_timers([kind], cx);
    }

    /// Several timers of this consumer expired in one `advance`: all are applied before
    /// delivering, so due redeliveries go out in stream order.
    pub fn on_timers(&mut self, kinds: impl IntoIterator<Item = TimerKind>, cx: &mut Context<'_>) {
        if self.deleted {
            return;
        }
        for kind in kinds {
            self.apply_timer(kind, cx);
        }
        self.pump(cx);
        self.finish(cx);
    }

    fn apply_timer(&mut self, kind: TimerKind, cx: &mut Context<'_>) {
        match kind {
            TimerKind::AckDeadline(seq) | TimerKind::BackoffRetry(seq) => {
                self.pending.set_timer(seq, None);
                self.redeliver_or_give_up(seq, cx);
            }
            TimerKind::PullExpiry(id) => self.on_pull_expiry(id, cx),
            TimerKind::PullHeartbeat(id) => self.on_pull_heartbeat(id, cx),
            TimerKind::Heartbeat => self.on_push_heartbeat(cx),
            TimerKind::InactiveThreshold => self.on_inactivity_timer(cx),
            TimerKind::ReplayWait => self.replay.timer_fired(),
            TimerKind::PauseEnd => self.on_pause_end(cx),
            TimerKind::ServeWaiting => self.on_serve_waiting(),
            TimerKind::PinnedTtl => self.on_pin_ttl(cx),
        }
    }

    /// The consumer is being deleted: waiting pulls get `409 Consumer Deleted`, every
    /// timer is cancelled. Nothing happens after this.
    pub fn delete(&mut self, cx: &mut Context<'_>) {
        if let Some(queue) = self.waiting.as_mut() {
            cx.timers_cancel(queue.take_serve_timer());
            for request in queue.drain() {
                cx.timers_cancel(request.timers());
                cx.status(StatusReply::new(request.reply.clone(), 409, "Consumer Deleted"));
            }
        }
        let timers: Vec<_> = self.pending.iter().filter_map(|(_, entry)| entry.timer).collect();
        cx.timers_cancel(timers);
        self.inactivity.cancel(cx);
        self.replay.cancel(cx);
        self.release_pin(cx);
        if let Some(push) = self.push.as_mut() {
            push.cancel_heartbeat(cx);
        }
        self.deleted = true;
    }

    pub(super) fn timer_key(&self, kind: TimerKind) -> TimerKey {
        TimerKey { consumer: self.id, kind }
    }

    pub(super) fn cancel_timer(&mut self, timer: Option<super::timer_wheel::TimerId>, cx: &mut Context<'_>) {
        if let Some(timer) = timer {
            cx.timers.cancel(timer);
        }
    }

    /// Arms the ack deadline of a pending message after delivery number `count`.
    pub(super) fn arm_ack_deadline(&mut self, seq: StreamSeq, count: DeliveryCount, cx: &mut Context<'_>) {
        let deadline = cx.now.after_nanos(self.settings.ack_wait_for(count));
        let timer = cx.timers.schedule(deadline, self.timer_key(TimerKind::AckDeadline(seq)));
        let previous = self.pending.set_timer(seq, Some(timer));
        self.cancel_timer(previous, cx);
    }

    /// Emits `StateChanged` once if anything persistent changed.
    pub(super) fn finish(&mut self, cx: &mut Context<'_>) {
        if self.dirty && !self.deleted {
            self.dirty = false;
            cx.emit(Effect::StateChanged);
        }
    }

    /// Delivers as much as takers and limits allow (see the module docs).
    pub(super) fn pump(&mut self, cx: &mut Context<'_>) {
        if self.is_paused(cx.now) {
            return;
        }
        while !self.deleted && self.has_taker() {
            let candidate = match self.next_candidate(cx) {
                Ok(candidate) => candidate,
                Err(dry) => {
                    self.on_dry(dry, cx);
                    break;
                }
            };
            if candidate.source == Source::New && !self.replay.allows(&candidate.meta, self.id, cx) {
                break;
            }
            let consumer_seq = self.pending.delivered().consumer.next();
            let pending_after = match candidate.source {
                Source::Redelivery => self.num_pending,
                _ => self.num_pending.saturating_sub(1),
            };
            let ack = AckNumbers {
                delivery_count: candidate.delivery_count,
                stream_seq: candidate.meta.seq,
                consumer_seq,
                timestamp_nanos: candidate.meta.timestamp_nanos,
                pending: pending_after,
            };
            let size = self.wire_size(&candidate.meta, ack.subject_len(self.ack_subjects.prefix().len()));
            let Some(Taken { to, trailer, pin_id }) = self.take_target(size, cx) else {
                continue;
            };
            let delivery = Delivery {
                to,
                stream_seq: candidate.meta.seq,
                consumer_seq,
                delivery_count: candidate.delivery_count,
                pending: pending_after,
                timestamp_nanos: candidate.meta.timestamp_nanos,
                ack_prefix: self.ack_subjects.prefix().clone(),
                headers_only: self.settings.headers_only,
                pin_id,
            };
            self.commit(candidate, delivery, size, cx);
            if let Some(trailer) = trailer {
                cx.status(trailer);
            }
        }
        // Only a consumer that delivered something is bound by the stream's end (a
        // `by_start_sequence` start past the end sits there with nothing delivered).
        let delivered_any = self.pending.delivered().consumer > ConsumerSeq::ZERO;
        if let Some(last) = Some(cx.stream.last_seq()).filter(|last| *last > StreamSeq::ZERO && delivered_any) {
            let delivered = self.pending.delivered().stream;
            assert!(delivered <= last, "delivered {delivered} beyond the stream's last sequence {last}");
        }
    }

    fn has_taker(&self) -> bool {
        match (&self.push, &self.waiting) {
            (Some(push), _) => push.can_deliver(),
            (None, Some(_)) => self.offered_request().is_some(),
            (None, None) => false,
        }
    }

    /// The next message to deliver, without committing to it. Drops redeliveries whose
    /// message left the stream (settled, like nats-server's `processTerm`).
    fn next_candidate(&mut self, cx: &mut Context<'_>) -> Result<Candidate, Dry> {
        while let Some(seq) = self.pending.next_redelivery() {
            let count = self.pending.get(seq).map_or(1, |entry| entry.delivery_count);
            match cx.stream.message(seq) {
                Some(meta) => return Ok(Candidate { meta, delivery_count: count + 1, source: Source::Redelivery }),
                None => {
                    let entry = self.pending.settle(seq);
                    self.cancel_timer(entry.and_then(|entry| entry.timer), cx);
                    self.dirty = true;
                }
            }
        }
        if self.settings.tracks_acks() && self.settings.max_ack_pending.is_some_and(|max| self.pending.len() >= max) {
            return Err(Dry::MaxAckPending);
        }
        while let Some(&seq) = self.last_per_subject.front() {
            match cx.stream.message(seq) {
                Some(meta) => return Ok(Candidate { meta, delivery_count: 1, source: Source::LastPerSubject }),
                None => {
                    self.last_per_subject.pop_front();
                    self.num_pending = self.num_pending.saturating_sub(1);
                }
            }
        }
        match cx.stream.next_matching(self.next_seq, &self.settings.filters) {
            Some(meta) => Ok(Candidate { meta, delivery_count: 1, source: Source::New }),
            None => {
                // Nothing matches up to the end: later scans can start after it.
                self.next_seq = self.next_seq.max(cx.stream.last_seq().next());
                Err(Dry::EndOfStream)
            }
        }
    }

    /// Bytes the delivery occupies on the wire, as nats-server counts them for pull
    /// `max_bytes`: subject + ack reply + headers + payload.
    fn wire_size(&self, meta: &MessageMeta, ack_reply_bytes: usize) -> u64 {
        let base = u64::from(meta.subject_bytes) + ack_reply_bytes as u64;
        if !self.settings.headers_only {
            return base + u64::from(meta.header_bytes) + u64::from(meta.payload_bytes);
        }
        let headers = match meta.header_bytes {
            0 => EMPTY_HEADER_BLOCK_BYTES,
            bytes => u64::from(bytes),
        };
        let digits = crate::protocol::decimal_width(meta.payload_bytes as usize) as u64;
        base + headers + MSG_SIZE_HEADER_BYTES + digits
    }

    /// Who gets the next message: the deliver subject, or the pull request chosen for a
    /// message of `size` bytes (`None`: no request could take it; requests may have been
    /// answered and removed, so the caller loops).
    fn take_target(&mut self, size: u64, cx: &mut Context<'_>) -> Option<Taken> {
        match &self.push {
            Some(push) => Some(Taken { to: push.deliver_subject(), trailer: None, pin_id: None }),
            None => self.choose_request(size, cx),
        }
    }

    /// Records a delivery, arms its ack deadline and emits it.
    fn commit(&mut self, candidate: Candidate, delivery: Delivery, size: u64, cx: &mut Context<'_>) {
        let seq = candidate.meta.seq;
        match candidate.source {
            Source::Redelivery => {
                self.pending.unqueue_redelivery(seq);
            }
            Source::LastPerSubject => {
                self.last_per_subject.pop_front();
                self.num_pending = self.num_pending.saturating_sub(1);
            }
            Source::New => {
                self.next_seq = seq.next();
                self.num_pending = self.num_pending.saturating_sub(1);
                self.replay.delivered(&candidate.meta);
            }
        }
        let tracked = self.settings.tracks_acks();
        let consumer_seq = self.pending.record_delivery(seq, candidate.delivery_count, tracked);
        assert_eq!(consumer_seq, delivery.consumer_seq, "consumer sequence is contiguous");
        if tracked {
            self.arm_ack_deadline(seq, candidate.delivery_count, cx);
            if self.settings.ack_sample_percent > 0 {
                self.pending.stamp_delivery(seq, cx.now);
            }
        }
        self.dirty = true;
        self.inactivity.touch(cx.now);
        let fc_request = self.push.as_mut().and_then(|push| push.delivered(size, cx.now));
        cx.emit(Effect::Deliver(delivery));
        // Ack none settles on delivery; after it, or retention would remove the message
        // before it is read for sending.
        if !tracked && self.settings.report_acks {
            cx.emit(Effect::Acked { stream_seq: seq });
        }
        if let Some(request) = fc_request {
            cx.status(request);
        }
    }

    /// The last consumer and stream sequences for heartbeats (nats-server: next to
    /// deliver minus one).
    pub(super) fn last_sequences(&self) -> (ConsumerSeq, StreamSeq) {
        (self.pending.delivered().consumer, self.next_seq.previous())
    }
}

impl Context<'_> {
    /// Cancels several timers (stale handles are ignored).
    pub fn timers_cancel(&mut self, timers: impl IntoIterator<Item = super::timer_wheel::TimerId>) {
        for timer in timers {
            self.timers.cancel(timer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 5 budgets 4 KiB per idle durable consumer; the inline part must stay well
    /// under it (heap parts of an idle consumer are its names, filters and ack prefix).
    #[test]
    fn idle_consumer_stays_small() {
        let size = std::mem::size_of::<Consumer>();
        assert!(size <= 1024, "Consumer is {size} bytes inline");
    }
}
