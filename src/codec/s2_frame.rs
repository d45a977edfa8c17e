//! The S2 framing format (a superset of Snappy's framing): a stream identifier chunk, then
//! chunks of `type (1 byte) | length (3 bytes LE) | body`. Data chunks carry a masked
//! CRC-32C of their decoded bytes, then either an S2 block (type 0x00) or the bytes as they
//! are (type 0x01). Types 0x80..=0xfe are skippable (padding, S2's index); 0x02..=0x7f are
//! reserved and refused. A stream may be several streams back to back, as S2 readers accept.
//!
//! `FrameDecoder::decode` takes whatever bytes have arrived and consumes whole chunks only:
//! an incomplete chunk is `Ok(0)` (wait for more), never an error.

use super::crc;
use super::s2_block::{self, BlockError, BLOCK_DECODED_BYTES_MAX};

/// The identifier an S2 writer begins with.
pub const S2_IDENTIFIER: &[u8; 6] = b"S2sTwO";
/// The identifier a Snappy writer begins with; S2 readers accept it too.
pub const SNAPPY_IDENTIFIER: &[u8; 6] = b"sNaPpY";

pub(crate) const CHUNK_HEADER_BYTES: usize = 4;
const CHECKSUM_BYTES: usize = 4;
const CHUNK_COMPRESSED: u8 = 0x00;
const CHUNK_UNCOMPRESSED: u8 = 0x01;
const CHUNK_PADDING: u8 = 0xfe;
const CHUNK_IDENTIFIER: u8 = 0xff;
/// The decoded bytes the encoder puts in one chunk (Snappy's limit, so Snappy reads it too).
pub const ENCODE_CHUNK_BYTES: usize = 64 << 10;

/// Why a framed stream did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The stream does not begin with an S2 or Snappy stream identifier.
    NotS2,
    /// A reserved unskippable chunk type.
    ReservedChunk(u8),
    /// A chunk too short for its checksum, or a data chunk larger than a block may be.
    BadChunkLength { chunk_type: u8, length: usize },
    /// A compressed block that does not decode.
    Block(BlockError),
    /// The decoded bytes do not match the chunk's checksum.
    ChecksumMismatch,
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::NotS2 => write!(f, "not an S2 stream"),
            FrameError::ReservedChunk(kind) => write!(f, "reserved S2 chunk type {kind:#x}"),
            FrameError::BadChunkLength { chunk_type, length } => {
                write!(f, "S2 chunk type {chunk_type:#x} has a bad length {length}")
            }
            FrameError::Block(error) => write!(f, "corrupt S2 block: {error:?}"),
            FrameError::ChecksumMismatch => write!(f, "S2 chunk checksum mismatch"),
        }
    }
}

/// Decodes a framed stream chunk by chunk. Remembers only whether the identifier was seen.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    identified: bool,
}

impl FrameDecoder {
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    /// The length of the chunk `input` begins with, header included, once its header is
    /// there.
    pub fn chunk_len(input: &[u8]) -> Option<usize> {
        let header = input.get(..CHUNK_HEADER_BYTES)?;
        Some(CHUNK_HEADER_BYTES + (usize::from(header[1]) | usize::from(header[2]) << 8 | usize::from(header[3]) << 16))
    }

    /// Decodes the whole chunks at the start of `input`, appending their bytes to `out`;
    /// returns how many input bytes it consumed (the rest is an incomplete chunk). On error
    /// `out` holds the bytes of the chunks before the bad one.
    pub fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, FrameError> {
        let mut consumed = 0;
        while let Some(used) = self.decode_chunk(&input[consumed..], out)? {
            consumed += used;
        }
        Ok(consumed)
    }

    /// One chunk: `Ok(None)` when it has not all arrived.
    fn decode_chunk(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<Option<usize>, FrameError> {
        let Some(header) = input.get(..CHUNK_HEADER_BYTES) else {
            if !self.identified && !input.is_empty() && input[0] != CHUNK_IDENTIFIER {
                return Err(FrameError::NotS2);
            }
            return Ok(None);
        };
        let chunk_type = header[0];
        let length = Self::chunk_len(header).expect("a whole header") - CHUNK_HEADER_BYTES;
        if !self.identified && chunk_type != CHUNK_IDENTIFIER {
            return Err(FrameError::NotS2);
        }
        let Some(body) = input.get(CHUNK_HEADER_BYTES..CHUNK_HEADER_BYTES + length) else {
            check_length(chunk_type, length)?;
            return Ok(None);
        };
        match chunk_type {
            CHUNK_IDENTIFIER => {
                if body != S2_IDENTIFIER && body != SNAPPY_IDENTIFIER {
                    return Err(FrameError::NotS2);
                }
                self.identified = true;
            }
            CHUNK_COMPRESSED | CHUNK_UNCOMPRESSED => {
                check_length(chunk_type, length)?;
                let (checksum, data) = body.split_at(CHECKSUM_BYTES);
                let expected = u32::from_le_bytes([checksum[0], checksum[1], checksum[2], checksum[3]]);
                let start = out.len();
                if chunk_type == CHUNK_COMPRESSED {
                    s2_block::decode(data, out).map_err(FrameError::Block)?;
                } else {
                    out.extend_from_slice(data);
                }
                if masked_crc(&out[start..]) != expected {
                    out.truncate(start);
                    return Err(FrameError::ChecksumMismatch);
                }
            }
            0x02..=0x7f => return Err(FrameError::ReservedChunk(chunk_type)),
            0x80..=CHUNK_PADDING => {}
        }
        Ok(Some(CHUNK_HEADER_BYTES + length))
    }
}

/// Refuses a data chunk's length before its body arrives, so a hostile length is not waited for.
fn check_length(chunk_type: u8, length: usize) -> Result<(), FrameError> {
    let bad = match chunk_type {
        CHUNK_IDENTIFIER => length != S2_IDENTIFIER.len(),
        CHUNK_UNCOMPRESSED => !(CHECKSUM_BYTES..=CHECKSUM_BYTES + BLOCK_DECODED_BYTES_MAX).contains(&length),
        // A compressed block is never much larger than its input: bound it generously.
        CHUNK_COMPRESSED => !(CHECKSUM_BYTES + 1..=CHECKSUM_BYTES + 2 * BLOCK_DECODED_BYTES_MAX).contains(&length),
        _ => false,
    };
    if bad {
        return Err(FrameError::BadChunkLength { chunk_type, length });
    }
    Ok(())
}

/// CRC-32C, masked as Snappy's framing format defines.
pub fn masked_crc(data: &[u8]) -> u32 {
    let crc = crc::crc32c(data);
    (crc.rotate_right(15)).wrapping_add(0xa282_ead8)
}

/// Appends the stream identifier chunk: the first bytes of every framed stream.
pub fn encode_identifier(out: &mut Vec<u8>) {
    out.extend_from_slice(&[CHUNK_IDENTIFIER, S2_IDENTIFIER.len() as u8, 0, 0]);
    out.extend_from_slice(S2_IDENTIFIER);
}

/// Appends `data` as data chunks of at most `ENCODE_CHUNK_BYTES` decoded bytes each:
/// compressed when that is smaller, else stored as they are.
pub fn encode_data(data: &[u8], out: &mut Vec<u8>) {
    // Each chunk is encoded in place after its header, and stored as it is when that would
    // not be smaller: no block buffer to copy from, and room reserved up front for the
    // uncompressed case (growing `out` a push at a time copied it several times per chunk).
    let pieces = data.len().div_ceil(ENCODE_CHUNK_BYTES);
    out.reserve(data.len() + pieces * (CHUNK_HEADER_BYTES + CHECKSUM_BYTES));
    for piece in data.chunks(ENCODE_CHUNK_BYTES) {
        let header_at = out.len();
        out.extend_from_slice(&[0; CHUNK_HEADER_BYTES]);
        out.extend_from_slice(&masked_crc(piece).to_le_bytes());
        let body_at = out.len();
        let compressed = s2_block::encode_within(piece, out, piece.len() - 1);
        if !compressed {
            out.extend_from_slice(piece);
        }
        let chunk_type = if compressed { CHUNK_COMPRESSED } else { CHUNK_UNCOMPRESSED };
        let length = (CHECKSUM_BYTES + out.len() - body_at) as u32;
        out[header_at] = chunk_type;
        out[header_at + 1..header_at + CHUNK_HEADER_BYTES].copy_from_slice(&length.to_le_bytes()[..3]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORDED: &[u8] = include_bytes!("../../tests/data/backup/nats-server-2.15.1-T.s2");

    fn decode_all(input: &[u8]) -> Result<Vec<u8>, FrameError> {
        let mut out = Vec::new();
        let used = FrameDecoder::new().decode(input, &mut out)?;
        assert_eq!(used, input.len(), "a whole stream is consumed");
        Ok(out)
    }

    #[test]
    fn a_nats_server_backup_decodes() {
        let decoded = decode_all(RECORDED).expect("nats-server 2.15.1 stream decodes");
        assert!(decoded.starts_with(b"NATSARC1"));
        assert!(decoded.windows(10).any(|window| window == b"state.json"));
    }

    #[test]
    fn any_split_of_the_input_decodes_the_same() {
        let whole = decode_all(RECORDED).unwrap();
        for split in [1, 3, 4, 10, 11, 200, RECORDED.len() - 1] {
            let mut decoder = FrameDecoder::new();
            let mut out = Vec::new();
            let used = decoder.decode(&RECORDED[..split], &mut out).unwrap();
            let rest = decoder.decode(&RECORDED[used..], &mut out).unwrap();
            assert_eq!(used + rest, RECORDED.len());
            assert_eq!(out, whole, "split at {split}");
        }
    }

    #[test]
    fn own_streams_round_trip_and_concatenate() {
        let data = b"NATSARC1 some archive bytes ".repeat(5000);
        let mut framed = Vec::new();
        encode_identifier(&mut framed);
        encode_data(&data, &mut framed);
        encode_identifier(&mut framed);
        encode_data(b"tail", &mut framed);
        let mut expected = data.clone();
        expected.extend_from_slice(b"tail");
        assert_eq!(decode_all(&framed).unwrap(), expected);
        assert!(framed.len() < data.len() / 4);
    }

    #[test]
    fn incompressible_data_is_stored_as_it_is() {
        let noise = super::super::s2_block::tests::random_bytes(150_000);
        let mut framed = Vec::new();
        encode_identifier(&mut framed);
        let identifier = framed.len();
        encode_data(&noise, &mut framed);
        // Three chunks (64 KiB, 64 KiB, the rest), each a header, a checksum and the bytes.
        assert_eq!(framed.len() - identifier, noise.len() + 3 * (CHUNK_HEADER_BYTES + CHECKSUM_BYTES));
        assert_eq!(framed[identifier], CHUNK_UNCOMPRESSED);
        assert_eq!(decode_all(&framed).unwrap(), noise);
    }

    #[test]
    fn bad_streams_are_refused() {
        assert_eq!(decode_all(b"PK\x03\x04tar?"), Err(FrameError::NotS2));
        let mut flipped = RECORDED.to_vec();
        let last = flipped.len() - 1;
        flipped[last] ^= 0x55;
        assert!(decode_all(&flipped).is_err());
        let mut reserved = Vec::new();
        encode_identifier(&mut reserved);
        reserved.extend_from_slice(&[0x05, 0, 0, 0]);
        assert_eq!(decode_all(&reserved), Err(FrameError::ReservedChunk(5)));
    }
}
