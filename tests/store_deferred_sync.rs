//! A restore's appends are deferred (`Stream::append_unsettled_deferred`): under sync
//! `always` their groups complete once written, with no fdatasync each, and one
//! `Stream::flush` at the end makes them durable. An ordinary publish after them still
//! waits for everything before it. Checked on the simulated disk, which drops what was
//! not synced at a power loss.

#[path = "store_support.rs"]
mod support;

use std::rc::Rc;

use jetcore::store::{CrashMode, SimDisk, SimOp};
use jetcore::stream::{Appended, ManualClock, PendingAppend, PublishRequest, ShardId, Stream, StreamConfig};
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
    with_stream(small_config("D", &["d"])).await
}

/// A simulated disk with an engine holding a stream of `config`.
async fn with_stream(config: StreamConfig) -> (Rc<ManualClock>, SimDisk, jetcore::Engine) {
    let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
    let engine = sim_engine(&disk, &clock).await;
    engine.create_stream(config, ShardId(0)).await.expect("create");
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

/// Appends `count` messages of 300 B deferred, not waiting for any; starts the writes of
/// full groups after each (as a restore does) and lets their flushers run.
async fn append_unwaited(stream: &Stream, count: u64) -> Vec<PendingAppend> {
    let mut pending = Vec::new();
    for seq in 1..=count {
        let payload = payload_for(seq, 300);
        let appended = stream.append_unsettled_deferred(PublishRequest::client("d", b"", &payload)).await;
        let Appended::Pending(appended) = appended.expect("deferred append") else { panic!("not a duplicate") };
        pending.push(appended);
        stream.start_writes();
        futures_lite::future::yield_now().await;
    }
    pending
}

/// Deferred appends nobody waits for fill their group before it is written, so a restore
/// writes whole groups rather than one per uploaded chunk; waiting on the open group
/// writes it.
#[test]
fn deferred_appends_nobody_waits_for_fill_their_group_first() {
    run(|| async {
        let (_clock, disk, engine) = with_stream_d().await;
        let stream = engine.stream("D").expect("stream");
        let writes = disk.op_count(SimOp::Write);
        let pending = append_unwaited(&stream, 50).await;
        assert_eq!(disk.op_count(SimOp::Write), writes, "the open group waits to fill");
        stream.settle(pending.last().expect("appended")).await.expect("written");
        assert!(disk.op_count(SimOp::Write) > writes, "waiting on it wrote it");
    });
}

/// Once a group is full the next append opens another, and the full one is written while
/// the new one fills: one write per `GROUP_COMMIT_BYTES_MAX`.
#[test]
fn a_full_group_of_deferred_appends_is_written_while_the_next_fills() {
    run(|| async {
        let mut config = small_config("D", &["d"]);
        config.segment_size_bytes = 8 << 20;
        let (clock, disk, engine) = with_stream(config).await;
        let stream = engine.stream("D").expect("stream");
        let writes = disk.op_count(SimOp::Write) - disk.op_count(SimOp::WriteAhead);
        let per_group = jetcore::limits::GROUP_COMMIT_BYTES_MAX as u64 / 340;
        let pending = append_unwaited(&stream, per_group * 5 / 4).await;
        let group_writes = disk.op_count(SimOp::Write) - disk.op_count(SimOp::WriteAhead) - writes;
        assert_eq!(group_writes, 1, "the full group, not the open one");
        stream.settle(pending.last().expect("appended")).await.expect("written");
        stream.flush().await.expect("flush");
        drop(engine);
        disk.crash(CrashMode::DropUnsynced);
        check_intact(&sim_engine(&disk, &clock).await, per_group * 5 / 4).await;
    });
}
