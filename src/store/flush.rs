//! Making groups durable: the flushers of a [`SegmentLog`].
//!
//! A flusher is a task of its own, started when the log lets one start: it seals the
//! oldest unsealed group (appends after that go into a new group), writes it, syncs per
//! the policy, and completes it, which wakes the group's appends. Groups complete
//! strictly in order.
//!
//! With sync `always`, two flushers may overlap: once the first one's write is done and
//! it waits on fdatasync, a second one may write and sync the next group, so a group no
//! longer waits for its predecessor's fdatasync before its own can start (measured here:
//! an fdatasync takes 250-350 µs, about as long as a group takes to fill). Overlap is
//! safe because
//! - writes never overlap (the second write starts after the first one finished) and
//!   groups never share a block, so each fdatasync covers every write before it;
//! - a group completes only after every group before it completed, so acks stay in
//!   order and a crash can only lose a suffix;
//! - a group in another segment file than the one in flight waits: one file's
//!   fdatasync says nothing about another file's metadata.
//!
//! A failed write or fdatasync is never retried: the log fails-stop and every queued
//! group fails with it. After a write that found the disk full the stream reopens the
//! log from its files in place (`store/reopen.rs`).

use std::rc::Rc;
use std::time::Instant;

use super::blocking_write;
use super::durable_choice::{self, DurableWay};
use super::error::Error;
use super::group::Group;
use super::log::{round_up, seal, SegmentLog, SyncPolicy};
use super::write_buffer::SealedBuffer;
use crate::limits::{
    BLOCKING_GROUP_BYTES_MAX, DURABLE_WRITE_BYTES_MAX, ZERO_AHEAD_BYTES, ZERO_AHEAD_GROUP_BYTES_MAX,
    ZERO_AHEAD_ONE_BLOCK_CHUNK_BYTES,
};

/// How many flushers may overlap. Measured here (jetbench, one shard): 2 gave +5% single-
/// and +10% four-publisher JS publish over 1; 4 was worse than 1 on every figure.
const FLUSHERS_MAX: u8 = 2;

/// The source of zero-ahead writes (the most one write takes).
static ZEROS: [u8; 2 * ZERO_AHEAD_BYTES as usize] = [0; 2 * ZERO_AHEAD_BYTES as usize];

/// Counts a flusher out and starts the next one if due when dropped.
struct FlusherGuard<'a> {
    log: &'a Rc<SegmentLog>,
}

impl Drop for FlusherGuard<'_> {
    fn drop(&mut self) {
        self.log.flushers.set(self.log.flushers.get() - 1);
        self.log.flusher_done.wake_all();
        self.log.start_flusher_if_due();
    }
}

/// Ends a zero-ahead claim and wakes groups waiting on it when dropped (also on
/// cancellation).
struct ZeroingGuard {
    log: Rc<SegmentLog>,
}

impl Drop for ZeroingGuard {
    fn drop(&mut self) {
        self.log.zeroing.set(None);
        self.log.zeroing_done.wake_all();
    }
}

impl SegmentLog {
    /// Resolves when `group` is durable under the sync policy (or failed).
    ///
    /// Groups are flushed by tasks of their own ([`Self::start_flusher_if_due`]), not by
    /// the appends waiting: an append is woken once, when its group completes, and one
    /// whose caller drops it (a timeout) cannot take a flush in progress down with it. A
    /// waiting append that flushed itself would wake every waiter each time one might take
    /// over, and dropping it would leave its group unwritten (perf/storage.md, "Flushers
    /// are tasks").
    pub async fn wait_durable(self: &Rc<Self>, group: &Rc<Group>) -> Result<(), Error> {
        loop {
            if let Some(outcome) = group.outcome() {
                return outcome;
            }
            group.wanted.set(true);
            self.start_flusher_if_due();
            group.waiters.wait().await;
        }
    }

    /// Starts a flusher task for the oldest group no flusher took, if the log lets one
    /// start now. Called when an append waits, when a flusher's write ends (a second one
    /// may overlap its fdatasync) and when a flusher ends.
    pub fn start_flusher_if_due(self: &Rc<Self>) {
        let Some(next) = self.next_unsealed().filter(|next| self.may_flush(next)) else {
            return;
        };
        self.flushers.set(self.flushers.get() + 1);
        let log = self.clone();
        glommio::spawn_local(async move {
            let _guard = FlusherGuard { log: &log };
            // glommio polls a task spawned into the current queue at once: yield, so the
            // appends ready now join the group before it is sealed.
            futures_lite::future::yield_now().await;
            if !next.is_sealed() && next.outcome().is_none() {
                log.flush_group(&next).await;
            }
        })
        .detach();
    }

    /// The oldest group not yet taken by a flusher, unless it is the open group and holds
    /// only deferred records nobody waits for yet: a restore's appends fill it to
    /// `GROUP_COMMIT_BYTES_MAX` first. Sealed at each flusher's end instead, a restore
    /// wrote a group per uploaded chunk, ~130 KiB each (perf/backup.md).
    fn next_unsealed(&self) -> Option<Rc<Group>> {
        let groups = self.groups.borrow();
        let (index, next) = groups.iter().enumerate().find(|(_, group)| !group.is_sealed())?;
        let open = index + 1 == groups.len() && next.takes_appends();
        let held = open && !next.needs_sync.get() && !next.wanted.get();
        (!held).then(|| next.clone())
    }

    /// Whether a new flusher may take `next` now.
    fn may_flush(&self, next: &Group) -> bool {
        match self.flushers.get() {
            0 => true,
            count if count < FLUSHERS_MAX => {
                let groups = self.groups.borrow();
                let in_flight = groups.iter().rev().find(|group| group.is_sealed());
                self.config.sync == SyncPolicy::Always
                    && !self.write_in_flight.get()
                    && in_flight.is_some_and(|group| group.segment_id == next.segment_id)
            }
            _ => false,
        }
    }

    /// Seals, writes and (per policy) syncs `group`, then completes it after its
    /// predecessors.
    async fn flush_group(self: &Rc<Self>, group: &Rc<Group>) {
        if let Err(error) = self.check_failed() {
            self.fail_queued(error);
            return;
        }
        let data = seal(group, self.config.block_bytes);
        self.last_group_bytes.set(data.len());
        let may_block = blocking_write::may_block(group.records.get());
        let small = data.len() <= DURABLE_WRITE_BYTES_MAX;
        let way = self.durable_way(group, data.len(), may_block);
        let durably = match way {
            Some(DurableWay::OneWrite) if may_block => Durably::Blocking,
            Some(DurableWay::OneWrite) => Durably::Ring,
            _ => Durably::No,
        };
        let shard_write = blocking_write::in_flight(self.id());
        self.write_in_flight.set(true);
        let write_started = Instant::now();
        let written = self.write_group(group, &data, durably).await;
        blocking_write::note_way(matches!(written, Ok(true)));
        match &written {
            Ok(blocked) => {
                let elapsed = write_started.elapsed();
                self.stats.note_write(group.records.get(), data.len(), elapsed);
                if *blocked {
                    self.stats.note_blocking();
                }
                if small && way == Some(DurableWay::OneWrite) {
                    durable_choice::note(DurableWay::OneWrite, elapsed);
                }
            }
            // Failed before a second flusher may write the next group after it.
            Err(error) => self.note_write_failure(error),
        }
        if written.is_ok() {
            self.start_zero_ahead(group, data.len());
            self.start_spare_if_due(data.len());
        }
        self.write_in_flight.set(false);
        // A second flusher may start on the next group now.
        self.start_flusher_if_due();
        let result = match written {
            Ok(_) => {
                let synced = self.sync_if_due_now(group).await;
                if synced.is_ok() && way == Some(DurableWay::WriteThenSync) {
                    durable_choice::note(DurableWay::WriteThenSync, write_started.elapsed());
                }
                synced
            }
            Err(error) => Err(error),
        };
        drop(shard_write);
        loop {
            if group.outcome().is_some() {
                return; // an earlier group failed and took this one with it
            }
            let front = self.groups.borrow().front().cloned();
            match front {
                Some(front) if Rc::ptr_eq(&front, group) => break,
                Some(front) => front.waiters.wait().await,
                None => return,
            }
        }
        match result {
            Ok(()) => self.finish_front(group, data),
            Err(error) => {
                if self.failed_for_space.get() {
                    tracing::warn!(%error, dir = %self.config.dir.display(), "disk full; the publishes queued fail and the stream reopens from disk");
                } else {
                    tracing::error!(%error, dir = %self.config.dir.display(), "log write failed; stream stops accepting writes");
                }
                let cause = if self.failed_for_space.get() {
                    "an earlier write found the disk full"
                } else {
                    "an earlier group failed"
                };
                group.complete(Err(error));
                self.fail_queued(Error::Failed { cause: cause.into() });
            }
        }
    }

    /// Records a failed write as the log's failure (unless one came first). A write that
    /// found the disk full wrote nothing (a partial direct write returns its count, and
    /// a short count is an I/O error here), so the log can be reopened from its files.
    fn note_write_failure(&self, error: &Error) {
        let mut failure = self.failure.borrow_mut();
        if failure.is_none() {
            self.failed_for_space.set(matches!(error, Error::NoSpace { .. }));
            *failure = Some(Error::Failed { cause: error.to_string() });
        }
    }

    /// Writes the sealed bytes of `group` and notes its file as unsynced. Waits first if
    /// a zero-ahead write in flight covers any of its bytes.
    /// Whether it was written by a blocking call comes back.
    async fn write_group(&self, group: &Group, data: &SealedBuffer, durably: Durably) -> Result<bool, Error> {
        if crate::failpoint::fails("write_no_space") {
            return Err(Error::NoSpace { operation: "write", path: group.path.clone() });
        }
        let end = group.offset() + data.len() as u64;
        while let Some((segment_id, from)) = self.zeroing.get() {
            if segment_id != group.segment_id || end <= from {
                break;
            }
            self.zeroing_done.wait().await;
        }
        if durably != Durably::No {
            let blocked = match durably {
                Durably::Blocking => group.file.write_group_blocking(group.offset(), data),
                _ => None,
            };
            let was_blocking = blocked.is_some();
            let written = match blocked {
                Some(written) => written,
                None => group.file.write_group_durable(group.offset(), data).await,
            };
            written.map_err(|e| Error::io("durable write", &group.path, &e))?;
            crate::failpoint::hit("after_fsync_before_ack");
            return Ok(was_blocking);
        }
        group.file.write_group(group.offset(), data).await.map_err(|e| Error::io("write", &group.path, &e))?;
        let known = self.unsynced.borrow().iter().any(|(path, _)| *path == group.path);
        if !known {
            self.unsynced.borrow_mut().push((group.path.clone(), group.file.clone()));
        }
        Ok(false)
    }

    /// For a group under sync `always` in a file that has a one-operation durable write:
    /// which way this one is made durable. A small group (up to
    /// [`DURABLE_WRITE_BYTES_MAX`]) goes the way `store/durable_choice.rs` measured faster;
    /// a bigger one up to [`BLOCKING_GROUP_BYTES_MAX`] in one write when that write may
    /// block (`may_block`) and the shard's last write was to this log
    /// (`store/blocking_write.rs`). `None`: a write, and the fdatasync the policy asks for.
    /// Never while deferred writes wait for a sync (`SegmentLog::deferred`): a
    /// durable write covers its own range, and this group's ack must also cover the
    /// deferred writes before it, which only an fdatasync of their files does. (A second
    /// flusher starts only once the first one's write is done, so a deferred write before
    /// this group is in `unsynced` by now.)
    fn durable_way(&self, group: &Group, bytes: usize, may_block: bool) -> Option<DurableWay> {
        let durable = self.config.sync == SyncPolicy::Always
            && group.needs_sync.get()
            && self.unsynced.borrow().is_empty()
            && group.file.has_durable_write();
        if !durable {
            None
        } else if bytes <= DURABLE_WRITE_BYTES_MAX {
            Some(durable_choice::next_way(may_block))
        } else {
            let one_write = bytes <= BLOCKING_GROUP_BYTES_MAX && may_block && blocking_write::same_log(self.id());
            one_write.then_some(DurableWay::OneWrite)
        }
    }

    /// This log as the shard's write policy names it (`blocking_write::LogId`).
    fn id(&self) -> blocking_write::LogId {
        self as *const SegmentLog as blocking_write::LogId
    }

    /// Zero-ahead: keeps at least [`ZERO_AHEAD_BYTES`] past the data written with zeros.
    /// A segment's preallocated blocks are "unwritten" extents until first written;
    /// writing one changes file metadata, so the fdatasync after it must commit the
    /// filesystem journal. Measured on this project's disk (ext4, 4 KiB O_DIRECT write +
    /// fdatasync): ~165 µs into fallocated blocks, ~85 µs into blocks already written.
    /// Zeroing a chunk ahead makes one fdatasync per chunk pay that instead of every
    /// group's.
    ///
    /// After a group of one block the chunk is at most [`ZERO_AHEAD_ONE_BLOCK_CHUNK_BYTES`],
    /// so the next one-in-flight publish does not queue behind a big zero write.
    ///
    /// Only after a small group (`group_bytes` up to [`ZERO_AHEAD_GROUP_BYTES_MAX`]): zeros
    /// write every byte of a segment twice, which halves what the disk has left for data.
    /// Small groups mean light load, where each fdatasync's latency is what counts; big
    /// groups mean the log is bandwidth-bound, and there the filesystem's journal commits
    /// (batched across concurrent fdatasyncs) cost less than the second write.
    ///
    /// Returns the range to zero past `end` (the end of the group just written), if due,
    /// and marks it in flight: a later group whose bytes reach it waits for it
    /// (`write_group`), so zeros never land on data. Safe for recovery: nothing lies past
    /// `end` on disk yet, and zeros read as empty space.
    fn claim_zero_ahead(&self, group: &Group, group_bytes: usize, end: u64) -> Option<(u64, u64)> {
        let pays = group.file.zero_ahead_pays() && group_bytes <= ZERO_AHEAD_GROUP_BYTES_MAX;
        if !pays || self.zeroing.get().is_some() {
            return None;
        }
        let segments = self.segments.borrow();
        let segment = super::segment::find(&segments, group.segment_id)?;
        // Past every record placed: a group carrying a tail block ends before the data.
        let end = end.max(round_up(segment.tail, self.config.block_bytes));
        let from = segment.zeroed.max(end);
        let chunk = if group_bytes as u64 <= self.config.block_bytes {
            ZERO_AHEAD_ONE_BLOCK_CHUNK_BYTES
        } else {
            2 * ZERO_AHEAD_BYTES
        };
        let to = (end + 2 * ZERO_AHEAD_BYTES).min(from + chunk).min(segment.capacity);
        let due = from < end + ZERO_AHEAD_BYTES && from < to;
        due.then(|| {
            self.zeroing.set(Some((group.segment_id, from)));
            (from, to)
        })
    }

    /// Claims the zero-ahead due after `group` (written, `group_bytes` long), if any, and
    /// writes it in a task of its own: the zeros go to the disk while the group's
    /// fdatasync waits, or after its durable write, and the group completes without
    /// waiting for them. (When the group waited for its zeros too, a one-in-flight
    /// publish every 512 KiB of log — one in ~130 at 4 KiB a group — waited for a 0.5-1
    /// MiB write before its ack went out: 300-900 µs, the p99 of perf/latency.md's ninth
    /// session.) The claim keeps later groups off the range until the zeros are written
    /// (`write_group`), and [`SegmentLog::flush_all`] and [`SegmentLog::is_drained`]
    /// wait for it.
    fn start_zero_ahead(self: &Rc<Self>, group: &Rc<Group>, group_bytes: usize) {
        let Some(range) = self.claim_zero_ahead(group, group_bytes, group.offset() + group_bytes as u64) else {
            return;
        };
        let zeroing = ZeroingGuard { log: self.clone() };
        let group = group.clone();
        glommio::spawn_local(async move {
            zeroing.log.write_zeros(&group, range).await;
            drop(zeroing);
        })
        .detach();
    }

    /// Waits until no zero-ahead write is in flight.
    pub(super) async fn zeros_written(&self) {
        while self.zeroing.get().is_some() {
            self.zeroing_done.wait().await;
        }
    }

    /// Writes a claimed zero range. A failure here loses nothing (the range holds no
    /// data yet): it is logged and the range is tried again later.
    async fn write_zeros(&self, group: &Group, (from, to): (u64, u64)) {
        let written = group.file.write_ahead_aligned(from, &ZEROS[..(to - from) as usize]).await;
        match written {
            Ok(()) => {
                let mut segments = self.segments.borrow_mut();
                if let Some(segment) = super::segment::find_mut(&mut segments, group.segment_id) {
                    segment.zeroed = segment.zeroed.max(to);
                }
            }
            Err(error) => tracing::warn!(%error, path = %group.path.display(), "zero-ahead write failed"),
        }
    }

    /// After `group`'s write: fdatasync now under `Always` (unless every record of the
    /// group was deferred), or when the interval has passed.
    async fn sync_if_due_now(&self, group: &Group) -> Result<(), Error> {
        let due = match self.config.sync {
            SyncPolicy::Always => group.needs_sync.get(),
            SyncPolicy::Interval(period) => self.last_sync.get().elapsed() >= period,
        };
        if due {
            self.sync_unsynced().await?;
        }
        Ok(())
    }

    /// fdatasyncs every file written since the last sync. An error is fail-stop.
    pub async fn sync_unsynced(&self) -> Result<(), Error> {
        let files = std::mem::take(&mut *self.unsynced.borrow_mut());
        if !files.is_empty() {
            crate::failpoint::hit("after_write_before_fsync");
        }
        let sync_started = Instant::now();
        let synced_any = !files.is_empty();
        for (path, file) in files {
            let synced = match crate::failpoint::fails("fdatasync_error") {
                true => Err(std::io::Error::from_raw_os_error(libc::EIO)),
                false => file.fdatasync().await,
            };
            if let Err(error) = synced {
                let error = Error::io("fdatasync", &path, &error);
                // After a failed fdatasync what the disk holds is unknown: fail-stop.
                self.failed_for_space.set(false);
                *self.failure.borrow_mut() = Some(Error::Failed { cause: error.to_string() });
                return Err(error);
            }
        }
        let synced = Instant::now();
        if synced_any {
            crate::failpoint::hit("after_fsync_before_ack");
            // Only real rounds: a group written durably had none to count.
            self.stats.note_sync(synced - sync_started);
        }
        self.last_sync.set(synced);
        Ok(())
    }

    fn finish_front(&self, group: &Rc<Group>, data: SealedBuffer) {
        let front = self.groups.borrow_mut().pop_front().expect("front group");
        assert!(Rc::ptr_eq(&front, group));
        let end = group.offset() + data.len() as u64;
        let last = self.groups.borrow().iter().all(|queued| queued.segment_id != group.segment_id);
        if let Some(segment) = super::segment::find_mut(&mut self.segments.borrow_mut(), group.segment_id) {
            assert!(end <= segment.capacity);
            // A group carrying a tail block may end before an earlier one did.
            segment.written = segment.written.max(end);
            self.note_tail_block(segment, group, &data, last);
        }
        group.sealed.borrow_mut().take();
        group.complete(Ok(()));
    }

    fn fail_queued(&self, error: Error) {
        let groups: Vec<Rc<Group>> = self.groups.borrow_mut().drain(..).collect();
        for group in groups {
            group.complete(Err(error.clone()));
        }
    }
}

/// How `write_group` makes a group durable by itself (`No`: the fdatasync after does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Durably {
    No,
    /// One durable write through io_uring.
    Ring,
    /// One blocking durable system call on the shard's thread (`store/blocking_write.rs`).
    Blocking,
}
