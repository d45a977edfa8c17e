//! Ack reply subjects (v1 written, v1 and v2 read) and ack bodies.

use jetcore::consumer::{AckKind, AckNumbers, AckSubject, AckSubjectBuilder, AckSubjectError, ConsumerSeq, StreamSeq};

fn numbers(delivery_count: u64, stream_seq: u64, consumer_seq: u64, timestamp_nanos: i64, pending: u64) -> AckNumbers {
    AckNumbers {
        delivery_count,
        stream_seq: StreamSeq(stream_seq),
        consumer_seq: ConsumerSeq(consumer_seq),
        timestamp_nanos,
        pending,
    }
}

#[test]
fn v1_round_trips() {
    let subject = AckSubjectBuilder::new("ORDERS", "worker").build(&numbers(3, 42, 57, 1_700_000_000_123_456_789, 9));
    assert_eq!(subject, "$JS.ACK.ORDERS.worker.3.42.57.1700000000123456789.9");
    let parsed = AckSubject::parse(&subject).unwrap();
    assert_eq!((parsed.stream, parsed.consumer, parsed.domain), ("ORDERS", "worker", None));
    assert_eq!((parsed.delivery_count, parsed.stream_seq, parsed.consumer_seq), (3, StreamSeq(42), ConsumerSeq(57)));
    assert_eq!((parsed.timestamp_nanos, parsed.pending), (1_700_000_000_123_456_789, 9));
}

/// The length a pull request's `max_bytes` counts is the length written, whatever the
/// digits (the subject itself is only written when the message is sent).
#[test]
fn the_counted_length_is_the_written_length() {
    let builder = AckSubjectBuilder::new("S", "consumer");
    let values = [0u64, 1, 9, 10, 99, 100, 12_345, 99_999_999, 100_000_000, u64::MAX];
    for &value in &values {
        for timestamp in [0i64, -1, 7, -1_700_000_000_123_456_789, 1_700_000_000_123_456_789, i64::MIN, i64::MAX] {
            let ack = numbers(value.max(1), value, value, timestamp, value);
            let subject = builder.build(&ack);
            assert_eq!(ack.subject_len(builder.prefix().len()), subject.len(), "{subject}");
            let parsed = AckSubject::parse(&subject).unwrap();
            assert_eq!(
                (parsed.stream_seq, parsed.timestamp_nanos, parsed.pending),
                (StreamSeq(value), timestamp, value)
            );
        }
    }
}

#[test]
fn v2_with_domain_account_and_extra_tokens() {
    let parsed = AckSubject::parse("$JS.ACK.hub.ACCHASH.S.C.1.2.3.4.5.rnd.extra").unwrap();
    assert_eq!((parsed.domain, parsed.account_hash), (Some("hub"), Some("ACCHASH")));
    assert_eq!((parsed.stream, parsed.consumer, parsed.pending), ("S", "C", 5));
    let parsed = AckSubject::parse("$JS.ACK._.ACCHASH.S.C.1.2.3.4.5.rnd").unwrap();
    assert_eq!(parsed.domain, None);
}

#[test]
fn malformed_subjects_are_typed_errors() {
    assert_eq!(AckSubject::parse("$JS.API.X"), Err(AckSubjectError::NotAckSubject));
    assert_eq!(AckSubject::parse("$JS.ACK.S.C.1.2.3.4"), Err(AckSubjectError::TokenCount { tokens: 8 }));
    assert_eq!(AckSubject::parse("$JS.ACK.S.C.1.2.3.4.5.6"), Err(AckSubjectError::TokenCount { tokens: 10 }));
    assert_eq!(AckSubject::parse("$JS.ACK.S.C.x.2.3.4.5"), Err(AckSubjectError::NotANumber { index: 4 }));
    assert_eq!(AckSubject::parse("$JS.ACK.S..1.2.3.4.5"), Err(AckSubjectError::EmptyToken { index: 3 }));
}

#[test]
fn ack_bodies() {
    assert_eq!(AckKind::parse(b""), AckKind::Ack);
    assert_eq!(AckKind::parse(b"+ACK"), AckKind::Ack);
    assert_eq!(AckKind::parse(b"+OK"), AckKind::Ack);
    assert_eq!(AckKind::parse(b"-NAK"), AckKind::Nak { delay_nanos: None });
    assert_eq!(AckKind::parse(br#"-NAK {"delay":5000000000}"#), AckKind::Nak { delay_nanos: Some(5_000_000_000) });
    assert_eq!(AckKind::parse(b"-NAK 1m30s"), AckKind::Nak { delay_nanos: Some(90_000_000_000) });
    assert_eq!(AckKind::parse(b"-NAK soon"), AckKind::Nak { delay_nanos: None }, "bad delay = plain NAK");
    assert_eq!(AckKind::parse(b"+WPI"), AckKind::Progress);
    assert_eq!(AckKind::parse(b"+NXT"), AckKind::Next { request: b"" });
    assert_eq!(AckKind::parse(br#"+NXT {"batch":5}"#), AckKind::Next { request: br#" {"batch":5}"# });
    assert_eq!(AckKind::parse(b"+TERM"), AckKind::Term { reason: None });
    assert_eq!(AckKind::parse(b"+TERM poison"), AckKind::Term { reason: Some("poison") });
    assert_eq!(AckKind::parse(b"+WPI now"), AckKind::Unknown);
    assert_eq!(AckKind::parse(b"hello"), AckKind::Unknown);
}
