//! Nats-Msg-Id dedupe within the window (also across a restart) and the expected-last-*
//! headers, whose errors carry the actual value.

#[path = "store_support.rs"]
mod support;

use std::rc::Rc;
use std::time::Duration;

use jetcore::store::SimDisk;
use jetcore::stream::{Error, ManualClock, PubAck, ShardId};
use support::{run, sim_engine, small_config};

fn headers(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut block = b"NATS/1.0\r\n".to_vec();
    for (key, value) in pairs {
        block.extend_from_slice(format!("{key}: {value}\r\n").as_bytes());
    }
    block.extend_from_slice(b"\r\n");
    block
}

#[test]
fn duplicate_msg_id_returns_the_original_sequence_within_the_window() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        let mut config = small_config("D", &["d"]);
        config.duplicate_window = Duration::from_secs(60);
        engine.create_stream(config, ShardId(0)).await.expect("create");
        let first = engine.publish("D", "d", &headers(&[("Nats-Msg-Id", "a")]), b"1").await.expect("publish");
        engine.publish("D", "d", &headers(&[("Nats-Msg-Id", "b")]), b"2").await.expect("publish");
        let again = engine.publish("D", "d", &headers(&[("Nats-Msg-Id", "a")]), b"1").await.expect("publish");
        assert_eq!((first, again), (PubAck { seq: 1, duplicate: false }, PubAck { seq: 1, duplicate: true }));
        assert_eq!(engine.state("D").expect("state").messages, 2);
        drop(engine);

        let engine = sim_engine(&disk, &clock).await;
        let after_restart = engine.publish("D", "d", &headers(&[("Nats-Msg-Id", "a")]), b"1").await.expect("publish");
        assert_eq!(after_restart, PubAck { seq: 1, duplicate: true });
        clock.advance(Duration::from_secs(61).as_nanos() as i64);
        let outside = engine.publish("D", "d", &headers(&[("Nats-Msg-Id", "a")]), b"1").await.expect("publish");
        assert_eq!(outside, PubAck { seq: 3, duplicate: false });
    });
}

#[test]
fn expected_headers_are_checked_with_actual_values() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        engine.create_stream(small_config("E", &["e.*"]), ShardId(0)).await.expect("create");
        engine.publish("E", "e.a", &headers(&[("Nats-Msg-Id", "m1")]), b"1").await.expect("publish");
        engine.publish("E", "e.b", b"", b"2").await.expect("publish");

        let wrong_seq = engine.publish("E", "e.a", &headers(&[("Nats-Expected-Last-Sequence", "1")]), b"x").await;
        assert_eq!(wrong_seq, Err(Error::WrongLastSequence { actual: 2 }));
        let right_seq = engine.publish("E", "e.a", &headers(&[("Nats-Expected-Last-Sequence", "2")]), b"x").await;
        assert_eq!(right_seq.expect("publish").seq, 3);

        let wrong_subject =
            engine.publish("E", "e.b", &headers(&[("Nats-Expected-Last-Subject-Sequence", "1")]), b"x").await;
        assert_eq!(wrong_subject, Err(Error::WrongLastSubjectSequence { actual: 2 }));
        let new_subject =
            engine.publish("E", "e.c", &headers(&[("Nats-Expected-Last-Subject-Sequence", "0")]), b"x").await;
        assert_eq!(new_subject.expect("publish").seq, 4);

        let wrong_id = engine.publish("E", "e.a", &headers(&[("Nats-Expected-Last-Msg-Id", "nope")]), b"x").await;
        assert_eq!(wrong_id, Err(Error::WrongLastMsgId { actual: "m1".into() }));
        let wrong_stream = engine.publish("E", "e.a", &headers(&[("Nats-Expected-Stream", "OTHER")]), b"x").await;
        assert_eq!(wrong_stream, Err(Error::WrongExpectedStream { actual: "E".into() }));
        assert_eq!(engine.state("E").expect("state").last_seq, 4, "refused publishes assigned no sequence");
    });
}
