//! Property: on a randomly damaged segment (bit flips, torn tails, zeroed blocks, stale
//! copies of earlier records, groups ending 1-3 bytes before a block boundary, records
//! hidden in payloads), the read path finds exactly the messages recovery replayed, with
//! their contents, however it is read (on from the message before, with and without
//! waiting, from the sparse index, in random order), and never a message recovery did not
//! replay.
//!
//! Seeds: `JETCORE_WALKER_SEEDS` (default 300) seeds from `JETCORE_WALKER_FIRST_SEED`
//! (default 1). A failure names its seed; rerun it alone with
//! `JETCORE_WALKER_FIRST_SEED=<seed> JETCORE_WALKER_SEEDS=1`.

#[path = "store_support.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

use jetcore::limits::{DIRECT_IO_ALIGNMENT, SEGMENT_SIZE_BYTES_MIN};
use jetcore::store::record::{encode_into, Record, RecordKind, StreamId};
use jetcore::store::segment::segment_file_name;
use jetcore::store::{open_log, Disk, LogConfig, OpenMode, ScanEvent, SimDisk, SyncPolicy};
use support::Rng;

const BLOCK: usize = DIRECT_IO_ALIGNMENT;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A segment image as the log writes it: groups of records, each group padded with zeros
/// to a block boundary. Returns the image and every record's (offset, encoded bytes).
fn healthy_image(rng: &mut Rng, stream_id: StreamId) -> (Vec<u8>, Vec<(usize, Vec<u8>)>) {
    let mut image = Vec::new();
    let mut records = Vec::new();
    let mut seq = 1 + rng.below(1000);
    let groups = 4 + rng.below(24);
    for _ in 0..groups {
        for index in 0..1 + rng.below(8) {
            let kind = match rng.below(10) {
                0 => RecordKind::Delete,
                1 => RecordKind::Front,
                _ => RecordKind::Message,
            };
            let subject = format!("s.{}", rng.below(5));
            let mut payload = vec![b'a' + (seq % 26) as u8; rng.below(2500) as usize];
            // A message carrying the next message's record in its payload: a walk that
            // steps into the payload finds a valid record there.
            if kind == RecordKind::Message && rng.below(8) == 0 {
                let hidden = Record {
                    kind: RecordKind::Message,
                    stream_id,
                    seq: seq + 1,
                    timestamp_ns: 1,
                    subject: b"s.hidden",
                    headers: b"",
                    payload: b"hidden",
                };
                encode_into(&hidden, &mut payload);
            }
            // The group's last record ending 1-3 bytes before a block boundary.
            if index > 0 && rng.below(6) == 0 {
                let end = image.len() + 44 + subject.len() + payload.len();
                let short = 1 + rng.below(3) as usize;
                let mut target = end.div_ceil(BLOCK) * BLOCK - short;
                if target < end {
                    target += BLOCK;
                }
                payload.resize(payload.len() + (target - end), b'p');
            }
            let record_seq = match kind {
                RecordKind::Message => {
                    seq += 1;
                    seq - 1
                }
                _ => seq.saturating_sub(1 + rng.below(3)),
            };
            let record = Record {
                kind,
                stream_id,
                seq: record_seq,
                timestamp_ns: record_seq as i64,
                subject: subject.as_bytes(),
                headers: b"",
                payload: &payload,
            };
            let offset = image.len();
            encode_into(&record, &mut image);
            records.push((offset, image[offset..].to_vec()));
            if rng.below(12) == 0 {
                break;
            }
        }
        image.resize(image.len().div_ceil(BLOCK) * BLOCK, 0);
    }
    (image, records)
}

/// Damages `image` in 1-4 random ways; says which, for the failure message.
fn damage(rng: &mut Rng, image: &mut Vec<u8>, records: &[(usize, Vec<u8>)]) -> Vec<String> {
    let mut done = Vec::new();
    for _ in 0..1 + rng.below(4) {
        let len = image.len() as u64;
        match rng.below(6) {
            0 => {
                let bit = rng.below(len * 8);
                image[(bit / 8) as usize] ^= 1 << (bit % 8);
                done.push(format!("flip bit {bit}"));
            }
            1 => {
                let from = rng.below(len) as usize;
                let zeros = rng.below(2) == 0;
                for (i, byte) in image[from..].iter_mut().enumerate() {
                    *byte = if zeros { 0 } else { (i as u8).wrapping_mul(37) ^ 0x5a };
                }
                done.push(format!("torn tail from {from} (zeros: {zeros})"));
            }
            2 => {
                let block = rng.below(len / BLOCK as u64) as usize * BLOCK;
                image[block..block + BLOCK].fill(0);
                done.push(format!("zeroed block at {block}"));
            }
            3 | 4 => {
                // A stale copy of an earlier record written over a later place.
                let (_, bytes) = &records[rng.below(records.len() as u64) as usize];
                let at = rng.below(len) as usize;
                let end = (at + bytes.len()).min(image.len());
                image[at..end].copy_from_slice(&bytes[..end - at]);
                done.push(format!("stale copy of {} bytes at {at}", bytes.len()));
            }
            _ => {
                let at = rng.below(len) as usize;
                let end = (at + 1 + rng.below(64) as usize).min(image.len());
                image[at..end].fill(0);
                done.push(format!("zeroed {at}..{end}"));
            }
        }
    }
    done
}

type Replayed = BTreeMap<u64, (String, Vec<u8>)>;

/// Recovers `image` as segment 1 and reads back every message in three orders; returns a
/// description of the first disagreement.
async fn recover_and_read(image: &[u8], stream_id: StreamId, rng: &mut Rng) -> Result<(), String> {
    let disk = SimDisk::new();
    let dir = Path::new("/stream");
    let file = disk.open(&dir.join(segment_file_name(1)), OpenMode::Create).await.expect("create segment");
    file.write_at_aligned(0, image).await.expect("write segment");
    file.close().await.expect("close segment");
    let config = LogConfig {
        dir: dir.to_path_buf(),
        stream_id,
        segment_size: SEGMENT_SIZE_BYTES_MIN,
        sync: SyncPolicy::Always,
        block_bytes: BLOCK as u64,
    };
    let mut replayed = Replayed::new();
    let mut visit = |event: ScanEvent<'_>| {
        if let ScanEvent::Record { record, .. } = event {
            if record.kind == RecordKind::Message {
                let subject = String::from_utf8_lossy(record.subject).into_owned();
                replayed.insert(record.seq, (subject, record.payload.to_vec()));
            }
        }
    };
    let disk: Rc<dyn Disk> = Rc::new(disk);
    let (log, _) = open_log(disk, config, None, &mut visit).await.map_err(|e| format!("recovery failed: {e}"))?;
    let log = Rc::new(log);
    let seqs: Vec<u64> = replayed.keys().copied().collect();
    let mut shuffled = seqs.clone();
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let orders = [("forward", seqs.clone()), ("reverse", seqs.iter().rev().copied().collect()), ("random", shuffled)];
    for (order, seqs) in orders {
        for seq in seqs {
            // A consumer reading on takes the no-wait path first (`read_following_now`).
            let now = if order == "forward" { log.read_following_now(seq) } else { None };
            let read = match now {
                Some(read) => Ok(Some(read)),
                None => log.read_message(seq).await,
            };
            let read = match read {
                Ok(Some(read)) => read,
                other => return Err(format!("{order}: replayed message {seq} reads as {other:?}")),
            };
            let expected = &replayed[&seq];
            if (&read.subject, &read.payload[..]) != (&expected.0, &expected.1[..]) {
                return Err(format!("{order}: message {seq} reads back different contents"));
            }
        }
    }
    // Sequences recovery did not replay (inside the range, and just past it) are not found.
    let (Some(first), Some(last)) = (seqs.first(), seqs.last()) else {
        return Ok(());
    };
    for seq in *first..=*last + 1 {
        if replayed.contains_key(&seq) {
            continue;
        }
        if let Ok(Some(read)) = log.read_message(seq).await {
            return Err(format!("message {seq} reads back ({:?}) but recovery did not replay it", read.subject));
        }
    }
    log.close().await.map_err(|e| format!("close: {e}"))?;
    Ok(())
}

#[test]
fn read_path_finds_exactly_what_recovery_replayed_on_damaged_segments() {
    let first = env_u64("JETCORE_WALKER_FIRST_SEED", 1);
    let count = env_u64("JETCORE_WALKER_SEEDS", 300);
    let mut failures = Vec::new();
    for seed in first..first + count {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let stream_id = StreamId(rng.next_u64());
        let (mut image, records) = healthy_image(&mut rng, stream_id);
        let damage = damage(&mut rng, &mut image, &records);
        if let Err(problem) = futures_lite::future::block_on(recover_and_read(&image, stream_id, &mut rng)) {
            eprintln!("seed {seed}: {problem} (damage: {damage:?})");
            failures.push(seed);
        }
    }
    assert!(failures.is_empty(), "seeds failing: {failures:?}");
}

#[test]
fn a_healthy_segment_reads_back_every_message() {
    // The property above must be able to see messages at all.
    let mut rng = Rng(7);
    let stream_id = StreamId(99);
    let (image, records) = healthy_image(&mut rng, stream_id);
    assert!(records.len() > 4);
    futures_lite::future::block_on(recover_and_read(&image, stream_id, &mut rng)).expect("healthy segment");
}
