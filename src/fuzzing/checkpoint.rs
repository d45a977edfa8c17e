//! Fuzz target `checkpoint`: the small state files read at start-up. The first byte picks
//! the decoder, the rest is the file's content:
//! - 0: a stream checkpoint: the length of the `checkpoint.bin` body (u32, little
//!   endian), that body (the log's segment list included), then its slot file;
//! - 1: a consumer's persisted state (varints and a CRC32C trailer);
//! - 2: a metadata file (`JCMF` magic, length, CRC32C) read through a [`SimDisk`], and
//!   its body as a stream's `meta.json`;
//! - 3: the log's part of a checkpoint alone.
//!
//! Contract checked: nothing panics and no allocation is sized by an unchecked count; a
//! decoded state encodes to bytes that decode to the same state; a metadata file whose
//! CRC fails is an error, and what is written is what is read.

use std::path::Path;

use crate::codec::{crc, Reader, Writer};
use crate::consumer::state_codec::ConsumerState;
use crate::limits::DIRECT_IO_ALIGNMENT;
use crate::store::{meta_file, Disk, LogCheckpoint, OpenMode, SimDisk};
use crate::stream::checkpoint::{self, Checkpoint};
use crate::stream::slot_file::{self, SlotFileRef};
use crate::stream::StreamMeta;

/// The target's whole check.
pub fn check(data: &[u8]) {
    let Some((selector, body)) = data.split_first() else {
        return;
    };
    match selector % 4 {
        0 => check_stream_checkpoint(body),
        1 => check_consumer_state(body),
        2 => futures_lite::future::block_on(check_meta_file(body)),
        _ => check_log_checkpoint(body),
    }
}

fn check_stream_checkpoint(body: &[u8]) {
    let Some((length, rest)) = body.split_first_chunk::<4>() else {
        return;
    };
    let Some((head, slots)) = rest.split_at_checked(u32::from_le_bytes(*length) as usize) else {
        return;
    };
    let Some(decoded) = checkpoint::decode(head, Some(slots)) else {
        return;
    };
    let (head, slots) = encode(&decoded);
    let again = checkpoint::decode(&head, Some(&slots)).expect("a re-encoded checkpoint decodes");
    assert_eq!(encode(&again), (head, slots), "checkpoint encoding is not stable");
}

/// The checkpoint's own file and a slot file of one generation holding all its slots.
fn encode(checkpoint: &Checkpoint) -> (Vec<u8>, Vec<u8>) {
    let table = &checkpoint.table;
    let slots = slot_file::chunk(table, table.base_seq);
    let reference = SlotFileRef {
        generation: 1,
        first_seq: table.base_seq,
        through_seq: table.last_seq,
        bytes: slots.len() as u64,
    };
    let head = checkpoint::encode(
        checkpoint.stream_id,
        table,
        &checkpoint.dedupe,
        &checkpoint.lost,
        &checkpoint.log,
        &checkpoint.ttl,
        &checkpoint.flags,
        Some(&reference),
        &deleted_runs(checkpoint),
    );
    (head, slots)
}

/// The runs of `table`'s deleted slots, as (first sequence, count): listed in the
/// checkpoint too, although the full chunk holds them deleted, so decoding runs is fuzzed.
fn deleted_runs(checkpoint: &Checkpoint) -> Vec<(u64, u64)> {
    let table = &checkpoint.table;
    let seqs = table.slots.iter().enumerate().filter(|(_, slot)| !slot.is_live());
    checkpoint::runs(seqs.map(|(index, _)| table.base_seq + index as u64))
}

fn check_consumer_state(body: &[u8]) {
    let Ok(state) = ConsumerState::decode(body) else {
        return;
    };
    let encoded = state.encode();
    assert_eq!(ConsumerState::decode(&encoded), Ok(state));
}

fn check_log_checkpoint(body: &[u8]) {
    let Some(decoded) = LogCheckpoint::decode(&mut Reader::new(body)) else {
        return;
    };
    let mut out = Writer::default();
    decoded.encode(&mut out);
    let again = LogCheckpoint::decode(&mut Reader::new(&out.bytes));
    assert_eq!(again.as_ref(), Some(&decoded), "log checkpoint does not round-trip");
}

/// A metadata file with arbitrary content: reading it gives its body only when the CRC
/// holds; any body written is read back as written.
async fn check_meta_file(body: &[u8]) {
    let disk = SimDisk::volatile();
    let path = Path::new("/stream/meta.json");
    let file = disk.open(path, OpenMode::Create).await.expect("create");
    let mut image = body.to_vec();
    image.resize(image.len().div_ceil(DIRECT_IO_ALIGNMENT) * DIRECT_IO_ALIGNMENT, 0);
    if !image.is_empty() {
        file.write_at_aligned(0, &image).await.expect("write");
    }
    file.close().await.expect("close");
    if let Ok(Some(content)) = meta_file::read(&disk, path).await {
        let stored_crc = u32::from_le_bytes(image[12..16].try_into().expect("4 bytes"));
        assert_eq!(crc::crc32c(&content), stored_crc, "a CRC failure was accepted");
        assert_eq!(&image[16..16 + content.len()], &content[..]);
        if let Ok(meta) = serde_json::from_slice::<StreamMeta>(&content) {
            let _ = meta.config.validate();
        }
    }
    meta_file::write_atomic(&disk, path, body, "mid_meta_write").await.expect("write metadata");
    let read = meta_file::read(&disk, path).await.expect("read metadata");
    assert_eq!(read.as_deref(), Some(body));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hand_made_stream_seed_decodes_with_its_slot_file() {
        let seed = include_bytes!("../../fuzz/corpus/checkpoint/seed-stream");
        let (length, rest) = seed[1..].split_first_chunk::<4>().expect("length");
        let (head, slots) = rest.split_at(u32::from_le_bytes(*length) as usize);
        let decoded = checkpoint::decode(head, Some(slots)).expect("the seed decodes");
        assert_eq!((decoded.table.messages, decoded.table.last_seq, decoded.table.slots.len()), (3, 4, 4));
        check(seed);
    }
}
