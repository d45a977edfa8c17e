//! One S2 block (the body of a compressed chunk in an S2 or Snappy framed stream): a
//! uvarint of the decoded length, then literal and copy elements.
//!
//! S2 is a superset of Snappy's block format: it adds the "repeat" copy (a copy-1 tag with
//! offset 0 reuses the previous offset, with longer length encodings). The decoder accepts
//! both; the encoder writes only elements Snappy also knows (literals and 2-byte-offset
//! copies), which every S2 and Snappy reader decodes.
//!
//! Pure functions over byte slices; hostile input yields `BlockError`, never a panic.

/// The largest block S2 writes or reads (klauspost/compress/s2 `maxBlockSize`).
pub const BLOCK_DECODED_BYTES_MAX: usize = 4 << 20;

const TAG_LITERAL: u8 = 0;
const TAG_COPY1: u8 = 1;
const TAG_COPY2: u8 = 2;
const TAG_COPY4: u8 = 3;

/// Why a block did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockError {
    /// The length prefix is malformed or above `BLOCK_DECODED_BYTES_MAX`.
    BadLength,
    /// An element runs past the input, or copies from before the start.
    Corrupt,
    /// The elements decode to a length other than the prefix says.
    LengthMismatch { declared: usize, decoded: usize },
}

/// Reads a little-endian base-128 varint (Go's `binary.Uvarint`): the value and its length.
pub fn read_uvarint(input: &[u8]) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    for (index, &byte) in input.iter().enumerate().take(10) {
        if index == 9 && byte > 1 {
            return None;
        }
        value |= u64::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            return Some((value, index + 1));
        }
    }
    None
}

/// Appends `value` as a uvarint.
pub fn write_uvarint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The decoded length a block declares, without decoding it.
pub fn decoded_len(block: &[u8]) -> Result<usize, BlockError> {
    let (len, _) = read_uvarint(block).ok_or(BlockError::BadLength)?;
    if len > BLOCK_DECODED_BYTES_MAX as u64 {
        return Err(BlockError::BadLength);
    }
    Ok(len as usize)
}

/// Decodes one block and appends its bytes to `out`. On error `out` is left as it was.
pub fn decode(block: &[u8], out: &mut Vec<u8>) -> Result<(), BlockError> {
    let declared = decoded_len(block)?;
    let (_, prefix) = read_uvarint(block).ok_or(BlockError::BadLength)?;
    let start = out.len();
    out.reserve(declared);
    let result = decode_elements(&block[prefix..], out, start, declared);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn decode_elements(mut src: &[u8], out: &mut Vec<u8>, start: usize, declared: usize) -> Result<(), BlockError> {
    let mut offset: usize = 0;
    while let Some(&tag) = src.first() {
        let written = out.len() - start;
        let length;
        match tag & 3 {
            TAG_LITERAL => {
                let (literal_len, header) = literal_length(src)?;
                let body = src.get(header..header + literal_len).ok_or(BlockError::Corrupt)?;
                if literal_len > declared - written {
                    return Err(BlockError::Corrupt);
                }
                out.extend_from_slice(body);
                src = &src[header + literal_len..];
                continue;
            }
            TAG_COPY1 => {
                let low = *src.get(1).ok_or(BlockError::Corrupt)?;
                let copy_offset = (usize::from(tag & 0xe0) << 3) | usize::from(low);
                let code = usize::from((tag >> 2) & 7);
                let (extra, used) = if copy_offset == 0 {
                    repeat_length(code, &src[2..])?
                } else {
                    offset = copy_offset;
                    (code, 0)
                };
                length = extra + 4;
                src = &src[2 + used..];
            }
            TAG_COPY2 => {
                let bytes = src.get(1..3).ok_or(BlockError::Corrupt)?;
                offset = usize::from(u16::from_le_bytes([bytes[0], bytes[1]]));
                length = 1 + usize::from(tag >> 2);
                src = &src[3..];
            }
            _ => {
                debug_assert_eq!(tag & 3, TAG_COPY4);
                let bytes = src.get(1..5).ok_or(BlockError::Corrupt)?;
                offset = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
                length = 1 + usize::from(tag >> 2);
                src = &src[5..];
            }
        }
        if offset == 0 || offset > written || length > declared - written {
            return Err(BlockError::Corrupt);
        }
        // Byte by byte: a copy may overlap what it writes (offset < length repeats a run).
        let from = out.len() - offset;
        for index in 0..length {
            let byte = out[from + index];
            out.push(byte);
        }
    }
    let decoded = out.len() - start;
    if decoded != declared {
        return Err(BlockError::LengthMismatch { declared, decoded });
    }
    Ok(())
}

/// A literal's length and the bytes its tag takes.
fn literal_length(src: &[u8]) -> Result<(usize, usize), BlockError> {
    let code = usize::from(src[0] >> 2);
    if code < 60 {
        return Ok((code + 1, 1));
    }
    let extra = code - 59;
    let bytes = src.get(1..1 + extra).ok_or(BlockError::Corrupt)?;
    let value = bytes.iter().rev().fold(0usize, |value, &byte| (value << 8) | usize::from(byte));
    Ok((value + 1, 1 + extra))
}

/// An S2 repeat's length minus 4, and the extra bytes it takes after the 2-byte tag.
fn repeat_length(code: usize, rest: &[u8]) -> Result<(usize, usize), BlockError> {
    let take = |count: usize| rest.get(..count).ok_or(BlockError::Corrupt);
    Ok(match code {
        5 => (usize::from(take(1)?[0]) + 4, 1),
        6 => {
            let bytes = take(2)?;
            (usize::from(u16::from_le_bytes([bytes[0], bytes[1]])) + (1 << 8), 2)
        }
        7 => {
            let bytes = take(3)?;
            let value = usize::from(bytes[0]) | usize::from(bytes[1]) << 8 | usize::from(bytes[2]) << 16;
            (value + (1 << 16), 3)
        }
        short => (short, 0),
    })
}

/// Encodes `input` (at most `BLOCK_DECODED_BYTES_MAX`) as one block appended to `out`:
/// greedy matching over a small hash table, literals and copy-2 elements only.
pub fn encode(input: &[u8], out: &mut Vec<u8>) {
    let encoded = encode_within(input, out, usize::MAX);
    debug_assert!(encoded);
}

/// [`encode`], unless the block would take more than `limit` bytes: then `out` is left as
/// it was and `false` returned. The check comes before each literal is copied, so input
/// that does not compress is given up on before most of it is copied (the caller then
/// stores it as it is).
pub fn encode_within(input: &[u8], out: &mut Vec<u8>, limit: usize) -> bool {
    assert!(input.len() <= BLOCK_DECODED_BYTES_MAX, "block larger than S2 allows");
    let start = out.len();
    write_uvarint(input.len() as u64, out);
    const TABLE_BITS: u32 = 14;
    const OFFSET_MAX: usize = u16::MAX as usize;
    // A literal's tag takes at most this many bytes.
    const LITERAL_TAG_MAX: usize = 5;
    let fits = |out: &Vec<u8>, literal: usize| out.len() - start + LITERAL_TAG_MAX + literal <= limit;
    let mut table = vec![0u32; 1 << TABLE_BITS];
    let hash = |at: usize| {
        let word = u32::from_le_bytes([input[at], input[at + 1], input[at + 2], input[at + 3]]);
        (word.wrapping_mul(0x1e35_a7bd) >> (32 - TABLE_BITS)) as usize
    };
    let mut literal_start = 0;
    let mut at = 0;
    while at + 4 <= input.len() {
        let slot = hash(at);
        let candidate = table[slot] as usize;
        table[slot] = at as u32;
        let usable =
            candidate < at && at - candidate <= OFFSET_MAX && input[candidate..candidate + 4] == input[at..at + 4];
        if !usable {
            // Snappy's skip: the longer nothing has matched, the further the next probe,
            // so incompressible input costs few probes (one per byte ran at ~100 MiB/s).
            at += 1 + ((at - literal_start) >> 5);
            continue;
        }
        let mut length = 4;
        while at + length < input.len() && input[candidate + length] == input[at + length] {
            length += 1;
        }
        if !fits(out, at - literal_start) {
            out.truncate(start);
            return false;
        }
        emit_literal(&input[literal_start..at], out);
        emit_copy(at - candidate, length, out);
        at += length;
        literal_start = at;
    }
    if !fits(out, input.len() - literal_start) {
        out.truncate(start);
        return false;
    }
    emit_literal(&input[literal_start..], out);
    true
}

fn emit_literal(literal: &[u8], out: &mut Vec<u8>) {
    if literal.is_empty() {
        return;
    }
    let code = literal.len() - 1;
    if code < 60 {
        out.push((code as u8) << 2 | TAG_LITERAL);
    } else {
        let bytes = (code as u32).to_le_bytes();
        let used = 4 - (code as u32).leading_zeros() as usize / 8;
        out.push(((59 + used) as u8) << 2 | TAG_LITERAL);
        out.extend_from_slice(&bytes[..used]);
    }
    out.extend_from_slice(literal);
}

fn emit_copy(offset: usize, mut length: usize, out: &mut Vec<u8>) {
    debug_assert!(offset > 0 && offset <= u16::MAX as usize);
    let offset_bytes = (offset as u16).to_le_bytes();
    while length > 0 {
        // A copy-2 carries 1..=64 bytes; keep the tail at least 4 so it stays a copy.
        let piece = if length > 64 && length - 64 < 4 { 60 } else { length.min(64) };
        out.push(((piece - 1) as u8) << 2 | TAG_COPY2);
        out.extend_from_slice(&offset_bytes);
        length -= piece;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn round_trip(input: &[u8]) {
        let mut block = Vec::new();
        encode(input, &mut block);
        let mut decoded = Vec::new();
        decode(&block, &mut decoded).expect("own block decodes");
        assert_eq!(decoded, input);
    }

    #[test]
    fn encoded_blocks_decode_to_their_input() {
        round_trip(b"");
        round_trip(b"abc");
        round_trip(&b"hello hello hello hello hello world".repeat(50));
        round_trip(&vec![7u8; 100_000]);
        let noise: Vec<u8> = (0..70_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        round_trip(&noise);
    }

    #[test]
    fn repetitive_input_compresses() {
        let input = b"payload 17 ".repeat(1000);
        let mut block = Vec::new();
        encode(&input, &mut block);
        assert!(block.len() < input.len() / 10, "{} bytes for {}", block.len(), input.len());
    }

    /// Bytes with no repeats for a block to find (xorshift).
    pub(crate) fn random_bytes(len: usize) -> Vec<u8> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 32) as u8
            })
            .collect()
    }

    #[test]
    fn input_that_does_not_fit_the_limit_is_given_up_and_leaves_the_output_alone() {
        let noise = random_bytes(70_000);
        let mut out = b"before".to_vec();
        assert!(!encode_within(&noise, &mut out, noise.len() - 1));
        assert_eq!(out, b"before");
        let repetitive = b"payload 17 ".repeat(1000);
        assert!(encode_within(&repetitive, &mut out, repetitive.len() - 1));
        let mut decoded = Vec::new();
        decode(&out[b"before".len()..], &mut decoded).expect("block decodes");
        assert_eq!(decoded, repetitive);
    }

    #[test]
    fn s2_repeat_copies_reuse_the_last_offset() {
        // "abcd" literal, copy offset 4 len 4, then a repeat (offset 0) of code 5: 8 + n bytes.
        let mut block = Vec::new();
        write_uvarint(4 + 4 + 10, &mut block);
        block.extend_from_slice(&[3 << 2, b'a', b'b', b'c', b'd']);
        block.extend_from_slice(&[TAG_COPY1, 4]);
        block.extend_from_slice(&[5 << 2 | TAG_COPY1, 0, 2]);
        let mut out = Vec::new();
        decode(&block, &mut out).expect("repeat decodes");
        assert_eq!(out, b"abcdabcdabcdabcdab");
    }

    #[test]
    fn hostile_blocks_are_errors_and_leave_the_output_alone() {
        let mut out = b"kept".to_vec();
        for block in
            [&[0xffu8, 0xff, 0xff, 0xff, 0xff, 0xff][..], &[4, TAG_COPY2, 1, 0], &[5, 8, b'a'], &[1, 0, b'a', 0]]
        {
            assert!(decode(block, &mut out).is_err(), "{block:?}");
            assert_eq!(out, b"kept");
        }
        // A repeat before any copy has no offset to reuse.
        assert_eq!(decode(&[8, 0, b'a', TAG_COPY1, 0], &mut out), Err(BlockError::Corrupt));
    }
}
