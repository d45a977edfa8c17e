//! Fuzz target `parse`: the client protocol parser fed a byte stream whole, split in two
//! at every point, and as every prefix. The parser is incremental and stateless, so every
//! split must give the same operations and the same error as the whole.

use crate::protocol::{parse, ParseError, Parsed};

/// Small, so fuzzed PUBs reach the limit.
pub const MAX_PAYLOAD: usize = 64;

/// How feeding a byte stream ends after its operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Waiting for more; this many bytes are buffered.
    Incomplete {
        buffered: usize,
    },
    Error(ParseError),
}

/// The operations (as Debug text, so streams held in different buffers compare) and
/// the end of feeding `chunks` one after the other, as a connection would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub ops: Vec<String>,
    pub end: End,
}

/// Feed `chunks` in order into one growing buffer, parsing after each chunk and
/// dropping consumed bytes, and check the parser's contract on every call.
pub fn feed(chunks: &[&[u8]]) -> Outcome {
    let mut buffer: Vec<u8> = Vec::new();
    let mut ops = Vec::new();
    for chunk in chunks {
        buffer.extend_from_slice(chunk);
        loop {
            match parse(&buffer, MAX_PAYLOAD) {
                Ok(Parsed::Op { op, consumed }) => {
                    assert!(consumed > 0 && consumed <= buffer.len(), "consumed {consumed}");
                    ops.push(format!("{op:?}"));
                    buffer.drain(..consumed);
                }
                Ok(Parsed::Incomplete { needed }) => {
                    if let Some(needed) = needed {
                        assert!(needed > buffer.len(), "needed {needed} <= {}", buffer.len());
                    }
                    break;
                }
                Err(error) => return Outcome { ops, end: End::Error(error) },
            }
        }
    }
    Outcome { ops, end: End::Incomplete { buffered: buffer.len() } }
}

/// The parse fuzz target's whole check: feeding `data` in two reads split at any point,
/// in three reads, or one byte per read gives what feeding it whole gives; every prefix
/// parses to `Incomplete` or to exactly what the whole parses to; a known `needed`
/// length is enough.
pub fn check(data: &[u8]) {
    let whole = feed(&[data]);
    for split in 0..=data.len() {
        let (first, second) = data.split_at(split);
        let split_outcome = feed(&[first, second]);
        assert_eq!(split_outcome, whole, "split at {split}");
        // Three reads: the rest split again halfway.
        let (second, third) = second.split_at(second.len() / 2);
        let three_outcome = feed(&[first, second, third]);
        assert_eq!(three_outcome, whole, "split at {split} and halfway after");
    }
    let bytes: Vec<&[u8]> = data.chunks(1).collect();
    assert_eq!(feed(&bytes), whole, "one byte per read");
    check_prefixes(data);
}

fn check_prefixes(data: &[u8]) {
    let full = parse(data, MAX_PAYLOAD);
    for length in 0..data.len() {
        let prefix = &data[..length];
        match parse(prefix, MAX_PAYLOAD) {
            Ok(Parsed::Incomplete { needed }) => {
                if let Some(needed) = needed {
                    if needed <= data.len() {
                        let at_needed = parse(&data[..needed], MAX_PAYLOAD);
                        assert!(
                            !matches!(at_needed, Ok(Parsed::Incomplete { .. })),
                            "needed {needed} still incomplete"
                        );
                    }
                }
            }
            other => assert_eq!(other, full, "prefix of {length} bytes"),
        }
    }
}
