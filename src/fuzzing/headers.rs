//! Fuzz target `headers`: a header block (`NATS/1.0 [code [description]]` and header
//! lines) parsed from arbitrary bytes; lookups agree with iteration, and a block with a
//! status rebuilds into one that parses the same.

use crate::protocol::headers::{parse_header_block, HeaderBlockBuilder};

/// The headers fuzz target's check: never panics; a parsed block iterates consistently
/// and, when expressible, rebuilds to a block that parses the same.
pub fn check(data: &[u8]) {
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
