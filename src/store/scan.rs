//! Recovery scan of one segment: replays valid records in order, skips padding, reports
//! damaged byte ranges, and finds where the valid data ends.
//!
//! A bad record (failed checksum, impossible length, another stream's id, a message
//! sequence that goes backwards) is never trusted. The scan then searches forward, byte by
//! byte, for the next valid record. Found: the bytes in between are reported as
//! [`ScanEvent::Damage`] and the scan continues (corruption: nothing is deleted). Not found:
//! the scan ends with `torn_at` set (a torn tail, which the caller may truncate only on the
//! newest segment, where it was never acknowledged).

use std::ops::Range;

use super::error::Error;
use super::record::{
    decode, peek_len, DecodeError, Record, RecordKind, StreamId, RECORD_HEADER_BYTES,
};
use super::segment::WindowReader;
use crate::limits::DIRECT_IO_ALIGNMENT;

const ALIGNMENT: u64 = DIRECT_IO_ALIGNMENT as u64;

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

/// Scans segment `segment` from `start` (a record start) to `reader.limit`.
/// `last_message_seq` is the highest message sequence already seen; it is updated.
pub async fn scan_segment(
    reader: &mut WindowReader,
    segment: u64,
    start: u64,
    stream_id: StreamId,
    last_message_seq: &mut u64,
    visit: &mut dyn FnMut(ScanEvent<'_>),
) -> Result<ScanEnd, Error> {
    let mut position = start;
    let mut valid_end = start;
    let io = |e: std::io::Error| Error::io("recovery read", format!("segment {segment}"), &e);
    while position < reader.limit {
        // The next chunk's read overlaps this one's records (recovery reads whole
        // segments, one 1 MiB read after another).
        reader.read_ahead(position);
        reader
            .ensure(position, RECORD_HEADER_BYTES)
            .await
            .map_err(io)?;
        let len = peek_len(reader.at(position)).unwrap_or(usize::MAX);
        if len == 0 && position % ALIGNMENT != 0 {
            position = position.div_ceil(ALIGNMENT) * ALIGNMENT;
            continue;
        }
        if len != 0 {
            // Short padding read as a length is no record: nothing to read for it (see
            // `SegmentLog::find_in_window`).
            if super::log::fits_before(position, len, reader.limit) {
                reader.ensure(position, len).await.map_err(io)?;
            }
            if let Some((record, used)) =
                valid_at(reader.at(position), stream_id, *last_message_seq)
            {
                if record.kind == RecordKind::Message {
                    *last_message_seq = record.seq;
                }
                visit(ScanEvent::Record {
                    record,
                    offset: position,
                });
                position += used as u64;
                valid_end = position;
                continue;
            }
        }
        // Not a record: padding too short for a length field (checked only now: a record
        // may start 1-3 bytes before a boundary with a zero first byte), a zero block
        // (end of written data, or a lost write) or a bad record.
        if is_padding(reader.at(position), position) {
            position = position.div_ceil(ALIGNMENT) * ALIGNMENT;
            continue;
        }
        match resync(reader, position, stream_id, *last_message_seq)
            .await
            .map_err(io)?
        {
            Some(next) => {
                visit(ScanEvent::Damage {
                    segment,
                    bytes: position..next,
                });
                position = next;
            }
            None if len == 0 => {
                return Ok(ScanEnd {
                    valid_end,
                    torn_at: None,
                })
            }
            None => {
                return Ok(ScanEnd {
                    valid_end,
                    torn_at: Some(position),
                })
            }
        }
    }
    Ok(ScanEnd {
        valid_end,
        torn_at: None,
    })
}

/// Whether `bytes` (read at unaligned `position`) start with the zero padding that ends a
/// group. Padding shorter than a length field is zero up to the block boundary: when a
/// group ended 1-3 bytes before a boundary, reading a length there would take the next
/// group's first bytes with it (found by the DST: such a group end was reported as one
/// damaged byte, e.g. segment 2 bytes 32767..32768, after every unclean restart). Only
/// for bytes that are not a valid record: records inside a group run across boundaries,
/// and one starting 1-3 bytes before a boundary may have a zero first byte (a length of
/// 2048 is `00 08 00 00`; the DST found that too, as an acknowledged message reported
/// damaged, seed 10928).
pub(crate) fn is_padding(bytes: &[u8], position: u64) -> bool {
    if position % ALIGNMENT == 0 {
        return false;
    }
    let to_boundary = (ALIGNMENT - position % ALIGNMENT) as usize;
    let length_field = &bytes[..bytes.len().min(to_boundary).min(4)];
    length_field.iter().all(|b| *b == 0)
}

/// The record at the start of `bytes` if it is valid and not stale (a message not above
/// `last_message_seq`). The read path takes records by the same rule (`store/log.rs`).
pub(crate) fn valid_at(
    bytes: &[u8],
    stream_id: StreamId,
    last_message_seq: u64,
) -> Option<(Record<'_>, usize)> {
    match decode(bytes, stream_id) {
        Ok((record, used)) => {
            let stale = record.kind == RecordKind::Message && record.seq <= last_message_seq;
            (!stale).then_some((record, used))
        }
        Err(DecodeError::Incomplete { .. } | DecodeError::Padding | DecodeError::Invalid(_)) => {
            None
        }
    }
}

/// Offset of the next valid record after `from`, or `None` if there is none.
pub(crate) async fn resync(
    reader: &mut WindowReader,
    from: u64,
    stream_id: StreamId,
    last_message_seq: u64,
) -> std::io::Result<Option<u64>> {
    let mut candidate = from + 1;
    while candidate + RECORD_HEADER_BYTES as u64 <= reader.limit {
        if candidate % ALIGNMENT == 0 {
            reader.ensure(candidate, DIRECT_IO_ALIGNMENT).await?;
            let block = reader.at(candidate);
            if block.len() >= DIRECT_IO_ALIGNMENT
                && block[..DIRECT_IO_ALIGNMENT].iter().all(|b| *b == 0)
            {
                candidate += ALIGNMENT;
                continue;
            }
        }
        reader.ensure(candidate, RECORD_HEADER_BYTES).await?;
        let len = peek_len(reader.at(candidate)).unwrap_or(0);
        if len >= RECORD_HEADER_BYTES && super::log::fits_before(candidate, len, reader.limit) {
            reader.ensure(candidate, len).await?;
            if valid_at(reader.at(candidate), stream_id, last_message_seq).is_some() {
                return Ok(Some(candidate));
            }
        }
        candidate += 1;
    }
    Ok(None)
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
    let Some(stream_id) = bytes
        .get(20..28)
        .map(|b| StreamId(u64::from_le_bytes(b.try_into().expect("8 bytes"))))
    else {
        return Vec::new();
    };
    let mut spans = Vec::new();
    let mut position = 0usize;
    while position < bytes.len() {
        match decode(&bytes[position..], stream_id) {
            Ok((record, len)) => {
                spans.push(RecordSpan {
                    kind: record.kind,
                    seq: record.seq,
                    offset: position as u64,
                    len,
                });
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
