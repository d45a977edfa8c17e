//! Checkpoints keep the message table's slots in an append-only slot file
//! (`stream/slot_file.rs`), on real O_DIRECT files: each checkpoint appends what was
//! appended since the last one, deletions ride in the checkpoint, a new generation
//! replaces the file once most of it is below the stream's first sequence, and a restart
//! restores exactly the table it had, from the checkpoint and its slots, with no scan. A
//! damaged slot file, or slots whose checkpoint never landed, cost a scan or nothing,
//! never a wrong table.

#[path = "store_support.rs"]
mod support;

use std::path::{Path, PathBuf};

use jetcore::engine::Engine;
use jetcore::stream::{PurgeRequest, ShardId};
use support::{payload_for, run, small_config};

/// Every slot file under `root`, with its size.
fn slot_files(root: &Path) -> Vec<(PathBuf, u64)> {
    let mut found = Vec::new();
    let mut directories = vec![root.to_path_buf()];
    while let Some(directory) = directories.pop() {
        for entry in std::fs::read_dir(&directory).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                directories.push(path);
            } else if path.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with("slots.")) {
                let size = std::fs::metadata(&path).expect("metadata").len();
                found.push((path, size));
            }
        }
    }
    found.sort();
    found
}

fn name_of(path: &Path) -> &str {
    path.file_name().and_then(|name| name.to_str()).expect("file name")
}

/// An engine on `path` with stream `S` (subjects `s.*`) created.
async fn with_stream(path: &Path) -> Engine {
    let engine = Engine::open(path).await.expect("open");
    engine.create_stream(small_config("S", &["s.*"]), ShardId(0)).await.expect("create");
    engine
}

async fn publish_range(engine: &Engine, seqs: std::ops::RangeInclusive<u64>) {
    for seq in seqs {
        let ack = engine.publish("S", &format!("s.{}", seq % 7), b"", &payload_for(seq, 300)).await.expect("publish");
        assert_eq!(ack.seq, seq);
    }
}

async fn checkpoint(engine: &Engine) {
    assert!(engine.stream("S").expect("stream").checkpoint().await.expect("checkpoint"), "a checkpoint was written");
}

/// Reopens `path` and checks the stream is as `before` says, restored without a scan
/// when `scanned` is false.
async fn reopened_as(path: &Path, before: &jetcore::stream::StreamState, scanned: bool) -> Engine {
    let engine = Engine::open(path).await.expect("reopen");
    let state = engine.state("S").unwrap_or_else(|e| panic!("{e:?} {:?}", engine.failed_to_open()));
    assert_eq!(&state, before);
    let since = engine.stream("S").expect("stream").bytes_since_checkpoint();
    assert_eq!(since > 0, scanned, "bytes scanned past the checkpoint: {since}");
    engine
}

#[test]
fn checkpoints_append_slots_and_a_restart_restores_the_table_without_a_scan() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = with_stream(&path).await;
        publish_range(&engine, 1..=400).await;
        checkpoint(&engine).await;
        let first = slot_files(&path);
        assert_eq!(first.len(), 1, "{first:?}");
        assert_eq!(name_of(&first[0].0), "slots.1.bin");

        publish_range(&engine, 401..=700).await;
        for seq in [3, 4, 5, 500, 650] {
            assert!(engine.delete_message("S", seq).await.expect("delete"));
        }
        checkpoint(&engine).await;
        let second = slot_files(&path);
        assert_eq!(second.len(), 1, "{second:?}");
        assert_eq!(second[0].0, first[0].0, "the same generation, appended to");
        assert!(second[0].1 > first[0].1, "{} then {}", first[0].1, second[0].1);
        // 300 more slots of 16 bytes and a chunk header, padded to a block: the first
        // 400 were not written again.
        assert!(second[0].1 - first[0].1 <= 8192, "{} then {}", first[0].1, second[0].1);

        let before = engine.state("S").expect("state");
        assert_eq!((before.messages, before.first_seq, before.last_seq), (695, 1, 700));
        drop(engine); // no close: the restart restores the last checkpoint, as after kill -9

        let engine = reopened_as(&path, &before, false).await;
        assert!(engine.get("S", 4).await.is_err(), "a deletion after the slots were written holds");
        assert_eq!(&engine.get("S", 651).await.expect("get").payload[..], &payload_for(651, 300)[..]);
        let last = engine.get_last_by_subject("S", "s.6").await.expect("last by subject");
        assert_eq!(last.seq, 699);
        assert_eq!(engine.publish("S", "s.1", b"", b"next").await.expect("publish").seq, 701);
        engine.close().await.expect("close");
    });
}

#[test]
fn a_new_generation_replaces_the_file_once_most_of_it_is_purged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = with_stream(&path).await;
        publish_range(&engine, 1..=300).await;
        checkpoint(&engine).await;
        let purge = PurgeRequest { up_to_seq: Some(251), ..PurgeRequest::default() };
        assert_eq!(engine.purge("S", purge).await.expect("purge"), 250);
        publish_range(&engine, 301..=310).await;
        checkpoint(&engine).await;
        let files = slot_files(&path);
        assert_eq!(files.iter().map(|(file, _)| name_of(file)).collect::<Vec<_>>(), ["slots.2.bin"]);
        assert_eq!(files[0].1, 4096, "60 slots in one chunk");

        let before = engine.state("S").expect("state");
        assert_eq!((before.messages, before.first_seq, before.last_seq), (60, 251, 310));
        drop(engine);
        let engine = reopened_as(&path, &before, false).await;

        // Everything purged: the checkpoint names no slot file, and none is left.
        engine.purge("S", PurgeRequest::default()).await.expect("purge all");
        checkpoint(&engine).await;
        assert!(slot_files(&path).is_empty(), "{:?}", slot_files(&path));
        let before = engine.state("S").expect("state");
        drop(engine);
        let engine = reopened_as(&path, &before, false).await;
        assert_eq!(engine.publish("S", "s.1", b"", b"next").await.expect("publish").seq, 311);
        engine.close().await.expect("close");
    });
}

#[test]
fn a_damaged_slot_file_costs_a_scan_not_a_wrong_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = with_stream(&path).await;
        publish_range(&engine, 1..=200).await;
        engine.delete_message("S", 7).await.expect("delete");
        checkpoint(&engine).await;
        let before = engine.state("S").expect("state");
        drop(engine);

        let (file, _) = slot_files(&path).pop().expect("a slot file");
        let mut bytes = std::fs::read(&file).expect("read");
        bytes[100] ^= 0x10; // inside the first chunk's slots: its CRC no longer holds
        std::fs::write(&file, &bytes).expect("write");
        let engine = reopened_as(&path, &before, true).await;
        assert!(engine.get("S", 7).await.is_err());
        engine.close().await.expect("close");

        // Gone altogether: the same.
        let before = {
            let engine = Engine::open(&path).await.expect("reopen");
            let state = engine.state("S").expect("state");
            drop(engine);
            state
        };
        for (file, _) in slot_files(&path) {
            std::fs::remove_file(file).expect("remove");
        }
        reopened_as(&path, &before, true).await.close().await.expect("close");
    });
}

#[test]
fn slots_whose_checkpoint_never_landed_are_ignored_then_overwritten() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = with_stream(&path).await;
        publish_range(&engine, 1..=100).await;
        checkpoint(&engine).await;
        let checkpoint_file = slot_files(&path)[0].0.with_file_name("checkpoint.bin");
        let first_checkpoint = std::fs::read(&checkpoint_file).expect("read checkpoint");
        let first_slots = slot_files(&path)[0].1;
        publish_range(&engine, 101..=300).await;
        engine.delete_message("S", 50).await.expect("delete");
        checkpoint(&engine).await;
        assert!(slot_files(&path)[0].1 > first_slots);
        let before = engine.state("S").expect("state");
        drop(engine);

        // As if the second checkpoint's rename never happened: its slots are in the file,
        // past what the first checkpoint names.
        std::fs::write(&checkpoint_file, &first_checkpoint).expect("put back the first checkpoint");
        let engine = reopened_as(&path, &before, true).await;
        assert!(engine.get("S", 50).await.is_err(), "the deletion came back from the log");
        publish_range(&engine, 301..=320).await;
        checkpoint(&engine).await;
        let before = engine.state("S").expect("state");
        drop(engine);
        let engine = reopened_as(&path, &before, false).await;
        assert_eq!(&engine.get("S", 320).await.expect("get").payload[..], &payload_for(320, 300)[..]);
        engine.close().await.expect("close");
    });
}

#[test]
fn deletions_in_written_slots_accumulate_across_checkpoints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = with_stream(&path).await;
        publish_range(&engine, 1..=300).await;
        checkpoint(&engine).await;
        for seq in [10, 11, 12, 40] {
            engine.delete_message("S", seq).await.expect("delete");
        }
        publish_range(&engine, 301..=310).await;
        checkpoint(&engine).await;
        // 13 joins the run 10..=12; 1 moves the first sequence past nothing (2 is live).
        for seq in [13, 200, 305, 1] {
            engine.delete_message("S", seq).await.expect("delete");
        }
        checkpoint(&engine).await;
        assert_eq!(slot_files(&path).len(), 1, "still the first generation");
        let before = engine.state("S").expect("state");
        assert_eq!((before.messages, before.first_seq), (302, 2));
        drop(engine);

        let engine = reopened_as(&path, &before, false).await;
        for seq in [1, 10, 11, 12, 13, 40, 200, 305] {
            assert!(engine.get("S", seq).await.is_err(), "{seq} stays deleted");
        }
        assert_eq!(engine.get("S", 14).await.expect("get").seq, 14);
        engine.close().await.expect("close");
    });
}

#[test]
fn a_checkpoint_that_fails_keeps_its_deletions_for_the_next() {
    use std::rc::Rc;

    use jetcore::store::{CrashMode, SimDisk, SimOp};
    use jetcore::stream::ManualClock;

    run(|| async {
        let disk = SimDisk::new();
        let clock = Rc::new(ManualClock::default());
        let engine = support::sim_engine(&disk, &clock).await;
        engine.create_stream(small_config("S", &["s.*"]), ShardId(0)).await.expect("create");
        publish_range(&engine, 1..=100).await;
        checkpoint(&engine).await;
        publish_range(&engine, 101..=150).await;
        engine.delete_message("S", 20).await.expect("delete");
        engine.delete_message("S", 30).await.expect("delete");
        // The slot file's chunk is written; the checkpoint file's write fails.
        disk.fail_nth(SimOp::Write, 2, libc::EIO, false);
        assert!(engine.stream("S").expect("stream").checkpoint().await.is_err());
        disk.clear_faults();
        checkpoint(&engine).await;
        let before = engine.state("S").expect("state");
        drop(engine);

        disk.crash(CrashMode::DropUnsynced);
        let engine = support::sim_engine(&disk, &clock).await;
        assert_eq!(engine.state("S").expect("state"), before);
        assert_eq!(engine.stream("S").expect("stream").bytes_since_checkpoint(), 0, "restored, not scanned");
        for seq in [20, 30] {
            assert!(engine.get("S", seq).await.is_err(), "{seq} stays deleted");
        }
    });
}

#[test]
fn many_deletions_in_written_slots_start_a_new_generation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = with_stream(&path).await;
        publish_range(&engine, 1..=300).await;
        checkpoint(&engine).await;
        // 80 separate runs in a span of 300: past a quarter, as a KV bucket's overwritten
        // keys would make them.
        for seq in (3..=161).step_by(2) {
            engine.delete_message("S", seq).await.expect("delete");
        }
        checkpoint(&engine).await;
        let files = slot_files(&path);
        assert_eq!(files.iter().map(|(file, _)| name_of(file)).collect::<Vec<_>>(), ["slots.2.bin"]);
        let before = engine.state("S").expect("state");
        assert_eq!(before.messages, 220);
        drop(engine);
        let engine = reopened_as(&path, &before, false).await;
        assert!(engine.get("S", 161).await.is_err());
        assert_eq!(engine.get("S", 162).await.expect("get").seq, 162);
        engine.close().await.expect("close");
    });
}
