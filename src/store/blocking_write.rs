//! When a durable write may block the shard's thread: one `pwritev2(RWF_DSYNC)` system
//! call instead of the same write through io_uring.
//!
//! With one publish in flight the shard has nothing to do while its write is on the
//! disk. Through io_uring it still pays for the round trip back: an O_DIRECT O_DSYNC
//! write's cache flush completes in a kernel worker, which posts the completion and wakes
//! the shard's thread, and glommio then runs its reactor (several `io_uring_enter` calls)
//! before the waiting task sees it. A blocking call makes the flush in the caller's own
//! context and returns straight into the code that writes the ack. Measured on this
//! project's VM (perf/latency.md, "Eighth session"): one-in-flight publishes 4 839 →
//! 5 701 per s, p50 191 → 165 µs.
//!
//! The price is that nothing else runs on the shard meanwhile: measured, a core
//! request-reply on the same shard went from p99 214 to 609 µs when every write blocked.
//! So the log blocks only when the shard is idle but for this group: no other write of
//! the shard in flight, and since the last one completed the shard handled no more
//! client operations and mesh envelopes (`shard::work`) than this group has records (its
//! own publishes). Another connection's traffic, a consumer's acks, an API request or a
//! peer's deliveries send the group through io_uring, where the shard serves them while
//! the disk works. The embedded engine counts no work of its own: a program's other tasks
//! on the shard's executor are not seen (`uring` keeps them served).
//!
//! A pipelined publisher's groups (~28 KiB at 128 B a message, with async-nats's window
//! of 256) block too, up to `BLOCKING_GROUP_BYTES_MAX`, on the same idle test and one
//! more: the shard's last write was to the same log ([`ShardWrites::same_log`]). Through
//! io_uring such a group was a write and then an fdatasync, the fdatasync in an io-wq
//! worker that waited for a CPU behind the client and the shard on this project's 2-CPU
//! VM: ~300-400 + ~450-700 µs a group. One blocking O_DSYNC write took ~450-500 µs, and
//! the server ~10 % less CPU a message (perf/shards.md, "2026-12-07 (evening)"). Two
//! streams published at once on one shard stay on io_uring, so neither's blocked write
//! holds the other's.
//!
//! `JETCORE_DURABLE_WRITE` (see `durable_choice`): `uring` never blocks (the way before
//! this module), `blocking` blocks for every one-write group (an experiment's upper
//! bound).

use std::cell::Cell;

use crate::shard::work;

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

/// The shard's writes as the policy sees them. One per shard thread (every log of the
/// shard shares its disk and its thread).
#[derive(Debug)]
pub struct ShardWrites {
    blocking: Blocking,
    in_flight: Cell<u32>,
    /// The shard's work count (`shard::work`) when its last write completed.
    work_at_done: Cell<u64>,
    /// Whether the last write completed was a blocking one.
    last_blocked: Cell<bool>,
    /// The log ([`LogId`]) the last write completed was to.
    last_log: Cell<LogId>,
}

/// Which log of the shard a write is to: its address, stable while it is open. A log
/// made after one is dropped may get the same address; that can only let a write block
/// whose shard passed the idle test anyway.
pub type LogId = usize;

impl ShardWrites {
    pub const fn new(blocking: Blocking) -> ShardWrites {
        ShardWrites {
            blocking,
            in_flight: Cell::new(0),
            work_at_done: Cell::new(0),
            last_blocked: Cell::new(false),
            last_log: Cell::new(0),
        }
    }

    /// Whether a one-write group of `records` records may block the thread, the shard's
    /// work count being `work`.
    pub fn may_block(&self, records: u32, work: u64) -> bool {
        match self.blocking {
            Blocking::Never => false,
            Blocking::Always => true,
            Blocking::WhenIdle => {
                let work_since = work.wrapping_sub(self.work_at_done.get());
                self.in_flight.get() == 0 && work_since <= u64::from(records)
            }
        }
    }

    /// A write (of any group, any way) starts.
    pub fn started(&self) {
        self.in_flight.set(self.in_flight.get() + 1);
    }

    /// Whether the shard's last completed write was to `log`.
    pub fn same_log(&self, log: LogId) -> bool {
        self.last_log.get() == log
    }

    /// A write to `log` started by [`started`](Self::started) is done; the work count is
    /// `work`.
    pub fn done(&self, work: u64, log: LogId) {
        self.in_flight.set(self.in_flight.get().saturating_sub(1));
        self.work_at_done.set(work);
        self.last_log.set(log);
    }

    /// Notes whether the write completing now (before its `done`) blocked.
    pub fn note_way(&self, blocked: bool) {
        self.last_blocked.set(blocked);
    }

    /// Whether the shard's last write blocked, none is in flight, and the shard handled
    /// nothing since it completed (work count `work`): one publish in flight, acked.
    pub fn idle_after_blocking(&self, work: u64) -> bool {
        self.last_blocked.get() && self.in_flight.get() == 0 && self.work_at_done.get() == work
    }
}

thread_local! {
    static SHARD_WRITES: ShardWrites = ShardWrites::new(Blocking::from_env());
}

/// This shard's [`ShardWrites::may_block`].
pub fn may_block(records: u32) -> bool {
    SHARD_WRITES.with(|writes| writes.may_block(records, work::count()))
}

/// This shard's [`ShardWrites::same_log`].
pub fn same_log(log: LogId) -> bool {
    SHARD_WRITES.with(|writes| writes.same_log(log))
}

/// This shard's [`ShardWrites::idle_after_blocking`]: a client's reader may then wait for
/// its next request in a blocking call (`server/connection/read_wait.rs`).
pub fn idle_after_blocking() -> bool {
    SHARD_WRITES.with(|writes| writes.idle_after_blocking(work::count()))
}

/// Whether the shard's last completed write was a blocking one (a publish in flight may
/// have been; without it, no reader waits for the next: `idle_after_blocking`).
pub fn last_write_blocked() -> bool {
    SHARD_WRITES.with(|writes| writes.last_blocked.get())
}

/// Notes whether the write completing now (before its [`InFlight`] drops) blocked.
pub fn note_way(blocked: bool) {
    SHARD_WRITES.with(|writes| writes.note_way(blocked));
}

/// Counts a write of this shard to `log` in flight until the guard drops (done at the
/// drop).
pub fn in_flight(log: LogId) -> InFlight {
    SHARD_WRITES.with(ShardWrites::started);
    InFlight { log }
}

/// See [`in_flight`].
pub struct InFlight {
    log: LogId,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        SHARD_WRITES.with(|writes| writes.done(work::count(), self.log));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_only_when_the_group_is_all_the_shard_did_since_its_last_write() {
        let writes = ShardWrites::new(Blocking::WhenIdle);
        assert!(writes.may_block(1, 1), "one publish, one record, on a quiet shard");
        writes.started();
        assert!(!writes.may_block(1, 1), "another write is in flight");
        writes.done(1, 7);
        assert!(writes.may_block(3, 4), "a pipeline: three publishes, three records");
        assert!(!writes.may_block(3, 5), "one operation more than the group's records: other work");
    }

    #[test]
    fn idle_after_a_blocking_write_until_the_shard_does_anything() {
        let writes = ShardWrites::new(Blocking::WhenIdle);
        assert!(!writes.idle_after_blocking(0), "no write yet");
        writes.started();
        writes.note_way(true);
        assert!(!writes.idle_after_blocking(1), "still in flight");
        writes.done(1, 7);
        assert!(writes.idle_after_blocking(1));
        assert!(!writes.idle_after_blocking(2), "an operation since");
        writes.started();
        writes.note_way(false);
        writes.done(3, 7);
        assert!(!writes.idle_after_blocking(3), "the last write went through io_uring");
    }

    #[test]
    fn the_last_write_names_its_log() {
        let writes = ShardWrites::new(Blocking::WhenIdle);
        assert!(!writes.same_log(7), "no write yet");
        writes.started();
        writes.done(1, 7);
        assert!(writes.same_log(7));
        writes.started();
        writes.done(2, 9);
        assert!(!writes.same_log(7), "another log's write came last");
    }

    #[test]
    fn never_and_always_ignore_the_shard() {
        let never = ShardWrites::new(Blocking::Never);
        assert!(!never.may_block(1, 0));
        let always = ShardWrites::new(Blocking::Always);
        always.started();
        assert!(always.may_block(0, 100));
    }
}
