//! Wire tests for the client protocol parser: literal bytes in, operations or errors out.

use jetcore::limits::CONTROL_LINE_BYTES_MAX;
use jetcore::protocol::{parse, ClientOp, Operation, ParseError, Parsed};

const MAX_PAYLOAD: usize = 1024 * 1024;

/// Parse one complete operation that must use all of `wire`.
fn op(wire: &[u8]) -> ClientOp<'_> {
    match parse(wire, MAX_PAYLOAD) {
        Ok(Parsed::Op { op, consumed }) => {
            assert_eq!(consumed, wire.len(), "consumed of {:?}", String::from_utf8_lossy(wire));
            op
        }
        other => panic!("{:?} gave {other:?}", String::from_utf8_lossy(wire)),
    }
}

fn error(wire: &[u8]) -> ParseError {
    match parse(wire, MAX_PAYLOAD) {
        Err(error) => error,
        other => panic!("{:?} gave {other:?}", String::from_utf8_lossy(wire)),
    }
}

fn publish<'a>(subject: &'a [u8], reply: Option<&'a [u8]>, payload: &'a [u8]) -> ClientOp<'a> {
    ClientOp::Pub { subject, reply, headers: None, payload }
}

#[test]
fn pub_with_and_without_reply() {
    assert_eq!(op(b"PUB foo 5\r\nhello\r\n"), publish(b"foo", None, b"hello"));
    assert_eq!(op(b"PUB foo bar 0\r\n\r\n"), publish(b"foo", Some(b"bar"), b""));
}

#[test]
fn nats_py_double_space_for_empty_reply() {
    assert_eq!(op(b"PUB subj  5\r\nhello\r\n"), publish(b"subj", None, b"hello"));
    let sub = ClientOp::Sub { subject: b"subj", queue: None, sid: b"1" };
    assert_eq!(op(b"SUB subj  1\r\n"), sub);
}

#[test]
fn nats_py_trailing_space_for_empty_unsub_limit() {
    assert_eq!(op(b"UNSUB 1 \r\n"), ClientOp::Unsub { sid: b"1", max: None });
    assert_eq!(op(b"UNSUB 1 10\r\n"), ClientOp::Unsub { sid: b"1", max: Some(10) });
}

#[test]
fn unsub_max_that_is_zero_or_garbage_means_remove_now() {
    assert_eq!(op(b"UNSUB 1 0\r\n"), ClientOp::Unsub { sid: b"1", max: None });
    assert_eq!(op(b"UNSUB 1 x\r\n"), ClientOp::Unsub { sid: b"1", max: None });
    assert_eq!(op(b"UNSUB 1 1234567890\r\n"), ClientOp::Unsub { sid: b"1", max: None });
}

#[test]
fn operation_names_are_case_insensitive() {
    assert_eq!(op(b"pub foo 1\r\nx\r\n"), publish(b"foo", None, b"x"));
    assert_eq!(op(b"PuB foo 1\r\nx\r\n"), publish(b"foo", None, b"x"));
    assert_eq!(op(b"ping\r\n"), ClientOp::Ping);
    assert_eq!(op(b"pOnG\r\n"), ClientOp::Pong);
    assert_eq!(op(b"connect {}\r\n"), ClientOp::Connect { json: b"{}" });
    let sub = ClientOp::Sub { subject: b"a", queue: Some(b"q"), sid: b"9" };
    assert_eq!(op(b"sub a q 9\r\n"), sub);
    assert_eq!(op(b"unsub 9\r\n"), ClientOp::Unsub { sid: b"9", max: None });
}

#[test]
fn tabs_and_runs_of_whitespace_separate_arguments() {
    assert_eq!(op(b"PUB\tfoo\t\t \treply\t3\t \r\nabc\r\n"), publish(b"foo", Some(b"reply"), b"abc"));
    let sub = ClientOp::Sub { subject: b"foo.*", queue: Some(b"workers"), sid: b"22" };
    assert_eq!(op(b"SUB \t foo.*  workers\t22   \r\n"), sub);
}

#[test]
fn bare_line_feed_ends_a_control_line() {
    assert_eq!(op(b"PING\n"), ClientOp::Ping);
    assert_eq!(op(b"PUB foo 2\nhi\r\n"), publish(b"foo", None, b"hi"));
}

#[test]
fn ping_pong_and_ok_ignore_what_follows_up_to_line_feed() {
    assert_eq!(op(b"PING extra\r\n"), ClientOp::Ping);
    assert_eq!(op(b"PONGS\r\n"), ClientOp::Pong);
    assert_eq!(op(b"+OK\r\n"), ClientOp::Ok);
}

#[test]
fn connect_json_is_the_rest_of_the_line() {
    let json = br#"{"verbose":false,"name":"a b"}"#;
    let mut wire = b"CONNECT   ".to_vec();
    wire.extend_from_slice(json);
    wire.extend_from_slice(b"\r\n");
    assert_eq!(op(&wire), ClientOp::Connect { json });
}

#[test]
fn client_info_and_err_are_recognised() {
    assert_eq!(op(b"INFO {\"a\":1}\r\n"), ClientOp::Info { json: b"{\"a\":1}" });
    assert_eq!(op(b"-ERR 'oops'\r\n"), ClientOp::Err { text: b"'oops'" });
}

#[test]
fn hpub_splits_header_block_from_payload() {
    let wire = b"HPUB foo reply 28 33\r\nNATS/1.0\r\nNats-Msg-Id: 1\r\n\r\nhello\r\n";
    let expected = ClientOp::Pub {
        subject: b"foo",
        reply: Some(b"reply"),
        headers: Some(b"NATS/1.0\r\nNats-Msg-Id: 1\r\n\r\n"),
        payload: b"hello",
    };
    assert_eq!(op(wire), expected);
    let no_reply = b"HPUB foo 12 12\r\nNATS/1.0\r\n\r\n\r\n";
    let expected = ClientOp::Pub { subject: b"foo", reply: None, headers: Some(b"NATS/1.0\r\n\r\n"), payload: b"" };
    assert_eq!(op(no_reply), expected);
}

#[test]
fn hpub_header_size_larger_than_total_is_refused() {
    let expected = ParseError::HeaderSizeExceedsTotal { header_size: 30, total_size: 5 };
    assert_eq!(error(b"HPUB foo 30 5\r\n"), expected);
    assert!(!expected.nats_sends_err());
    assert!(expected.closes_connection());
}

#[test]
fn non_numeric_and_missing_sizes_are_refused() {
    let invalid = ParseError::InvalidSize { operation: Operation::Pub };
    assert_eq!(error(b"PUB foo 5x\r\n"), invalid);
    assert_eq!(error(b"PUB foo -1\r\n"), invalid);
    assert_eq!(error(b"PUB foo bar\r\n"), invalid);
    assert_eq!(error(b"HPUB foo x 5\r\n"), ParseError::InvalidHeaderSize);
    let hpub = ParseError::InvalidSize { operation: Operation::Hpub };
    assert_eq!(error(b"HPUB foo 5 y\r\n"), hpub);
    let count = ParseError::ArgumentCount { operation: Operation::Pub, count: 1 };
    assert_eq!(error(b"PUB foo\r\n"), count);
}

#[test]
fn sizes_near_two_to_the_63_do_not_overflow() {
    let invalid = ParseError::InvalidSize { operation: Operation::Pub };
    assert_eq!(error(b"PUB foo 9223372036854775807\r\n"), invalid);
    assert_eq!(error(b"PUB foo 9223372036854775808\r\n"), invalid);
    assert_eq!(error(b"PUB foo 99999999999999999999999999\r\n"), invalid);
    let hpub = b"HPUB foo 9223372036854775807 9223372036854775807\r\n";
    assert_eq!(error(hpub), ParseError::InvalidHeaderSize);
    // Nine digits is the longest size: refused by max_payload, not by overflow.
    let over = ParseError::MaxPayloadExceeded { size: 999_999_999, max_payload: MAX_PAYLOAD };
    assert_eq!(error(b"PUB foo 999999999\r\n"), over);
    assert!(matches!(parse(b"PUB foo 999999999\r\n", usize::MAX), Ok(Parsed::Incomplete { .. })));
}

#[test]
fn payload_over_max_payload_is_refused_at_the_control_line() {
    let expected = ParseError::MaxPayloadExceeded { size: 11, max_payload: 10 };
    assert_eq!(parse(b"PUB foo 11\r\n", 10), Err(expected));
    assert_eq!(expected.nats_text(), "Maximum Payload Violation");
    assert!(expected.nats_sends_err());
    let hpub = ParseError::MaxPayloadExceeded { size: 11, max_payload: 10 };
    assert_eq!(parse(b"HPUB foo 2 11\r\n", 10), Err(hpub));
    assert!(matches!(parse(b"PUB foo 10\r\n", 10), Ok(Parsed::Incomplete { .. })));
}

#[test]
fn wrong_terminator_after_payload_is_refused() {
    assert_eq!(error(b"PUB foo 3\r\nabcd\r\n"), ParseError::PayloadTerminator);
    assert_eq!(error(b"PUB foo 3\r\nabc\rX"), ParseError::PayloadTerminator);
    assert_eq!(error(b"PUB foo 3\r\nabc\n\n"), ParseError::PayloadTerminator);
    // Known wrong from its first byte, before the second arrives.
    assert_eq!(error(b"PUB foo 3\r\nabcX"), ParseError::PayloadTerminator);
    assert_eq!(ParseError::PayloadTerminator.nats_text(), "Unknown Protocol Operation");
}

#[test]
fn incomplete_publish_reports_the_length_it_needs() {
    let wire = b"PUB foo 5\r\nhello\r\n";
    assert_eq!(parse(&wire[..5], MAX_PAYLOAD), Ok(Parsed::Incomplete { needed: None }));
    for length in 11..wire.len() {
        let needed = Some(wire.len());
        assert_eq!(parse(&wire[..length], MAX_PAYLOAD), Ok(Parsed::Incomplete { needed }));
    }
    assert_eq!(parse(b"", MAX_PAYLOAD), Ok(Parsed::Incomplete { needed: None }));
}

#[test]
fn unknown_operations_are_refused_at_their_first_bad_byte() {
    assert_eq!(error(b"FOO\r\n"), ParseError::UnknownOperation { offset: 0 });
    assert_eq!(error(b"PX"), ParseError::UnknownOperation { offset: 1 });
    assert_eq!(error(b"PUX"), ParseError::UnknownOperation { offset: 2 });
    assert_eq!(error(b"PUBX foo 1\r\n"), ParseError::UnknownOperation { offset: 3 });
    assert_eq!(error(b"PUB\r\n"), ParseError::UnknownOperation { offset: 3 });
    assert_eq!(error(b"\r\nPING\r\n"), ParseError::UnknownOperation { offset: 0 });
    assert_eq!(error(b" PING\r\n"), ParseError::UnknownOperation { offset: 0 });
    assert_eq!(error(b"MSG foo 1 1\r\n"), ParseError::UnknownOperation { offset: 0 });
    assert_eq!(error(b"-ERR\r\n"), ParseError::UnknownOperation { offset: 4 });
    let unknown = ParseError::UnknownOperation { offset: 0 };
    assert_eq!(unknown.nats_text(), "Unknown Protocol Operation");
    assert!(unknown.nats_sends_err());
    assert_eq!(parse(b"UNSU", MAX_PAYLOAD), Ok(Parsed::Incomplete { needed: None }));
}

#[test]
fn argument_counts_are_checked() {
    let sub = ParseError::ArgumentCount { operation: Operation::Sub, count: 1 };
    assert_eq!(error(b"SUB foo\r\n"), sub);
    let sub = ParseError::ArgumentCount { operation: Operation::Sub, count: 4 };
    assert_eq!(error(b"SUB a b c d\r\n"), sub);
    let unsub = ParseError::ArgumentCount { operation: Operation::Unsub, count: 0 };
    assert_eq!(error(b"UNSUB  \r\n"), unsub);
    let publish = ParseError::ArgumentCount { operation: Operation::Pub, count: 4 };
    assert_eq!(error(b"PUB a b c 1\r\n"), publish);
    let hpub = ParseError::ArgumentCount { operation: Operation::Hpub, count: 2 };
    assert_eq!(error(b"HPUB a 1\r\n"), hpub);
}

#[test]
fn control_line_longer_than_the_limit_is_refused_complete_or_not() {
    let too_long = ParseError::ControlLineTooLong { limit: CONTROL_LINE_BYTES_MAX };
    assert_eq!(too_long.nats_text(), "maximum control line exceeded");
    let mut line = b"SUB ".to_vec();
    line.resize(CONTROL_LINE_BYTES_MAX, b'a');
    line.extend_from_slice(b" 1");
    assert_eq!(error(&line), too_long);
    line.extend_from_slice(b"\r\n");
    assert_eq!(error(&line), too_long);
    // Exactly the limit is fine.
    let mut exact = b"SUB ".to_vec();
    exact.resize(CONTROL_LINE_BYTES_MAX - 2, b'a');
    exact.extend_from_slice(b" 1\r\n");
    assert!(matches!(op(&exact), ClientOp::Sub { .. }));
    // Up to the limit without a line feed is only incomplete.
    let waiting = &exact[..CONTROL_LINE_BYTES_MAX];
    assert_eq!(parse(waiting, MAX_PAYLOAD), Ok(Parsed::Incomplete { needed: None }));
}

#[test]
fn pipelined_operations_parse_one_at_a_time() {
    let wire = b"CONNECT {}\r\nPING\r\nSUB a 1\r\nPUB a 2\r\nhi\r\n";
    let mut rest: &[u8] = wire;
    let mut ops = Vec::new();
    while let Ok(Parsed::Op { op, consumed }) = parse(rest, MAX_PAYLOAD) {
        ops.push(op);
        rest = &rest[consumed..];
    }
    assert!(rest.is_empty());
    assert_eq!(ops.len(), 4);
    assert_eq!(ops[3], publish(b"a", None, b"hi"));
}
