//! One segment file of a stream's log, its sparse sequence→offset index and a windowed
//! reader used both by reads and by recovery scans.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::file::SegmentFile;
use super::meta_file::{align_down, align_up};
use super::read_buffer;
use super::tail_block::TailBlock;
use crate::limits::{RANDOM_READ_BYTES, RECOVERY_READ_BYTES, SPARSE_INDEX_INTERVAL_BYTES};

/// File name of segment `id` (zero padded so names sort by id).
pub fn segment_file_name(id: u64) -> String {
    format!("{id:016}.seg")
}

/// Parses a name made by [`segment_file_name`].
pub fn parse_segment_file_name(name: &str) -> Option<u64> {
    name.strip_suffix(".seg")?.parse().ok()
}

/// Segment `id` among a log's segments, which are kept in id order (a new one goes at
/// the back, recovery lists them sorted). Called per message read and per group written,
/// at the back of a deque that may hold thousands: not a scan from the front.
pub fn find(segments: &VecDeque<Segment>, id: u64) -> Option<&Segment> {
    position(segments, id, |segment| segment.id).map(|at| &segments[at])
}

/// [`find`], to change the segment.
pub fn find_mut(segments: &mut VecDeque<Segment>, id: u64) -> Option<&mut Segment> {
    position(segments, id, |segment| segment.id).map(|at| &mut segments[at])
}

/// Where the item with `id` is among `items`, in ascending id order. Ids are consecutive
/// unless a segment in the middle went, so the place they give is tried first (one look;
/// a halving search cost a pull-consume profile 2 %), then a halving search.
fn position<T>(items: &VecDeque<T>, id: u64, id_of: impl Fn(&T) -> u64) -> Option<usize> {
    let guess = usize::try_from(id.checked_sub(id_of(items.front()?))?).ok()?;
    if items.get(guess).is_some_and(|item| id_of(item) == id) {
        return Some(guess);
    }
    items.binary_search_by_key(&id, id_of).ok()
}

/// An open segment. Offsets: `tail` is the end of the furthest record placed (records
/// still in unwritten groups included; a group carrying a tail block may go before it);
/// `written` is the furthest end of what completed groups wrote. Invariant:
/// `written <= align_up(tail) <= capacity`.
pub struct Segment {
    pub id: u64,
    pub path: PathBuf,
    pub file: Rc<dyn SegmentFile>,
    /// Bytes reserved for this segment (preallocated).
    pub capacity: u64,
    pub tail: u64,
    pub written: u64,
    /// Everything below this offset has been written at least once (data or zeros).
    pub zeroed: u64,
    /// Lowest and highest message sequence stored here (`None` while empty).
    pub seqs: Option<(u64, u64)>,
    /// Sparse index: (sequence, offset) of some message records, ascending.
    pub index: Vec<(u64, u64)>,
    /// The last, partly filled block and where its next copy goes (`store/tail_block.rs`).
    pub tail_block: Option<TailBlock>,
}

impl Segment {
    /// A segment with nothing in it yet.
    pub fn empty(id: u64, dir: &Path, file: Rc<dyn SegmentFile>, capacity: u64) -> Segment {
        let path = dir.join(segment_file_name(id));
        let (seqs, index, tail_block) = (None, Vec::new(), None);
        Segment { id, path, file, capacity, tail: 0, written: 0, zeroed: 0, seqs, index, tail_block }
    }

    /// Where reads of the file end: blocks from here on may be rewritten (a tail block
    /// pair), and what they hold is read from memory instead.
    pub fn read_limit(&self) -> u64 {
        self.tail_block.as_ref().map_or(self.written, |tail| self.written.min(tail.start()))
    }

    /// Notes that message `seq` starts at `offset`, indexing it when due and `indexable`.
    /// A record of a group carrying a tail block is not: it may be in the later block of
    /// the pair while the newest copy ends in the earlier one, and a walk from there would
    /// miss the records after it (`store/tail_block.rs`).
    pub fn note_message(&mut self, seq: u64, offset: u64, indexable: bool) {
        self.seqs = Some(match self.seqs {
            None => (seq, seq),
            Some((first, _)) => (first, seq),
        });
        let due = self.index.last().is_none_or(|(_, last)| offset >= last + SPARSE_INDEX_INTERVAL_BYTES);
        if due && indexable {
            self.index.push((seq, offset));
        }
    }

    /// The index entry to start searching from for `seq`: (message sequence, offset).
    pub fn search_start(&self, seq: u64) -> Option<(u64, u64)> {
        let position = self.index.partition_point(|(indexed, _)| *indexed <= seq);
        position.checked_sub(1).map(|at| self.index[at])
    }

    /// Whether `seq` may be stored here.
    pub fn holds(&self, seq: u64) -> bool {
        self.seqs.is_some_and(|(first, last)| first <= seq && seq <= last)
    }

    /// Whether a record of `len` bytes fits after the current tail.
    pub fn has_room(&self, len: usize) -> bool {
        self.tail + len as u64 <= self.capacity
    }
}

/// Reads a file through a window of aligned direct reads, refilled on demand.
pub struct WindowReader {
    file: Rc<dyn SegmentFile>,
    start: u64,
    /// Shared so that records read from the window can keep slices of it (no copy).
    bytes: bytes::Bytes,
    /// Reads never go past this offset.
    pub limit: u64,
    /// The chunks after this window, in file order, being read before a forward reader
    /// needs them.
    ahead: VecDeque<ReadAhead>,
    /// Reading on through the file (a scan, a consumer): reads past the window's end take
    /// big chunks. Off for single lookups (a get by sequence), which take small ones.
    forward: bool,
}

/// Chunks a forward reader keeps in flight ahead of its window, from the moment it
/// starts reading the window. A reader gets through a 1 MiB window in ~0.25 ms of CPU and
/// one 1 MiB direct read takes 1–1.6 ms on this project's VM; one chunk started at the
/// window's middle left a snapshot waiting on most of them. Depths 1, 2 and 4 measured
/// the same once reads were submitted promptly (perf/backup.md, 2026-12-06 afternoon):
/// 2 is a margin against a slow read, at 2 MiB per reader.
const READ_AHEAD_DEPTH: usize = 2;

/// A direct read of a chunk after a window, started while a forward reader is still in
/// the window so that the read overlaps the reader's work instead of stalling it (a pull
/// consumer draining a backlog waited ~0.4 ms per 1 MiB window otherwise).
struct ReadAhead {
    start: u64,
    /// The length asked for (the result is shorter at the end of the file).
    len: u64,
    /// The file's valid length when the read started: later bytes may be stale.
    limit: u64,
    read: Pin<Box<dyn Future<Output = io::Result<Vec<u8>>>>>,
    /// The result, when the first poll already had it (the simulated disk).
    done: Option<io::Result<Vec<u8>>>,
}

impl WindowReader {
    pub fn new(file: Rc<dyn SegmentFile>, limit: u64) -> WindowReader {
        WindowReader { file, start: 0, bytes: bytes::Bytes::new(), limit, ahead: VecDeque::new(), forward: true }
    }

    /// Whether the next reads go on forward through the file (see the field).
    pub fn set_forward(&mut self, forward: bool) {
        self.forward = forward;
    }

    /// Makes `[offset, offset + len)` (clipped to `limit`) available in the window.
    pub async fn ensure(&mut self, offset: u64, len: usize) -> io::Result<()> {
        let end = (offset + len as u64).min(self.limit);
        if offset >= self.start && end <= self.start + self.bytes.len() as u64 {
            return Ok(());
        }
        let read_start = align_down(offset);
        if self.adopt_ahead(read_start, end).await {
            return Ok(());
        }
        // Reading on from the end of the window (a scan, a consumer going forward, a record
        // running past the window's end) takes big reads; a jump elsewhere a small one.
        let onward = self.continues_at(offset) || self.straddles_end(offset, end) || offset == 0;
        let chunk = if self.forward && onward { RECOVERY_READ_BYTES } else { RANDOM_READ_BYTES };
        let read_len = align_up((end - read_start).max(chunk as u64));
        let read_len = read_len.min(align_up(self.limit) - read_start);
        self.bytes = read_buffer::share(self.file.read_at_aligned(read_start, read_len as usize).await?);
        self.start = read_start;
        Ok(())
    }

    /// Keeps [`READ_AHEAD_DEPTH`] chunks after this window in flight while a forward
    /// reader, now at `offset`, reads a big (sequential) window and more of the file is
    /// valid beyond it. Cheap when there is nothing to do; never waits.
    pub fn read_ahead(&mut self, offset: u64) {
        let len = self.bytes.len() as u64;
        if self.ahead.len() >= READ_AHEAD_DEPTH || len < RECOVERY_READ_BYTES as u64 / 2 || offset < self.start {
            return;
        }
        while self.ahead.len() < READ_AHEAD_DEPTH {
            let from = self.ahead.back().map_or(self.start + len, |last| last.start + last.len);
            // Nothing valid lies past the limit yet (reading its last block again would
            // queue the same read twice).
            if from >= self.limit {
                return;
            }
            let ahead_start = align_down(from);
            let ahead_len = (align_up(self.limit) - ahead_start).min(RECOVERY_READ_BYTES as u64);
            if ahead_start <= self.start {
                return;
            }
            let file = self.file.clone();
            let mut read: Pin<Box<dyn Future<Output = io::Result<Vec<u8>>>>> =
                Box::pin(async move { file.read_at_aligned(ahead_start, ahead_len as usize).await });
            // The first poll submits the read; its completion is picked up by the poll in
            // `adopt_ahead`, which brings the waiting task's own waker.
            let done = match read.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
                Poll::Ready(result) => Some(result),
                Poll::Pending => None,
            };
            self.ahead.push_back(ReadAhead { start: ahead_start, len: ahead_len, limit: self.limit, read, done });
        }
    }

    /// Makes the window the first read-ahead chunk (plus the tail of the current window
    /// when a record straddles the two), when that covers `[read_start, end)`; chunks the
    /// reader skipped past are dropped. `false`: no read-ahead, it failed (the caller's own
    /// read reports errors) or it does not fit; the reader went elsewhere, so the rest of
    /// the read-ahead is dropped too.
    async fn adopt_ahead(&mut self, read_start: u64, end: u64) -> bool {
        while self.ahead.front().is_some_and(|ahead| read_start >= ahead.start + ahead.len) {
            self.ahead.pop_front();
        }
        let Some(ahead) = self.ahead.pop_front() else { return false };
        let window_end = self.start + self.bytes.len() as u64;
        let continues = read_start >= ahead.start || (read_start >= self.start && ahead.start <= window_end);
        if !continues {
            self.ahead.clear();
            return false;
        }
        let chunk = match ahead.done {
            Some(result) => result,
            None => ahead.read.await,
        };
        let chunk = match chunk {
            Ok(chunk) if end <= (ahead.start + chunk.len() as u64).min(ahead.limit) => chunk,
            _ => {
                self.ahead.clear();
                return false;
            }
        };
        if read_start >= ahead.start {
            let skip = (read_start - ahead.start) as usize;
            self.bytes = read_buffer::share(chunk).slice(skip..);
        } else {
            let head = &self.bytes[(read_start - self.start) as usize..(ahead.start - self.start) as usize];
            let mut joined = read_buffer::take(head.len() + chunk.len());
            joined.extend_from_slice(head);
            joined.extend_from_slice(&chunk);
            read_buffer::give(chunk);
            self.bytes = read_buffer::share(joined);
        }
        self.start = read_start;
        let limit = self.limit;
        self.limit = ahead.limit;
        self.extend_limit(limit);
        true
    }

    /// Whether `offset` lies just past this window (a read going forward).
    fn continues_at(&self, offset: u64) -> bool {
        let end = self.start + self.bytes.len() as u64;
        !self.bytes.is_empty() && offset >= end && offset <= end + RANDOM_READ_BYTES as u64
    }

    /// Whether `[offset, end)` starts in this window and runs past its end (a record read
    /// going forward across the window's end).
    fn straddles_end(&self, offset: u64, end: u64) -> bool {
        let window_end = self.start + self.bytes.len() as u64;
        offset >= self.start && offset < window_end && end > window_end
    }

    /// Whether this window is the one to read `offset` with: it holds it, or a read there
    /// goes forward from it.
    pub fn serves(&self, offset: u64) -> bool {
        let end = (self.start + self.bytes.len() as u64).min(self.limit);
        (offset >= self.start && offset < end) || self.continues_at(offset)
    }

    /// Reuses this window for a later read of the same segment, which has grown to
    /// `limit`. Bytes read past the old limit may predate the writes that followed, so
    /// the window is cut back to what was valid when it was read.
    pub fn extend_limit(&mut self, limit: u64) {
        if limit != self.limit {
            let valid = self.limit.saturating_sub(self.start).min(self.bytes.len() as u64);
            self.bytes.truncate(valid as usize);
            self.limit = limit;
        }
    }

    /// `slice` (which must lie in [`at`](Self::at)'s result) as shared bytes, without a copy.
    pub fn share(&self, slice: &[u8]) -> bytes::Bytes {
        self.bytes.slice_ref(slice)
    }

    /// Bytes from `offset` to the end of the window (empty when outside it).
    pub fn at(&self, offset: u64) -> &[u8] {
        let end = (self.start + self.bytes.len() as u64).min(self.limit);
        if offset < self.start || offset >= end {
            return &[];
        }
        &self.bytes[(offset - self.start) as usize..(end - self.start) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_finds_every_id_around_gaps_and_none_other() {
        let ids: VecDeque<u64> = [3, 4, 5, 7, 8, 20].into_iter().collect();
        for (at, id) in ids.iter().enumerate() {
            assert_eq!(position(&ids, *id, |id| *id), Some(at), "id {id}");
        }
        for missing in [0, 2, 6, 9, 19, 21, u64::MAX] {
            assert_eq!(position(&ids, missing, |id| *id), None, "id {missing}");
        }
        assert_eq!(position(&VecDeque::new(), 1, |id: &u64| *id), None);
    }
}
