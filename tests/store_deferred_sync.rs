//! A restore's appends are deferred (`Stream::append_unsettled_deferred`): under sync
//! `always` their groups complete once written, with no fdatasync each, and one
//! `Stream::flush` at the end makes them durable. An ordinary publish after them still
//! waits for everything before it. Checked on the simulated disk, which drops what was
//! not synced at a power loss.

#[path = "store_support.rs"]
mod support;

use std::rc::Rc;

use jetcore::store::{CrashMode, SimDisk, SimOp};
use jetcore::stream::{Appended, ManualClock, PublishRequest, ShardId};
use support::{payload_for, run, sim_engine, small_config};

/// Appends messages `from..=to` deferred, each settled (written) before the next, so
/// each is a group of its own.
async fn append_deferred(engine: &jetcore::Engine, from: u64, to: u64) {
    let stream = engine.stream("D").expect("stream");
    for seq in from..=to {
        let payload = payload_for(seq, 300);
        let appended = stream.append_unsettled_deferred(PublishRequest::client("d", b"", &payload)).await;
        let Appended::Pending(pending) = appended.expect("deferred append") else { panic!("not a duplicate") };
        assert_eq!(pending.seq, seq);
        stream.settle(&pending).await.expect("written");
    }
}

/// A simulated disk with an engine holding stream `D` (sync `always`).
async fn with_stream_d() -> (Rc<ManualClock>, SimDisk, jetcore::Engine) {
    let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
    let engine = sim_engine(&disk, &clock).await;
    engine.create_stream(small_config("D", &["d"]), ShardId(0)).await.expect("create");
    (clock, disk, engine)
}

async fn check_intact(engine: &jetcore::Engine, last_seq: u64) {
    let state = engine.state("D").expect("state");
    assert!(state.lost.is_empty(), "{:?}", state.lost);
    assert_eq!(state.last_seq, last_seq);
    for seq in 1..=last_seq {
        assert_eq!(&engine.get("D", seq).await.expect("intact").payload[..], &payload_for(seq, 300)[..]);
    }
}

#[test]
fn deferred_appends_are_written_without_a_sync_each_and_one_flush_makes_them_durable() {
    run(|| async {
        let (clock, disk, engine) = with_stream_d().await;
        let syncs = disk.op_count(SimOp::Sync);
        append_deferred(&engine, 1, 20).await;
        assert_eq!(disk.op_count(SimOp::Sync), syncs, "twenty groups written, none synced");
        engine.stream("D").expect("stream").flush().await.expect("flush");
        assert!(disk.op_count(SimOp::Sync) > syncs, "the flush synced them");
        drop(engine);
        disk.crash(CrashMode::DropUnsynced);
        check_intact(&sim_engine(&disk, &clock).await, 20).await;
    });
}

#[test]
fn deferred_appends_not_yet_flushed_are_not_durable() {
    run(|| async {
        let (clock, disk, engine) = with_stream_d().await;
        engine.publish("D", "d", b"", &payload_for(1, 300)).await.expect("an ordinary publish");
        append_deferred(&engine, 2, 10).await;
        drop(engine);
        disk.crash(CrashMode::DropUnsynced);
        // What was acknowledged survives; the deferred writes were never synced.
        check_intact(&sim_engine(&disk, &clock).await, 1).await;
    });
}

#[test]
fn an_ordinary_publish_after_deferred_appends_is_acked_only_once_they_are_durable_too() {
    run(|| async {
        let (clock, disk, engine) = with_stream_d().await;
        append_deferred(&engine, 1, 10).await;
        engine.publish("D", "d", b"", &payload_for(11, 300)).await.expect("an ordinary publish");
        drop(engine);
        disk.crash(CrashMode::TearLastSector { garbage: true });
        // No hole: the publish's sync covered the deferred writes before it.
        check_intact(&sim_engine(&disk, &clock).await, 11).await;
    });
}
