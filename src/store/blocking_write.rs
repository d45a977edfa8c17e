//! When a small durable write may block the shard's thread: one `pwritev2(RWF_DSYNC)`
//! system call instead of the same write through io_uring.
//!
//! With one publish in flight the shard has nothing to do while its write is on the
//! disk. Through io_uring it still pays for the round trip back: an O_DIRECT O_DSYNC
//! write's cache flush completes in a kernel worker, which posts the completion and wakes
//! the shard's thread, and glommio then runs its reactor (several `io_uring_enter` calls)
//! before the waiting task sees it. A blocking call makes the flush in the caller's own
//! context and returns straight into the code that writes the ack. Measured on this
//! project's VM (perf/latency.md, "Eighth session"): one-in-flight publishes 4 681 →
//! 5 930 per s, p50 196 → 164 µs.
//!
//! The price is that nothing else runs on the shard meanwhile. So the log blocks only when
//! the shard was idle: no other write of this shard in flight, and the group began after
//! the shard's last write completed — the disk had gone quiet and this group's records
//! are what woke it. A group that filled while another write was in flight (a pipeline of
//! publishes, a sliding window, several busy streams) goes through io_uring as before, so
//! its appends' CPU overlaps the disk. Groups over `DURABLE_WRITE_BYTES_MAX` never take
//! the one-write way at all.
//!
//! `JETCORE_DURABLE_WRITE` (see `durable_choice`): `uring` never blocks (the way before
//! this module), `blocking` blocks for every one-write group (an experiment's upper
//! bound).

use std::cell::Cell;
use std::time::Instant;

/// When the one-write way may block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocking {
    /// When the shard was idle (the default).
    WhenIdle,
    /// Never: every write goes through io_uring.
    Never,
    /// Always (measurements only).
    Always,
}

impl Blocking {
    /// From `JETCORE_DURABLE_WRITE`: `uring`, `dsync` and `fdatasync` never block,
    /// `blocking` always does, anything else (or unset) when idle.
    pub fn from_env() -> Blocking {
        match std::env::var("JETCORE_DURABLE_WRITE").as_deref() {
            Ok("uring" | "dsync" | "fdatasync") => Blocking::Never,
            Ok("blocking") => Blocking::Always,
            _ => Blocking::WhenIdle,
        }
    }
}

/// The shard's writes as the policy sees them: how many are in flight, and when the
/// last one completed. One per shard thread (every log of the shard shares its disk).
#[derive(Debug)]
pub struct ShardWrites {
    blocking: Blocking,
    in_flight: Cell<u32>,
    last_done: Cell<Option<Instant>>,
}

impl ShardWrites {
    pub fn new(blocking: Blocking) -> ShardWrites {
        ShardWrites { blocking, in_flight: Cell::new(0), last_done: Cell::new(None) }
    }

    /// Whether a one-write group that began at `group_began` may block the thread.
    pub fn may_block(&self, group_began: Instant) -> bool {
        match self.blocking {
            Blocking::Never => false,
            Blocking::Always => true,
            Blocking::WhenIdle => {
                self.in_flight.get() == 0 && self.last_done.get().is_none_or(|done| group_began >= done)
            }
        }
    }

    /// A write (of any group, any way) starts.
    pub fn started(&self) {
        self.in_flight.set(self.in_flight.get() + 1);
    }

    /// The write started last by [`started`](Self::started) is done, at `now`.
    pub fn done(&self, now: Instant) {
        self.in_flight.set(self.in_flight.get().saturating_sub(1));
        self.last_done.set(Some(now));
    }
}

thread_local! {
    static SHARD_WRITES: ShardWrites = ShardWrites::new(Blocking::from_env());
}

/// This shard's [`ShardWrites::may_block`].
pub fn may_block(group_began: Instant) -> bool {
    SHARD_WRITES.with(|writes| writes.may_block(group_began))
}

/// Counts a write of this shard in flight until the guard drops (done at the drop).
pub fn in_flight() -> InFlight {
    SHARD_WRITES.with(ShardWrites::started);
    InFlight
}

/// See [`in_flight`].
pub struct InFlight;

impl Drop for InFlight {
    fn drop(&mut self) {
        SHARD_WRITES.with(|writes| writes.done(Instant::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn blocks_only_for_a_group_that_began_after_the_last_write_with_none_in_flight() {
        let writes = ShardWrites::new(Blocking::WhenIdle);
        let start = Instant::now();
        assert!(writes.may_block(start), "the first write of a quiet shard");
        writes.started();
        assert!(!writes.may_block(start), "another write is in flight");
        let done = start + Duration::from_micros(100);
        writes.done(done);
        assert!(!writes.may_block(start), "began while the last write was in flight: a pipeline");
        assert!(writes.may_block(done + Duration::from_micros(30)), "began after: one in flight");
    }

    #[test]
    fn never_and_always_ignore_the_shard() {
        let now = Instant::now();
        let never = ShardWrites::new(Blocking::Never);
        assert!(!never.may_block(now));
        let always = ShardWrites::new(Blocking::Always);
        always.started();
        assert!(always.may_block(now));
    }
}
