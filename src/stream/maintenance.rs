//! When a stream next needs the shard's maintenance pass (`Engine::tick`), so that the
//! pass runs only when something is due instead of on a fixed period.
//!
//! CONTRACT: `next_maintenance_ns` is never later than the first moment `sync_if_due`,
//! `expire`, `fire_schedules` or `checkpoint_due` would find work, given no new append or configuration
//! change; each of those raises the context's `maintenance` signal, after which the
//! caller asks again. It may be earlier (a lower bound is enough: the pass then finds
//! nothing and the caller asks again).

use super::stream::Stream;

/// Live slots looked at for the first message that may expire by age (as `expiry.rs`).
const AGE_SCAN_SLOTS_MAX: usize = 64 * 1024;

impl Stream {
    /// When this stream next has maintenance work without a new write, in nanoseconds of
    /// the stream clock (now or earlier: work is waiting); `None`: nothing will come due.
    pub fn next_maintenance_ns(&self) -> Option<i64> {
        let now = self.context.clock.now_ns();
        if self.log.has_unsynced() || self.checkpoint_due() {
            return Some(now);
        }
        let next_ttl = self.ttl.borrow().entries().next().map(|(deadline, _)| deadline);
        [self.next_age_expiry_ns(), next_ttl, self.next_schedule_ns()].into_iter().flatten().min()
    }

    /// When the oldest message that may expire by `max_age` does.
    fn next_age_expiry_ns(&self) -> Option<i64> {
        let config = self.meta.borrow().config.clone();
        let max_age = i64::try_from(config.max_age?.as_nanos()).unwrap_or(i64::MAX);
        let inline = self.age_expiry_inline(&config);
        let table = self.table.borrow();
        let flags = self.flags.borrow();
        let oldest = table
            .live_from(table.first_seq(), None)
            .take(AGE_SCAN_SLOTS_MAX)
            .find(|seq| inline || !flags.never_expires(*seq))?;
        let stamped = table.slot(oldest)?.timestamp_ns;
        Some(stamped.saturating_add(max_age))
    }
}
