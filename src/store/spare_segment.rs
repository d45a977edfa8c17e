//! The spare segment: the log's next segment file, made while the active one fills.
//!
//! A segment is preallocated, and a preallocated block is "unwritten" until first
//! written: converting it is metadata the file's next fdatasync must commit (a journal
//! commit on ext4, on top of the cache flush). The zero-ahead (`store/flush.rs`) writes
//! zeros just past the data so that cost leaves the publish path, but its writes land in
//! the active file, so the publish whose fdatasync follows one still commits the
//! conversion, and under a steady one-in-flight load there is no idle disk time to hide
//! the write in: one publish in ~160 waited for it, the p99 of perf/latency.md's late
//! 2026-12-06 section. A roll also created, preallocated and named a file on the path
//! of the publish that found the active segment full.
//!
//! So once the active segment is three-quarters full, a task of its own makes the next
//! one: creates it, preallocates it, and (when the log's groups are small, as the
//! zero-ahead decides) zeroes it whole in stretches of [`SPARE_ZERO_BATCH_BYTES`], each
//! written all at once, fdatasyncs it, which commits the conversion on the spare's own
//! inode, and makes its name durable. Three-quarters, not sooner: a stream holds a spare
//! (up to twice its active segment's size) on disk from then until its roll. The roll then takes the spare
//! as it is: the publish path neither makes a file nor converts a block of it, and the
//! active file's fdatasyncs are plain cache flushes.
//!
//! Safe for recovery: the spare holds no record. Found after a crash, it is the newest
//! segment, empty, and takes the next appends, as a segment made by a roll just before
//! a crash does. Its id is taken from `next_segment_id` when it is started, so ids stay
//! in the order segments are used.

use std::rc::Rc;

use super::error::Error;
use super::file::OpenMode;
use super::log::{round_up, SegmentLog};
use super::segment::{segment_file_name, Segment};
use crate::limits::{SEGMENT_BYTES_FIRST, SPARE_ZERO_BATCH_BYTES, ZERO_AHEAD_GROUP_BYTES_MAX};

/// Where the log's next segment stands.
#[derive(Default)]
pub(super) enum Spare {
    #[default]
    None,
    /// A task is making it.
    Making,
    /// Made; the next roll takes it.
    Ready(Segment),
    /// Making one failed while segment `active` was the active one (a full disk, say): not
    /// tried again until the log rolls past it, so a full disk does not warn per group.
    Refused { active: u64 },
}

impl SegmentLog {
    /// After a group's write of `group_bytes`: starts making the next segment when the
    /// active one is three-quarters full and no spare is made or being made.
    pub(super) fn start_spare_if_due(self: &Rc<Self>, group_bytes: usize) {
        let (id, capacity) = {
            let segments = self.segments.borrow();
            let Some(active) = segments.back() else {
                return;
            };
            let idle = match &*self.spare.borrow() {
                Spare::None => true,
                Spare::Refused { active: refused } => *refused != active.id,
                Spare::Making | Spare::Ready(_) => false,
            };
            // Not while a roll is under way: it takes or discards the spare, and picks its
            // own segment's id, across awaits; a spare started meanwhile could take an id
            // out of order (a test in `tests/store_spare_segment.rs` lost messages so).
            let due =
                idle && !self.rolling.get() && active.file.zero_ahead_pays() && active.tail >= active.capacity / 4 * 3;
            if !due || self.failure.borrow().is_some() {
                return;
            }
            let capacity = active.capacity.saturating_mul(2).max(SEGMENT_BYTES_FIRST).min(self.config.segment_size);
            (self.next_segment_id.get(), capacity)
        };
        // Zeros write a segment's bytes twice: only where the zero-ahead would (small
        // groups, light load); a bandwidth-bound log gets its spare preallocated only.
        let zero = group_bytes <= ZERO_AHEAD_GROUP_BYTES_MAX;
        self.next_segment_id.set(id + 1);
        self.spare_wanted.set(false);
        *self.spare.borrow_mut() = Spare::Making;
        let log = self.clone();
        glommio::spawn_local(async move {
            let made = log.make_segment(id, capacity, zero, true).await;
            let next = match made {
                Ok(segment) => Spare::Ready(segment),
                Err(error) => {
                    tracing::warn!(%error, "could not make the next segment ahead; the roll will");
                    let active = log.segments.borrow().back().map_or(0, |segment| segment.id);
                    Spare::Refused { active }
                }
            };
            *log.spare.borrow_mut() = next;
            log.spare_made.wake_all();
        })
        .detach();
    }

    /// Creates and preallocates segment `id`, (if `zero`) zeroes it, (if `sync`)
    /// fdatasyncs it, and makes its name durable: a spare, or a roll's own segment
    /// (neither zeroed nor synced there). Stops zeroing early when a roll waits for it
    /// (`take_spare`); the segment's `zeroed` says how far it got. On failure the file
    /// is removed.
    pub(super) async fn make_segment(&self, id: u64, capacity: u64, zero: bool, sync: bool) -> Result<Segment, Error> {
        let dir = &self.config.dir;
        let path = dir.join(segment_file_name(id));
        let file = self.disk.open(&path, OpenMode::Create).await.map_err(|e| Error::io("create segment", &path, &e))?;
        crate::failpoint::hit("mid_segment_roll");
        let made = async {
            file.allocate(capacity).await.map_err(|e| Error::io("preallocate segment", &path, &e))?;
            let mut zeroed = 0;
            while zero && zeroed < capacity && !self.spare_wanted.get() && self.failure.borrow().is_none() {
                let len = SPARE_ZERO_BATCH_BYTES.min(capacity - zeroed);
                file.write_zeros_aligned(zeroed, len).await.map_err(|e| Error::io("zero segment", &path, &e))?;
                zeroed += len;
            }
            if sync {
                file.fdatasync().await.map_err(|e| Error::io("fdatasync", &path, &e))?;
            }
            self.disk.fsync_dir(dir).await.map_err(|e| Error::io("fsync_dir", dir, &e))?;
            Ok(zeroed)
        };
        match made.await {
            Ok(zeroed) => {
                let mut segment = Segment::empty(id, dir, file, capacity);
                segment.zeroed = zeroed;
                Ok(segment)
            }
            Err(error) => {
                let _ = file.close().await;
                // Best effort: the file holds no records; a leftover is an empty segment.
                let _ = self.disk.remove_file(&path).await;
                Err(error)
            }
        }
    }

    /// For a roll: the spare, waiting for one being made (which stops zeroing), if it has
    /// room for a record of `len` bytes. One too small is discarded.
    pub(super) async fn take_spare(&self, len: usize) -> Option<Segment> {
        while matches!(*self.spare.borrow(), Spare::Making) {
            self.spare_wanted.set(true);
            self.spare_made.wait().await;
        }
        self.spare_wanted.set(false);
        let spare = match std::mem::take(&mut *self.spare.borrow_mut()) {
            Spare::Ready(segment) => segment,
            _ => return None,
        };
        if spare.capacity >= round_up(len as u64, self.config.block_bytes) {
            return Some(spare);
        }
        self.remove_spare(spare).await;
        None
    }

    /// Whether a spare is being made (I/O in flight: `drained` waits for it).
    pub(super) fn making_spare(&self) -> bool {
        matches!(*self.spare.borrow(), Spare::Making)
    }

    /// Waits for a spare being made.
    pub(super) async fn spare_settled(&self) {
        while self.making_spare() {
            self.spare_wanted.set(true);
            self.spare_made.wait().await;
        }
        self.spare_wanted.set(false);
    }

    /// For closing the log: waits for a spare being made, then removes it. A closed
    /// stream keeps no empty segment on disk.
    pub(super) async fn discard_spare(&self) {
        self.spare_settled().await;
        if let Spare::Ready(spare) = std::mem::take(&mut *self.spare.borrow_mut()) {
            self.remove_spare(spare).await;
        }
    }

    /// For adopting a log reopened from the files: a made spare is among its segments now
    /// (the newest, empty), with a handle of its own; this one forgets its own.
    pub(super) fn forget_spare(&self) {
        if let Spare::Ready(spare) = std::mem::take(&mut *self.spare.borrow_mut()) {
            glommio::spawn_local(async move {
                let _ = spare.file.close().await;
            })
            .detach();
        }
    }

    async fn remove_spare(&self, spare: Segment) {
        let _ = spare.file.close().await;
        if let Err(error) = self.disk.remove_file(&spare.path).await {
            tracing::warn!(%error, path = %spare.path.display(), "could not remove a spare segment");
        }
        let _ = self.disk.fsync_dir(&self.config.dir).await;
    }
}
