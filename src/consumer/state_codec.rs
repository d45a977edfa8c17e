//! The persisted consumer state and its byte encoding.
//!
//! What is kept: the delivered position, the ack floor, and every pending message with
//! its first consumer sequence and delivery count (redelivered counts are the pending
//! entries with a count above 1). Deadlines are not kept: after a restart every pending
//! message gets a fresh ack wait and is redelivered when it passes.
//!
//! The shard writes these bytes after acks (and may after deliveries). Recovery
//! promise: everything at or below the persisted ack floor, and every message missing
//! from the persisted pending set below `delivered`, stays acknowledged; everything
//! pending is redelivered. A lost last write only rolls the state back to an earlier
//! one, which means duplicates, never loss. An ack the server confirmed to the client
//! (double ack) must be persisted before the confirmation is sent.
//!
//! Layout (version 1), integers as LEB128 varints:
//! `[version u8] delivered.stream delivered.consumer floor.stream floor.consumer count
//!  (stream_delta consumer_offset delivery_count)* [crc32c u32 LE of all before]`
//! where `stream_delta` is from the previous pending stream sequence (the first from the
//! floor) and `consumer_offset` is from the floor's consumer sequence. Decoding checks
//! the checksum first, then structure, then the pending-set invariants; garbage is a
//! typed error, never a panic.

use std::fmt;

use super::pending::Position;
use super::sequence::{ConsumerSeq, DeliveryCount, StreamSeq};
use crate::codec::crc;

pub const STATE_VERSION: u8 = 1;
const CHECKSUM_BYTES: usize = 4;
const VARINT_BYTES_MAX: usize = 10;
/// Smallest encoding of one pending entry (three one-byte varints).
const PENDING_RECORD_BYTES_MIN: usize = 3;

/// One pending message in persisted state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingRecord {
    pub stream_seq: StreamSeq,
    pub consumer_seq: ConsumerSeq,
    pub delivery_count: DeliveryCount,
}

/// A consumer's persisted state (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConsumerState {
    pub delivered: Position,
    pub ack_floor: Position,
    /// Ascending by stream sequence.
    pub pending: Vec<PendingRecord>,
}

/// Why bytes are not a valid consumer state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateDecodeError {
    TooShort {
        bytes: usize,
    },
    ChecksumMismatch {
        stored: u32,
        computed: u32,
    },
    UnsupportedVersion {
        version: u8,
    },
    /// A varint runs past the end or past 64 bits, at this byte offset.
    BadVarint {
        offset: usize,
    },
    /// Bytes left after the last pending record, at this offset.
    TrailingBytes {
        offset: usize,
    },
    /// More pending records claimed than the bytes could hold.
    PendingCountTooLarge {
        count: u64,
    },
    /// The numbers decode but break an invariant (floor above delivered, pending out of
    /// range or unordered, a zero delivery count).
    Inconsistent {
        what: &'static str,
    },
}

impl fmt::Display for StateDecodeError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateDecodeError::TooShort { bytes } => {
                write!(formatter, "consumer state too short ({bytes} bytes)")
            }
            StateDecodeError::ChecksumMismatch { stored, computed } => {
                write!(formatter, "consumer state checksum {stored:#010x} != computed {computed:#010x}")
            }
            StateDecodeError::UnsupportedVersion { version } => {
                write!(formatter, "unsupported consumer state version {version}")
            }
            StateDecodeError::BadVarint { offset } => {
                write!(formatter, "bad varint at byte {offset}")
            }
            StateDecodeError::TrailingBytes { offset } => {
                write!(formatter, "trailing bytes at {offset}")
            }
            StateDecodeError::PendingCountTooLarge { count } => {
                write!(formatter, "pending count {count} too large")
            }
            StateDecodeError::Inconsistent { what } => {
                write!(formatter, "inconsistent consumer state: {what}")
            }
        }
    }
}

impl std::error::Error for StateDecodeError {}

impl ConsumerState {
    /// Encodes the state; panics if it breaks the invariants (a bug in the caller).
    pub fn encode(&self) -> Vec<u8> {
        if let Err(error) = self.validate() {
            panic!("encoding an invalid consumer state: {error}");
        }
        let mut out = Vec::with_capacity(1 + 5 * VARINT_BYTES_MAX + self.pending.len() * 6 + CHECKSUM_BYTES);
        out.push(STATE_VERSION);
        for value in [
            self.delivered.stream.get(),
            self.delivered.consumer.get(),
            self.ack_floor.stream.get(),
            self.ack_floor.consumer.get(),
            self.pending.len() as u64,
        ] {
            put_varint(&mut out, value);
        }
        let mut previous = self.ack_floor.stream;
        for record in &self.pending {
            put_varint(&mut out, record.stream_seq.get() - previous.get());
            put_varint(&mut out, record.consumer_seq.get() - self.ack_floor.consumer.get());
            put_varint(&mut out, record.delivery_count);
            previous = record.stream_seq;
        }
        let checksum = crc::crc32c(&out);
        out.extend_from_slice(&checksum.to_le_bytes());
        out
    }

    /// Decodes and validates bytes written by [`ConsumerState::encode`].
    pub fn decode(bytes: &[u8]) -> Result<ConsumerState, StateDecodeError> {
        if bytes.len() < 1 + CHECKSUM_BYTES {
            return Err(StateDecodeError::TooShort { bytes: bytes.len() });
        }
        let (body, trailer) = bytes.split_at(bytes.len() - CHECKSUM_BYTES);
        let stored = u32::from_le_bytes(trailer.try_into().expect("4 bytes"));
        let computed = crc::crc32c(body);
        if stored != computed {
            return Err(StateDecodeError::ChecksumMismatch { stored, computed });
        }
        if body[0] != STATE_VERSION {
            return Err(StateDecodeError::UnsupportedVersion { version: body[0] });
        }
        let mut reader = Reader { bytes: body, offset: 1 };
        let delivered = Position { stream: StreamSeq(reader.varint()?), consumer: ConsumerSeq(reader.varint()?) };
        let ack_floor = Position { stream: StreamSeq(reader.varint()?), consumer: ConsumerSeq(reader.varint()?) };
        let count = reader.varint()?;
        if count > (reader.remaining() / PENDING_RECORD_BYTES_MIN) as u64 {
            return Err(StateDecodeError::PendingCountTooLarge { count });
        }
        let mut pending = Vec::with_capacity(count as usize);
        let mut previous = ack_floor.stream.get();
        for _ in 0..count {
            let stream_seq = add(previous, reader.varint()?)?;
            let consumer_seq = add(ack_floor.consumer.get(), reader.varint()?)?;
            let delivery_count = reader.varint()?;
            pending.push(PendingRecord {
                stream_seq: StreamSeq(stream_seq),
                consumer_seq: ConsumerSeq(consumer_seq),
                delivery_count,
            });
            previous = stream_seq;
        }
        if reader.remaining() > 0 {
            return Err(StateDecodeError::TrailingBytes { offset: reader.offset });
        }
        let state = ConsumerState { delivered, ack_floor, pending };
        state.validate()?;
        Ok(state)
    }

    /// The pending-set invariants (DESIGN §8) on persisted state.
    pub fn validate(&self) -> Result<(), StateDecodeError> {
        let inconsistent = |what| Err(StateDecodeError::Inconsistent { what });
        let (floor, delivered) = (self.ack_floor, self.delivered);
        if floor.stream > delivered.stream || floor.consumer > delivered.consumer {
            return inconsistent("ack floor above delivered");
        }
        let mut previous = floor.stream;
        for record in &self.pending {
            if record.stream_seq <= previous {
                return inconsistent("pending not ascending above the ack floor");
            }
            if record.stream_seq > delivered.stream {
                return inconsistent("pending above delivered");
            }
            if record.consumer_seq <= floor.consumer || record.consumer_seq > delivered.consumer {
                return inconsistent("pending consumer sequence out of range");
            }
            if record.delivery_count == 0 {
                return inconsistent("zero delivery count");
            }
            previous = record.stream_seq;
        }
        Ok(())
    }
}

fn add(base: u64, delta: u64) -> Result<u64, StateDecodeError> {
    base.checked_add(delta).ok_or(StateDecodeError::Inconsistent { what: "sequence overflow" })
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl Reader<'_> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.offset
    }

    fn varint(&mut self) -> Result<u64, StateDecodeError> {
        let start = self.offset;
        let mut value: u64 = 0;
        for index in 0..VARINT_BYTES_MAX {
            let Some(&byte) = self.bytes.get(self.offset) else {
                return Err(StateDecodeError::BadVarint { offset: start });
            };
            self.offset += 1;
            let bits = u64::from(byte & 0x7f);
            if index == VARINT_BYTES_MAX - 1 && bits > 1 {
                return Err(StateDecodeError::BadVarint { offset: start });
            }
            value |= bits << (7 * index);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(StateDecodeError::BadVarint { offset: start })
    }
}
