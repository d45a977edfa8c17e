//! Invariants checked by the fuzz targets and, on stable, by
//! `tests/protocol_fuzz_corpus.rs` replaying `fuzz/corpus/**`. Shared by `#[path]`.

#![allow(dead_code)]

use jetcore::protocol::headers::{parse_header_block, HeaderBlockBuilder};
use jetcore::protocol::{parse, ParseError, Parsed};

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
                    assert!(
                        consumed > 0 && consumed <= buffer.len(),
                        "consumed {consumed}"
                    );
                    ops.push(format!("{op:?}"));
                    buffer.drain(..consumed);
                }
                Ok(Parsed::Incomplete { needed }) => {
                    if let Some(needed) = needed {
                        assert!(needed > buffer.len(), "needed {needed} <= {}", buffer.len());
                    }
                    break;
                }
                Err(error) => {
                    return Outcome {
                        ops,
                        end: End::Error(error),
                    }
                }
            }
        }
    }
    Outcome {
        ops,
        end: End::Incomplete {
            buffered: buffer.len(),
        },
    }
}

/// The parse fuzz target's whole check: feeding `data` split at any point gives what
/// feeding it whole gives; every prefix parses to `Incomplete` or to exactly what the
/// whole parses to; a known `needed` length is enough.
pub fn check_parse(data: &[u8]) {
    let whole = feed(&[data]);
    for split in 0..=data.len() {
        let (first, second) = data.split_at(split);
        let split_outcome = feed(&[first, second]);
        assert_eq!(split_outcome, whole, "split at {split}");
    }
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

/// The headers fuzz target's check: never panics; a parsed block iterates consistently
/// and, when expressible, rebuilds to a block that parses the same.
pub fn check_headers(data: &[u8]) {
    let Ok(block) = parse_header_block(data) else {
        return;
    };
    for (name, value) in block.iter() {
        assert!(block.get(name).is_some());
        assert!(block.get_ignore_case(&name.to_ascii_lowercase()).is_some());
        assert!(block.get_all(name).any(|candidate| candidate == value));
    }
    let description = std::str::from_utf8(block.description().unwrap_or(b"")).ok();
    let (Some(description), Some(code)) = (description, block.status()) else {
        return;
    };
    if code < 100 {
        return;
    }
    let mut rebuilt = Vec::new();
    let mut builder = HeaderBlockBuilder::with_status(&mut rebuilt, code, description);
    for (name, value) in block.iter() {
        builder.header(name, value);
    }
    let length = builder.finish();
    assert_eq!(length, rebuilt.len());
    let reparsed = parse_header_block(&rebuilt).expect("rebuilt block parses");
    assert_eq!(reparsed.status(), block.status());
    assert_eq!(reparsed.description(), block.description());
    assert!(reparsed.iter().eq(block.iter()));
}
