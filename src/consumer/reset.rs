//! Resetting a consumer (nats-server 2.14's `CONSUMER.RESET`, ADR-60): it forgets what it
//! delivered and acknowledged and starts over at a stream sequence, as if just created
//! there: delivered and ack floor both become (consumer 0, stream `next - 1`), pending
//! acks and their timers are dropped, and `num_pending` is recounted. Which sequences a
//! deliver policy allows is the caller's decision.

use std::collections::VecDeque;

use super::consumer::Consumer;
use super::effect::Context;
use super::pending::{PendingSet, Position};
use super::sequence::StreamSeq;

impl Consumer {
    /// Restarts delivery at stream sequence `next` (at least 1); state changes are
    /// reported as usual (`StateChanged`), so a durable consumer persists them.
    pub fn reset(&mut self, next: StreamSeq, cx: &mut Context<'_>) {
        assert!(next.get() >= 1, "a reset restarts at sequence 1 or later");
        self.restart(PendingSet::starting_after(next.previous()), next, cx);
    }

    /// Starts from a stream backup's state: everything up to `floor` acknowledged (its
    /// consumer sequence kept), delivery resuming after it. A backup lists no pending
    /// messages: nats-server rolls delivery back to the floor when any were.
    pub fn resume_from_backup(&mut self, floor: Position, cx: &mut Context<'_>) {
        self.restart(PendingSet::restore(floor, floor, std::iter::empty()), floor.stream.next(), cx);
    }

    fn restart(&mut self, pending: PendingSet, next: StreamSeq, cx: &mut Context<'_>) {
        if self.deleted {
            return;
        }
        let timers: Vec<_> = self.pending.iter().filter_map(|(_, entry)| entry.timer).collect();
        for timer in timers {
            cx.timers.cancel(timer);
        }
        self.pending = pending;
        self.next_seq = next;
        self.last_per_subject = VecDeque::new();
        self.num_pending = cx.stream.num_pending(next, &self.settings.filters);
        self.dirty = true;
        self.pump(cx);
        self.finish(cx);
    }
}
