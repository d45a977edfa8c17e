//! Reads reuse the last read window of a log: every record must still be returned, with
//! its own bytes, whatever was read (and cached) before it was written. (Recent records
//! may also be served from the log's in-memory group buffers, so this checks the
//! interleaving end to end rather than the window's cut-back alone.)

#[path = "store_support.rs"]
mod support;

use jetcore::engine::Engine;
use jetcore::stream::ShardId;
use support::{payload_for, run, small_config};

#[test]
fn reads_interleaved_with_writes_see_every_new_record() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        engine.create_stream(small_config("LOG", &["log.>"]), ShardId(0)).await.expect("create");
        for seq in 1..=400u64 {
            let ack = engine.publish("LOG", "log.a", b"", &payload_for(seq, 300)).await.expect("publish");
            assert_eq!(ack.seq, seq);
            // Read the newest and an older record after every write: the first read of
            // each pair caches a window that the next write extends past.
            for read_seq in [seq, seq / 2 + 1] {
                let message = engine.get("LOG", read_seq).await.expect("get");
                assert_eq!(message.seq, read_seq);
                assert_eq!(&message.payload[..], &payload_for(read_seq, 300)[..], "seq {read_seq}");
            }
        }
    });
}
