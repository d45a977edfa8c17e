//! The one way through a segment's bytes: a cursor that yields each stretch of the file as
//! a [`Step`] — a valid record, padding, or damage — in file order.
//!
//! Recovery's scan (`scan.rs`) and the read path (`SegmentLog::read_message`) both walk
//! with it, so a record recovery replays is the record a later read finds at that place,
//! and damage recovery reported is the damage a read runs into.
//!
//! What counts as a record, given the walker's floor (the highest message sequence
//! already taken):
//! * a record that decodes (length, stream id, checksum, kind) and, if a message, has a
//!   sequence above the floor.
//! * a message at or below the floor where a record is due is a stale copy, stepped over
//!   whole ([`Step::Stale`]): the older copy of a tail block (`store/tail_block.rs`), or
//!   a copy a lost or misdirected write left. Every byte of it passed the checksum, so
//!   it is the old content whole and no newer record starts inside it. A search for the
//!   next record after damage never stops at one: it looks for records above the floor.
//! * bad bytes with, one block on, a valid record (a message above the floor, if a message) after
//!   the same records as before them, and every record after them in the block the same
//!   bytes one block on (at least one at a block's start), are a torn copy of a tail block
//!   with its other copy following: the rest of the block is stale too, not damage
//!   (`SegmentWalker::copy_follows`). Nor is a delete or front record whose bytes also
//!   lie at the same place in the block before a record to resume at after bad bytes: it
//!   is a tail block's second copy (`SegmentWalker::copy_of_block_before`).
//! * a zero length not on a block boundary, or a zero first 1-3 bytes before a boundary
//!   (the group ended there: a length read there would take in the next group's first
//!   bytes) is padding up to the boundary. The short form is tried only after the bytes
//!   failed as a record: a record starting 1-3 bytes before a boundary may have a zero
//!   first byte (a length of 2048 is `00 08 00 00`).
//! * anything else is damage. The walker searches forward, byte by byte (skipping zero
//!   blocks whole), for the next valid record: found, the bytes in between are
//!   [`Step::Damage`]; not found, the damage runs to the end of the file
//!   (`torn: true`), unless it began with a zero length on a block boundary — that is
//!   where written data ends, and the walk is over.

use std::io;
use std::ops::Range;

use super::record::{decode, peek_len, DecodeError, Record, RecordKind, StreamId, RECORD_HEADER_BYTES};
use super::scan::RecordSpan;
use super::segment::WindowReader;
use crate::limits::RECORD_BYTES_MAX;

/// One stretch of a segment, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A valid record (read it with [`record_at`]).
    Record(RecordSpan),
    /// Zeros that end a group, up to the next block boundary.
    Padding { range: Range<u64> },
    /// A valid message at or below the floor, or the rest of a torn copy of a tail block
    /// whose other copy follows: neither taken nor damage.
    Stale { range: Range<u64> },
    /// Bytes that are not valid records. `torn`: nothing valid follows them in the file
    /// (`range` runs to its end), and the walk is over.
    Damage { range: Range<u64>, torn: bool },
}

/// A cursor over one segment file's bytes (read through a [`WindowReader`], whose `limit`
/// is where the walk ends).
#[derive(Debug, Clone)]
pub struct SegmentWalker {
    stream_id: StreamId,
    /// Groups start on multiples of this ([`super::LogConfig::block_bytes`]).
    block_bytes: u64,
    position: u64,
    /// The highest message sequence taken so far: messages not above it are stale.
    floor: u64,
    /// Offset just past the last valid record.
    valid_end: u64,
    finished: bool,
}

impl SegmentWalker {
    /// A walk from `start`, which must be a record start (or a block boundary), knowing
    /// that messages up to `floor` come before it.
    pub fn new(stream_id: StreamId, block_bytes: u64, start: u64, floor: u64) -> SegmentWalker {
        SegmentWalker { stream_id, block_bytes, position: start, floor, valid_end: start, finished: false }
    }

    /// Where the next step starts.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The highest message sequence taken so far (or given as the floor).
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// Offset just past the last valid record (the start, before any).
    pub fn valid_end(&self) -> u64 {
        self.valid_end
    }

    /// The next stretch of the file; `None` once the walk is over (the reader's limit, or
    /// a zero block with no valid record after it: the end of written data).
    pub async fn next(&mut self, reader: &mut WindowReader) -> io::Result<Option<Step>> {
        if self.finished || self.position >= reader.limit {
            return Ok(None);
        }
        let position = self.position;
        reader.ensure(position, RECORD_HEADER_BYTES).await?;
        // Fewer than 4 bytes before the limit: no length, not padding by length.
        let len = peek_len(reader.at(position)).unwrap_or(usize::MAX);
        if len == 0 && position % self.block_bytes != 0 {
            return Ok(Some(self.pad_to_boundary()));
        }
        if len != 0 {
            // A length that cannot fit (short padding read together with the next group's
            // first bytes, e.g. `00 00 00 BD` = 3.2 GB) has nothing to read for it: reading
            // it would pull in the rest of the segment at every such boundary.
            if fits_before(position, len, reader.limit) {
                reader.ensure(position, len).await?;
            }
            match self.decoded_at(reader.at(position), position) {
                Some((span, false)) => {
                    if span.kind == RecordKind::Message {
                        self.floor = span.seq;
                    }
                    self.position = position + span.len as u64;
                    self.valid_end = self.position;
                    return Ok(Some(Step::Record(span)));
                }
                Some((span, true)) => {
                    self.position = position + span.len as u64;
                    return Ok(Some(Step::Stale { range: position..self.position }));
                }
                None => {}
            }
        }
        if self.is_short_padding(reader.at(position), position) {
            return Ok(Some(self.pad_to_boundary()));
        }
        if self.copy_follows(reader, position).await? {
            self.position = position + self.block_bytes;
            return Ok(Some(Step::Stale { range: position..self.position }));
        }
        match self.resync(reader, position).await? {
            Some(next) => {
                self.position = next;
                Ok(Some(Step::Damage { range: position..next, torn: false }))
            }
            None => {
                self.finished = true;
                self.position = reader.limit;
                if len == 0 {
                    return Ok(None);
                }
                Ok(Some(Step::Damage { range: position..reader.limit, torn: true }))
            }
        }
    }

    /// Whether bad bytes at `position` are a torn copy of a tail block whose other copy,
    /// in the next block, goes on where this one broke off (`store/tail_block.rs`): one
    /// block on lies a valid record (a message above the floor, if a message) after the same
    /// records as here, and every record after the bad bytes in this block has the same
    /// bytes one block on (at least one, when no record precedes them in the block). This
    /// copy was being written when it tore, and nothing in it was acknowledged past what
    /// the other holds: the rest of this block is not damage, and the walk goes on in the
    /// next. A newest copy damaged later (bit rot) holds records past the older copy's,
    /// over its zeros: not taken for a torn one, so the damage is reported and the records
    /// after it read.
    async fn copy_follows(&self, reader: &mut WindowReader, position: u64) -> io::Result<bool> {
        let block = self.block_bytes;
        let next = position + block;
        let start = position - position % block;
        if next + RECORD_HEADER_BYTES as u64 > reader.limit {
            return Ok(false);
        }
        reader.ensure(start, 2 * block as usize).await?;
        let len = peek_len(reader.at(next)).unwrap_or(0);
        if !fits_before(next, len, reader.limit) {
            return Ok(false);
        }
        reader.ensure(start, (next - start) as usize + len).await?;
        // Valid and not stale: a message above the floor, not necessarily the next
        // sequence (a skip's tombstone may come between).
        if self.valid_at(reader.at(next), next).is_none() {
            return Ok(false);
        }
        let prefix = (position - start) as usize;
        if reader.at(start).get(..prefix) != reader.at(start + block).get(..prefix) {
            return Ok(false);
        }
        reader.ensure(start, 2 * block as usize).await?;
        Ok(match self.records_one_block_on(reader, position) {
            Some(records) => prefix > 0 || records > 0,
            None => false,
        })
    }

    /// How many records decode after `position` in its block, each with the same bytes
    /// one block on; `None` when one does not.
    fn records_one_block_on(&self, reader: &WindowReader, position: u64) -> Option<usize> {
        let block = self.block_bytes;
        let end = position - position % block + block;
        let mut records = 0;
        let mut candidate = position + 1;
        while candidate + RECORD_HEADER_BYTES as u64 <= end {
            let bytes = reader.at(candidate);
            let len = peek_len(bytes).filter(|len| *len >= RECORD_HEADER_BYTES && candidate + *len as u64 <= end);
            let decoded = len.filter(|len| *len <= bytes.len() && decode(&bytes[..*len], self.stream_id).is_ok());
            let Some(len) = decoded else {
                candidate += 1;
                continue;
            };
            if reader.at(candidate + block).get(..len) != Some(&bytes[..len]) {
                return None;
            }
            records += 1;
            candidate += len as u64;
        }
        Some(records)
    }

    fn pad_to_boundary(&mut self) -> Step {
        let start = self.position;
        self.position = start.div_ceil(self.block_bytes) * self.block_bytes;
        Step::Padding { range: start..self.position }
    }

    /// Whether `bytes` (at unaligned `position`, not a valid record) are the zeros that end
    /// a group 1-3 bytes before a block boundary.
    fn is_short_padding(&self, bytes: &[u8], position: u64) -> bool {
        if position % self.block_bytes == 0 {
            return false;
        }
        let to_boundary = (self.block_bytes - position % self.block_bytes) as usize;
        let length_field = &bytes[..bytes.len().min(to_boundary).min(4)];
        length_field.iter().all(|b| *b == 0)
    }

    /// The record at the start of `bytes` if it is valid and not stale.
    fn valid_at(&self, bytes: &[u8], offset: u64) -> Option<RecordSpan> {
        self.decoded_at(bytes, offset).and_then(|(span, stale)| (!stale).then_some(span))
    }

    /// The record at the start of `bytes` if it is valid, and whether it is a stale
    /// message (at or below the floor).
    fn decoded_at(&self, bytes: &[u8], offset: u64) -> Option<(RecordSpan, bool)> {
        match decode(bytes, self.stream_id) {
            Ok((record, len)) => {
                let stale = record.kind == RecordKind::Message && record.seq <= self.floor;
                Some((RecordSpan { kind: record.kind, seq: record.seq, offset, len }, stale))
            }
            Err(DecodeError::Incomplete { .. } | DecodeError::Padding | DecodeError::Invalid(_)) => None,
        }
    }

    /// Offset of the next valid record after `from`, or `None` if there is none.
    async fn resync(&self, reader: &mut WindowReader, from: u64) -> io::Result<Option<u64>> {
        let block = self.block_bytes;
        let mut candidate = from + 1;
        while candidate + RECORD_HEADER_BYTES as u64 <= reader.limit {
            if candidate % block == 0 {
                reader.ensure(candidate, block as usize).await?;
                let bytes = reader.at(candidate);
                if bytes.len() >= block as usize && bytes[..block as usize].iter().all(|b| *b == 0) {
                    candidate += block;
                    continue;
                }
            }
            reader.ensure(candidate, RECORD_HEADER_BYTES).await?;
            let len = peek_len(reader.at(candidate)).unwrap_or(0);
            if len >= RECORD_HEADER_BYTES && fits_before(candidate, len, reader.limit) {
                reader.ensure(candidate, len).await?;
                if let Some(span) = self.valid_at(reader.at(candidate), candidate) {
                    if span.kind == RecordKind::Message || !self.copy_of_block_before(reader, candidate, len).await? {
                        return Ok(Some(candidate));
                    }
                }
            }
            candidate += 1;
        }
        Ok(None)
    }

    /// Whether the `len` bytes at `position` (a valid record other than a message) are
    /// also the bytes at the same place in the block before: the second copy of a tail
    /// block's delete or front record, whose first copy the walk has passed (a torn
    /// rewrite of either copy leaves such bytes after bad ones). Not a record to resume at
    /// after bad bytes: bad bytes followed only by copies are a torn tail, not damage. A
    /// stale message is known by its sequence instead.
    async fn copy_of_block_before(&self, reader: &mut WindowReader, position: u64, len: usize) -> io::Result<bool> {
        let block = self.block_bytes;
        if position < block {
            return Ok(false);
        }
        reader.ensure(position - block, block as usize + len).await?;
        let before = reader.at(position - block).get(..len);
        Ok(before.is_some() && before == reader.at(position).get(..len))
    }
}

/// The record of `span`, which the walker just yielded from `reader` (still in its window).
pub fn record_at<'r>(reader: &'r WindowReader, span: &RecordSpan, stream_id: StreamId) -> Record<'r> {
    super::record::view(&reader.at(span.offset)[..span.len], stream_id)
}

/// Whether a record of `len` bytes at `position` can lie within the first `end` bytes of a
/// segment (and is no bigger than any record).
pub(super) fn fits_before(position: u64, len: usize, end: u64) -> bool {
    len <= RECORD_BYTES_MAX && position.saturating_add(len as u64) <= end
}
