//! A bit flip in a sealed segment is detected by its checksum and reported with the exact
//! sequence and byte range, while every other message is still served.

#[path = "store_support.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::rc::Rc;

use futures::future::join_all;
use jetcore::engine::Engine;
use jetcore::store::scan::record_spans;
use jetcore::store::{RecordKind, SimDisk};
use jetcore::stream::{Error, ManualClock, ShardId};
use support::{payload_for, run, sim_engine, small_config};

const MESSAGES: u64 = 240;
const PAYLOAD_BYTES: usize = 700;
const FIRST_SEGMENT: &str = "/data/streams/B/0000000000000001.seg";

/// Publishes in concurrent batches so records pack into shared groups.
async fn fill(engine: &Engine) {
    engine.create_stream(small_config("B", &["b.>"]), ShardId(0)).await.expect("create");
    for batch in 0..MESSAGES / 20 {
        let publishes = (1..=20).map(|i| {
            let seq = batch * 20 + i;
            async move { engine.publish("B", "b.x", b"", &payload_for(seq, PAYLOAD_BYTES)).await }
        });
        for ack in join_all(publishes).await {
            ack.expect("publish");
        }
    }
}

/// (seq, offset, len) of a message in the middle of a segment image.
fn victim(image: &[u8]) -> (u64, u64, usize) {
    let messages: Vec<_> = record_spans(image).into_iter().filter(|s| s.kind == RecordKind::Message).collect();
    let span = messages[messages.len() / 2];
    (span.seq, span.offset, span.len)
}

async fn check_others_served(engine: &Engine, bad_seq: u64) {
    for seq in [1, bad_seq - 1, bad_seq + 1, MESSAGES] {
        let message = engine.get("B", seq).await.expect("undamaged message served");
        assert_eq!(&message.payload[..], &payload_for(seq, PAYLOAD_BYTES)[..]);
    }
}

#[test]
fn flip_found_by_recovery_scan_is_reported_exactly() {
    run(|| async {
        let clock = Rc::new(ManualClock::new(1));
        let disk = SimDisk::new();
        fill(&sim_engine(&disk, &clock).await).await; // unclean stop: recovery scans everything
        let image = disk.contents(Path::new(FIRST_SEGMENT)).expect("segment");
        let (seq, offset, len) = victim(&image);
        disk.flip_bit(Path::new(FIRST_SEGMENT), offset as usize + len - 3, 5);

        let engine = sim_engine(&disk, &clock).await;
        let state = engine.state("B").expect("state");
        assert_eq!(state.lost.len(), 1, "{:?}", state.lost);
        let lost = &state.lost[0];
        assert_eq!(lost.seqs, Some((seq, seq)));
        assert_eq!(lost.segment, Some(1));
        let bytes = lost.bytes.clone().expect("byte range");
        assert_eq!(bytes.start, offset);
        assert!(bytes.end >= offset + len as u64 && bytes.end <= offset + len as u64 + 4096, "{bytes:?}");
        assert_eq!(state.messages, MESSAGES - 1);
        assert!(matches!(engine.get("B", seq).await, Err(Error::NoMessageFound)));
        check_others_served(&engine, seq).await;
        assert_eq!(engine.publish("B", "b.y", b"", b"more").await.expect("publish").seq, MESSAGES + 1);
    });
}

#[test]
fn flip_behind_a_checkpoint_is_caught_on_read_on_real_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        fill(&engine).await;
        engine.close().await.expect("clean close writes a checkpoint");
        let segment: PathBuf = path.join("streams/B/0000000000000001.seg");
        let mut image = std::fs::read(&segment).expect("read");
        let (seq, offset, len) = victim(&image);
        image[offset as usize + len / 2] ^= 0x10;
        std::fs::write(&segment, &image).expect("write");

        let engine = Engine::open(&path).await.expect("reopen");
        match engine.get("B", seq).await {
            Err(Error::Store(jetcore::store::Error::ChecksumMismatch { segment: 1, offset: at })) => {
                assert_eq!(at, offset)
            }
            other => panic!("expected a checksum mismatch, got {other:?}"),
        }
        let lost = engine.state("B").expect("state").lost;
        assert_eq!(lost.len(), 1);
        assert_eq!((lost[0].seqs, lost[0].segment), (Some((seq, seq)), Some(1)));
        check_others_served(&engine, seq).await;
    });
}
