//! An fdatasync error is fail-stop: nothing from the failed group is acknowledged, the
//! stream refuses later writes, and after a restart exactly the acknowledged messages exist.

#[path = "store_support.rs"]
mod support;

use std::rc::Rc;

use futures::future::join_all;
use jetcore::store::{CrashMode, SimDisk, SimOp};
use jetcore::stream::{ManualClock, ShardId};
use support::{payload_for, run, sim_engine, small_config};

#[test]
fn fsync_error_fails_the_group_and_stops_the_stream() {
    run(|| async {
        let clock = Rc::new(ManualClock::new(1));
        let disk = SimDisk::new();
        let engine = sim_engine(&disk, &clock).await;
        engine.create_stream(small_config("S", &["s"]), ShardId(0)).await.expect("create");
        for seq in 1..=5 {
            engine.publish("S", "s", b"", &payload_for(seq, 100)).await.expect("publish");
        }
        disk.fail_nth(SimOp::Sync, 1, libc::EIO, false);
        let group = (6..=15).map(|seq| {
            let engine = &engine;
            async move { engine.publish("S", "s", b"", &payload_for(seq, 100)).await }
        });
        let results = join_all(group).await;
        assert!(results.iter().all(Result::is_err), "a publish in the failed group was acked: {results:?}");
        let later = engine.publish("S", "s", b"", b"after").await;
        assert!(later.is_err(), "the stream kept accepting writes after an fsync error");
        assert!(engine.state("S").expect("state").failed.is_some());
        assert_eq!(&engine.get("S", 3).await.expect("reads still served").payload[..], &payload_for(3, 100)[..]);
        drop(engine);

        disk.crash(CrashMode::DropUnsynced);
        let engine = sim_engine(&disk, &clock).await;
        let state = engine.state("S").expect("state");
        assert_eq!((state.messages, state.last_seq), (5, 5));
        assert!(state.failed.is_none());
        assert_eq!(engine.publish("S", "s", b"", b"recovered").await.expect("publish").seq, 6);
    });
}
