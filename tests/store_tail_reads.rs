//! The tail block pair (`store/tail_block.rs`) through the log itself, on the simulated
//! disk: a read whose disk read completes only after the tail block moved on still finds
//! its message, a segment whose messages were all carried (no index entry) reads from its
//! start, and the room a publish reserves counts a carrying group its message moves.

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
    open_sized(disk, 1024 * 1024).await
}

async fn open_sized(disk: &SimDisk, segment_size: u64) -> Rc<SegmentLog> {
    let disk: Rc<dyn Disk> = Rc::new(disk.clone());
    let block_bytes = disk.block_bytes();
    let config = LogConfig {
        dir: Path::new("/data/streams/R").to_path_buf(),
        stream_id: STREAM,
        segment_size,
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

/// A publish reserves room once for its message and the removal records it may add
/// (`SegmentLog::ensure_room`), then appends them one by one. Here an open carrying group
/// sits in the earlier block of a pair, the newest copy in the later one, and a big message
/// outgrows it: the message moves the group, with its own records, to the first fresh
/// block. The reservation as a whole would not have fit one group with them, and the room
/// check then left the group's records out: the message ended at the segment's end and
/// the removal record after it was placed past it ("append without room").
#[test]
fn the_room_a_publish_reserves_counts_the_carrying_group_its_message_moves() {
    run(|| async {
        const MIB: usize = 1024 * 1024;
        let disk = SimDisk::new();
        let log = open_sized(&disk, 4 * MIB as u64).await;
        // A 2 MiB segment whose first group ends on a block boundary 8 KiB short of 1 MiB.
        log.ensure_room(2 * MIB).await.expect("room");
        let first = vec![b'f'; MIB - 8192 - len(&record(RecordKind::Message, 1, b""))];
        let group = log.append(&record(RecordKind::Message, 1, &first)).expect("append");
        log.wait_durable(&group).await.expect("durable");
        // 2 in the block at 1 MiB - 8 KiB; 3 carried to the block after it (the newest
        // copy); 4, 5 and 6 appended in one turn, carrying, back to the earlier block.
        for seq in 2..=3 {
            publish_one(&log, seq).await;
        }
        let payloads: Vec<Vec<u8>> = (4..=6).map(|seq| payload_for(seq, PAYLOAD)).collect();
        let mut own = 0;
        for (seq, payload) in (4..).zip(&payloads) {
            let message = record(RecordKind::Message, seq, payload);
            log.ensure_room(len(&message)).await.expect("room");
            log.append(&message).expect("append");
            own += len(&message);
        }
        // A message that takes the moved group to exactly a group's size, and room for a
        // removal record after it: past a group with the moved records, within the
        // segment without them.
        let message_len = MIB - own;
        let big = vec![b'b'; message_len - len(&record(RecordKind::Message, 7, b""))];
        let front = record(RecordKind::Front, 2, b"");
        log.ensure_room(message_len + 240).await.expect("room");
        log.append(&record(RecordKind::Message, 7, &big)).expect("append the message");
        let group = log.append(&front).expect("append the removal record");
        log.wait_durable(&group).await.expect("durable");
        for seq in 2..=6 {
            check(&log, seq, "after the move").await;
        }
        let seventh = log.read_message(7).await.expect("read").expect("7");
        assert_eq!(&seventh.payload[..], &big[..]);
        drop(log);
        let log = open_sized(&disk, 4 * MIB as u64).await;
        for seq in 2..=6 {
            check(&log, seq, "reopened").await;
        }
        let seventh = log.read_message(7).await.expect("read").expect("7 after reopening");
        assert_eq!(seventh.payload.len(), big.len());
    });
}
