//! Acks, NAKs, progress and terms arriving on a consumer's `$JS.ACK` subjects, and what
//! happens when an ack deadline passes (nats-server `processAck`, `processNak`,
//! `progressUpdate`, `processTerm`, `checkPending`).

use super::ack::{AckKind, AckSubject};
use super::consumer::Consumer;
use super::effect::{Advisory, Context, Effect};
use super::sequence::{StreamSeq, Tick};
use super::settings::AckMode;
use super::timer_key::TimerKind;
use crate::limits::CONSUMER_TICK_NANOS;

impl Consumer {
    /// An ack message arrived. `ack` is its parsed subject, `body` its payload (after
    /// headers), `reply` its reply subject if any. Acks naming a sequence this consumer
    /// has not delivered are ignored without a reply; otherwise an ack with a reply is
    /// answered with an empty message (double ack), except `+NXT`, whose reply receives
    /// the next messages instead.
    pub fn on_ack(&mut self, ack: &AckSubject<'_>, body: &[u8], reply: Option<&str>, cx: &mut Context<'_>) {
        if self.deleted {
            return;
        }
        let seq = ack.stream_seq;
        if seq == StreamSeq::ZERO || seq > self.pending.delivered().stream {
            return;
        }
        self.inactivity.touch(cx.now);
        let mut answer = true;
        match AckKind::parse(body) {
            AckKind::Ack => {
                self.sample_ack(ack, cx);
                self.acknowledge(seq, cx);
            }
            AckKind::Next { request } => {
                self.sample_ack(ack, cx);
                self.acknowledge(seq, cx);
                answer = false;
                if let Some(reply) = reply {
                    self.on_pull_request(reply, request, cx);
                }
            }
            AckKind::Nak { delay_nanos } => self.negative_ack(ack, delay_nanos, cx),
            AckKind::Progress => self.progress(seq, cx),
            AckKind::Term { reason } => self.terminate(seq, reason, cx),
            AckKind::Unknown => {}
        }
        if let Some(reply) = reply.filter(|_| answer) {
            cx.emit(Effect::AckReply { to: reply.to_string() });
        }
        self.pump(cx);
        self.finish(cx);
    }

    /// `+ACK`: settles the message (explicit) or everything up to it (all). A message no
    /// longer pending (already acked) changes nothing.
    fn acknowledge(&mut self, seq: StreamSeq, cx: &mut Context<'_>) {
        let settled = match self.settings.ack_mode {
            AckMode::None => return,
            AckMode::Explicit => self.pending.settle(seq).map(|entry| vec![(seq, entry)]).unwrap_or_default(),
            AckMode::All => self.pending.settle_through(seq),
        };
        for (settled_seq, entry) in settled {
            self.cancel_timer(entry.timer, cx);
            if self.settings.report_acks {
                cx.emit(Effect::Acked { stream_seq: settled_seq });
            }
            self.dirty = true;
        }
    }

    /// An explicit ack of a pending message, sampled at `sample_freq` into an ack metric
    /// (nats-server's `sampleAck`: explicit ack policy only, the count from the ack
    /// subject, the time since the last delivery).
    fn sample_ack(&mut self, ack: &AckSubject<'_>, cx: &mut Context<'_>) {
        let percent = self.settings.ack_sample_percent;
        if percent == 0 || self.settings.ack_mode != AckMode::Explicit {
            return;
        }
        let Some(entry) = self.pending.get(ack.stream_seq).copied() else {
            return;
        };
        // nats-server samples when a draw from 0..100 is at most the percentage.
        if percent < 100 && self.next_random() % 100 > u64::from(percent) {
            return;
        }
        let ticks = if entry.delivered_at == Tick::ZERO { 0 } else { cx.now.since(entry.delivered_at) };
        cx.emit(Effect::Advisory(Advisory::AckSampled {
            stream_seq: ack.stream_seq,
            consumer_seq: ack.consumer_seq,
            deliveries: ack.delivery_count,
            ack_nanos: ticks.saturating_mul(CONSUMER_TICK_NANOS),
        }));
    }

    /// The next draw of the sampling generator (xorshift64).
    fn next_random(&mut self) -> u64 {
        let mut x = self.sample_state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.sample_state = x;
        x
    }

    /// `-NAK`: redeliver now, or after `delay_nanos`, with a MSG_NAKED advisory. Ignored
    /// unless the message is pending and the ack's consumer sequence is above the ack
    /// floor.
    fn negative_ack(&mut self, ack: &AckSubject<'_>, delay_nanos: Option<i64>, cx: &mut Context<'_>) {
        let (seq, consumer_seq) = (ack.stream_seq, ack.consumer_seq);
        let floor = self.pending.ack_floor().consumer;
        if consumer_seq <= floor || consumer_seq > self.pending.delivered().consumer {
            return;
        }
        let Some(entry) = self.pending.get(seq).copied() else {
            return;
        };
        cx.emit(Effect::Advisory(Advisory::Naked { stream_seq: seq, consumer_seq, deliveries: ack.delivery_count }));
        self.cancel_timer(entry.timer, cx);
        self.pending.set_timer(seq, None);
        match delay_nanos.filter(|delay| *delay > 0) {
            Some(delay) => {
                self.pending.unqueue_redelivery(seq);
                let deadline = cx.now.after_nanos(delay);
                let timer = cx.timers.schedule(deadline, self.timer_key(TimerKind::BackoffRetry(seq)));
                self.pending.set_timer(seq, Some(timer));
            }
            None => self.redeliver_or_give_up(seq, cx),
        }
    }

    /// `+WPI`: the client is still working on it; restart its ack wait.
    fn progress(&mut self, seq: StreamSeq, cx: &mut Context<'_>) {
        let Some(entry) = self.pending.get(seq).copied() else {
            return;
        };
        self.pending.unqueue_redelivery(seq);
        self.arm_ack_deadline(seq, entry.delivery_count, cx);
    }

    /// `+TERM`: never redeliver; settled like an ack, with an advisory.
    fn terminate(&mut self, seq: StreamSeq, reason: Option<&str>, cx: &mut Context<'_>) {
        let Some(entry) = self.pending.settle(seq) else {
            return;
        };
        self.cancel_timer(entry.timer, cx);
        cx.emit(Effect::Advisory(Advisory::Terminated {
            stream_seq: seq,
            consumer_seq: entry.consumer_seq,
            deliveries: entry.delivery_count,
            reason: reason.map(str::to_string),
        }));
        if self.settings.report_acks {
            cx.emit(Effect::Acked { stream_seq: seq });
        }
        self.dirty = true;
    }

    /// An ack deadline passed or a NAK asked for redelivery: queue the message, unless
    /// it reached `max_deliver`, in which case it is dropped from the pending set (the
    /// ack floor may move past it) with one `MAX_DELIVERIES` advisory.
    pub(super) fn redeliver_or_give_up(&mut self, seq: StreamSeq, cx: &mut Context<'_>) {
        let Some(entry) = self.pending.get(seq).copied() else {
            return;
        };
        let exhausted = self.settings.max_deliver.is_some_and(|max| entry.delivery_count >= max);
        if !exhausted {
            self.pending.queue_redelivery(seq);
            return;
        }
        self.pending.settle(seq);
        self.cancel_timer(entry.timer, cx);
        self.dirty = true;
        cx.emit(Effect::Advisory(Advisory::MaxDeliveries { stream_seq: seq, deliveries: entry.delivery_count }));
    }
}
