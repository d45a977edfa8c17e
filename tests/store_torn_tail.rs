//! A torn tail, cut at every byte offset of the last two records, on the simulated disk and
//! on real O_DIRECT files: recovery keeps every earlier record, drops only the torn one,
//! reports nothing lost (it was never acknowledged), never panics, and keeps working.

#[path = "store_support.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::rc::Rc;

use jetcore::engine::Engine;
use jetcore::store::scan::{record_spans, RecordSpan};
use jetcore::store::{RecordKind, SimDisk};
use jetcore::stream::{ManualClock, ShardId};
use support::{payload_for, run, sim_engine, small_config};

const MESSAGES: u64 = 8;
const SEGMENT: &str = "/data/streams/T/0000000000000001.seg";

/// Publishes MESSAGES messages, returns the message records' spans.
async fn fill(engine: &Engine) -> Vec<RecordSpan> {
    engine.create_stream(small_config("T", &["t.*"]), ShardId(0)).await.expect("create");
    for seq in 1..=MESSAGES {
        let payload = payload_for(seq, 50 + seq as usize * 7);
        assert_eq!(engine.publish("T", "t.a", b"", &payload).await.expect("publish").seq, seq);
    }
    Vec::new()
}

/// Each message's first copy in the file: the one recovery takes. (One publish at a time
/// rewrites the last block's records into its other copy, `store/tail_block.rs`.)
fn message_spans(bytes: &[u8]) -> Vec<RecordSpan> {
    let mut seen = std::collections::HashSet::new();
    record_spans(bytes).into_iter().filter(|span| span.kind == RecordKind::Message && seen.insert(span.seq)).collect()
}

/// Offsets to cut at: every byte of the last two message records.
fn cut_points(spans: &[RecordSpan]) -> Vec<u64> {
    let last_two = &spans[spans.len() - 2..];
    last_two.iter().flat_map(|span| span.offset..span.offset + span.len as u64).collect()
}

/// Checks the reopened engine holds exactly the records that end at or before `cut`.
async fn check_after_cut(engine: &Engine, spans: &[RecordSpan], cut: u64) {
    let kept = spans.iter().filter(|span| span.offset + span.len as u64 <= cut).count() as u64;
    let state = engine.state("T").expect("state");
    assert_eq!((state.messages, state.last_seq), (kept, kept), "cut at {cut}");
    assert!(state.lost.is_empty(), "cut at {cut}: {:?}", state.lost);
    for seq in 1..=kept {
        let message = engine.get("T", seq).await.expect("kept message readable");
        assert_eq!(&message.payload[..], &payload_for(seq, 50 + seq as usize * 7)[..]);
    }
    let ack = engine.publish("T", "t.b", b"", b"after-repair").await.expect("publish after repair");
    assert_eq!(ack.seq, kept + 1, "cut at {cut}");
}

#[test]
fn torn_tail_on_simulated_disk_at_every_offset() {
    run(|| async {
        let clock = Rc::new(ManualClock::new(1_000));
        let disk = SimDisk::new();
        fill(&sim_engine(&disk, &clock).await).await;
        let image = disk.contents(Path::new(SEGMENT)).expect("segment");
        let spans = message_spans(&image);
        assert_eq!(spans.len() as u64, MESSAGES);
        for cut in cut_points(&spans) {
            let disk = SimDisk::new();
            fill(&sim_engine(&disk, &clock).await).await; // dropped unclosed: no checkpoint
            disk.cut(Path::new(SEGMENT), cut as usize);
            let engine = sim_engine(&disk, &clock).await;
            check_after_cut(&engine, &spans, cut).await;
            drop(engine);
            // The repaired tail must also survive the next restart.
            let engine = sim_engine(&disk, &clock).await;
            let state = engine.state("T").expect("state");
            assert!(state.lost.is_empty(), "second reopen after cut at {cut}: {:?}", state.lost);
        }
    });
}

#[test]
fn torn_tail_on_real_files_at_every_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        fill(&Engine::open(&path).await.expect("open")).await;
        let stream_dir = path.join("streams/T");
        let segment: PathBuf = stream_dir.join("0000000000000001.seg");
        let image = std::fs::read(&segment).expect("read segment");
        let meta = std::fs::read(stream_dir.join("meta.json")).expect("meta");
        let spans = message_spans(&image);
        for cut in cut_points(&spans) {
            for entry in std::fs::read_dir(&stream_dir).expect("list") {
                let entry = entry.expect("entry").path();
                if entry.extension().is_some_and(|ext| ext == "seg") && entry != segment {
                    std::fs::remove_file(entry).expect("remove later segment");
                }
            }
            std::fs::write(&segment, &image[..cut as usize]).expect("cut");
            std::fs::write(stream_dir.join("meta.json"), &meta).expect("meta");
            let _ = std::fs::remove_file(stream_dir.join("checkpoint.bin"));
            let engine = Engine::open(&path).await.expect("reopen");
            check_after_cut(&engine, &spans, cut).await;
        }
    });
}
