//! The tail block pair: a group that ends inside a block leaves that block's records for
//! the next group to carry, and the next group rewrites them into the block's other copy
//! instead of taking a fresh block.
//!
//! Why: with one publish in flight, each group is one record (~180 bytes for 128 bytes of
//! payload), and a fresh 4 KiB block per group spent 4 KiB of disk per publish and zeroed
//! as many bytes ahead as it wrote (`flush.rs`, zero-ahead). Those zero writes, one every
//! 16 publishes, were the slowest 1 % of one-in-flight acks (perf/latency.md, 2026-12-06
//! evening). A block now takes ~22 such publishes.
//!
//! The layout. After a durable group that ends inside block P, with a record starting at
//! P's beginning, the segment's [`TailBlock`] keeps P's records (`bytes`), `at` = P, and
//! `other` = the fresh block after P. The next group, when nothing else is queued, starts
//! with a copy of `bytes` and is written at `other`; its own records follow the copy. Once
//! it is durable it is the newest copy, and the group after it goes back to P: the two
//! blocks take turns, each write leaving the other block's copy alone. A carrying group
//! stays within its block: one that a record would take past it drops the copy before it
//! is sealed and goes on as an ordinary group, where it is when it goes after the newest
//! copy, else on the first fresh block. (Going on into the next block with the copy would
//! end in a block beginning mid-record, which no copy can start.)
//!
//! What keeps it safe:
//! - A write never covers the newest durable copy, so a torn write loses only records not
//!   yet acknowledged: the other block still holds every acknowledged one. Only on a
//!   device that writes a block whole (`SegmentFile::writes_blocks_whole`: its physical
//!   sector holds a block): a write torn with a garbage sector *followed by* newer
//!   sectors of the same write could let the walker take an unacknowledged record past
//!   the garbage first and then pass over acknowledged ones in the other copy as stale
//!   (reported lost). A tear at a write's end, as the simulated disk makes, is safe.
//! - Every copy holds each record at the same offset within the block, so bytes torn
//!   between an older and a newer copy agree wherever the older one had records. Records
//!   of carrying groups are not indexed: an entry in the later block of a pair, with the
//!   newest copy ending in the earlier one, would start walks past the records after it.
//! - Only under sync `always`, after a group that was made durable (not one of deferred
//!   records only), with no other group queued: a group completes only once durable, so
//!   the copy being overwritten is never the only durable one.
//! - Recovery and reads take the first copy of each message and step over later copies as
//!   stale ([`super::walker::Step::Stale`]). A block holding a purge record is not carried:
//!   a purge replayed again after newer messages would remove them. A delete or front
//!   replayed again is harmless: it names sequences below every later message.
//! - Reads stop where the pair starts ([`super::segment::Segment::read_limit`]): a read
//!   racing a rewrite could see half of it. The pair's records are read from `bytes` and
//!   the queued groups.
//! - A checkpoint's cut ends carrying: recovery scans from the cut on, so no group may go
//!   before it.

use std::rc::Rc;

use super::group::{Carry, Group};
use super::log::{round_up, SegmentLog, SyncPolicy};
use super::segment::Segment;
use crate::limits::GROUP_COMMIT_BYTES_MAX;

/// A segment's last block while records end inside it, and where its next copy goes.
#[derive(Debug, Clone)]
pub struct TailBlock {
    /// The block holding the newest durable copy.
    pub at: u64,
    /// Where the next copy goes: the block holding the copy before (one block before or
    /// after `at`), or the fresh block after `at`.
    pub other: u64,
    /// The block's records as `at` holds them (less than a block).
    pub bytes: Vec<u8>,
    /// The next group may carry them (false after a checkpoint's cut).
    pub carries: bool,
}

impl TailBlock {
    /// The first block a write may still change.
    pub fn start(&self) -> u64 {
        self.at.min(self.other)
    }
}

impl SegmentLog {
    /// How a new group in `segment` whose first record is `len` bytes carries the tail
    /// block, if it does: it then starts at `other`, the carried bytes first.
    pub(super) fn carry_for(&self, segment: &Segment, len: usize) -> Option<(u64, Carry)> {
        let may = self.config.sync == SyncPolicy::Always && self.groups.borrow().is_empty();
        if !may || !segment.file.writes_blocks_whole() {
            return None;
        }
        let tail = segment.tail_block.as_ref().filter(|tail| tail.carries)?;
        if (tail.bytes.len() + len) as u64 > self.config.block_bytes {
            return None;
        }
        Some((tail.other, Carry { from: tail.at, len: tail.bytes.len() }))
    }

    /// After `group` completed, the last one queued for its segment or not (`last`), with
    /// `data` its sealed bytes: the segment's tail block is the group's last block when
    /// the next group may carry it, and none otherwise.
    pub(super) fn note_tail_block(&self, segment: &mut Segment, group: &Group, data: &[u8], last: bool) {
        let block = self.config.block_bytes;
        let content = group.content_len.get() as u64;
        let end = group.offset() + content;
        let block_start = end - end % block;
        let carried = last
            && self.config.sync == SyncPolicy::Always
            && group.needs_sync.get()
            && !group.is_closed()
            && end % block != 0
            && group.block_record_start.get() == block_start
            && group.purge_at.get().is_none_or(|purge| purge < block_start);
        if !carried {
            segment.tail_block = None;
            return;
        }
        let other = match group.carry.get() {
            Some(carry) => carry.from,
            None => block_start + block,
        };
        let tail = &data[(block_start - group.offset()) as usize..content as usize];
        // The last tail's buffer takes the new one: one allocation a segment, not a group.
        let mut bytes = segment.tail_block.take().map(|last| last.bytes).unwrap_or_default();
        bytes.clear();
        bytes.extend_from_slice(tail);
        segment.tail_block = Some(TailBlock { at: block_start, other, bytes, carries: true });
    }

    /// The open carrying group of `segment` when a record of `len` bytes would take it past
    /// its block, and it may move instead ([`Self::move_carrying`]).
    pub(super) fn outgrown_carrying(&self, segment: &Segment, len: usize) -> Option<(Rc<Group>, Carry)> {
        self.outgrown_carrying_any(segment, len).filter(|(group, carry)| Self::may_move(group, *carry, len))
    }

    /// The open carrying group of `segment` when `len` bytes would take it past its block,
    /// whether or not they fit one group with its own records.
    fn outgrown_carrying_any(&self, segment: &Segment, len: usize) -> Option<(Rc<Group>, Carry)> {
        let groups = self.groups.borrow();
        let group = groups.back().filter(|group| group.segment_id == segment.id && group.takes_appends())?;
        let carry = group.carry.get()?;
        let outgrown = (group.bytes.borrow().len() + len) as u64 > self.config.block_bytes;
        outgrown.then(|| (group.clone(), carry))
    }

    /// Whether `group`'s own records and `len` more bytes fit one group.
    fn may_move(group: &Group, carry: Carry, len: usize) -> bool {
        group.bytes.borrow().len() - carry.len + len <= GROUP_COMMIT_BYTES_MAX
    }

    /// Where `len` bytes reserved in `segment` would start when its open carrying group
    /// would be outgrown by them, if it is ([`SegmentLog::next_offset`]). The reservation
    /// may be appended as several records (a message, then a removal record), and the
    /// first may move the group even when the whole would not fit it: the rest then go to
    /// a new group after the moved one. So when the whole does not fit, the bound covers
    /// the moved group's records too, as it does an ordinary open group's (one started on
    /// a block and at most a group long ends where a group-size split stays in room).
    pub(super) fn offset_past_carrying(&self, segment: &Segment, len: usize) -> Option<u64> {
        let (group, carry) = self.outgrown_carrying_any(segment, len)?;
        let own = (group.bytes.borrow().len() - carry.len) as u64;
        let moved = self.moved_offset(segment, &group, carry) + own;
        Some(match Self::may_move(&group, carry, len) {
            true => moved,
            false => moved.max(round_up(segment.tail, self.config.block_bytes)),
        })
    }

    /// Where [`Self::move_carrying`] puts `group`'s own records: where it is when it goes
    /// after the newest copy (the block it would have rewritten holds nothing newer), else
    /// the first fresh block.
    pub(super) fn moved_offset(&self, segment: &Segment, group: &Group, carry: Carry) -> u64 {
        match carry.from < group.offset() {
            true => group.offset(),
            false => round_up(segment.tail, self.config.block_bytes),
        }
    }

    /// Moves the open carrying `group` without its carried copy ([`Self::moved_offset`]),
    /// so its records stay one group and it may grow past a block: nothing of it is
    /// written yet, and the newest copy of what it carried stays where it was. (Split
    /// into a full carrying group and a new one, pipelined publishes with 4 in flight
    /// wrote ~10 % more groups.) Its records were not indexed (`Segment::note_message`).
    pub(super) fn move_carrying(&self, segment: &mut Segment, group: &Group, carry: Carry) {
        let own_start = group.offset() + carry.len as u64;
        let own_len = group.bytes.borrow().len() - carry.len;
        let to = self.moved_offset(segment, group, carry);
        let moved = |offset: u64| offset - own_start + to;
        group.bytes.borrow_mut().drop_front(carry.len);
        group.move_to(to);
        group.carry.set(None);
        group.block_record_start.set(to);
        group.purge_at.set(group.purge_at.get().map(moved));
        segment.tail = segment.tail.max(to + own_len as u64);
    }

    /// Ends carrying in every segment (a checkpoint's cut): the next group starts on a
    /// fresh block. The tail blocks stay for reads until their segment's next group.
    pub(super) fn stop_carrying(&self) {
        for segment in self.segments.borrow_mut().iter_mut() {
            if let Some(tail) = &mut segment.tail_block {
                tail.carries = false;
            }
        }
    }
}
