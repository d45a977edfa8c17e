//! Blocking durable writes (store/blocking_write.rs) on real O_DIRECT files: a shard that
//! is idle makes a small group durable with one blocking `pwritev2(RWF_DSYNC)`, and a
//! pipelined publisher's bigger group too (up to `limits::BLOCKING_GROUP_BYTES_MAX`, its
//! log being the shard's last written), and every acknowledged message is there after an
//! unclean stop and after a clean one, with large groups (write, then fdatasync) between
//! them in the same segment. `uring` never blocks; `blocking` blocks for every one-write
//! group.
//!
//! `JETCORE_DURABLE_WRITE` is read once per shard thread; each `run` is a new thread, so
//! one test sets it before each run (one test only: the variable is process-wide).

#[path = "store_support.rs"]
mod support;

use std::path::Path;

use jetcore::engine::{Engine, StartPosition};
use jetcore::stream::{ShardId, StorageKind};
use support::{payload_for, run, small_config};

/// One record per group: most small; every seventh larger than
/// `limits::DURABLE_WRITE_BYTES_MAX` (16 KiB), a pipeline's group, which blocks on an idle
/// shard whose last write was to the same log; every eleventh larger than `limits::BLOCKING_GROUP_BYTES_MAX` (64 KiB), which
/// is always written and then fdatasynced.
const SMALL_BYTES: usize = 300;
const MEDIUM_BYTES: usize = 20 * 1024;
const LARGE_BYTES: usize = 80 * 1024;
const MESSAGES: u64 = 300;
/// Room for a few large records a segment, so that segments still roll.
const SEGMENT_BYTES: u64 = 512 * 1024;

fn size_for(seq: u64) -> usize {
    if seq % 11 == 0 {
        LARGE_BYTES
    } else if seq % 7 == 0 {
        MEDIUM_BYTES
    } else {
        SMALL_BYTES
    }
}

fn count_of(bytes: usize) -> u64 {
    (1..=MESSAGES).filter(|seq| size_for(*seq) == bytes).count() as u64
}

/// Publishes `MESSAGES` one at a time into a new store at `path`, taking turns over
/// `streams` (all on shard 0), message `i` being `size(i)` bytes; drops the engine without
/// closing it (as kill -9), reopens, checks every message, and returns how many groups
/// were made durable by a blocking write.
fn publish_then_recover(path: &Path, streams: &'static [&'static str], size: fn(u64) -> usize) -> u64 {
    let path = path.to_path_buf();
    let turns = streams.len() as u64;
    let stream_of = move |i: u64| streams[((i - 1) % turns) as usize];
    let (sender, receiver) = std::sync::mpsc::channel();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        for name in streams {
            let mut config = small_config(name, &[&format!("{name}.>")]);
            config.segment_size_bytes = SEGMENT_BYTES;
            engine.create_stream(config, ShardId(0)).await.expect("create");
        }
        for i in 1..=MESSAGES {
            let name = stream_of(i);
            let ack = engine.publish(name, &format!("{name}.a"), b"", &payload_for(i, size(i))).await;
            assert_eq!(ack.expect("publish").seq, (i - 1) / turns + 1);
        }
        let counts = engine.flush_counts(StorageKind::File);
        sender.send(counts.blocking_writes).expect("send");
        drop(engine); // no close: no checkpoint

        let each = MESSAGES / turns;
        let engine = Engine::open(&path).await.expect("reopen");
        for name in streams {
            let state = engine.state(name).expect("state");
            assert_eq!((state.messages, state.first_seq, state.last_seq), (each, 1, each));
            assert!(state.lost.is_empty(), "{:?}", state.lost);
        }
        let first = streams[0];
        let after = payload_for(MESSAGES + 1, SMALL_BYTES);
        engine.publish(first, &format!("{first}.b"), b"", &after).await.expect("publish");
        engine.close().await.expect("close");

        let engine = Engine::open(&path).await.expect("reopen after a clean stop");
        for (turn, name) in streams.iter().enumerate() {
            let mut cursor = engine.cursor(name, StartPosition::Sequence(1), None).expect("cursor");
            for seq in 1..=each {
                let i = (seq - 1) * turns + turn as u64 + 1;
                let message = cursor.next().await.expect("message").expect("read");
                assert_eq!((message.seq, &message.payload[..]), (seq, &payload_for(i, size(i))[..]));
            }
            if turn == 0 {
                let last = cursor.next().await.expect("the message after the restart").expect("read");
                assert_eq!(last.payload, after);
            }
            assert!(cursor.next().await.is_none());
        }
        engine.close().await.expect("close");
    });
    receiver.recv().expect("the run's count")
}

fn medium_only(_: u64) -> usize {
    MEDIUM_BYTES
}

#[test]
fn an_idle_shard_blocks_for_its_small_and_pipelined_durable_writes_and_loses_nothing() {
    let (small, medium) = (count_of(SMALL_BYTES), count_of(MEDIUM_BYTES));

    std::env::remove_var("JETCORE_DURABLE_WRITE");
    let dir = tempfile::tempdir().expect("tempdir");
    let blocked = publish_then_recover(dir.path(), &["MIXED"], size_for);
    // The measured choice tries each way on small groups before it picks the faster, so
    // at least one (a one-write group on an idle shard) blocked, whichever wins; every
    // medium group blocks (the shard's one log, nothing else to do).
    let expected = (1 + medium)..=(small + medium);
    assert!(expected.contains(&blocked), "default: {blocked} blocked, of {small} small and {medium} medium groups");

    // Medium groups alone: every one after the log's first write blocks ...
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(publish_then_recover(dir.path(), &["ONE"], medium_only), MESSAGES - 1, "medium groups, one stream");
    // ... but not when two streams take turns: each group's log was not the last written.
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(publish_then_recover(dir.path(), &["TURN", "TAKING"], medium_only), 0, "medium groups, two streams");

    std::env::set_var("JETCORE_DURABLE_WRITE", "blocking");
    let dir = tempfile::tempdir().expect("tempdir");
    let blocked = publish_then_recover(dir.path(), &["MIXED"], size_for);
    assert_eq!(blocked, small + medium, "blocking: every small and medium group");

    std::env::set_var("JETCORE_DURABLE_WRITE", "uring");
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(publish_then_recover(dir.path(), &["MIXED"], size_for), 0, "uring: none");
}
