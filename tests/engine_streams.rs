//! Stream management through the engine: validation errors name the field, create is
//! idempotent, update applies new limits, delete removes files, memory streams work and
//! do not survive a restart, iteration by time.

#[path = "store_support.rs"]
mod support;

use std::rc::Rc;

use jetcore::engine::StartPosition;
use jetcore::store::SimDisk;
use jetcore::stream::{Error, ManualClock, ShardId, StorageKind, StreamConfig};
use support::{run, sim_engine, small_config};

#[test]
fn create_update_delete_and_validation() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        match engine.create_stream(StreamConfig::new("bad.name", &["x"]), ShardId(0)).await {
            Err(Error::Config(error)) => assert_eq!(error.field, "name"),
            other => panic!("expected a config error, got {other:?}"),
        }
        let config = small_config("S", &["s.*"]);
        engine.create_stream(config.clone(), ShardId(1)).await.expect("create");
        engine.create_stream(config.clone(), ShardId(1)).await.expect("identical create is a no-op");
        let mut different = config.clone();
        different.max_msgs = Some(5);
        assert!(matches!(
            engine.create_stream(different.clone(), ShardId(1)).await,
            Err(Error::StreamNameInUse { .. })
        ));
        for _ in 0..8 {
            engine.publish("S", "s.a", b"", b"x").await.expect("publish");
        }
        assert!(matches!(engine.publish("S", "t.a", b"", b"x").await, Err(Error::SubjectNotCaptured { .. })));
        // A wildcard token in a published subject is stored as plain text, as nats-server
        // stores it; an empty token is no subject at all.
        engine.publish("S", "s.*", b"", b"x").await.expect("a literal '*' token is stored");
        assert!(matches!(engine.publish("S", "s..a", b"", b"x").await, Err(Error::InvalidSubject { .. })));
        let state = engine.update_stream(different).await.expect("update");
        assert_eq!((state.messages, state.first_seq), (5, 5));
        engine.delete_stream("S").await.expect("delete");
        assert!(disk.paths().iter().all(|path| !path.starts_with("/data/streams/S")), "{:?}", disk.paths());
        drop(engine);
        assert!(matches!(sim_engine(&disk, &clock).await.state("S"), Err(Error::StreamNotFound { .. })));
    });
}

#[test]
fn memory_streams_share_the_logic_and_vanish_on_restart() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        let mut config = small_config("M", &["m"]);
        config.storage = StorageKind::Memory;
        config.max_msgs = Some(3);
        engine.create_stream(config, ShardId(0)).await.expect("create");
        for i in 0..5u8 {
            engine.publish("M", "m", b"", &[i]).await.expect("publish");
        }
        assert_eq!(&engine.get("M", 5).await.expect("get").payload[..], &[4u8]);
        assert_eq!(engine.state("M").expect("state").first_seq, 3);
        assert!(disk.paths().iter().all(|path| !path.starts_with("/data/streams/M")));
        let mut empty = small_config("M2", &["m2"]);
        empty.storage = StorageKind::Memory;
        engine.create_stream(empty, ShardId(0)).await.expect("create");
        engine.delete_stream("M2").await.expect("delete an empty memory stream");
        drop(engine);
        assert!(sim_engine(&disk, &clock).await.state("M").is_err());
    });
}

#[test]
fn iterate_from_a_start_time() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1_000)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        engine.create_stream(small_config("T", &["t"]), ShardId(0)).await.expect("create");
        for i in 0..6u8 {
            engine.publish("T", "t", b"", &[i]).await.expect("publish");
            clock.advance(100);
        }
        let mut cursor = engine.cursor("T", StartPosition::Time(1_250), None).expect("cursor");
        let first = cursor.next().await.expect("message").expect("read");
        assert_eq!((first.seq, first.timestamp_ns), (4, 1_300));
        let rest: Vec<u64> = {
            let mut seqs = Vec::new();
            while let Some(message) = cursor.next().await {
                seqs.push(message.expect("read").seq);
            }
            seqs
        };
        assert_eq!(rest, vec![5, 6]);
    });
}

#[test]
fn tick_on_idle_streams_does_no_io() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        let mut config = small_config("IDLE", &["idle"]);
        config.max_age = Some(std::time::Duration::from_secs(60));
        config.duplicate_window = std::time::Duration::from_secs(1);
        engine.create_stream(config, ShardId(0)).await.expect("create");
        let files = disk.paths();
        engine.tick().await.expect("tick");
        assert_eq!(disk.paths(), files, "a tick created files for an idle stream");
    });
}
