//! Recovery scan of one segment: replays valid records in order, skips padding, reports
//! damaged byte ranges, and finds where the valid data ends. What is a record, padding or
//! damage is the [`SegmentWalker`]'s rule, the one the read path walks by too.
//!
//! A bad record is never trusted. Damage with valid records after it is reported as
//! [`ScanEvent::Damage`] and the scan continues (corruption: nothing is deleted). Damage
//! with nothing valid after it ends the scan with `torn_at` set (a torn tail, which the
//! caller may truncate only on the newest segment, where it was never acknowledged).

use std::ops::Range;

use super::error::Error;
use super::record::{decode, DecodeError, Record, RecordKind, StreamId};
use super::segment::WindowReader;
use super::walker::{record_at, SegmentWalker, Step};
use crate::limits::DIRECT_IO_ALIGNMENT;

/// What the scan hands to its visitor, in log order.
pub enum ScanEvent<'a> {
    /// A valid record starting at `offset`.
    Record { record: Record<'a>, offset: u64 },
    /// Bytes that are not valid records, with valid records after them.
    Damage { segment: u64, bytes: Range<u64> },
}

/// Where the scan stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanEnd {
    /// Offset just after the last valid record.
    pub valid_end: u64,
    /// Offset of a bad record with nothing valid after it, if any.
    pub torn_at: Option<u64>,
}

/// Scans segment `segment` from `start` (a record start) to `reader.limit`, with groups
/// starting on multiples of `block_bytes`. `last_message_seq` is the highest message
/// sequence already seen; it is updated.
pub async fn scan_segment(
    reader: &mut WindowReader,
    segment: u64,
    start: u64,
    stream_id: StreamId,
    block_bytes: u64,
    last_message_seq: &mut u64,
    visit: &mut dyn FnMut(ScanEvent<'_>),
) -> Result<ScanEnd, Error> {
    let io = |e: std::io::Error| Error::io("recovery read", format!("segment {segment}"), &e);
    let mut walker = SegmentWalker::new(stream_id, block_bytes, start, *last_message_seq);
    let mut torn_at = None;
    loop {
        // The next chunk's read overlaps this one's records (recovery reads whole
        // segments, one 1 MiB read after another).
        reader.read_ahead(walker.position());
        let Some(step) = walker.next(reader).await.map_err(io)? else {
            break;
        };
        match step {
            Step::Record(span) => {
                visit(ScanEvent::Record { record: record_at(reader, &span, stream_id), offset: span.offset })
            }
            Step::Padding { .. } | Step::Stale { .. } => {}
            Step::Damage { range, torn: false } => visit(ScanEvent::Damage { segment, bytes: range }),
            Step::Damage { range, torn: true } => torn_at = Some(range.start),
        }
    }
    *last_message_seq = walker.floor();
    Ok(ScanEnd { valid_end: walker.valid_end(), torn_at })
}

/// Where one record sits in a segment (for tools and tests that inspect files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordSpan {
    pub kind: RecordKind,
    pub seq: u64,
    pub offset: u64,
    pub len: usize,
}

/// Lists the valid records of a segment image from its start, stopping at the first bad
/// record or the end of written data. The stream id is taken from the first record.
pub fn record_spans(bytes: &[u8]) -> Vec<RecordSpan> {
    let Some(stream_id) = bytes.get(20..28).map(|b| StreamId(u64::from_le_bytes(b.try_into().expect("8 bytes"))))
    else {
        return Vec::new();
    };
    let mut spans = Vec::new();
    let mut position = 0usize;
    while position < bytes.len() {
        match decode(&bytes[position..], stream_id) {
            Ok((record, len)) => {
                spans.push(RecordSpan { kind: record.kind, seq: record.seq, offset: position as u64, len });
                position += len;
            }
            Err(DecodeError::Padding) if position % DIRECT_IO_ALIGNMENT != 0 => {
                position = position.div_ceil(DIRECT_IO_ALIGNMENT) * DIRECT_IO_ALIGNMENT;
            }
            Err(_) => break,
        }
    }
    spans
}
