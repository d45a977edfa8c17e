//! When a stream writes its checkpoint, and how, while publishes go on.
//!
//! A checkpoint is a cut: the in-memory state (table, dedupe window, TTL index, flags,
//! lost ranges) and the log's segments as they are at one synchronous moment. Every
//! append updates both without an `.await` in between, so at any such moment the two
//! agree, queued (not yet durable) appends included. The checkpoint file is written only
//! after everything the cut covers is durable; recovery then restores the cut and scans
//! only what was appended after it. Nothing waits for the log to go idle, so a stream
//! under constant load still checkpoints and a restart after kill -9 scans a bounded tail.
//!
//! The table's slots go to the slot file (`slot_file.rs`): a checkpoint appends those
//! after the previous checkpoint's last sequence and makes them durable before the
//! checkpoint file that names them replaces the old one. Its cost grows with what was
//! appended, not with the stream.

use std::cell::{Cell, RefCell};

use super::checkpoint;
use super::config::StorageKind;
use super::error::Error;
use super::meta::CHECKPOINT_FILE_NAME;
use super::slot_file::{self, SlotFileRef};
use super::stream::Stream;
use super::table::MessageTable;
use crate::limits::CHECKPOINT_INTERVAL_BYTES;
use crate::store::group::WakerList;
use crate::store::meta_file;

/// Bytes appended per byte of checkpoint at least (see [`Stream::checkpoint_due`]).
const CHECKPOINT_SIZE_RATIO: u64 = 8;

/// A stream's checkpoint bookkeeping.
#[derive(Default)]
pub(crate) struct Checkpoints {
    /// Bytes appended since the last checkpoint's cut.
    unscanned_bytes: Cell<u64>,
    /// Size of the last checkpoint written.
    last_bytes: Cell<u64>,
    /// What the last checkpoint written holds of the slot file.
    slot_file: Cell<Option<SlotFileRef>>,
    /// The runs (first, count) of slots it lists as deleted after the file took them.
    deleted: RefCell<Vec<(u64, u64)>>,
    /// A checkpoint is being written; another one waits for it (two writers of one file
    /// could leave the older cut last).
    writing: Cell<bool>,
    written: WakerList,
}

/// Ends a stream's turn to write a checkpoint when dropped (also on cancellation).
pub(super) struct Turn<'a> {
    checkpoints: &'a Checkpoints,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.checkpoints.writing.set(false);
        self.checkpoints.written.wake_all();
    }
}

impl Checkpoints {
    /// The bookkeeping of a stream just opened: the bytes its recovery scanned past the
    /// checkpoint count toward the next one, or a stream killed more often than it
    /// appends [`CHECKPOINT_INTERVAL_BYTES`] would scan a growing log at every restart
    /// (the long kill -9 run: 0.03 s at the first restart, 2 s at 1.6 M messages).
    pub(crate) fn reopened(
        scanned_bytes: u64,
        checkpoint_bytes: u64,
        slot_file: Option<SlotFileRef>,
        deleted: Vec<(u64, u64)>,
    ) -> Checkpoints {
        Checkpoints {
            unscanned_bytes: Cell::new(scanned_bytes),
            last_bytes: Cell::new(checkpoint_bytes),
            slot_file: Cell::new(slot_file),
            deleted: RefCell::new(deleted),
            ..Checkpoints::default()
        }
    }

    /// Takes over the counts of `fresh`, this stream's bookkeeping as just reopened.
    pub(crate) fn adopt(&self, fresh: &Checkpoints) {
        self.unscanned_bytes.set(fresh.unscanned_bytes.get());
        self.last_bytes.set(fresh.last_bytes.get());
        self.slot_file.set(fresh.slot_file.get());
        self.deleted.replace(fresh.deleted.borrow().clone());
    }

    pub(super) async fn turn(&self) -> Turn<'_> {
        while self.writing.get() {
            self.written.wait().await;
        }
        self.writing.set(true);
        Turn { checkpoints: self }
    }
}

impl Stream {
    /// Counts `bytes` appended toward the next checkpoint.
    pub(super) fn note_appended(&self, bytes: usize) {
        let unscanned = &self.checkpoints.unscanned_bytes;
        unscanned.set(unscanned.get() + bytes as u64);
        self.context.maintenance.notify();
    }

    /// Bytes appended since the last checkpoint (what a restart after a crash must scan).
    pub fn bytes_since_checkpoint(&self) -> u64 {
        self.checkpoints.unscanned_bytes.get()
    }

    /// Whether enough was appended since the last checkpoint to write another: at least
    /// [`CHECKPOINT_INTERVAL_BYTES`], and at least [`CHECKPOINT_SIZE_RATIO`] times the
    /// last checkpoint's size. The checkpoint file holds every subject and every run of
    /// deleted slots, so a fixed interval would make a stream with many of them rewrite
    /// those over and over; this way that stays a fixed fraction of what was appended.
    pub fn checkpoint_due(&self) -> bool {
        let interval = CHECKPOINT_INTERVAL_BYTES.max(CHECKPOINT_SIZE_RATIO * self.checkpoints.last_bytes.get());
        self.checkpoints.unscanned_bytes.get() >= interval && !self.checkpoints.writing.get()
    }

    /// Writes a checkpoint of the stream as it is now, once that state is durable. Returns
    /// whether one was written (not for memory storage, nor after a storage failure).
    pub async fn checkpoint(&self) -> Result<bool, Error> {
        if self.meta.borrow().config.storage == StorageKind::Memory {
            self.table.borrow_mut().removals.clear();
            self.log.flush_all().await?;
            return Ok(false);
        }
        let _turn = self.checkpoints.turn().await;
        let (cut, body, last_seq, covered_bytes, slots) = {
            let Some(cut) = self.log.checkpoint_cut() else {
                return Ok(false);
            };
            let meta = self.meta.borrow();
            let table = self.table.borrow();
            let slots = SlotPlan::new(self.checkpoints.slot_file.get(), &self.checkpoints.deleted.borrow(), &table);
            let body = checkpoint::encode(
                meta.stream_id,
                &table,
                &self.dedupe.borrow(),
                &self.lost.borrow(),
                &cut.checkpoint,
                &self.ttl.borrow(),
                &self.flags.borrow(),
                slots.reference.as_ref(),
                &slots.deleted,
            );
            (cut, body, table.last_seq, self.checkpoints.unscanned_bytes.get(), slots)
        };
        self.log.make_durable(&cut).await?;
        let disk = &*self.context.disk;
        if let Some(reference) = slots.reference.filter(|_| !slots.chunk.is_empty()) {
            slot_file::write(disk, &self.dir, reference.generation, slots.offset, &slots.chunk).await?;
        }
        meta_file::write_atomic(disk, &self.dir.join(CHECKPOINT_FILE_NAME), &body, "mid_checkpoint_write").await?;
        let previous = self.checkpoints.slot_file.replace(slots.reference);
        let mut table = self.table.borrow_mut();
        let taken = slots.removals_taken.min(table.removals.len());
        table.removals.drain(..taken);
        drop(table);
        self.checkpoints.deleted.replace(slots.deleted);
        if previous.map(|r| r.generation) != slots.reference.map(|r| r.generation) {
            slot_file::remove_others(disk, &self.dir, slots.reference.map(|r| r.generation)).await;
        }
        let unscanned = &self.checkpoints.unscanned_bytes;
        unscanned.set(unscanned.get().saturating_sub(covered_bytes));
        self.checkpoints.last_bytes.set(body.len() as u64);
        self.save_seq_floor(last_seq).await?;
        Ok(true)
    }

    /// Persists `last` as the sequence floor in the metadata file, if it raises it.
    pub(super) async fn save_seq_floor(&self, last: u64) -> Result<(), Error> {
        let meta = {
            let mut meta = self.meta.borrow_mut();
            if meta.last_seq_floor >= last || meta.config.storage == StorageKind::Memory {
                return Ok(());
            }
            meta.last_seq_floor = last;
            meta.clone()
        };
        Ok(meta.write(&*self.context.disk, &self.dir).await?)
    }
}

/// What a checkpoint writes to the slot file: the slots after the last checkpoint's, or a
/// new generation with the table's span only when most of the file lies below the table's
/// first sequence, it holds none of the table's slots, or the deleted runs pass a quarter
/// of the table's span (a KV bucket's older revisions). And the runs of slots deleted
/// after the file took them: the last checkpoint's, plus the table's removals since,
/// within the file's older part (the new chunk holds its slots as they are now).
struct SlotPlan {
    /// What the checkpoint will name (`None`: the table has no slots).
    reference: Option<SlotFileRef>,
    chunk: Vec<u8>,
    offset: u64,
    deleted: Vec<(u64, u64)>,
    /// How many of the table's removals the checkpoint accounts for (dropped once it is
    /// written; removals after the cut stay for the next one).
    removals_taken: usize,
}

impl SlotPlan {
    fn new(current: Option<SlotFileRef>, deleted: &[(u64, u64)], table: &MessageTable) -> SlotPlan {
        let removals_taken = table.removals.len();
        let plan = |reference, chunk, offset, deleted| SlotPlan { reference, chunk, offset, deleted, removals_taken };
        if table.slots.is_empty() {
            return plan(None, Vec::new(), 0, Vec::new());
        }
        let (base, last) = (table.base_seq, table.last_seq);
        let span = last + 1 - base;
        let appendable = current.filter(|file| {
            file.first_seq <= base
                && file.through_seq + 1 >= base
                && file.through_seq <= last
                && base - file.first_seq <= span
        });
        let appended = appendable.map(|file| (file, merged_runs(deleted, &table.removals, base, file.through_seq)));
        match appended {
            // Runs cost 16 bytes each in every checkpoint; past a quarter of the span a new
            // generation (16 bytes a slot, once) is cheaper.
            Some((file, deleted)) if 4 * deleted.len() as u64 <= span => {
                if file.through_seq == last {
                    return plan(Some(file), Vec::new(), file.bytes, deleted);
                }
                let chunk = slot_file::chunk(table, file.through_seq + 1);
                let reference = SlotFileRef { through_seq: last, bytes: file.bytes + chunk.len() as u64, ..file };
                plan(Some(reference), chunk, file.bytes, deleted)
            }
            _ => {
                let generation = current.map_or(1, |file| file.generation + 1);
                let chunk = slot_file::chunk(table, base);
                let reference =
                    SlotFileRef { generation, first_seq: base, through_seq: last, bytes: chunk.len() as u64 };
                plan(Some(reference), chunk, 0, Vec::new())
            }
        }
    }
}

/// `runs` and the `removals` within `base..=through`, as ascending, disjoint runs from
/// `base` on.
fn merged_runs(runs: &[(u64, u64)], removals: &[u64], base: u64, through: u64) -> Vec<(u64, u64)> {
    let mut removed: Vec<u64> = removals.iter().copied().filter(|seq| (base..=through).contains(seq)).collect();
    removed.sort_unstable();
    let mut all: Vec<(u64, u64)> = runs
        .iter()
        .filter(|(first, count)| first + count > base)
        .map(|&(first, count)| (first.max(base), first + count - first.max(base)))
        .chain(checkpoint::runs(removed.into_iter()))
        .collect();
    all.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(all.len());
    for (first, count) in all {
        match merged.last_mut() {
            Some((last_first, last_count)) if *last_first + *last_count >= first => {
                *last_count = (*last_count).max(first + count - *last_first);
            }
            _ => merged.push((first, count)),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removals_merge_into_the_runs_within_the_files_older_part() {
        let runs = [(3, 2), (10, 1)];
        // 5 joins 3..4, 9 joins 10, 20 is past the file, 1 is below the base.
        let merged = merged_runs(&runs, &[20, 5, 9, 1, 7], 2, 15);
        assert_eq!(merged, [(3, 3), (7, 1), (9, 2)]);
        // A run the base cut through keeps its part from the base on.
        assert_eq!(merged_runs(&[(1, 5)], &[], 3, 15), [(3, 3)]);
        assert_eq!(merged_runs(&[(1, 2)], &[], 3, 15), []);
    }
}
