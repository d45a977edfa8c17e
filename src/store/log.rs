//! [`SegmentLog`]: a stream's append-only log of segments with group commit.
//!
//! Appending is split in two so the caller can assign sequences atomically:
//! 1. `ensure_room(len).await` rolls to a new preallocated segment if needed. ENOSPC
//!    surfaces here, before any sequence is assigned, so a full disk leaves state unchanged.
//! 2. `append(record)` (synchronous) encodes into the open group and returns it;
//!    `wait_durable(group).await` resolves once the group is durable under the sync policy.
//!
//! Group commit: the first waiter that finds no flush in flight becomes the leader. It
//! yields once so every producer ready in this executor turn joins the group, then writes
//! the group (one aligned write, padded to a block) and, under [`SyncPolicy::Always`], one
//! fdatasync. Appends arriving meanwhile go into the next group (pipelining). Groups of a
//! log complete strictly in order, so an acknowledged sequence never has an unwritten
//! predecessor. A failed write or fdatasync is never retried: the log fails-stop, every
//! queued group fails, and only reopening from disk clears it (in place after a full
//! disk, `store/reopen.rs`; by a restart otherwise).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::error::Error;
use super::file::{Disk, SegmentFile};
use super::flush_stats::FlushStats;
use super::group::{Group, WakerList};
use super::record::{decode, encode_to, encoded_len, Record, RecordKind, StreamId};
use super::segment::{segment_file_name, Segment};
use super::walker::{record_at, SegmentWalker, Step};
use super::write_buffer::{GroupBuffer, SealedBuffer};
use crate::limits::{GROUP_COMMIT_BYTES_MAX, RECORD_BYTES_MAX, SEGMENT_BYTES_FIRST};

/// When an append counts as durable.
///
/// * `Always` (the default): the ack waits for the group's fdatasync. Nothing acknowledged
///   is lost on power failure. Latency is one write plus one fdatasync per group; group
///   commit amortises it across concurrent producers.
/// * `Interval(t)`: the ack waits only for the write (the data is in the OS/device, safe
///   from a process crash but not from power loss); fdatasync runs at most every `t`, on
///   the next write or when the shard calls [`SegmentLog::sync_if_due`]. Power loss may lose
///   up to `t` of acknowledged messages, always a suffix, never a hole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum SyncPolicy {
    #[default]
    Always,
    Interval(Duration),
}

/// Fixed parameters of one log.
#[derive(Debug, Clone)]
pub struct LogConfig {
    pub dir: PathBuf,
    pub stream_id: StreamId,
    pub segment_size: u64,
    pub sync: SyncPolicy,
    /// Groups start on multiples of this ([`Disk::block_bytes`]); reads skip padding to it.
    pub block_bytes: u64,
}

/// A record read back from the log, owning its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRecord {
    pub seq: u64,
    pub timestamp_ns: i64,
    pub subject: String,
    pub headers: bytes::Bytes,
    pub payload: bytes::Bytes,
}

/// A message read to be sent on (a consumer's delivery): its subject too stays bytes of
/// the read window. A delivery only forwards the subject, and a `String` per message
/// (allocation and UTF-8 check) was ~4 % of a pull-consume profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardRecord {
    pub seq: u64,
    pub timestamp_ns: i64,
    pub subject: bytes::Bytes,
    pub headers: bytes::Bytes,
    pub payload: bytes::Bytes,
}

impl ForwardRecord {
    /// A record decoded from `window`: its subject, headers and payload stay slices of it.
    fn from_window(record: &Record<'_>, window: &super::segment::WindowReader) -> ForwardRecord {
        ForwardRecord {
            seq: record.seq,
            timestamp_ns: record.timestamp_ns,
            subject: window.share(record.subject),
            headers: window.share(record.headers),
            payload: window.share(record.payload),
        }
    }
}

impl From<StoredRecord> for ForwardRecord {
    fn from(record: StoredRecord) -> ForwardRecord {
        let StoredRecord { seq, timestamp_ns, subject, headers, payload } = record;
        ForwardRecord { seq, timestamp_ns, subject: subject.into(), headers, payload }
    }
}

impl From<ForwardRecord> for StoredRecord {
    fn from(record: ForwardRecord) -> StoredRecord {
        let ForwardRecord { seq, timestamp_ns, subject, headers, payload } = record;
        StoredRecord { seq, timestamp_ns, subject: subject_text(&subject), headers, payload }
    }
}

impl StoredRecord {
    /// A record decoded from `window`: its headers and payload stay slices of it.
    fn from_window(record: &Record<'_>, window: &super::segment::WindowReader) -> StoredRecord {
        ForwardRecord::from_window(record, window).into()
    }

    fn from_record(record: &Record<'_>) -> StoredRecord {
        StoredRecord {
            seq: record.seq,
            timestamp_ns: record.timestamp_ns,
            subject: subject_text(record.subject),
            headers: bytes::Bytes::copy_from_slice(record.headers),
            payload: bytes::Bytes::copy_from_slice(record.payload),
        }
    }
}

/// A stored subject as text (subjects are checked UTF-8 when published).
fn subject_text(subject: &[u8]) -> String {
    match std::str::from_utf8(subject) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(subject).into_owned(),
    }
}

/// The log of one stream.
pub struct SegmentLog {
    pub(super) disk: Rc<dyn Disk>,
    pub(super) config: LogConfig,
    /// Bytes of the last group sealed: the next group's buffer is made that large, so a
    /// steady stream of windows never grows one (`store/write_buffer.rs`).
    pub(super) last_group_bytes: Cell<usize>,
    pub(super) segments: RefCell<VecDeque<Segment>>,
    pub(super) next_segment_id: Cell<u64>,
    pub(super) groups: RefCell<VecDeque<Rc<Group>>>,
    /// Tasks flushing groups now (at most two, see `store/flush.rs`).
    pub(super) flushers: Cell<u8>,
    /// Woken each time a flusher ends (see `store/reopen.rs`, `drained`).
    pub(super) flusher_done: WakerList,
    /// A flusher's write is in flight.
    pub(super) write_in_flight: Cell<bool>,
    /// A zero-ahead write in flight: (segment id, its first byte). See `store/flush.rs`.
    pub(super) zeroing: Cell<Option<(u64, u64)>>,
    /// The flusher whose write waits for the zero-ahead write in flight.
    pub(super) zeroing_done: WakerList,
    pub(super) rolling: Cell<bool>,
    pub(super) roll_done: WakerList,
    /// The next segment, made ahead of the roll (`store/spare_segment.rs`).
    pub(super) spare: RefCell<super::spare_segment::Spare>,
    /// A roll waits for the spare being made: stop zeroing it.
    pub(super) spare_wanted: Cell<bool>,
    /// Woken when a spare being made is made (or given up).
    pub(super) spare_made: WakerList,
    pub(super) failure: RefCell<Option<Error>>,
    /// The failure is a write that found the disk full, and nothing worse followed: the
    /// files hold exactly what completed before it (see `store/reopen.rs`).
    pub(super) failed_for_space: Cell<bool>,
    pub(super) unsynced: RefCell<Vec<(PathBuf, Rc<dyn SegmentFile>)>>,
    /// Appends now are deferred ([`SegmentLog::deferred`]).
    deferring: Cell<bool>,
    pub(super) last_sync: Cell<Instant>,
    /// Write and fdatasync times and group sizes, shared by the shard's logs.
    pub(super) stats: Rc<FlushStats>,
    /// The window of the last read, kept for the next: a consumer reading forward finds
    /// its next records already in memory instead of paying one O_DIRECT read each.
    pub(super) read_window: RefCell<Option<ReadWindow>>,
    /// Windows of earlier reads elsewhere (most recent first, at most
    /// [`SPARE_WINDOWS_MAX`]): random gets (KV) come back to the same few places.
    pub(super) spare_windows: RefCell<VecDeque<ReadWindow>>,
}

/// Spare read windows kept per log (each at most `RANDOM_READ_BYTES`, or a recovery-size
/// window a consumer left behind).
const SPARE_WINDOWS_MAX: usize = 8;

/// A cached read window and where the last record read from it ended, so that a forward
/// read continues from there instead of decoding every record since the sparse index
/// entry (dozens of checksums per sequential read otherwise).
pub(super) struct ReadWindow {
    segment_id: u64,
    reader: super::segment::WindowReader,
    /// The last message read and the offset just past it.
    last: Option<(u64, u64)>,
}

/// Resets a busy flag and wakes waiters when dropped (also on cancellation).
struct FlagGuard<'a> {
    flag: &'a Cell<bool>,
    on_release: Box<dyn Fn() + 'a>,
}

impl Drop for FlagGuard<'_> {
    fn drop(&mut self) {
        self.flag.set(false);
        (self.on_release)();
    }
}

impl SegmentLog {
    pub(super) fn assemble(
        disk: Rc<dyn Disk>,
        config: LogConfig,
        segments: VecDeque<Segment>,
        next_segment_id: u64,
    ) -> SegmentLog {
        SegmentLog {
            disk,
            config,
            last_group_bytes: Cell::new(0),
            segments: RefCell::new(segments),
            next_segment_id: Cell::new(next_segment_id),
            groups: RefCell::new(VecDeque::new()),
            flushers: Cell::new(0),
            flusher_done: WakerList::default(),
            write_in_flight: Cell::new(false),
            zeroing: Cell::new(None),
            zeroing_done: WakerList::default(),
            rolling: Cell::new(false),
            roll_done: WakerList::default(),
            spare: RefCell::default(),
            spare_wanted: Cell::new(false),
            spare_made: WakerList::default(),
            failure: RefCell::new(None),
            failed_for_space: Cell::new(false),
            unsynced: RefCell::new(Vec::new()),
            deferring: Cell::new(false),
            last_sync: Cell::new(Instant::now()),
            stats: Rc::new(FlushStats::default()),
            read_window: RefCell::new(None),
            spare_windows: RefCell::new(VecDeque::new()),
        }
    }

    /// This log with its group-commit counters kept in `stats` (the shard's, shared by
    /// its logs) instead of its own.
    pub fn with_stats(self, stats: Rc<FlushStats>) -> SegmentLog {
        SegmentLog { stats, ..self }
    }

    /// The error that stopped this log, if it failed.
    pub fn failure(&self) -> Option<Error> {
        self.failure.borrow().clone()
    }

    pub(super) fn check_failed(&self) -> Result<(), Error> {
        match &*self.failure.borrow() {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }

    /// Makes sure the active segment can take a record of `len` bytes, rolling if needed.
    /// After `Ok`, a synchronous `append` of at most `len` bytes cannot run out of room.
    pub async fn ensure_room(&self, len: usize) -> Result<(), Error> {
        if len > RECORD_BYTES_MAX || len as u64 > self.config.segment_size {
            return Err(Error::RecordTooLarge {
                bytes: len,
                max: RECORD_BYTES_MAX.min(self.config.segment_size as usize),
            });
        }
        loop {
            self.check_failed()?;
            // A roll in progress first, even when this record would still fit: `has_room`
            // says no while rolling (a smaller record must not overtake the one that
            // started the roll), so returning here would spin `Stream::append` without
            // ever yielding to the roll.
            if self.rolling.get() {
                self.roll_done.wait().await;
                continue;
            }
            if self.active_has_room(len) {
                return Ok(());
            }
            self.rolling.set(true);
            let _guard = FlagGuard { flag: &self.rolling, on_release: Box::new(|| self.roll_done.wake_all()) };
            self.roll(len).await?;
        }
    }

    /// `ensure_room` without waiting: true when a synchronous `append` of at most `len`
    /// bytes may follow now; false when it takes a roll first, or the record is too large
    /// (`ensure_room` then says why).
    pub fn has_room(&self, len: usize) -> Result<bool, Error> {
        self.check_failed()?;
        let fits = len <= RECORD_BYTES_MAX && len as u64 <= self.config.segment_size;
        Ok(fits && !self.rolling.get() && self.active_has_room(len))
    }

    fn active_has_room(&self, len: usize) -> bool {
        let segments = self.segments.borrow();
        let Some(segment) = segments.back() else {
            return false;
        };
        segment.has_room(len) && self.next_offset(segment, len) + len as u64 <= segment.capacity
    }

    /// Where a record of `len` bytes would go in `segment`.
    fn next_offset(&self, segment: &Segment, len: usize) -> u64 {
        if let Some(offset) = self.offset_past_carrying(segment, len) {
            return offset;
        }
        match self.open_group(segment.id, len) {
            Some(group) => group.offset() + group.bytes.borrow().len() as u64,
            None => match (self.carry_for(segment, len), &segment.tail_block) {
                (Some((offset, _)), Some(tail)) => offset + tail.bytes.len() as u64,
                _ => round_up(segment.tail, self.config.block_bytes),
            },
        }
    }

    fn open_group(&self, segment_id: u64, len: usize) -> Option<Rc<Group>> {
        let groups = self.groups.borrow();
        let group = groups.back()?;
        let grown = group.bytes.borrow().len() + len;
        let fits = grown <= GROUP_COMMIT_BYTES_MAX && group.fits(grown, self.config.block_bytes);
        (group.segment_id == segment_id && group.takes_appends() && fits).then(|| group.clone())
    }

    /// The size of the next segment: segments start small and double up to the
    /// configured size, so a stream that holds little (a KV bucket, a test) does not
    /// reserve a whole segment of disk; always room for a record of `len` bytes.
    fn next_segment_capacity(&self, len: usize) -> u64 {
        let previous = self.segments.borrow().back().map_or(0, |segment| segment.capacity);
        let grown = previous.saturating_mul(2).max(SEGMENT_BYTES_FIRST);
        let needed = round_up(len as u64, self.config.block_bytes);
        grown.min(self.config.segment_size).max(needed)
    }

    async fn roll(&self, len: usize) -> Result<(), Error> {
        if let Some(spare) = self.take_spare(len).await {
            tracing::debug!(segment = spare.id, dir = %self.config.dir.display(), "rolled to the spare segment");
            self.segments.borrow_mut().push_back(spare);
            return Ok(());
        }
        let capacity = self.next_segment_capacity(len);
        // Taken before the first await: ids stay in the order segments are used.
        let id = self.next_segment_id.get();
        self.next_segment_id.set(id + 1);
        let segment = self.make_segment(id, capacity, false, false).await?;
        self.segments.borrow_mut().push_back(segment);
        tracing::debug!(segment = id, dir = %self.config.dir.display(), "rolled to new segment");
        Ok(())
    }

    /// Encodes `record` into the open group. Precondition: `ensure_room` for its size
    /// returned `Ok` with no `.await` since. Returns the group to wait on: it completes
    /// once the record is durable under the log's sync policy.
    pub fn append(&self, record: &Record<'_>) -> Result<Rc<Group>, Error> {
        self.check_failed()?;
        let len = encoded_len(record.subject.len(), record.headers.len(), record.payload.len());
        let mut segments = self.segments.borrow_mut();
        let segment = segments.back_mut().expect("ensure_room precedes append");
        if let Some((group, carry)) = self.outgrown_carrying(segment, len) {
            self.move_carrying(segment, &group, carry);
        }
        let group = match self.open_group(segment.id, len) {
            Some(group) => group,
            None => {
                let group = Rc::new(self.new_group(segment, len));
                self.groups.borrow_mut().push_back(group.clone());
                group
            }
        };
        let offset = group.offset() + group.bytes.borrow().len() as u64;
        assert!(offset + len as u64 <= segment.capacity, "append without room");
        encode_to(record, group.bytes.borrow_mut().extend(len));
        group.records.set(group.records.get() + 1);
        if !self.deferring.get() {
            group.needs_sync.set(true);
        }
        if offset % self.config.block_bytes == 0 {
            group.block_record_start.set(offset);
        }
        if record.kind == RecordKind::Purge {
            group.purge_at.set(Some(offset));
        }
        segment.tail = segment.tail.max(offset + len as u64);
        if record.kind == RecordKind::Message {
            segment.note_message(record.seq, offset, group.carry.get().is_none());
            group.last_seq.set(record.seq);
        }
        Ok(group)
    }

    /// A new group for a first record of `len` bytes: at the first fresh block, or
    /// carrying the tail block (`store/tail_block.rs`).
    fn new_group(&self, segment: &Segment, len: usize) -> Group {
        let carry = self.carry_for(segment, len);
        let carried = match (&carry, &segment.tail_block) {
            (Some(_), Some(tail)) => &tail.bytes[..],
            _ => &[],
        };
        let hint = self.last_group_bytes.get().min(GROUP_COMMIT_BYTES_MAX);
        let mut bytes =
            GroupBuffer::with_capacity(hint.max(carried.len() + len), segment.file.takes_registered_memory());
        bytes.extend(carried.len()).copy_from_slice(carried);
        let offset = carry.map_or(round_up(segment.tail, self.config.block_bytes), |(offset, _)| offset);
        let group = Group::new(segment.id, segment.path.clone(), segment.file.clone(), offset, bytes);
        match carry {
            Some((_, carry)) => group.carrying(carry),
            None => group,
        }
    }

    /// Runs `appends` (synchronous [`SegmentLog::append`]s) with their records deferred:
    /// under sync `always` a group holding only deferred records completes once written,
    /// before an fdatasync. For a restore, which acknowledges nothing until its end and
    /// then syncs once ([`SegmentLog::flush_all`]). A later group that does need a sync
    /// fdatasyncs every file written before it, deferred writes included, so an ack never
    /// comes before what precedes it in the log is durable.
    pub fn deferred<T>(&self, appends: impl FnOnce() -> T) -> T {
        self.deferring.set(true);
        let result = appends();
        self.deferring.set(false);
        result
    }

    /// For `Interval` logs: fdatasync now if the period has passed. Call from a shard timer.
    pub async fn sync_if_due(&self) -> Result<(), Error> {
        let SyncPolicy::Interval(period) = self.config.sync else {
            return Ok(());
        };
        if self.last_sync.get().elapsed() < period || self.unsynced.borrow().is_empty() {
            return Ok(());
        }
        self.check_failed()?;
        self.sync_unsynced().await
    }

    /// Whether an interval sync policy leaves written files to sync (`sync_if_due`).
    pub fn has_unsynced(&self) -> bool {
        matches!(self.config.sync, SyncPolicy::Interval(_)) && !self.unsynced.borrow().is_empty()
    }

    /// Flushes everything queued and syncs, and waits for a zero-ahead write in flight.
    /// Used by close and checkpoints.
    pub async fn flush_all(self: &Rc<Self>) -> Result<(), Error> {
        let last = self.groups.borrow().back().cloned();
        if let Some(group) = last {
            self.wait_durable(&group).await?;
        }
        self.check_failed()?;
        if !self.unsynced.borrow().is_empty() {
            self.sync_unsynced().await?;
        }
        self.zeros_written().await;
        Ok(())
    }

    /// The segment whose range holds message `seq`, if any.
    pub fn segment_holding(&self, seq: u64) -> Option<u64> {
        self.segments.borrow().iter().find(|segment| segment.holds(seq)).map(|segment| segment.id)
    }

    /// Reads message `seq`. `Ok(None)` if no segment holds it.
    pub async fn read_message(&self, seq: u64) -> Result<Option<StoredRecord>, Error> {
        // A walk that awaits a read may end at a limit that grew meanwhile: the group that
        // held the message in memory completed, or its tail block moved on and left it on
        // disk past where the walk stopped. Walk again then (the limit only grows).
        loop {
            let (found, limit) = self.read_message_once(seq).await?;
            let grown = |segment: &Segment| segment.holds(seq) && segment.read_limit() > limit;
            if found.is_some() || !self.segments.borrow().iter().any(grown) {
                return Ok(found);
            }
        }
    }

    /// [`Self::read_message`] once, with the read limit it walked to.
    async fn read_message_once(&self, seq: u64) -> Result<(Option<StoredRecord>, u64), Error> {
        // The message right after the last one read starts where that one ended: no
        // index search (a consumer reading forward is the common case).
        let follows = |segment_id: u64| {
            self.read_window.borrow().as_ref().and_then(|window| {
                let (last, next) = window.last?;
                (window.segment_id == segment_id && last + 1 == seq).then_some(next)
            })
        };
        let found = {
            let segments = self.segments.borrow();
            segments.iter().find(|segment| segment.holds(seq)).and_then(|segment| {
                // Where to start, and the message sequence just before it.
                let ((start, floor), forward) = match follows(segment.id) {
                    Some(next) => ((next, seq - 1), true),
                    None => {
                        // No entry yet (the first messages were carried): the start.
                        let first = segment.seqs.map(|(first, _)| (first, 0));
                        let (indexed, offset) = segment.search_start(seq).or(first)?;
                        ((offset, indexed.saturating_sub(1)), false)
                    }
                };
                Some((segment.id, start, floor, segment.read_limit(), forward))
            })
        };
        let Some((segment_id, start, floor, written, forward)) = found else {
            return Ok((None, u64::MAX));
        };
        let cached = self.take_window(segment_id, start);
        let (mut reader, resume) = match cached {
            Some(mut window) if window.segment_id == segment_id => {
                window.reader.extend_limit(written);
                let resume = window.last.filter(|(last, _)| *last < seq);
                (window.reader, resume)
            }
            _ => (super::segment::WindowReader::new(self.segment_file(segment_id), written), None),
        };
        // Reading on from the last message read in this window is reading on from a
        // record start whose preceding message is known, like an index entry.
        let (start, floor) = match resume {
            Some((last, next)) if next >= start => (next, last),
            _ => (start, floor),
        };
        // A get by sequence reads what it needs; a reader going on forward reads ahead.
        reader.set_forward(forward);
        let walker = SegmentWalker::new(self.config.stream_id, self.config.block_bytes, start, floor);
        let found = self.find_in_window(&mut reader, walker, segment_id, seq);
        let found = found.await;
        if let Ok(found) = &found {
            let last = found.as_ref().map(|(_, next)| (seq, *next));
            *self.read_window.borrow_mut() = Some(ReadWindow { segment_id, reader, last });
        }
        match found? {
            Some((record, _)) => Ok((Some(record), written)),
            None => Ok((self.read_pending(segment_id, seq), written)),
        }
    }

    /// The cached window to read `segment_id` at `offset` with: the current one when it
    /// holds the offset or reads on towards it, else a spare that holds it (the current
    /// one then becomes a spare), else none (a new reader).
    fn take_window(&self, segment_id: u64, offset: u64) -> Option<ReadWindow> {
        let current = self.read_window.borrow_mut().take();
        let fits = |window: &ReadWindow| window.segment_id == segment_id && window.reader.serves(offset);
        if current.as_ref().is_some_and(fits) {
            return current;
        }
        let mut spares = self.spare_windows.borrow_mut();
        {
            let segments = self.segments.borrow();
            spares.retain(|window| segments.iter().any(|segment| segment.id == window.segment_id));
        }
        let found = spares.iter().position(fits).and_then(|index| spares.remove(index));
        if let Some(current) = current {
            spares.push_front(current);
            spares.truncate(SPARE_WINDOWS_MAX);
        }
        found
    }

    /// Forgets every read window (their files and views of segment tails).
    pub(super) fn forget_read_windows(&self) {
        self.read_window.replace(None);
        self.spare_windows.borrow_mut().clear();
    }

    /// Forgets the read windows on segment `id` (which is going away).
    fn release_windows_of(&self, id: u64) {
        let mut current = self.read_window.borrow_mut();
        if current.as_ref().is_some_and(|window| window.segment_id == id) {
            *current = None;
        }
        self.spare_windows.borrow_mut().retain(|window| window.segment_id != id);
    }

    /// [`Self::read_message`]'s fast path, without awaiting: message `seq` when it directly
    /// follows the last one read and lies whole in the cached window. `None` means "take
    /// `read_message`" (another position, a window to fetch, a tombstone or damage next).
    /// A consumer reading forward takes this for most messages; the awaiting path's
    /// nested futures showed in pull-consume profiles.
    pub fn read_following_now(&self, seq: u64) -> Option<StoredRecord> {
        self.forward_following_now(seq).map(StoredRecord::from)
    }

    /// [`Self::read_following_now`], the subject kept as bytes of the window.
    pub fn forward_following_now(&self, seq: u64) -> Option<ForwardRecord> {
        let mut cached = self.read_window.borrow_mut();
        let window = cached.as_mut()?;
        let (last, mut next) = window.last?;
        if last + 1 != seq {
            return None;
        }
        let written = {
            let segments = self.segments.borrow();
            let segment = super::segment::find(&segments, window.segment_id)?;
            segment.holds(seq).then_some(segment.read_limit())?
        };
        window.reader.extend_limit(written);
        // A group's padding (zeros to the block's end) may come first. A zero length on a
        // block boundary is not padding (every group starts with a record there): damage or
        // the end of written data, for the walker to read.
        if super::record::peek_len(window.reader.at(next)) == Some(0) {
            if next % self.config.block_bytes == 0 {
                return None;
            }
            next = round_up(next, self.config.block_bytes);
        }
        let bytes = window.reader.at(next);
        let len = super::record::peek_len(bytes).filter(|len| *len > 0 && *len <= bytes.len())?;
        let (record, used) = decode(&bytes[..len], self.config.stream_id).ok()?;
        if record.kind != RecordKind::Message || record.seq != seq {
            return None;
        }
        let stored = ForwardRecord::from_window(&record, &window.reader);
        window.last = Some((seq, next + used as u64));
        window.reader.read_ahead(next + used as u64);
        Some(stored)
    }

    /// The file of segment `id` (which must exist: the caller just found it).
    fn segment_file(&self, id: u64) -> Rc<dyn SegmentFile> {
        let segments = self.segments.borrow();
        let segment = super::segment::find(&segments, id).expect("segment exists");
        segment.file.clone()
    }

    /// The path of segment `id`, for error messages.
    fn segment_path(&self, id: u64) -> PathBuf {
        let segments = self.segments.borrow();
        segments
            .iter()
            .find(|segment| segment.id == id)
            .map_or_else(|| self.config.dir.join(segment_file_name(id)), |segment| segment.path.clone())
    }

    /// Walks on until message `seq` and returns it with the offset just past it; `Ok(None)`
    /// when it is not in the file (yet). The walker starts at a record start with its floor
    /// the message sequence before it (an index entry's, or the last one read), which is
    /// where recovery's walk stood there: the two take the same records.
    ///
    /// Damage is skipped when it lies before the target and fails the read when it covers
    /// it. Only a message past `seq` right after the damage shows that `seq` lay in it: a
    /// tombstone's or front's sequence names some other message, and the target may
    /// follow.
    async fn find_in_window(
        &self,
        reader: &mut super::segment::WindowReader,
        mut walker: SegmentWalker,
        segment_id: u64,
        seq: u64,
    ) -> Result<Option<(StoredRecord, u64)>, Error> {
        let io = |e: std::io::Error| Error::io("read", &self.segment_path(segment_id), &e);
        let mut damaged_at = None;
        while let Some(step) = walker.next(reader).await.map_err(io)? {
            let span = match step {
                Step::Record(span) => span,
                Step::Padding { .. } | Step::Stale { .. } => continue,
                Step::Damage { range, torn } => {
                    if torn {
                        return Err(Error::ChecksumMismatch { segment: segment_id, offset: range.start });
                    }
                    damaged_at = Some(range.start);
                    continue;
                }
            };
            let damaged = damaged_at.take();
            if span.kind != RecordKind::Message || span.seq < seq {
                continue;
            }
            if span.seq > seq {
                return match damaged {
                    Some(offset) => Err(Error::ChecksumMismatch { segment: segment_id, offset }),
                    None => Ok(None),
                };
            }
            let record = record_at(reader, &span, self.config.stream_id);
            return Ok(Some((StoredRecord::from_window(&record, reader), span.offset + span.len as u64)));
        }
        Ok(None)
    }

    /// Finds message `seq` among groups not yet written, and in the segment's tail block.
    fn read_pending(&self, segment_id: u64, seq: u64) -> Option<StoredRecord> {
        let segments = self.segments.borrow();
        let tail = super::segment::find(&segments, segment_id).and_then(|s| s.tail_block.as_ref());
        if let Some(found) = tail.and_then(|tail| self.message_in(&tail.bytes, seq)) {
            return Some(found);
        }
        drop(segments);
        let groups: Vec<Rc<Group>> =
            self.groups.borrow().iter().filter(|g| g.segment_id == segment_id).cloned().collect();
        for group in groups {
            let found = self.message_in(&group.bytes_from(group.offset())?, seq);
            if found.is_some() {
                return found;
            }
        }
        None
    }

    /// Message `seq` among records encoded back to back from the start of `bytes`.
    fn message_in(&self, bytes: &[u8], seq: u64) -> Option<StoredRecord> {
        let mut position = 0;
        while let Ok((record, used)) = decode(&bytes[position..], self.config.stream_id) {
            if record.kind == RecordKind::Message && record.seq == seq {
                return Some(StoredRecord::from_record(&record));
            }
            position += used;
        }
        None
    }

    /// Whether the front segment could be retired given `first_seq`.
    pub fn can_drop_front(&self, first_seq: u64) -> bool {
        let segments = self.segments.borrow();
        let Some(front) = segments.front() else {
            return false;
        };
        let queued = self.groups.borrow().iter().any(|group| group.segment_id == front.id);
        segments.len() > 1 && !queued && front.seqs.is_none_or(|(_, last)| last < first_seq)
    }

    /// Removes whole segments at the front whose messages are all below `first_seq`.
    /// Precondition: the record that moved the front to `first_seq` is durable.
    pub async fn drop_segments_below(&self, first_seq: u64) {
        while self.can_drop_front(first_seq) {
            let dropped = self.segments.borrow_mut().pop_front().expect("front segment");
            // Read windows on it go too, and the file closes now: a handle kept anywhere
            // would keep the unlinked file's blocks allocated until that holder let go
            // (a spare window could hold one until the stream's next read).
            self.release_windows_of(dropped.id);
            let _ = dropped.file.close().await;
            crate::failpoint::hit("mid_segment_drop");
            if let Err(error) = self.disk.remove_file(&dropped.path).await {
                tracing::warn!(%error, path = %dropped.path.display(), "could not remove retired segment");
            }
            crate::failpoint::hit("after_segment_unlink");
            let _ = self.disk.fsync_dir(&self.config.dir).await;
        }
    }

    /// Flushes, syncs and closes every file. The log holds no segment afterwards.
    ///
    /// It lets go of its own handles first (segments, read windows), so each file closes
    /// here rather than when its last holder drops. A dropped glommio file is closed on the
    /// reactor's next cycle, which an executor about to end never runs: a file only dropped
    /// stays open, deleted and still allocated, until the process exits (perf/storage.md,
    /// "Full runs filled the disk").
    pub async fn close(self: &Rc<Self>) -> Result<(), Error> {
        let flushed = self.flush_all().await;
        self.discard_spare().await;
        self.forget_read_windows();
        let segments = std::mem::take(&mut *self.segments.borrow_mut());
        for segment in segments {
            let _ = segment.file.close().await;
        }
        flushed
    }

    /// Total bytes of segment files (capacity reserved on disk).
    pub fn reserved_bytes(&self) -> u64 {
        self.segments.borrow().iter().map(|s| s.capacity).sum()
    }
}

/// Freezes `group` (idempotent: a second call returns the same bytes).
pub(super) fn seal(group: &Group, block_bytes: u64) -> SealedBuffer {
    if let Some(sealed) = group.sealed.borrow().as_ref() {
        return sealed.clone();
    }
    let bytes = std::mem::take(&mut *group.bytes.borrow_mut());
    group.content_len.set(bytes.len());
    let sealed = bytes.seal(block_bytes);
    *group.sealed.borrow_mut() = Some(sealed.clone());
    sealed
}

/// Rounds `value` up to a multiple of `block`.
pub(super) fn round_up(value: u64, block: u64) -> u64 {
    value.div_ceil(block) * block
}
