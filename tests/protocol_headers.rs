//! Header blocks: every status line the server originates (wire doc §1.9) parses to its
//! code and description; the builder writes the exact bytes clients slice.

use jetcore::protocol::headers::{encode_status, parse_header_block, HeaderBlockBuilder, HeaderError};

const STATUS_LINES: &[(&str, u16, Option<&str>)] = &[
    ("NATS/1.0 503", 503, None),
    ("NATS/1.0 100 Idle Heartbeat", 100, Some("Idle Heartbeat")),
    ("NATS/1.0 100 FlowControl Request", 100, Some("FlowControl Request")),
    ("NATS/1.0 404 No Messages", 404, Some("No Messages")),
    ("NATS/1.0 408 Request Timeout", 408, Some("Request Timeout")),
    ("NATS/1.0 408 Requests Pending", 408, Some("Requests Pending")),
    ("NATS/1.0 408 Interest Expired", 408, Some("Interest Expired")),
    ("NATS/1.0 409 Exceeded MaxWaiting", 409, Some("Exceeded MaxWaiting")),
    ("NATS/1.0 409 Consumer Deleted", 409, Some("Consumer Deleted")),
    ("NATS/1.0 400 Bad Request - no_wait", 400, Some("Bad Request - no_wait")),
    ("NATS/1.0 404 Message Not Found", 404, Some("Message Not Found")),
    ("NATS/1.0 408 Empty Request", 408, Some("Empty Request")),
    ("NATS/1.0 408 Bad Request", 408, Some("Bad Request")),
    ("NATS/1.0 408 Malformed Request", 408, Some("Malformed Request")),
    ("NATS/1.0 204 EOB", 204, Some("EOB")),
    ("NATS/1.0 413 Too Many Results", 413, Some("Too Many Results")),
];

#[test]
fn every_server_status_line_parses_and_encodes_exactly() {
    for &(line, code, description) in STATUS_LINES {
        let wire = format!("{line}\r\n\r\n");
        let block = parse_header_block(wire.as_bytes()).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(block.status(), Some(code), "{line}");
        assert_eq!(block.description(), description.map(str::as_bytes), "{line}");
        assert_eq!(block.iter().count(), 0);
        let mut out = Vec::new();
        let length = encode_status(&mut out, code, description.unwrap_or(""));
        assert_eq!(out, wire.as_bytes(), "{line}");
        assert_eq!(length, wire.len());
    }
}

#[test]
fn status_with_headers_as_heartbeat_and_timeout_carry() {
    let wire = b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 2\r\nNats-Pending-Bytes:  100 \r\n\r\n";
    let block = parse_header_block(wire).unwrap();
    assert_eq!(block.status(), Some(408));
    assert_eq!(block.get(b"Nats-Pending-Messages"), Some(&b"2"[..]));
    assert_eq!(block.get(b"Nats-Pending-Bytes"), Some(&b"100"[..]));
    let mut out = Vec::new();
    let mut builder = HeaderBlockBuilder::with_status(&mut out, 100, "Idle Heartbeat");
    builder.header(b"Nats-Last-Consumer", b"5").header(b"Nats-Last-Stream", b"9");
    let length = builder.finish();
    let expected: &[u8] = b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 5\r\nNats-Last-Stream: 9\r\n\r\n";
    assert_eq!(out, expected);
    assert_eq!(length, expected.len());
}

#[test]
fn lookup_is_exact_case_unless_asked_and_names_repeat() {
    let wire = b"NATS/1.0\r\nNats-Msg-Id: a1\r\nX: 1\r\nX: 2\r\nx: 3\r\n\r\n";
    let block = parse_header_block(wire).unwrap();
    assert_eq!(block.status(), None);
    assert_eq!(block.description(), None);
    assert_eq!(block.get(b"Nats-Msg-Id"), Some(&b"a1"[..]));
    assert_eq!(block.get(b"nats-msg-id"), None);
    assert_eq!(block.get_ignore_case(b"nats-msg-id"), Some(&b"a1"[..]));
    assert_eq!(block.get(b"X"), Some(&b"1"[..]));
    assert_eq!(block.get_all(b"X").collect::<Vec<_>>(), [&b"1"[..], b"2"]);
    assert_eq!(block.get(b"x"), Some(&b"3"[..]));
    assert_eq!(block.iter().count(), 5 - 1);
}

#[test]
fn builder_without_status_writes_plain_version_line() {
    let mut out = Vec::new();
    let mut builder = HeaderBlockBuilder::new(&mut out);
    builder.header(b"Nats-Msg-Id", b"a1");
    builder.finish();
    assert_eq!(out, b"NATS/1.0\r\nNats-Msg-Id: a1\r\n\r\n");
    assert!(parse_header_block(&out).is_ok());
}

#[test]
fn malformed_blocks_are_typed_errors() {
    let cases: &[(&[u8], HeaderError)] = &[
        (b"", HeaderError::MissingVersion),
        (b"NATS/2.0\r\n\r\n", HeaderError::MissingVersion),
        (b"NATS/1.0", HeaderError::Unterminated { offset: 8 }),
        (b"NATS/1.0\r\n", HeaderError::Unterminated { offset: 10 }),
        (b"NATS/1.0\r\nA: 1\r\n", HeaderError::Unterminated { offset: 16 }),
        (b"NATS/1.0 40\r\n\r\n", HeaderError::InvalidStatus { offset: 9 }),
        (b"NATS/1.0 4x4 Bad\r\n\r\n", HeaderError::InvalidStatus { offset: 9 }),
        (b"NATS/1.0 4044\r\n\r\n", HeaderError::InvalidStatus { offset: 9 }),
        (b"NATS/1.0404\r\n\r\n", HeaderError::InvalidStatus { offset: 8 }),
        (b"NATS/1.0\r\nNoColon\r\n\r\n", HeaderError::InvalidLine { offset: 10 }),
        (b"NATS/1.0\r\n: empty\r\n\r\n", HeaderError::InvalidLine { offset: 10 }),
        (b"NATS/1.0\r\nA B: 1\r\n\r\n", HeaderError::InvalidLine { offset: 10 }),
        (b"NATS/1.0\r\nA: 1\n2\r\n\r\n", HeaderError::InvalidLine { offset: 10 }),
        (b"NATS/1.0\r\n\r\nX", HeaderError::TrailingBytes { offset: 12 }),
    ];
    for (wire, expected) in cases {
        assert_eq!(parse_header_block(wire), Err(*expected), "{:?}", String::from_utf8_lossy(wire));
    }
}

#[test]
#[should_panic(expected = "value has CR/LF")]
fn builder_refuses_a_value_that_would_break_framing() {
    let mut out = Vec::new();
    HeaderBlockBuilder::new(&mut out).header(b"A", b"1\r\nB: 2");
}
