//! Reads of messages in and next to the tail block pair (`store/tail_block.rs`), on the
//! simulated disk, through the log itself: a read whose disk read completes only after
//! the tail block moved on still finds its message, and a segment whose messages were all
//! carried (no index entry) reads from its start.

#[path = "store_support.rs"]
mod support;

use std::path::Path;
use std::rc::Rc;

use jetcore::store::record::encoded_len;
use jetcore::store::{open_log, Disk, LogConfig, Record, RecordKind, SegmentLog, SimDisk, StreamId, SyncPolicy};
use support::{payload_for, run};

const STREAM: StreamId = StreamId(7);
const PAYLOAD: usize = 100;

async fn open(disk: &SimDisk) -> Rc<SegmentLog> {
    let disk: Rc<dyn Disk> = Rc::new(disk.clone());
    let block_bytes = disk.block_bytes();
    let config = LogConfig {
        dir: Path::new("/data/streams/R").to_path_buf(),
        stream_id: STREAM,
        segment_size: 1024 * 1024,
        sync: SyncPolicy::Always,
        block_bytes,
    };
    disk.create_dir_all(&config.dir).await.expect("dir");
    let (log, _) = open_log(disk, config, None, &mut |_| {}).await.expect("open log");
    Rc::new(log)
}

fn record(kind: RecordKind, seq: u64, payload: &[u8]) -> Record<'_> {
    Record { kind, stream_id: STREAM, seq, timestamp_ns: seq as i64, subject: b"r.a", headers: b"", payload }
}

fn len(record: &Record<'_>) -> usize {
    encoded_len(record.subject.len(), record.headers.len(), record.payload.len())
}

/// Appends message `seq` and waits until it is durable (one in flight).
async fn publish_one(log: &Rc<SegmentLog>, seq: u64) {
    let payload = payload_for(seq, PAYLOAD);
    let message = record(RecordKind::Message, seq, &payload);
    log.ensure_room(len(&message)).await.expect("room");
    let group = log.append(&message).expect("append");
    log.wait_durable(&group).await.expect("durable");
}

async fn check(log: &SegmentLog, seq: u64, context: &str) {
    let found = log.read_message(seq).await.unwrap_or_else(|e| panic!("{context}: seq {seq}: {e:?}"));
    let found = found.unwrap_or_else(|| panic!("{context}: seq {seq} not found"));
    assert_eq!(&found.payload[..], &payload_for(seq, PAYLOAD)[..], "{context}: seq {seq}");
}

/// A get by sequence starts while its message sits in the tail block (in memory, past
/// where reads from disk stop) and awaits a disk read; one-at-a-time publishes move the
/// tail on past that block before the read completes, so the message is on disk past the
/// limit the walk started with, and no longer in memory. The read walks again.
#[test]
fn a_read_that_outlasts_the_tail_block_finds_its_message() {
    run(|| async {
        let disk = SimDisk::new();
        let log = open(&disk).await;
        // A burst as one group, three blocks long: the walk from its index entry reads disk.
        let payloads: Vec<Vec<u8>> = (1..=80).map(|seq| payload_for(seq, PAYLOAD)).collect();
        let mut last = None;
        for (seq, payload) in (1..).zip(&payloads) {
            let message = record(RecordKind::Message, seq, payload);
            log.ensure_room(len(&message)).await.expect("room");
            last = Some(log.append(&message).expect("append"));
        }
        log.wait_durable(&last.expect("group")).await.expect("durable");
        for seq in 81..=85 {
            publish_one(&log, seq).await;
        }
        disk.hold_reads(true);
        let read = check(&log, 85, "read outlasting its tail block");
        let move_on = async {
            // About 27 records fill a block: these end two blocks past the one holding 85.
            for seq in 86..=150 {
                publish_one(&log, seq).await;
            }
            disk.hold_reads(false);
        };
        futures::future::join(read, move_on).await;
        assert!(disk.op_count(jetcore::store::SimOp::Read) > 0, "the read went to the disk");
        for seq in 1..=150 {
            check(&log, seq, "afterwards").await;
        }
    });
}

/// A segment whose first record is not a message, and whose messages were then all
/// published one at a time: every one of them was carried in the tail block pair, so the
/// segment has no index entry. Each reads back, in the tail block and on disk.
#[test]
fn messages_of_a_segment_without_an_index_entry_read_from_its_start() {
    run(|| async {
        let disk = SimDisk::new();
        let log = open(&disk).await;
        let tombstone = record(RecordKind::Delete, 1_000, b"");
        log.ensure_room(len(&tombstone)).await.expect("room");
        let group = log.append(&tombstone).expect("append");
        log.wait_durable(&group).await.expect("durable");
        for seq in 1..=90 {
            publish_one(&log, seq).await;
            check(&log, seq, "just published").await;
            check(&log, 1, "the segment's first message").await;
        }
        for seq in 1..=90 {
            check(&log, seq, "afterwards").await;
        }
    });
}
