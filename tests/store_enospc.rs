//! A full disk: the publish that needs a new segment gets ENOSPC, nothing is assigned or
//! acknowledged, state is unchanged, reads keep working, and publishing resumes once space
//! is freed, without a restart.

#[path = "store_support.rs"]
mod support;

use std::rc::Rc;

use jetcore::store::{self, SimDisk, SimOp};
use jetcore::stream::{Error, ManualClock, ShardId};
use support::{payload_for, run, sim_engine, small_config};

#[test]
fn enospc_leaves_state_unchanged_and_publishing_resumes() {
    run(|| async {
        let clock = Rc::new(ManualClock::new(1));
        let disk = SimDisk::new();
        let engine = sim_engine(&disk, &clock).await;
        engine.create_stream(small_config("F", &["f"]), ShardId(0)).await.expect("create");
        engine.publish("F", "f", b"", b"first").await.expect("publish");
        disk.set_capacity(Some(disk.used_bytes() + 64 * 1024)); // room for one more segment
        let mut published = 1;
        let refused = loop {
            let before = engine.state("F").expect("state");
            match engine.publish("F", "f", b"", &payload_for(published + 1, 1500)).await {
                Ok(ack) => {
                    published += 1;
                    assert_eq!(ack.seq, published);
                }
                Err(error) => break (error, before),
            }
            assert!(published < 1000, "capacity never reached");
        };
        let (error, before) = refused;
        assert!(matches!(error, Error::Store(store::Error::NoSpace { .. })), "{error:?}");
        assert_eq!(engine.state("F").expect("state"), before, "a refused publish changed state");
        assert_eq!(
            &engine.get("F", published).await.expect("reads work").payload[..],
            &payload_for(published, 1500)[..]
        );
        // The same publish again (a smaller one may still fit in the last block's free end).
        assert!(engine.publish("F", "f", b"", &payload_for(published + 1, 1500)).await.is_err());

        disk.set_capacity(None);
        let ack = engine.publish("F", "f", b"", b"space freed").await.expect("publishing resumes");
        assert_eq!(ack.seq, published + 1);
    });
}

#[test]
fn enospc_on_preallocation_fault_is_an_error_not_an_ack() {
    run(|| async {
        let clock = Rc::new(ManualClock::new(1));
        let disk = SimDisk::new();
        let engine = sim_engine(&disk, &clock).await;
        engine.create_stream(small_config("G", &["g"]), ShardId(0)).await.expect("create");
        disk.fail_nth(SimOp::Allocate, 1, libc::ENOSPC, false);
        let error = engine.publish("G", "g", b"", b"x").await.expect_err("no segment could be made");
        assert!(matches!(error, Error::Store(store::Error::NoSpace { .. })), "{error:?}");
        assert_eq!(engine.state("G").expect("state").last_seq, 0);
        assert_eq!(engine.publish("G", "g", b"", b"y").await.expect("next publish works").seq, 1);
    });
}

/// The rarer full disk: a write inside an already preallocated segment finds no space
/// (a filesystem that allocates on first write, or here the simulated disk). The queued
/// publishes fail, the stream reopens itself from its files in place, and nothing of the
/// failed publishes remains: not in the state, not in the dedupe window, not in reads.
#[test]
fn enospc_on_a_write_inside_a_segment_fails_the_queued_publishes_and_publishing_resumes() {
    run(|| async {
        let clock = Rc::new(ManualClock::new(1));
        let disk = SimDisk::new();
        let engine = sim_engine(&disk, &clock).await;
        let mut config = small_config("W", &["w.*"]);
        config.cache_reads = true; // its messages go to the record cache too
        engine.create_stream(config, ShardId(0)).await.expect("create");
        for seq in 1..=10u64 {
            engine.publish("W", "w.a", b"", &payload_for(seq, 700)).await.expect("publish");
        }
        let before = engine.state("W").expect("state");

        // Every segment write fails until cleared; eight publishes in flight at once.
        disk.fail_nth(SimOp::Write, 1, libc::ENOSPC, true);
        let msg_id = |n: u64| format!("NATS/1.0\r\nNats-Msg-Id: id-{n}\r\n\r\n").into_bytes();
        let headers: Vec<Vec<u8>> = (0..8).map(msg_id).collect();
        let results = futures::future::join_all(
            headers.iter().map(|headers| engine.publish("W", "w.b", headers, b"never stored")),
        )
        .await;
        for result in &results {
            assert!(result.is_err(), "a publish was acknowledged on a full disk: {result:?}");
        }
        assert!(matches!(results[0], Err(Error::Store(store::Error::NoSpace { .. }))), "{:?}", results[0]);
        assert_eq!(engine.state("W").expect("state"), before, "failed publishes changed state");
        assert!(engine.get("W", 11).await.is_err(), "a failed publish is readable");
        // Still full: refused again, the stream still consistent.
        assert!(engine.publish("W", "w.b", b"", b"still full").await.is_err());
        assert_eq!(engine.state("W").expect("state"), before);

        disk.clear_faults();
        let ack = engine.publish("W", "w.b", &headers[0], b"stored").await.expect("publishing resumes");
        assert_eq!((ack.seq, ack.duplicate), (11, false), "the failed publish's id is not remembered");
        assert_eq!(&engine.get("W", 11).await.expect("get").payload[..], b"stored");
        let state = engine.state("W").expect("state");
        assert_eq!((state.messages, state.last_seq), (11, 11));
        assert!(state.lost.is_empty(), "damage reported: {:?}", state.lost);
        drop(engine);

        // A restart finds exactly the acknowledged messages.
        let engine = sim_engine(&disk, &clock).await;
        let state = engine.state("W").expect("state");
        assert_eq!((state.messages, state.first_seq, state.last_seq), (11, 1, 11));
        for seq in 1..=10u64 {
            assert_eq!(&engine.get("W", seq).await.expect("get").payload[..], &payload_for(seq, 700)[..]);
        }
        assert_eq!(&engine.get("W", 11).await.expect("get").payload[..], b"stored");
    });
}

/// A failed fdatasync stays fail-stop: after it, what the disk holds is unknown.
#[test]
fn a_failed_fdatasync_is_not_reopened_in_place() {
    run(|| async {
        let clock = Rc::new(ManualClock::new(1));
        let disk = SimDisk::new();
        let engine = sim_engine(&disk, &clock).await;
        engine.create_stream(small_config("S", &["s"]), ShardId(0)).await.expect("create");
        engine.publish("S", "s", b"", b"one").await.expect("publish");
        disk.fail_nth(SimOp::Sync, 1, libc::ENOSPC, false);
        assert!(engine.publish("S", "s", b"", b"two").await.is_err());
        assert!(
            engine.publish("S", "s", b"", b"three").await.is_err(),
            "the stream took publishes after a failed fdatasync"
        );
    });
}
