//! Sync policy `Interval`: acks come after the write, fdatasync at most every interval. A
//! power loss may lose acknowledged messages, but only a suffix after the last completed
//! sync: never a hole, never reported corruption. `Always` loses nothing acknowledged.

#[path = "store_support.rs"]
mod support;

use std::rc::Rc;
use std::time::Duration;

use jetcore::store::{CrashMode, SimDisk, SimOp, SyncPolicy};
use jetcore::stream::{ManualClock, ShardId};
use support::{payload_for, run, sim_engine, small_config};

#[test]
fn interval_sync_loses_at_most_a_suffix_on_power_loss() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        let mut config = small_config("I", &["i"]);
        config.sync = SyncPolicy::Interval(Duration::from_secs(3600));
        engine.create_stream(config, ShardId(0)).await.expect("create");
        for seq in 1..=10 {
            engine.publish("I", "i", b"", &payload_for(seq, 300)).await.expect("publish");
        }
        let syncs = disk.op_count(SimOp::Sync);
        engine.stream("I").expect("stream").checkpoint().await.expect("explicit sync point");
        assert!(disk.op_count(SimOp::Sync) > syncs, "the checkpoint synced the log");
        for seq in 11..=20 {
            engine.publish("I", "i", b"", &payload_for(seq, 300)).await.expect("acked after write only");
        }
        drop(engine);
        disk.crash(CrashMode::DropUnsynced);

        let engine = sim_engine(&disk, &clock).await;
        let state = engine.state("I").expect("state");
        assert!(state.lost.is_empty(), "{:?}", state.lost);
        assert!((10..=20).contains(&state.last_seq), "last_seq {}", state.last_seq);
        for seq in 1..=state.last_seq {
            assert_eq!(&engine.get("I", seq).await.expect("prefix intact").payload[..], &payload_for(seq, 300)[..]);
        }
    });
}

#[test]
fn always_sync_loses_nothing_acknowledged_on_power_loss() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        engine.create_stream(small_config("A", &["a"]), ShardId(0)).await.expect("create");
        for seq in 1..=20 {
            engine.publish("A", "a", b"", &payload_for(seq, 300)).await.expect("publish");
        }
        drop(engine);
        disk.crash(CrashMode::TearLastSector { garbage: true });
        let engine = sim_engine(&disk, &clock).await;
        assert_eq!(engine.state("A").expect("state").last_seq, 20);
    });
}
