//! The message table's slots on disk, in an append-only file beside the checkpoint, so a
//! checkpoint writes the slots appended since the previous one instead of the whole table
//! (`checkpointing.rs`). Measured before this file existed: a stream growing at ~470 MiB/s
//! of 1 KiB messages spent ~15 % of its shard's time re-encoding and rewriting its whole
//! table, and wrote one byte of table per eight of data (perf/embedding.md).
//!
//! `slots.<generation>.bin` is a run of chunks, each padded to the direct-I/O block:
//! `JCSL`, the chunk's first sequence (u64), its slot count (u32), a CRC32C of the first
//! sequence, count and slots (u32), then the slots (16 bytes each: subject id, size,
//! timestamp). Each chunk starts at the sequence after the previous one's last. The
//! checkpoint names the generation, its first sequence and how many of its bytes it covers;
//! bytes past that (a chunk whose checkpoint was never written) are ignored, and the next
//! append overwrites them. A new generation, holding only the table's span, replaces the
//! file when most of it lies below the table's first sequence. Slots deleted after they
//! were written are listed in the checkpoint itself (`checkpoint.rs`).

use std::path::Path;

use super::table::{MessageTable, Slot};
use crate::codec::{crc, Reader, Writer};
use crate::limits::DIRECT_IO_ALIGNMENT;
use crate::store::{self, Disk, OpenMode};

const MAGIC: &[u8; 4] = b"JCSL";
const CHUNK_HEADER_BYTES: usize = 4 + 8 + 4 + 4;
const SLOT_BYTES: usize = 4 + 4 + 8;

/// What a checkpoint covers of a slot file: `first_seq..=through_seq`, in the first
/// `bytes` of generation `generation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotFileRef {
    pub generation: u64,
    pub first_seq: u64,
    pub through_seq: u64,
    pub bytes: u64,
}

impl SlotFileRef {
    pub fn encode(&self, out: &mut Writer) {
        for value in [self.generation, self.first_seq, self.through_seq, self.bytes] {
            out.u64(value);
        }
    }

    pub fn decode(input: &mut Reader<'_>) -> Option<SlotFileRef> {
        let reference = SlotFileRef {
            generation: input.u64()?,
            first_seq: input.u64()?,
            through_seq: input.u64()?,
            bytes: input.u64()?,
        };
        let aligned = reference.bytes % DIRECT_IO_ALIGNMENT as u64 == 0;
        (reference.generation > 0 && aligned && reference.first_seq <= reference.through_seq.saturating_add(1))
            .then_some(reference)
    }
}

pub fn file_name(generation: u64) -> String {
    format!("slots.{generation}.bin")
}

fn generation_of(name: &str) -> Option<u64> {
    name.strip_prefix("slots.")?.strip_suffix(".bin")?.parse().ok()
}

/// The chunk holding `table`'s slots from `from_seq` (at least its `base_seq`) to its
/// `last_seq`.
pub fn chunk(table: &MessageTable, from_seq: u64) -> Vec<u8> {
    let start = (from_seq - table.base_seq) as usize;
    let count = table.slots.len().saturating_sub(start);
    let mut out = Writer::default();
    let padded = (CHUNK_HEADER_BYTES + count * SLOT_BYTES).div_ceil(DIRECT_IO_ALIGNMENT) * DIRECT_IO_ALIGNMENT;
    out.bytes.reserve(padded);
    out.bytes.extend_from_slice(MAGIC);
    out.u64(from_seq);
    out.u32(u32::try_from(count).expect("fewer than 2^32 slots appended between checkpoints"));
    out.u32(0);
    for slot in table.slots.range(start..) {
        out.u32(slot.subject);
        out.u32(slot.bytes);
        out.i64(slot.timestamp_ns);
    }
    let crc = crc::crc32c(&out.bytes[4..12 + 4]);
    let crc = crc::crc32c_append(crc, &out.bytes[CHUNK_HEADER_BYTES..]);
    out.bytes[16..20].copy_from_slice(&crc.to_le_bytes());
    out.bytes.resize(padded, 0);
    out.bytes
}

/// The slots `reference` covers in `bytes` (the file's first `reference.bytes`), from
/// `base_seq` on; `None` unless the chunks are whole, in sequence and end at
/// `reference.through_seq`.
pub fn decode(bytes: &[u8], reference: &SlotFileRef, base_seq: u64) -> Option<Vec<Slot>> {
    let bytes = bytes.get(..usize::try_from(reference.bytes).ok()?)?;
    let mut slots = Vec::with_capacity((bytes.len() / SLOT_BYTES).min(bytes.len()));
    let (mut next_seq, mut at) = (reference.first_seq, 0);
    while at < bytes.len() {
        let header = bytes.get(at..at + CHUNK_HEADER_BYTES)?;
        let mut input = Reader::new(&header[4..]);
        let (first, count, crc) = (input.u64()?, input.u32()? as usize, input.u32()?);
        let body = bytes.get(at + CHUNK_HEADER_BYTES..at + CHUNK_HEADER_BYTES + count.checked_mul(SLOT_BYTES)?)?;
        if &header[..4] != MAGIC || first != next_seq || crc::crc32c_append(crc::crc32c(&header[4..16]), body) != crc {
            return None;
        }
        let end = first.checked_add(count as u64)?;
        let mut input = Reader::new(body);
        for seq in first..end {
            let slot = Slot { subject: input.u32()?, bytes: input.u32()?, timestamp_ns: input.i64()? };
            if seq >= base_seq {
                slots.push(slot);
            }
        }
        next_seq = end;
        at += (CHUNK_HEADER_BYTES + body.len()).div_ceil(DIRECT_IO_ALIGNMENT) * DIRECT_IO_ALIGNMENT;
    }
    (next_seq == reference.through_seq.saturating_add(1)).then_some(slots)
}

/// Writes `chunk` at `offset` of generation `generation` (creating the file when
/// `offset` is 0) and makes it durable, the new file's name included.
pub async fn write(
    disk: &dyn Disk,
    dir: &Path,
    generation: u64,
    offset: u64,
    chunk: &[u8],
) -> Result<(), store::Error> {
    let path = dir.join(file_name(generation));
    let mode = if offset == 0 { OpenMode::Create } else { OpenMode::Existing };
    let file = disk.open(&path, mode).await.map_err(|e| store::Error::io("open", &path, &e))?;
    file.write_at_aligned(offset, chunk).await.map_err(|e| store::Error::io("write", &path, &e))?;
    file.fdatasync().await.map_err(|e| store::Error::io("fdatasync", &path, &e))?;
    file.close().await.map_err(|e| store::Error::io("close", &path, &e))?;
    if offset == 0 {
        disk.fsync_dir(dir).await.map_err(|e| store::Error::io("fsync_dir", dir, &e))?;
    }
    Ok(())
}

/// The first `reference.bytes` of its file.
pub async fn read(disk: &dyn Disk, dir: &Path, reference: &SlotFileRef) -> Result<Vec<u8>, store::Error> {
    let path = dir.join(file_name(reference.generation));
    let file = disk.open(&path, OpenMode::Existing).await.map_err(|e| store::Error::io("open", &path, &e))?;
    let size = file.size().await.map_err(|e| store::Error::io("size", &path, &e))?;
    if size < reference.bytes {
        return Err(store::Error::BadMetadata { path, reason: "slot file shorter than its checkpoint says" });
    }
    let bytes =
        file.read_at_aligned(0, reference.bytes as usize).await.map_err(|e| store::Error::io("read", &path, &e))?;
    file.close().await.map_err(|e| store::Error::io("close", &path, &e))?;
    Ok(bytes)
}

/// Removes every slot file of `dir` but generation `keep`'s. A failure is logged: a
/// leftover file costs space, not correctness.
pub async fn remove_others(disk: &dyn Disk, dir: &Path, keep: Option<u64>) {
    let Ok(names) = disk.list_dir(dir).await else { return };
    for name in names {
        if generation_of(&name).is_some_and(|generation| Some(generation) != keep) {
            let path = dir.join(&name);
            if let Err(error) = disk.remove_file(&path).await {
                tracing::warn!(%error, path = %path.display(), "could not remove an old slot file");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(seqs: std::ops::RangeInclusive<u64>) -> MessageTable {
        let mut table = MessageTable::new();
        for seq in seqs {
            table.insert(seq, "a", 10, seq as i64);
        }
        table
    }

    #[test]
    fn chunks_append_and_decode_from_the_base() {
        let mut table = table(1..=300);
        let mut file = chunk(&table, 1);
        table.insert(301, "b", 20, 301);
        file.extend(chunk(&table, 301));
        let reference = SlotFileRef { generation: 1, first_seq: 1, through_seq: 301, bytes: file.len() as u64 };
        let slots = decode(&file, &reference, 5).expect("decodes");
        assert_eq!(slots.len(), 297);
        assert_eq!((slots[0].timestamp_ns, slots[296].bytes), (5, 20));
    }

    #[test]
    fn damage_or_a_short_file_is_refused() {
        let table = table(1..=10);
        let file = chunk(&table, 1);
        let reference = SlotFileRef { generation: 1, first_seq: 1, through_seq: 10, bytes: file.len() as u64 };
        let mut damaged = file.clone();
        damaged[30] ^= 1;
        assert!(decode(&damaged, &reference, 1).is_none());
        assert!(decode(&file, &SlotFileRef { through_seq: 11, ..reference }, 1).is_none(), "ends early");
        assert!(decode(&file, &SlotFileRef { first_seq: 2, ..reference }, 1).is_none(), "out of sequence");
        assert!(decode(&file[..100], &reference, 1).is_none(), "short");
    }

    #[test]
    fn only_slot_files_are_named_by_generation() {
        assert_eq!(generation_of(&file_name(7)), Some(7));
        assert_eq!(generation_of("checkpoint.bin"), None);
        assert_eq!(generation_of("0000000000000001.seg"), None);
    }
}
