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
        engine
            .create_stream(small_config("F", &["f"]), ShardId(0))
            .await
            .expect("create");
        engine
            .publish("F", "f", b"", b"first")
            .await
            .expect("publish");
        disk.set_capacity(Some(disk.used_bytes() + 64 * 1024)); // room for one more segment
        let mut published = 1;
        let refused = loop {
            let before = engine.state("F").expect("state");
            match engine
                .publish("F", "f", b"", &payload_for(published + 1, 1500))
                .await
            {
                Ok(ack) => {
                    published += 1;
                    assert_eq!(ack.seq, published);
                }
                Err(error) => break (error, before),
            }
            assert!(published < 1000, "capacity never reached");
        };
        let (error, before) = refused;
        assert!(
            matches!(error, Error::Store(store::Error::NoSpace { .. })),
            "{error:?}"
        );
        assert_eq!(
            engine.state("F").expect("state"),
            before,
            "a refused publish changed state"
        );
        assert_eq!(
            &engine
                .get("F", published)
                .await
                .expect("reads work")
                .payload[..],
            &payload_for(published, 1500)[..]
        );
        assert!(engine.publish("F", "f", b"", b"still full").await.is_err());

        disk.set_capacity(None);
        let ack = engine
            .publish("F", "f", b"", b"space freed")
            .await
            .expect("publishing resumes");
        assert_eq!(ack.seq, published + 1);
    });
}

#[test]
fn enospc_on_preallocation_fault_is_an_error_not_an_ack() {
    run(|| async {
        let clock = Rc::new(ManualClock::new(1));
        let disk = SimDisk::new();
        let engine = sim_engine(&disk, &clock).await;
        engine
            .create_stream(small_config("G", &["g"]), ShardId(0))
            .await
            .expect("create");
        disk.fail_nth(SimOp::Allocate, 1, libc::ENOSPC, false);
        let error = engine
            .publish("G", "g", b"", b"x")
            .await
            .expect_err("no segment could be made");
        assert!(
            matches!(error, Error::Store(store::Error::NoSpace { .. })),
            "{error:?}"
        );
        assert_eq!(engine.state("G").expect("state").last_seq, 0);
        assert_eq!(
            engine
                .publish("G", "g", b"", b"y")
                .await
                .expect("next publish works")
                .seq,
            1
        );
    });
}
