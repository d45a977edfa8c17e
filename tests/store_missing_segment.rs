//! A segment file deleted from the middle of a stream (reliability row 6) and a damaged
//! checkpoint: start-up succeeds, the lost range is reported exactly, first/last sequences
//! are right, nothing else is lost, and new publishes continue above the old high-water mark.

#[path = "store_support.rs"]
mod support;

use std::path::Path;
use std::rc::Rc;

use jetcore::engine::Engine;
use jetcore::store::scan::record_spans;
use jetcore::store::{Disk, RecordKind, SimDisk};
use jetcore::stream::{ManualClock, ShardId};
use support::{payload_for, run, sim_engine, small_config};

const MESSAGES: u64 = 60;
const DIR: &str = "/data/streams/M";

async fn fill(engine: &Engine) {
    engine.create_stream(small_config("M", &["m"]), ShardId(0)).await.expect("create");
    for seq in 1..=MESSAGES {
        engine.publish("M", "m", b"", &payload_for(seq, 3000)).await.expect("publish");
    }
}

fn segment_seqs(disk: &SimDisk, id: u64) -> (u64, u64) {
    let image = disk.contents(&Path::new(DIR).join(format!("{id:016}.seg"))).expect("segment");
    let seqs: Vec<u64> = record_spans(&image).iter().filter(|s| s.kind == RecordKind::Message).map(|s| s.seq).collect();
    (seqs[0], *seqs.last().expect("messages"))
}

async fn check_interior_loss(disk: &SimDisk, clock: &Rc<ManualClock>, lost_seqs: (u64, u64)) {
    let engine = sim_engine(disk, clock).await;
    let state = engine.state("M").expect("the stream still opens");
    assert_eq!(state.lost.len(), 1, "{:?}", state.lost);
    assert_eq!(state.lost[0].seqs, Some(lost_seqs));
    assert_eq!((state.first_seq, state.last_seq), (1, MESSAGES));
    assert_eq!(state.messages, MESSAGES - (lost_seqs.1 - lost_seqs.0 + 1));
    for seq in [1, lost_seqs.0 - 1, lost_seqs.1 + 1, MESSAGES] {
        assert_eq!(&engine.get("M", seq).await.expect("served").payload[..], &payload_for(seq, 3000)[..]);
    }
    assert_eq!(engine.publish("M", "m", b"", b"next").await.expect("publish").seq, MESSAGES + 1);
}

#[test]
fn interior_segment_deleted_without_checkpoint() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        fill(&sim_engine(&disk, &clock).await).await;
        let lost = segment_seqs(&disk, 2);
        disk.remove_file(&Path::new(DIR).join(format!("{:016}.seg", 2))).await.expect("remove");
        check_interior_loss(&disk, &clock, lost).await;
    });
}

#[test]
fn interior_segment_deleted_after_a_clean_stop() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        fill(&engine).await;
        engine.close().await.expect("close writes a checkpoint");
        let lost = segment_seqs(&disk, 2);
        disk.remove_file(&Path::new(DIR).join(format!("{:016}.seg", 2))).await.expect("remove");
        check_interior_loss(&disk, &clock, lost).await;
    });
}

#[test]
fn damaged_checkpoint_falls_back_to_a_full_scan() {
    run(|| async {
        let (clock, disk) = (Rc::new(ManualClock::new(1)), SimDisk::new());
        let engine = sim_engine(&disk, &clock).await;
        fill(&engine).await;
        let before = engine.state("M").expect("state");
        engine.close().await.expect("close");
        disk.flip_bit(&Path::new(DIR).join("checkpoint.bin"), 40, 2);
        let engine = sim_engine(&disk, &clock).await;
        assert_eq!(engine.state("M").expect("state"), before);
    });
}
