//! The on-disk record: self-checking (CRC32C) and self-identifying (stream id, sequence).
//!
//! Layout, little-endian, records packed back to back inside a segment:
//!
//! ```text
//! 0  len u32          total encoded length (header + subject + headers + payload)
//! 4  crc u32          CRC32C over bytes [0,4) and [8,len)
//! 8  kind u8          RecordKind
//! 9  reserved u8      0
//! 10 subject_len u16
//! 12 headers_len u32
//! 16 payload_len u32
//! 20 stream_id u64
//! 28 seq u64
//! 36 timestamp_ns i64
//! 44 subject, headers, payload
//! ```
//!
//! A `len` of zero is padding up to the next [`DIRECT_IO_ALIGNMENT`] boundary: every group
//! commit starts on an aligned block, a fresh one or the other copy of a tail block
//! (`store/tail_block.rs`), never over the newest durable copy of acknowledged records.
//! Decoding is a pure function over a byte slice: `Incomplete` (more bytes needed) is
//! distinct from `Invalid` (these bytes are not a record of this stream).

use crate::codec::crc;
use crate::limits::RECORD_BYTES_MAX;

/// Bytes before the subject.
pub const RECORD_HEADER_BYTES: usize = 44;

/// Identifies a stream inside its records, so stale or misdirected data is detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamId(pub u64);

/// What a record means when replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// A published message; `seq` is its sequence.
    Message = 1,
    /// Tombstone: message `seq` was deleted.
    Delete = 2,
    /// Every message below `seq` was removed (limits, age, purge up to a sequence).
    Front = 3,
    /// A purge request, replayed as issued: subject = filter, seq = up-to (0: none),
    /// payload = keep (u64, `u64::MAX`: none).
    Purge = 4,
}

impl RecordKind {
    fn from_byte(byte: u8) -> Option<RecordKind> {
        match byte {
            1 => Some(RecordKind::Message),
            2 => Some(RecordKind::Delete),
            3 => Some(RecordKind::Front),
            4 => Some(RecordKind::Purge),
            _ => None,
        }
    }
}

/// A record borrowed from a buffer (or about to be encoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub kind: RecordKind,
    pub stream_id: StreamId,
    pub seq: u64,
    pub timestamp_ns: i64,
    pub subject: &'a [u8],
    pub headers: &'a [u8],
    pub payload: &'a [u8],
}

/// Why bytes are not a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The buffer ends before the record does; `needed` bytes in total are required.
    Incomplete { needed: usize },
    /// A zero length: padding until the next aligned block.
    Padding,
    /// Not a valid record of the expected stream.
    Invalid(InvalidReason),
}

/// Which check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidReason {
    Length,
    Checksum,
    Kind,
    StreamId,
}

/// Encoded size of a record with these field sizes.
pub fn encoded_len(subject_len: usize, headers_len: usize, payload_len: usize) -> usize {
    RECORD_HEADER_BYTES + subject_len + headers_len + payload_len
}

/// Appends the encoding of `record` to `out`. The caller checked sizes against the limits.
pub fn encode_into(record: &Record<'_>, out: &mut Vec<u8>) {
    let start = out.len();
    let len = encoded_len(record.subject.len(), record.headers.len(), record.payload.len());
    out.resize(start + len, 0);
    encode_to(record, &mut out[start..]);
}

/// Writes the encoding of `record` into `out`, which is exactly
/// [`encoded_len`] bytes long. The caller checked sizes against the limits.
///
/// The CRC is taken from the header and the caller's slices, not read back from `out`:
/// `out` may be memory the CPU does not hold yet (a group's DMA buffer, last read by the
/// disk), and reading it back would wait for every line the copies just missed.
pub fn encode_to(record: &Record<'_>, out: &mut [u8]) {
    let len = encoded_len(record.subject.len(), record.headers.len(), record.payload.len());
    assert!(len <= RECORD_BYTES_MAX && record.subject.len() <= u16::MAX as usize);
    assert_eq!(out.len(), len, "record buffer of the wrong size");
    let mut header = [0u8; RECORD_HEADER_BYTES];
    header[0..4].copy_from_slice(&(len as u32).to_le_bytes());
    header[8] = record.kind as u8;
    header[10..12].copy_from_slice(&(record.subject.len() as u16).to_le_bytes());
    header[12..16].copy_from_slice(&(record.headers.len() as u32).to_le_bytes());
    header[16..20].copy_from_slice(&(record.payload.len() as u32).to_le_bytes());
    header[20..28].copy_from_slice(&record.stream_id.0.to_le_bytes());
    header[28..36].copy_from_slice(&record.seq.to_le_bytes());
    header[36..44].copy_from_slice(&record.timestamp_ns.to_le_bytes());
    let crc = checksum_parts(&header, &[record.subject, record.headers, record.payload]);
    header[4..8].copy_from_slice(&crc.to_le_bytes());
    let (head, body) = out.split_at_mut(RECORD_HEADER_BYTES);
    head.copy_from_slice(&header);
    let (subject, rest) = body.split_at_mut(record.subject.len());
    let (headers, payload) = rest.split_at_mut(record.headers.len());
    subject.copy_from_slice(record.subject);
    headers.copy_from_slice(record.headers);
    payload.copy_from_slice(record.payload);
}

fn checksum(encoded: &[u8]) -> u32 {
    checksum_parts(encoded, &[])
}

/// The record CRC: over bytes [0,4) and [8,..) of `start` (the CRC's own field skipped),
/// then over each of `rest` in turn.
fn checksum_parts(start: &[u8], rest: &[&[u8]]) -> u32 {
    let crc = crc::crc32c_append(crc::crc32c(&start[0..4]), &start[8..]);
    rest.iter().fold(crc, |crc, part| crc::crc32c_append(crc, part))
}

fn u16_at(buf: &[u8], at: usize) -> usize {
    u16::from_le_bytes([buf[at], buf[at + 1]]) as usize
}

fn u32_at(buf: &[u8], at: usize) -> usize {
    u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes")) as usize
}

fn u64_at(buf: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"))
}

/// Length announced by the record at the start of `buf`, if 4 bytes are present.
pub fn peek_len(buf: &[u8]) -> Option<usize> {
    (buf.len() >= 4).then(|| u32_at(buf, 0))
}

/// Decodes the record at the start of `buf`, returning it and its encoded length.
pub fn decode(buf: &[u8], expected: StreamId) -> Result<(Record<'_>, usize), DecodeError> {
    let Some(len) = peek_len(buf) else {
        return Err(DecodeError::Incomplete { needed: 4 });
    };
    if len == 0 {
        return Err(DecodeError::Padding);
    }
    if !(RECORD_HEADER_BYTES..=RECORD_BYTES_MAX).contains(&len) {
        return Err(DecodeError::Invalid(InvalidReason::Length));
    }
    if buf.len() < RECORD_HEADER_BYTES {
        return Err(DecodeError::Incomplete { needed: RECORD_HEADER_BYTES });
    }
    if u64_at(buf, 20) != expected.0 {
        return Err(DecodeError::Invalid(InvalidReason::StreamId));
    }
    let (subject_len, headers_len, payload_len) = (u16_at(buf, 10), u32_at(buf, 12), u32_at(buf, 16));
    if encoded_len(subject_len, headers_len, payload_len) != len {
        return Err(DecodeError::Invalid(InvalidReason::Length));
    }
    if buf.len() < len {
        return Err(DecodeError::Incomplete { needed: len });
    }
    if checksum(&buf[..len]) != u32_at(buf, 4) as u32 {
        return Err(DecodeError::Invalid(InvalidReason::Checksum));
    }
    RecordKind::from_byte(buf[8]).ok_or(DecodeError::Invalid(InvalidReason::Kind))?;
    Ok((view(&buf[..len], expected), len))
}

/// The fields of `encoded`, a whole record [`decode`] accepted (its checks are not
/// repeated: a walk that validated the bytes reads them again without a second checksum).
pub fn view(encoded: &[u8], stream_id: StreamId) -> Record<'_> {
    let (subject_len, headers_len) = (u16_at(encoded, 10), u32_at(encoded, 12));
    let subject_end = RECORD_HEADER_BYTES + subject_len;
    let headers_end = subject_end + headers_len;
    Record {
        kind: RecordKind::from_byte(encoded[8]).expect("a decoded record's kind"),
        stream_id,
        seq: u64_at(encoded, 28),
        timestamp_ns: u64_at(encoded, 36) as i64,
        subject: &encoded[RECORD_HEADER_BYTES..subject_end],
        headers: &encoded[subject_end..headers_end],
        payload: &encoded[headers_end..],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Record<'static> {
        Record {
            kind: RecordKind::Message,
            stream_id: StreamId(7),
            seq: 42,
            timestamp_ns: 1_700_000_000_000_000_000,
            subject: b"orders.eu",
            headers: b"NATS/1.0\r\nNats-Msg-Id: a\r\n\r\n",
            payload: b"hello",
        }
    }

    #[test]
    fn round_trips() {
        let mut out = Vec::new();
        encode_into(&sample(), &mut out);
        let (record, len) = decode(&out, StreamId(7)).expect("decodes");
        assert_eq!(len, out.len());
        assert_eq!(record, sample());
    }

    #[test]
    fn encoding_into_dirty_memory_leaves_none_of_it() {
        // A group's DMA memory holds whatever the last group left there.
        let record = sample();
        let len = encoded_len(record.subject.len(), record.headers.len(), record.payload.len());
        let mut clean = Vec::new();
        encode_into(&record, &mut clean);
        for stale in [0x00, 0xFF, 0xA5] {
            let mut dirty = vec![stale; len];
            encode_to(&record, &mut dirty);
            assert_eq!(dirty, clean, "stale byte {stale:#x}");
        }
        assert_eq!(checksum(&clean), u32_at(&clean, 4) as u32);
    }

    #[test]
    fn every_prefix_is_incomplete_and_every_bit_flip_is_detected() {
        let mut out = Vec::new();
        encode_into(&sample(), &mut out);
        for cut in 1..out.len() {
            assert!(matches!(decode(&out[..cut], StreamId(7)), Err(DecodeError::Incomplete { .. })));
        }
        for bit in 0..out.len() * 8 {
            let mut damaged = out.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            assert!(decode(&damaged, StreamId(7)).is_err(), "flip of bit {bit} undetected");
        }
    }

    #[test]
    fn other_stream_is_rejected() {
        let mut out = Vec::new();
        encode_into(&sample(), &mut out);
        assert_eq!(decode(&out, StreamId(8)), Err(DecodeError::Invalid(InvalidReason::StreamId)));
    }
}
