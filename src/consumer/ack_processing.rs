//! Acks, NAKs, progress and terms arriving on a consumer's `$JS.ACK` subjects, and what
//! happens when an ack deadline passes (nats-server `processAck`, `processNak`,
//! `progressUpdate`, `processTerm`, `checkPending`).

use super::ack::{AckKind, AckSubject};
use super::consumer::Consumer;
use super::effect::{Advisory, Context, Effect};
use super::sequence::{ConsumerSeq, StreamSeq};
use super::settings::AckMode;
use super::timer_key::TimerKind;

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
            AckKind::Ack => self.acknowledge(seq, cx),
            AckKind::Next { request } => {
                self.acknowledge(seq, cx);
                answer = false;
                if let Some(reply) = reply {
                    self.on_pull_request(reply, request, cx);
                }
            }
            AckKind::Nak { delay_nanos } => self.negative_ack(seq, ack.consumer_seq, delay_nanos, cx),
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

    /// `-NAK`: redeliver now, or after `delay_nanos`. Ignored unless the message is
    /// pending and the ack's consumer sequence is above the ack floor.
    fn negative_ack(
        &mut self,
        seq: StreamSeq,
        consumer_seq: ConsumerSeq,
        delay_nanos: Option<i64>,
        cx: &mut Context<'_>,
    ) {
        let floor = self.pending.ack_floor().consumer;
        if consumer_seq <= floor || consumer_seq > self.pending.delivered().consumer {
            return;
        }
        let Some(entry) = self.pending.get(seq).copied() else {
            return;
        };
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
