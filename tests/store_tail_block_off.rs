//! The tail block pair (`store/tail_block.rs`) is used only where a one-block write lands
//! whole or not at all (`SegmentFile::writes_blocks_whole`: the device's physical sector
//! holds a block, or `JETCORE_TAIL_BLOCKS=on`). Where it does not, publishes made one at a
//! time each take a fresh block, as before the pair, and nothing rewrites a block that
//! holds acknowledged records. Its own test binary: the switch is process-wide.

#[path = "store_support.rs"]
mod support;

use jetcore::engine::Engine;
use jetcore::store::scan::record_spans;
use jetcore::store::{RecordKind, TAIL_BLOCKS_ENV};
use support::{engine_with_stream, payload_for, run};

const BLOCK: u64 = 4096;

#[test]
fn without_whole_block_writes_each_one_at_a_time_publish_takes_a_fresh_block() {
    std::env::set_var(TAIL_BLOCKS_ENV, "off");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = engine_with_stream(&path, "T", &["t.*"], Some(1024 * 1024)).await;
        for seq in 1..=30 {
            let ack = engine.publish("T", "t.a", b"", &payload_for(seq, 100)).await.expect("publish");
            assert_eq!(ack.seq, seq);
        }
        drop(engine);
        let image = std::fs::read(path.join("streams/T/0000000000000001.seg")).expect("segment");
        let spans: Vec<_> = record_spans(&image).into_iter().filter(|span| span.kind == RecordKind::Message).collect();
        // One copy of each message, each at the start of a block of its own.
        assert_eq!(spans.iter().map(|span| span.seq).collect::<Vec<_>>(), (1..=30).collect::<Vec<_>>());
        for span in &spans {
            assert_eq!(span.offset, (span.seq - 1) * BLOCK, "message {} at {}", span.seq, span.offset);
        }
        let engine = Engine::open(&path).await.expect("reopen");
        for seq in 1..=30 {
            let message = engine.get("T", seq).await.expect("get");
            assert_eq!(&message.payload[..], &payload_for(seq, 100)[..]);
        }
    });
}
