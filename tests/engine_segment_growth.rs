//! Segments start small and double up to the stream's segment size, so a stream that
//! holds little reserves little disk; a record bigger than the next size still fits, and
//! everything reads back after a restart.

#[path = "store_support.rs"]
mod support;

use std::path::Path;

use jetcore::engine::Engine;
use jetcore::stream::{ShardId, StreamConfig};
use support::{payload_for, run};

const MIB: u64 = 1024 * 1024;

/// Sizes of the `.seg` files under `dir`, by name.
fn segment_sizes(dir: &Path) -> Vec<u64> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let entry = entry.expect("entry");
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "seg") {
                found.push((path.clone(), entry.metadata().expect("metadata").len()));
            }
        }
    }
    found.sort();
    found.into_iter().map(|(_, size)| size).collect()
}

#[test]
fn segments_start_small_and_double() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        let mut config = StreamConfig::new("GROW", &["grow"]);
        config.segment_size_bytes = 8 * MIB;
        engine.create_stream(config, ShardId(0)).await.expect("create");
        engine.publish("GROW", "grow", b"", b"first").await.expect("publish");
        assert_eq!(segment_sizes(&path), vec![MIB], "a new stream reserves one small segment");

        // ~20 MiB in 64 KiB messages: 1 + 2 + 4 + 8 + 8 MiB segments.
        for seq in 2..=320u64 {
            engine.publish("GROW", "grow", b"", &payload_for(seq, 64 * 1024)).await.expect("publish");
        }
        let sizes = segment_sizes(&path);
        assert_eq!(&sizes[..4], &[MIB, 2 * MIB, 4 * MIB, 8 * MIB], "doubling up to the segment size");
        assert!(sizes[4..].iter().all(|size| *size == 8 * MIB), "then the segment size: {sizes:?}");
    });
}

#[test]
fn a_record_larger_than_the_next_segment_gets_a_segment_that_fits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        engine.create_stream(StreamConfig::new("BIG", &["big"]), ShardId(0)).await.expect("create");
        engine.publish("BIG", "big", b"", b"small").await.expect("publish");
        let big = payload_for(2, 3 * MIB as usize);
        engine.publish("BIG", "big", b"", &big).await.expect("a 3 MiB record fits");
        engine.publish("BIG", "big", b"", b"after").await.expect("publish");
        drop(engine);
        let engine = Engine::open(&path).await.expect("reopen");
        assert_eq!(&engine.get("BIG", 1).await.expect("get 1").payload[..], b"small");
        assert_eq!(&engine.get("BIG", 2).await.expect("get 2").payload[..], &big[..]);
        assert_eq!(&engine.get("BIG", 3).await.expect("get 3").payload[..], b"after");
        engine.publish("BIG", "big", b"", b"more").await.expect("publish after restart");
        assert_eq!(engine.get("BIG", 4).await.expect("get 4").seq, 4);
    });
}
