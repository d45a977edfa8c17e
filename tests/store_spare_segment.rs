//! The spare segment (`store/spare_segment.rs`): once the active segment is 3/4 full, the
//! next one is made (created, preallocated, zeroed, synced, named durably) before the roll,
//! and the roll takes it instead of making a file on a publish's path. A spare found after
//! a crash takes the next appends; a closed log leaves none behind.

#[path = "store_support.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::rc::Rc;

use jetcore::engine::Engine;
use jetcore::store::{SimDisk, SimOp};
use jetcore::stream::{ManualClock, ShardId};
use support::{crash_and_read_back, engine_with_stream, payload_for, run, sim_engine, small_config};

/// Payload bytes per message: 64 KiB segments (`small_config`) hold ~60.
const LEN: usize = 1000;

/// Where stream `S`'s segments are on the simulated disk.
const STREAM_DIR: &str = "/data/streams/S";

fn segment_path(id: u64) -> PathBuf {
    Path::new(STREAM_DIR).join(format!("{id:016}.seg"))
}

/// The segment files of stream `S` on `disk`, by id.
fn segment_ids(disk: &SimDisk) -> Vec<u64> {
    let mut ids: Vec<u64> = disk
        .paths()
        .iter()
        .filter(|path| path.parent() == Some(Path::new(STREAM_DIR)))
        .filter_map(|path| path.file_name()?.to_str()?.strip_suffix(".seg")?.parse().ok())
        .collect();
    ids.sort();
    ids
}

/// Lets background tasks (the spare's making) run.
async fn idle_turns() {
    for _ in 0..1_000 {
        futures_lite::future::yield_now().await;
    }
}

/// An engine on a simulated disk whose files want zeros ahead (as real files do), with
/// stream `S` in 64 KiB segments.
async fn engine_on_zeroing_disk() -> (Rc<ManualClock>, SimDisk, Engine) {
    let clock = Rc::new(ManualClock::new(1));
    let disk = SimDisk::new();
    disk.set_zero_ahead(true);
    let engine = sim_engine(&disk, &clock).await;
    engine.create_stream(small_config("S", &["s"]), ShardId(0)).await.expect("create");
    (clock, disk, engine)
}

/// Publishes `seqs`, each acked with its sequence.
async fn publish(engine: &Engine, seqs: std::ops::RangeInclusive<u64>) {
    for seq in seqs {
        let ack = engine.publish("S", "s", b"", &payload_for(seq, LEN)).await.expect("publish");
        assert_eq!(ack.seq, seq);
    }
}

/// Publishes from `seq` on, one at a time with idle turns after each, until `done`;
/// returns the next sequence.
async fn publish_until(engine: &Engine, disk: &SimDisk, mut seq: u64, done: impl Fn(&SimDisk) -> bool) -> u64 {
    while !done(disk) {
        publish(engine, seq..=seq).await;
        idle_turns().await;
        seq += 1;
        assert!(seq < 1_000, "never happened");
    }
    seq
}

/// Whether segment `id` exists and holds something other than zeros.
fn holds_records(disk: &SimDisk, id: u64) -> bool {
    disk.contents(&segment_path(id)).is_some_and(|bytes| bytes.iter().any(|byte| *byte != 0))
}

/// Publishes until the spare (segment 2) is made; returns the next sequence.
async fn publish_until_spare(engine: &Engine, disk: &SimDisk) -> u64 {
    let next = publish_until(engine, disk, 1, |disk| segment_ids(disk).contains(&2)).await;
    assert!(!holds_records(disk, 2), "segment 2 was made by the roll, not ahead of it");
    next
}

#[test]
fn the_roll_takes_a_segment_made_and_zeroed_before_it() {
    run(|| async {
        let (clock, disk, engine) = engine_on_zeroing_disk().await;
        let next = publish_until_spare(&engine, &disk).await;
        let first = disk.contents(&segment_path(1)).expect("segment 1");
        let used = first.iter().rposition(|byte| *byte != 0).expect("records");
        assert!(used >= first.len() / 4 * 3 - 4096, "made at 3/4 full, not before: {used} of {}", first.len());
        assert_eq!(segment_ids(&disk), vec![1, 2]);
        let spare = disk.contents(&segment_path(2)).expect("spare");
        assert_eq!(spare.len(), 64 * 1024, "preallocated whole");
        assert!(disk.op_count(SimOp::WriteAhead) > 0, "zeroed");
        let allocations = disk.op_count(SimOp::Allocate);

        // Past the first segment's end: the roll takes the spare, allocating nothing.
        let last = publish_until(&engine, &disk, next, |disk| holds_records(disk, 2)).await - 1;
        assert_eq!(disk.op_count(SimOp::Allocate), allocations, "the roll made a segment of its own");
        publish(&engine, last + 1..=last + 10).await;
        let last = last + 10;
        for seq in 1..=last {
            let message = engine.get("S", seq).await.expect("get");
            assert_eq!(&message.payload[..], &payload_for(seq, LEN)[..], "seq {seq}");
        }

        drop(engine);
        crash_and_read_back(&disk, &clock, "S", 1..=last, LEN).await;
    });
}

#[test]
fn a_spare_found_after_a_crash_takes_the_next_appends() {
    run(|| async {
        let (clock, disk, engine) = engine_on_zeroing_disk().await;
        let next = publish_until_spare(&engine, &disk).await;
        drop(engine);

        disk.crash(jetcore::store::CrashMode::DropUnsynced);
        let engine = sim_engine(&disk, &clock).await;
        // Recovery finds the spare as the newest segment, empty: appends go there, after
        // the messages of segment 1, and every message reads back.
        publish(&engine, next..=100).await;
        assert!(holds_records(&disk, 2), "the appends after recovery went to the spare");
        for seq in 1..=100 {
            let message = engine.get("S", seq).await.expect("get");
            assert_eq!(&message.payload[..], &payload_for(seq, LEN)[..], "seq {seq}");
        }
        let state = engine.state("S").expect("state");
        assert_eq!((state.first_seq, state.last_seq, state.messages), (1, 100, 100));
        drop(engine);
        crash_and_read_back(&disk, &clock, "S", 1..=100, LEN).await;
    });
}

#[test]
fn closing_the_log_removes_its_spare() {
    run(|| async {
        let (clock, disk, engine) = engine_on_zeroing_disk().await;
        let next = publish_until_spare(&engine, &disk).await;

        engine.close().await.expect("close");
        assert_eq!(segment_ids(&disk), vec![1], "a closed stream keeps no empty segment");
        let engine = sim_engine(&disk, &clock).await;
        publish(&engine, next..=100).await;
        for seq in 1..=100 {
            let message = engine.get("S", seq).await.expect("get");
            assert_eq!(&message.payload[..], &payload_for(seq, LEN)[..], "seq {seq}");
        }
    });
}

#[test]
fn a_full_disk_refuses_the_spare_and_the_roll_reports_it() {
    run(|| async {
        let (_clock, disk, engine) = engine_on_zeroing_disk().await;
        publish(&engine, 1..=1).await;
        // Room for what the first segment's records need, not for a second segment.
        disk.set_capacity(Some(disk.used_bytes() + 16 * 1024));
        let contents = |disk: &SimDisk| disk.contents(&segment_path(1)).expect("segment 1");
        let due = contents(&disk).len() / 4 * 3;
        let past_due = |disk: &SimDisk| contents(disk).iter().rposition(|byte| *byte != 0).unwrap_or(0) > due + 4096;
        let mut seq = publish_until(&engine, &disk, 2, past_due).await;
        assert_eq!(segment_ids(&disk), vec![1], "a spare the disk had no room for is removed");

        // The active segment still takes appends up to its end; the roll then fails
        // before a sequence is assigned, and nothing acknowledged is lost.
        let refusal = loop {
            match engine.publish("S", "s", b"", &payload_for(seq, LEN)).await {
                Ok(ack) => assert_eq!(ack.seq, seq),
                Err(error) => break error,
            }
            seq += 1;
            assert!(seq < 200, "a 64 KiB segment took {seq} messages of {LEN} bytes");
        };
        assert!(refusal.to_string().to_lowercase().contains("space"), "{refusal}");
        for acked in 1..seq {
            let message = engine.get("S", acked).await.expect("get");
            assert_eq!(&message.payload[..], &payload_for(acked, LEN)[..], "seq {acked}");
        }

        disk.set_capacity(None);
        let ack = engine.publish("S", "s", b"", &payload_for(seq, LEN)).await.expect("publish once there is room");
        assert_eq!(ack.seq, seq);
    });
}

#[test]
fn a_real_file_spare_is_made_then_taken_by_the_roll() {
    run(|| async {
        let dir = tempfile::tempdir().expect("tempdir");
        let segment_bytes = 256 * 1024;
        let engine = engine_with_stream(dir.path(), "S", &["s"], Some(segment_bytes)).await;
        let stream_dir = dir.path().join("streams/S");
        let segment = |id: u64| stream_dir.join(format!("{id:016}.seg"));
        let holds_records = |id: u64| std::fs::read(segment(id)).is_ok_and(|bytes| bytes.iter().any(|b| *b != 0));

        let mut seq = 0;
        while !segment(2).exists() {
            seq += 1;
            publish(&engine, seq..=seq).await;
            glommio::timer::sleep(std::time::Duration::from_millis(1)).await;
            assert!(seq < 2_000, "no spare was made");
        }
        assert!(!holds_records(2), "segment 2 was made by the roll, not ahead of it");
        // Its zeros and its sync go on in the background while publishes fill segment 1
        // and roll into it.
        while !holds_records(2) {
            seq += 1;
            publish(&engine, seq..=seq).await;
            assert!(seq < 4_000, "never rolled");
        }
        let total = seq + 100;
        publish(&engine, seq + 1..=total).await;
        for seq in 1..=total {
            let message = engine.get("S", seq).await.expect("get");
            assert_eq!(&message.payload[..], &payload_for(seq, LEN)[..], "seq {seq}");
        }
        engine.close().await.expect("close");
        let names: Vec<_> = std::fs::read_dir(&stream_dir).expect("dir").flatten().map(|e| e.file_name()).collect();
        let last = names.iter().filter_map(|name| name.to_str()?.strip_suffix(".seg")?.parse::<u64>().ok()).max();
        assert!(holds_records(last.expect("segments")), "an empty spare was left behind: {names:?}");

        let engine = Engine::open(dir.path()).await.expect("reopen");
        for seq in 1..=total {
            let message = engine.get("S", seq).await.expect("get after reopen");
            assert_eq!(&message.payload[..], &payload_for(seq, LEN)[..], "seq {seq}");
        }
    });
}

/// Publishes per publisher in the racing test.
const PER_PUBLISHER: u64 = 200;

#[test]
fn publishes_racing_rolls_and_refused_spares_all_read_back_after_a_reopen() {
    run(|| async {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = Rc::new(engine_with_stream(dir.path(), "S", &["s"], Some(64 * 1024 * 1024)).await);
        let acked = Rc::new(std::cell::RefCell::new(std::collections::BTreeMap::new()));
        // Publishers with many publishes in flight, so groups are written while a roll
        // waits; every 10th publish of the first is 7 MiB, bigger than the spares of the
        // first segments, which the roll then discards for a segment of its own.
        let publishers: Vec<_> = (0..8u64)
            .map(|publisher| {
                let (engine, acked) = (engine.clone(), acked.clone());
                glommio::spawn_local(async move {
                    for index in 0..PER_PUBLISHER {
                        let big = publisher == 0 && index % 10 == 9;
                        let len = if big {
                            3 * 1024 * 1024
                        } else {
                            8 * 1024 + (publisher * 997 + index * 131) as usize % 24_000
                        };
                        let mut payload = format!("p{publisher}-i{index}-").into_bytes();
                        payload.resize(len, b'a' + (index % 26) as u8);
                        let ack = engine.publish("S", "s", b"", &payload).await.expect("publish");
                        acked.borrow_mut().insert(ack.seq, payload);
                    }
                })
            })
            .collect();
        for publisher in publishers {
            publisher.await;
        }
        let acked = acked.take();
        assert_eq!(acked.len() as u64, 8 * PER_PUBLISHER);
        for (seq, payload) in &acked {
            let message = engine.get("S", *seq).await.expect("get");
            assert!(message.payload[..] == payload[..], "seq {seq} reads back other bytes");
        }
        let engine = Rc::try_unwrap(engine).ok().expect("publishers done");
        engine.close().await.expect("close");

        let engine = Engine::open(dir.path()).await.expect("reopen");
        let state = engine.state("S").expect("state");
        assert_eq!((state.messages, state.last_seq), (acked.len() as u64, acked.len() as u64), "{:?}", state.lost);
        for (seq, payload) in &acked {
            let message = engine.get("S", *seq).await.expect("get after reopen");
            assert!(message.payload[..] == payload[..], "seq {seq} reads back other bytes after reopen");
        }
    });
}
