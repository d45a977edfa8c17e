//! `Engine::publish_many`: a window of publishes in one call. One group commit for the
//! window, each message stored or refused on its own, nothing acknowledged before it is
//! durable, and the same through `EngineHandle` on real files.

#[path = "store_support.rs"]
mod support;

use std::rc::Rc;

use jetcore::engine::{Engine, EngineHandle, Outgoing, StartPosition};
use jetcore::store::{SimDisk, SimOp};
use jetcore::stream::{Error, ManualClock, ShardId, StreamConfig};
use support::{crash_and_read_back, payload_for, run, sim_engine, small_config};

/// An engine on a simulated disk with stream `W` on `w.*`.
async fn window_engine() -> (Rc<ManualClock>, SimDisk, Engine) {
    let clock = Rc::new(ManualClock::new(1));
    let disk = SimDisk::new();
    let engine = sim_engine(&disk, &clock).await;
    engine.create_stream(small_config("W", &["w.*"]), ShardId(0)).await.expect("create");
    (clock, disk, engine)
}

#[test]
fn a_window_is_one_group_commit_and_survives_a_crash() {
    run(|| async {
        let (clock, disk, engine) = window_engine().await;
        engine.publish("W", "w.a", b"", b"warm").await.expect("publish");
        let (syncs_before, writes_before) = (disk.op_count(SimOp::Sync), disk.op_count(SimOp::Write));
        let payloads: Vec<Vec<u8>> = (2..=65).map(|n| payload_for(n, 200)).collect();
        let window: Vec<Outgoing<'_>> = payloads.iter().map(|payload| Outgoing::new("w.a", payload)).collect();
        let acks = engine.publish_many("W", &window).await.expect("stream exists");
        let seqs: Vec<u64> = acks.into_iter().map(|ack| ack.expect("stored").seq).collect();
        assert_eq!(seqs, (2..=65).collect::<Vec<u64>>(), "in order");
        assert_eq!(disk.op_count(SimOp::Sync) - syncs_before, 1, "one fdatasync for the window");
        assert_eq!(disk.op_count(SimOp::Write) - writes_before, 1, "one write for the window");

        drop(engine);
        crash_and_read_back(&disk, &clock, "W", 2..=65, 200).await;
    });
}

#[test]
fn a_refused_message_fails_alone_and_a_duplicate_gets_the_original() {
    run(|| async {
        let (_clock, _disk, engine) = window_engine().await;
        let wrong_last = b"NATS/1.0\r\nNats-Expected-Last-Sequence: 99\r\n\r\n";
        let with_id = b"NATS/1.0\r\nNats-Msg-Id: order-7\r\n\r\n";
        let window = [
            Outgoing::new("w.a", b"one"),
            Outgoing { subject: "w.a", headers: wrong_last, payload: b"refused" },
            Outgoing { subject: "w.a", headers: with_id, payload: b"two" },
            Outgoing { subject: "w.a", headers: with_id, payload: b"two again" },
            Outgoing::new("elsewhere", b"not captured"),
            Outgoing::new("w.b", b"three"),
        ];
        let acks = engine.publish_many("W", &window).await.expect("stream exists");
        assert_eq!(acks.len(), window.len());
        assert_eq!(acks[0].as_ref().expect("stored").seq, 1);
        assert!(acks[1].is_err(), "the expected-sequence check failed: {:?}", acks[1]);
        let two = acks[2].as_ref().expect("stored");
        assert_eq!((two.seq, two.duplicate), (2, false));
        let again = acks[3].as_ref().expect("a duplicate is answered");
        assert_eq!((again.seq, again.duplicate), (2, true));
        assert!(acks[4].is_err(), "a subject the stream does not capture: {:?}", acks[4]);
        assert_eq!(acks[5].as_ref().expect("stored").seq, 3);
        assert_eq!(engine.state("W").expect("state").messages, 3);
        assert_eq!(&engine.get("W", 3).await.expect("read").payload[..], b"three");

        let missing = engine.publish_many("NOPE", &window).await;
        assert!(matches!(missing, Err(Error::StreamNotFound { .. })), "{:?}", missing.map(|acks| acks.len()));
    });
}

#[test]
fn through_a_handle_on_real_files_every_message_reads_back_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = EngineHandle::open(dir.path()).expect("open");
    engine.create_stream(StreamConfig::new("TICKS", &["ticks.>"])).wait().expect("create");
    for window in 0..4u64 {
        let messages: Vec<(String, Vec<u8>)> =
            (0..256).map(|n| (format!("ticks.{}", n % 8), payload_for(window * 256 + n + 1, 1024))).collect();
        let acks = engine.publish_many("TICKS", messages).wait().expect("window");
        let last = acks.last().expect("acks").as_ref().expect("stored").seq;
        assert_eq!(last, (window + 1) * 256);
    }
    engine.close().expect("close");

    let engine = EngineHandle::open(dir.path()).expect("reopen");
    let read = engine.read("TICKS", StartPosition::Sequence(1), 2000).wait().expect("read");
    assert_eq!(read.len(), 1024);
    for (index, message) in read.iter().enumerate() {
        assert_eq!(&message.payload[..], &payload_for(index as u64 + 1, 1024)[..]);
    }
    engine.close().expect("close");
}
