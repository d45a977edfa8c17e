//! A stream of every operation kind, fed split at every byte offset (and byte by byte),
//! parses to the same operations as fed whole.

use jetcore::fuzzing::parse::{check, feed, End};

const STREAM: &[u8] = b"CONNECT {\"verbose\":false}\r\nPING\r\npub foo  5\r\nhello\r\n\
SUB foo.* q 1\r\nHPUB foo r 12 14\r\nNATS/1.0\r\n\r\nhi\r\nUNSUB 1 \r\nPONG\n+OK\r\n\
INFO {}\r\nPUB a 0\r\n\r\n";

#[test]
fn split_at_every_offset_gives_the_whole_stream_ops() {
    let whole = feed(&[STREAM]);
    assert_eq!(whole.ops.len(), 10);
    assert_eq!(whole.end, End::Incomplete { buffered: 0 });
    for split in 0..=STREAM.len() {
        let (first, second) = STREAM.split_at(split);
        assert_eq!(feed(&[first, second]), whole, "split at {split}");
    }
}

#[test]
fn byte_by_byte_gives_the_whole_stream_ops() {
    let chunks: Vec<&[u8]> = STREAM.chunks(1).collect();
    assert_eq!(feed(&chunks), feed(&[STREAM]));
}

#[test]
fn split_invariants_hold_for_the_stream_and_its_errors() {
    check(STREAM);
    let mut with_garbage = STREAM.to_vec();
    with_garbage.extend_from_slice(b"PUB x 2\r\nabc\r\n");
    let outcome = feed(&[&with_garbage]);
    assert_eq!(outcome.end, End::Error(jetcore::protocol::ParseError::PayloadTerminator));
    check(&with_garbage);
}
