//! Reopening a log in place after a write found the disk full.
//!
//! Segments are preallocated, so a full disk normally shows when a segment is made, before
//! any sequence is assigned (`SegmentLog::ensure_room`). A write inside a segment can still
//! find no space: on a filesystem that allocates blocks when preallocated ("unwritten")
//! space is first written, or on the simulated disk. Such a write wrote nothing. The log
//! fails every queued group, as for any failure; the stream then opens the same files again
//! (recovery, as at a restart) and hands the fresh log to this one with [`SegmentLog::adopt`].
//! Publishing goes on without a restart, and succeeds once space is freed.
//!
//! A failed fdatasync stays fail-stop until a restart: after one, the kernel may have
//! dropped the dirty pages, and what the disk holds is unknown.

use super::log::SegmentLog;

impl SegmentLog {
    /// Whether the log failed because a write found the disk full, and only that: it can
    /// be reopened from its files in place.
    pub fn failed_for_space(&self) -> bool {
        self.failed_for_space.get() && self.failure.borrow().is_some()
    }

    /// No group queued, none being flushed, no segment being made, no zero-ahead write in
    /// flight, no spare segment being made: a failure has completed every group.
    pub fn is_drained(&self) -> bool {
        self.groups.borrow().is_empty()
            && self.flushers.get() == 0
            && !self.write_in_flight.get()
            && !self.rolling.get()
            && self.zeroing.get().is_none()
            && !self.making_spare()
    }

    /// Waits until [`Self::is_drained`]. After a failure only a segment being made or a
    /// flusher still in its write or fdatasync (one overlapping the failed one) can take
    /// I/O to finish (the failed flusher completes every group without awaiting); each is
    /// waited for on its own waker, not by spinning the task queue past the reactor.
    pub async fn drained(&self) {
        while !self.is_drained() {
            if self.rolling.get() {
                self.roll_done.wait().await;
            } else if self.flushers.get() > 0 {
                self.flusher_done.wait().await;
            } else if self.zeroing.get().is_some() {
                self.zeros_written().await;
            } else if self.making_spare() {
                self.spare_settled().await;
            } else {
                futures_lite::future::yield_now().await;
            }
        }
    }

    /// Becomes `fresh`, the same log just reopened from its files: its segments, its
    /// next segment id and no failure. Read windows are dropped (they may hold the old
    /// view of a segment's tail). Call only when [`Self::is_drained`].
    pub fn adopt(&self, fresh: &SegmentLog) {
        assert!(self.is_drained(), "adopting a log with groups in flight");
        self.segments.replace(fresh.segments.take());
        self.next_segment_id.set(fresh.next_segment_id.get());
        self.unsynced.replace(fresh.unsynced.take());
        self.zeroing.set(None);
        self.forget_spare();
        self.forget_read_windows();
        self.failed_for_space.set(false);
        self.failure.replace(None);
    }
}
