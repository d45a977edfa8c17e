//! Closing an engine, deleting a stream, or retiring segments (retention, purge) closes the
//! segment files there and then, on real O_DIRECT files. A file left to close on drop stays
//! open until the executor's next I/O cycle, and one that is about to end never runs it;
//! a handle kept by a read window stays open until the stream's next read. Either way an
//! unlinked file's disk space stays allocated meanwhile.

#[path = "store_support.rs"]
mod support;

use std::path::Path;

use jetcore::engine::{Engine, StartPosition};
use jetcore::stream::{PurgeRequest, ShardId};
use support::{payload_for, run, small_config};

/// Segment files under `dir` this process holds open (deleted ones included).
fn open_segments_under(dir: &Path) -> Vec<String> {
    let mut open = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd") {
        let Ok(target) = std::fs::read_link(entry.expect("fd entry").path()) else {
            continue;
        };
        let target = target.to_string_lossy().into_owned();
        if target.starts_with(&*dir.to_string_lossy()) && target.contains(".seg") {
            open.push(target);
        }
    }
    open
}

/// An engine on `dir` with one stream per name, each capturing `<name in lower case>.>`.
async fn engine_with_streams(dir: &Path, names: &[&str]) -> Engine {
    let engine = Engine::open(dir).await.expect("open");
    for name in names {
        let subjects = format!("{}.>", name.to_lowercase());
        engine.create_stream(small_config(name, &[&subjects]), ShardId(0)).await.expect("create");
    }
    engine
}

/// Publishes `count` messages to `stream` and reads them back, so the log holds read
/// windows as well as its segments.
async fn fill_and_read(engine: &Engine, stream: &str, subject: &str, count: u64) {
    for seq in 1..=count {
        engine.publish(stream, subject, b"", &payload_for(seq, 2000)).await.expect("publish");
    }
    let mut cursor = engine.cursor(stream, StartPosition::Sequence(1), None).expect("cursor");
    for seq in 1..=count {
        let message = cursor.next().await.expect("message").expect("read");
        assert_eq!(message.seq, seq);
    }
    assert_eq!(engine.get(stream, 3).await.expect("get").seq, 3);
}

#[test]
fn close_closes_every_segment_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = engine_with_streams(&path, &["A", "B"]).await;
        fill_and_read(&engine, "A", "a.x", 600).await;
        fill_and_read(&engine, "B", "b.x", 50).await;
        assert!(!open_segments_under(&path).is_empty(), "segments are open while in use");
        engine.close().await.expect("close");
        // No `.await` since the close: nothing has had an I/O cycle to close files in.
        assert_eq!(open_segments_under(&path), Vec::<String>::new());

        // Closed for good: reopening finds every message.
        let engine = Engine::open(&path).await.expect("reopen");
        assert_eq!(engine.state("A").expect("state").messages, 600);
        assert_eq!(engine.state("B").expect("state").messages, 50);
        engine.close().await.expect("close");
    });
}

#[test]
fn delete_stream_closes_its_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = engine_with_streams(&path, &["KEEP", "GONE"]).await;
        fill_and_read(&engine, "KEEP", "keep.x", 20).await;
        fill_and_read(&engine, "GONE", "gone.x", 600).await;
        engine.delete_stream("GONE").await.expect("delete");
        let open = open_segments_under(&path);
        assert!(
            open.iter().all(|target| !target.contains("GONE")),
            "the deleted stream's files are still open: {open:?}"
        );
        assert!(!open.is_empty(), "the other stream's files stay open");
        assert!(matches!(
            engine.publish("GONE", "gone.x", b"", b"late").await,
            Err(jetcore::stream::Error::StreamNotFound { .. })
        ));
        fill_and_read(&engine, "KEEP", "keep.y", 20).await;
        engine.close().await.expect("close");
    });
}

/// Segment files under `dir` this process holds open after they were unlinked.
fn open_deleted_segments_under(dir: &Path) -> Vec<String> {
    open_segments_under(dir).into_iter().filter(|target| target.ends_with("(deleted)")).collect()
}

#[test]
fn retired_segments_close_even_with_read_windows_on_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        let mut config = small_config("KV", &["kv.>"]);
        config.max_msgs = Some(400);
        engine.create_stream(config, ShardId(0)).await.expect("create");
        fill_and_read(&engine, "KV", "kv.x", 300).await;
        // Random gets leave read windows behind on the oldest segments.
        for seq in [1u64, 40, 90, 150, 7] {
            assert_eq!(engine.get("KV", seq).await.expect("get").seq, seq);
        }
        // Limits retire the front segments as new messages arrive...
        for seq in 301..=700u64 {
            engine.publish("KV", "kv.y", b"", &payload_for(seq, 2000)).await.expect("publish");
        }
        let state = engine.state("KV").expect("state");
        assert_eq!((state.first_seq, state.messages), (301, 400));
        assert_eq!(open_deleted_segments_under(&path), Vec::<String>::new());
        // ...and so does a purge.
        assert_eq!(engine.get("KV", 320).await.expect("get").seq, 320);
        let purged =
            engine.purge("KV", PurgeRequest { filter: None, up_to_seq: Some(650), keep: None }).await.expect("purge");
        assert_eq!(purged, 349);
        assert_eq!(open_deleted_segments_under(&path), Vec::<String>::new());
        assert_eq!(engine.get("KV", 650).await.expect("get").seq, 650);
        engine.close().await.expect("close");
    });
}
