//! Durable writes (`JETCORE_DURABLE_WRITE=dsync`, store/dma.rs) on real O_DIRECT files:
//! with small groups written through an O_DSYNC descriptor and no fdatasync, larger
//! groups written and then fdatasynced beside them (their fdatasync must stay real), and
//! zero-ahead writes that no fdatasync covers, every acknowledged message is there after
//! an unclean stop and after a clean one. The mode is read once per process, so this file
//! is its own test binary.

#[path = "store_support.rs"]
mod support;

use jetcore::engine::{Engine, StartPosition};
use jetcore::stream::{ShardId, StorageKind};
use support::{payload_for, run, small_config};

/// Payload sizes: one record per small group (a durable write), and records larger than
/// `limits::DURABLE_WRITE_BYTES_MAX` (16 KiB), so groups of both kinds alternate in one
/// segment.
const SMALL_BYTES: usize = 300;
const LARGE_BYTES: usize = 20 * 1024;

fn size_for(seq: u64) -> usize {
    if seq % 7 == 0 {
        LARGE_BYTES
    } else {
        SMALL_BYTES
    }
}

#[test]
fn durably_written_groups_survive_unclean_and_clean_restarts() {
    // Before any shard thread starts: the mode is read once, at the first write.
    std::env::set_var("JETCORE_DURABLE_WRITE", "dsync");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        engine.create_stream(small_config("DURABLE", &["durable.>"]), ShardId(0)).await.expect("create");
        for seq in 1..=400u64 {
            let payload = payload_for(seq, size_for(seq));
            let ack = engine.publish("DURABLE", "durable.a", b"", &payload).await.expect("publish");
            assert_eq!(ack.seq, seq);
        }
        // One publish at a time: one group each. Only the large ones had an fdatasync.
        let counts = engine.flush_counts(StorageKind::File);
        let (groups, syncs) = (counts.write_nanos.count(), counts.sync_nanos.count());
        let large = (1..=400u64).filter(|seq| size_for(*seq) == LARGE_BYTES).count() as u64;
        assert!(groups >= 400 && syncs >= large && syncs < groups / 2, "{groups} groups, {syncs} fdatasyncs");
        drop(engine); // no close: no checkpoint, as after kill -9

        let engine = Engine::open(&path).await.expect("reopen");
        let state = engine.state("DURABLE").expect("state");
        assert_eq!((state.messages, state.first_seq, state.last_seq), (400, 1, 400));
        assert!(state.lost.is_empty(), "{:?}", state.lost);
        for seq in 401..=450u64 {
            engine.publish("DURABLE", "durable.b", b"", &payload_for(seq, size_for(seq))).await.expect("publish");
        }
        engine.close().await.expect("close");

        let engine = Engine::open(&path).await.expect("reopen after a clean stop");
        let mut cursor = engine.cursor("DURABLE", StartPosition::Sequence(1), None).expect("cursor");
        for seq in 1..=450u64 {
            let message = cursor.next().await.expect("message").expect("read");
            assert_eq!((message.seq, &message.payload[..]), (seq, &payload_for(seq, size_for(seq))[..]));
        }
        assert!(cursor.next().await.is_none());
        engine.close().await.expect("close");
    });
}
