//! Opening a log from disk: restore what the checkpoint covers, scan the rest, truncate a
//! torn tail of the newest segment, report damage.

use std::collections::VecDeque;
use std::rc::Rc;

use super::error::Error;
use super::file::{Disk, OpenMode};
use super::group::Group;
use super::log::{LogConfig, SegmentLog};
use super::meta_file::{align_down, align_up};
use super::record::RecordKind;
use super::scan::{scan_segment, ScanEnd, ScanEvent};
use super::segment::{parse_segment_file_name, Segment, WindowReader};
use crate::codec::{Reader, Writer};
use crate::limits::DIRECT_IO_ALIGNMENT;

/// What a checkpoint remembers about one segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentCheckpoint {
    pub id: u64,
    pub tail: u64,
    pub seqs: Option<(u64, u64)>,
    pub index: Vec<(u64, u64)>,
}

/// The log's part of a checkpoint: every segment as of the cut it was taken at.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogCheckpoint {
    pub segments: Vec<SegmentCheckpoint>,
}

/// What recovery found besides the records it replayed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Segments the checkpoint lists that no longer exist, with their message range.
    pub missing_segments: Vec<(u64, Option<(u64, u64)>)>,
    /// Torn tail truncated: (segment, offset).
    pub truncated_tail: Option<(u64, u64)>,
    /// Segments scanned (not restored from the checkpoint).
    pub scanned_segments: usize,
    /// Bytes of records the scan read past the checkpoint: what the next restart scans
    /// again unless a checkpoint is written first.
    pub scanned_bytes: u64,
}

/// A checkpoint's view of the log, taken while appends go on: every segment as the
/// in-memory view has it (queued appends included), and the newest group queued then.
/// Once that group is durable ([`SegmentLog::make_durable`]; groups complete in order) the
/// cut is true on disk, and a checkpoint that stores it may be written.
pub struct LogCut {
    pub checkpoint: LogCheckpoint,
    last_group: Option<Rc<Group>>,
}

impl SegmentLog {
    /// The log's part of a checkpoint, now. Take it in the same synchronous step as the
    /// in-memory state it goes with (a stream appends and updates its table without an
    /// `.await` in between), so the two agree; `None` after a failure.
    pub fn checkpoint_cut(&self) -> Option<LogCut> {
        if self.failure().is_some() {
            return None;
        }
        // Groups start on a block boundary: with the open group closed and no tail block
        // carried, appends after the cut start at the aligned tail, where recovery's scan
        // will start.
        let last_group = self.groups.borrow().back().cloned();
        if let Some(group) = &last_group {
            group.close();
        }
        self.stop_carrying();
        let segments = self.segments.borrow();
        let segments = segments
            .iter()
            .map(|s| SegmentCheckpoint { id: s.id, tail: align_up(s.tail), seqs: s.seqs, index: s.index.clone() })
            .collect();
        Some(LogCut { checkpoint: LogCheckpoint { segments }, last_group })
    }

    /// Resolves when everything `cut` covers is written and synced.
    pub async fn make_durable(self: &Rc<Self>, cut: &LogCut) -> Result<(), Error> {
        if let Some(group) = &cut.last_group {
            self.wait_durable(group).await?;
        }
        self.check_failed()?;
        // With interval sync a completed group is written, not yet synced. (With sync
        // `always` its flusher synced it, unless all its records were deferred.)
        if !self.unsynced.borrow().is_empty() {
            self.sync_unsynced().await?;
        }
        Ok(())
    }
}

impl LogCheckpoint {
    pub fn encode(&self, out: &mut Writer) {
        out.u64(self.segments.len() as u64);
        for segment in &self.segments {
            out.u64(segment.id);
            out.u64(segment.tail);
            let (first, last) = segment.seqs.unwrap_or((0, 0));
            out.u8(segment.seqs.is_some() as u8);
            out.u64(first);
            out.u64(last);
            out.u64(segment.index.len() as u64);
            for (seq, offset) in &segment.index {
                out.u64(*seq);
                out.u64(*offset);
            }
        }
    }

    pub fn decode(input: &mut Reader<'_>) -> Option<LogCheckpoint> {
        let count = input.count(41)?;
        let mut segments = Vec::with_capacity(count);
        for _ in 0..count {
            let (id, tail, has_seqs, first, last) =
                (input.u64()?, input.u64()?, input.u8()?, input.u64()?, input.u64()?);
            let entries = input.count(16)?;
            let mut index = Vec::with_capacity(entries);
            for _ in 0..entries {
                index.push((input.u64()?, input.u64()?));
            }
            segments.push(SegmentCheckpoint { id, tail, seqs: (has_seqs == 1).then_some((first, last)), index });
        }
        Some(LogCheckpoint { segments })
    }
}

/// Opens the log in `config.dir`, replaying records after `checkpoint` into `visit`.
pub async fn open_log(
    disk: Rc<dyn Disk>,
    config: LogConfig,
    checkpoint: Option<&LogCheckpoint>,
    visit: &mut dyn FnMut(ScanEvent<'_>),
) -> Result<(SegmentLog, RecoveryReport), Error> {
    let dir = config.dir.clone();
    let names = disk.list_dir(&dir).await.map_err(|e| Error::io("list", &dir, &e))?;
    let ids: Vec<u64> = names.iter().filter_map(|name| parse_segment_file_name(name)).collect();
    let mut report = RecoveryReport::default();
    let restored = checkpoint.map(|cp| cp.segments.as_slice()).unwrap_or(&[]);
    for missing in restored.iter().filter(|cp| !ids.contains(&cp.id)) {
        report.missing_segments.push((missing.id, missing.seqs));
    }
    let newest_checkpointed = restored.iter().filter(|cp| ids.contains(&cp.id)).map(|cp| cp.id).max();
    let mut segments = VecDeque::new();
    let mut last_message_seq = 0;
    // Bad tails with nothing valid after them yet: torn (truncate) unless a later record
    // shows up, which makes them damage to report.
    let mut unresolved: Vec<(usize, u64, u64)> = Vec::new();
    for (position, id) in ids.iter().copied().enumerate() {
        let is_newest = position + 1 == ids.len();
        let path = dir.join(super::segment::segment_file_name(id));
        let file = disk.open(&path, OpenMode::Existing).await.map_err(|e| Error::io("open segment", &path, &e))?;
        let size = file.size().await.map_err(|e| Error::io("size", &path, &e))?;
        // The newest segment keeps taking appends: give it back at least the room a
        // first segment gets (it was preallocated to its size when it was made).
        let capacity = if is_newest {
            align_down(size).max(crate::limits::SEGMENT_BYTES_FIRST.min(config.segment_size))
        } else {
            align_down(size)
        };
        let mut segment = Segment::empty(id, &dir, file, capacity);
        let saved = restored.iter().find(|cp| cp.id == id);
        let start = match saved {
            Some(saved) if saved.tail <= segment.capacity => {
                (segment.seqs, segment.index) = (saved.seqs, saved.index.clone());
                last_message_seq = last_message_seq.max(saved.seqs.map_or(0, |(_, last)| last));
                saved.tail
            }
            _ => 0,
        };
        segment.tail = start;
        if Some(id) >= newest_checkpointed || saved.is_none() {
            let mut forward = |event: ScanEvent<'_>| {
                if matches!(event, ScanEvent::Record { .. }) {
                    for (index, torn_at, end) in unresolved.drain(..) {
                        let segment = ids[index];
                        tracing::error!(segment, offset = torn_at, "damaged end of a sealed segment");
                        visit(ScanEvent::Damage { segment, bytes: torn_at..end });
                    }
                }
                visit(event);
            };
            let end = scan_into(&mut segment, start, size, &config, &mut last_message_seq, &mut forward).await?;
            if let Some(torn_at) = end.torn_at {
                unresolved.push((position, torn_at, size));
            }
            report.scanned_segments += 1;
            report.scanned_bytes += segment.tail.saturating_sub(start);
        }
        segment.written = segment.tail;
        segments.push_back(segment);
    }
    for (index, torn_at, size) in unresolved {
        let segment = &mut segments[index];
        repair_torn_tail(segment, size, torn_at).await?;
        report.truncated_tail = Some((segment.id, torn_at));
        tracing::warn!(segment = segment.id, offset = torn_at, "torn tail truncated (never acknowledged)");
    }
    let next_id = ids.last().map_or(1, |id| id + 1);
    Ok((SegmentLog::assemble(disk, config, segments, next_id), report))
}

/// Scans `segment` from `start` to `file_size` and sets its tail (after the valid data).
async fn scan_into(
    segment: &mut Segment,
    start: u64,
    file_size: u64,
    config: &LogConfig,
    last_message_seq: &mut u64,
    visit: &mut dyn FnMut(ScanEvent<'_>),
) -> Result<ScanEnd, Error> {
    let mut reader = WindowReader::new(segment.file.clone(), file_size);
    let mut reindex = false;
    let segment_id = segment.id;
    let end: ScanEnd = {
        let mut on_event = |event: ScanEvent<'_>| {
            match &event {
                ScanEvent::Record { record, offset } if record.kind == RecordKind::Message => {
                    if std::mem::take(&mut reindex) {
                        segment.index.push((record.seq, *offset));
                    }
                    segment.note_message(record.seq, *offset, true);
                }
                ScanEvent::Damage { .. } => reindex = true,
                ScanEvent::Record { .. } => {}
            }
            visit(event);
        };
        scan_segment(
            &mut reader,
            segment_id,
            start,
            config.stream_id,
            config.block_bytes,
            last_message_seq,
            &mut on_event,
        )
        .await?
    };
    segment.tail = align_up(end.valid_end);
    Ok(end)
}

/// Zeroes everything from `torn_at` on, keeping the valid prefix of its block, durably.
async fn repair_torn_tail(segment: &mut Segment, file_size: u64, torn_at: u64) -> Result<(), Error> {
    let mut reader = WindowReader::new(segment.file.clone(), file_size);
    let path = segment.path.clone();
    let io = |operation: &'static str| {
        let path = path.clone();
        move |e: std::io::Error| Error::io(operation, &path, &e)
    };
    let block_start = align_down(torn_at);
    if torn_at != block_start {
        reader.ensure(block_start, (torn_at - block_start) as usize).await.map_err(io("read"))?;
        let mut block = reader.at(block_start)[..(torn_at - block_start) as usize].to_vec();
        block.resize(DIRECT_IO_ALIGNMENT, 0);
        segment.file.write_at_aligned(block_start, &block).await.map_err(io("write"))?;
    }
    segment.file.truncate(align_up(torn_at)).await.map_err(io("truncate"))?;
    segment.file.allocate(segment.capacity.max(align_up(torn_at))).await.map_err(io("preallocate"))?;
    segment.file.fdatasync().await.map_err(io("fdatasync"))?;
    segment.tail = align_up(torn_at);
    Ok(())
}
