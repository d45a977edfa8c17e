//! Group commit: concurrent publishes share one write and one fdatasync; sequences are
//! unique and each producer's are increasing; on real files 16 producers all get acks.

#[path = "store_support.rs"]
mod support;

use std::rc::Rc;

use futures::future::join_all;
use jetcore::engine::Engine;
use jetcore::store::{SimDisk, SimOp, SIM_SECTOR_BYTES};
use jetcore::stream::{ManualClock, ShardId, StorageKind};
use support::{payload_for, run, sim_engine, small_config};

#[test]
fn concurrent_publishes_share_one_fdatasync() {
    run(|| async {
        let clock = Rc::new(ManualClock::new(1));
        let disk = SimDisk::new();
        let engine = sim_engine(&disk, &clock).await;
        engine.create_stream(small_config("G", &["g.*"]), ShardId(0)).await.expect("create");
        engine.publish("G", "g.a", b"", b"warm").await.expect("publish");
        let (syncs_before, writes_before) = (disk.op_count(SimOp::Sync), disk.op_count(SimOp::Write));
        let publishes = (0..64u64).map(|i| {
            let engine = &engine;
            async move { engine.publish("G", "g.a", b"", &payload_for(i, 200)).await.expect("publish").seq }
        });
        let mut seqs = join_all(publishes).await;
        assert_eq!(disk.op_count(SimOp::Sync) - syncs_before, 1, "one fdatasync for the group");
        assert_eq!(disk.op_count(SimOp::Write) - writes_before, 1, "one write for the group");
        seqs.sort_unstable();
        assert_eq!(seqs, (2..=65).collect::<Vec<u64>>());
    });
}

#[test]
fn sixteen_producers_on_real_files_all_acked_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Rc::new(Engine::open(&path).await.expect("open"));
        engine.create_stream(small_config("R", &["r.*"]), ShardId(0)).await.expect("create");
        let producers = (0..16u64).map(|producer| {
            let engine = engine.clone();
            async move {
                let mut seqs = Vec::new();
                for i in 0..25u64 {
                    let subject = format!("r.{producer}");
                    seqs.push(engine.publish("R", &subject, b"", &payload_for(i, 1024)).await.expect("publish").seq);
                }
                seqs
            }
        });
        let all = join_all(producers).await;
        for seqs in &all {
            assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]));
        }
        let mut flat: Vec<u64> = all.concat();
        flat.sort_unstable();
        flat.dedup();
        assert_eq!(flat.len(), 400);
        assert_eq!(engine.state("R").expect("state").messages, 400);
    });
}

#[test]
fn appends_join_the_next_group_while_a_sync_is_in_flight() {
    run(|| async {
        let clock = Rc::new(ManualClock::new(1));
        let disk = SimDisk::new();
        let engine = Rc::new(sim_engine(&disk, &clock).await);
        engine.create_stream(small_config("Q", &["q"]), ShardId(0)).await.expect("create");
        engine.publish("Q", "q", b"", b"warm").await.expect("publish");
        disk.set_sync_delay_polls(50);
        let syncs_before = disk.op_count(SimOp::Sync);
        let first_done = Rc::new(std::cell::Cell::new(false));
        let first = glommio::spawn_local({
            let (engine, done) = (engine.clone(), first_done.clone());
            async move {
                let ack = engine.publish("Q", "q", b"", b"first").await;
                done.set(true);
                ack
            }
        });
        for _ in 0..5 {
            futures_lite::future::yield_now().await;
        }
        assert!(!first_done.get(), "the first group's fdatasync should still be in flight");
        let second = glommio::spawn_local({
            let engine = engine.clone();
            async move { engine.publish("Q", "q", b"", b"second").await }
        });
        futures_lite::future::yield_now().await;
        assert_eq!(engine.state("Q").expect("state").last_seq, 3, "the append was accepted during the flush");
        assert!(!first_done.get());
        let (first, second) = (first.await.expect("first"), second.await.expect("second"));
        assert_eq!((first.seq, second.seq), (2, 3));
        assert_eq!(disk.op_count(SimOp::Sync) - syncs_before, 2, "one fdatasync per group, in order");
    });
}

/// The group-commit counters `/metrics` shows agree with what the disk saw: one write and
/// one fdatasync for a group of 64 concurrent publishes, 64 records in it, and its bytes
/// a whole number of blocks holding every payload.
#[test]
fn group_commit_counters_match_the_disk_operations() {
    run(|| async {
        let clock = Rc::new(ManualClock::new(1));
        let disk = SimDisk::new();
        let engine = sim_engine(&disk, &clock).await;
        engine.create_stream(small_config("C", &["c.*"]), ShardId(0)).await.expect("create");
        engine.publish("C", "c.a", b"", b"warm").await.expect("publish");
        let before = engine.flush_counts(StorageKind::File);
        assert_eq!((before.group_records.count(), before.group_records.sum), (1, 1), "the warm-up group");
        let (syncs_before, writes_before) = (disk.op_count(SimOp::Sync), disk.op_count(SimOp::Write));
        let publishes = (0..64u64).map(|i| {
            let engine = &engine;
            async move { engine.publish("C", "c.a", b"", &payload_for(i, 200)).await.expect("publish") }
        });
        join_all(publishes).await;
        let after = engine.flush_counts(StorageKind::File);
        let groups = after.group_records.count() - before.group_records.count();
        assert_eq!(groups, (disk.op_count(SimOp::Write) - writes_before) as u64);
        assert_eq!(groups, 1, "one group");
        assert_eq!(after.group_records.sum - before.group_records.sum, 64);
        assert_eq!(after.write_nanos.count() - before.write_nanos.count(), groups);
        let syncs = after.sync_nanos.count() - before.sync_nanos.count();
        assert_eq!(syncs, (disk.op_count(SimOp::Sync) - syncs_before) as u64);
        let bytes = after.group_bytes.sum - before.group_bytes.sum;
        assert!(bytes >= 64 * 200, "{bytes}");
        assert_eq!(bytes % SIM_SECTOR_BYTES as u64, 0, "whole blocks: {bytes}");
        assert_eq!(engine.flush_counts(StorageKind::Memory).group_records.count(), 0, "no memory stream");
    });
}
