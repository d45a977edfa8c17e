//! A stream checkpoint: the in-memory state plus the log position it reflects, so recovery
//! scans only what was written after it. Taken at a cut while appends go on, written
//! atomically once the cut is durable (`checkpointing.rs`), and ignored (full scan) if
//! damaged. The message table's slots live in the stream's slot file (`slot_file.rs`),
//! appended to at each checkpoint; the checkpoint names how much of it holds, and lists
//! the slots deleted since they were written.

use std::collections::VecDeque;

use super::dedupe::DedupeWindow;
use super::flags::MessageFlags;
use super::replay::LostRange;
use super::slot_file::{self, SlotFileRef};
use super::subjects::{SubjectEntry, SubjectId, SubjectTable};
use super::table::{MessageTable, Slot};
use super::ttl::TtlIndex;
use crate::codec::{Reader, Writer};
use crate::store::LogCheckpoint;

/// Version 5 keeps the slots in the slot file. Version 4 counted each slot's bytes as
/// nats-server does (`stored_size`), as 5 does; earlier versions hold jetcore's own record
/// sizes. Another version is not loaded: the stream is rebuilt from its segments once.
const CHECKPOINT_VERSION: u32 = 5;

/// Everything a checkpoint restores.
pub struct Checkpoint {
    pub stream_id: u64,
    pub table: MessageTable,
    pub dedupe: DedupeWindow,
    pub lost: Vec<LostRange>,
    pub log: LogCheckpoint,
    pub ttl: TtlIndex,
    pub flags: MessageFlags,
}

/// A checkpoint's own file, decoded: all but the slots, which its slot file holds.
pub struct Head {
    checkpoint: Checkpoint,
    /// Where the slots are; `None` when the table has none.
    pub slots: Option<SlotFileRef>,
    /// Runs of deleted sequences (first, count) to mark in the slots read back.
    pub deleted: Vec<(u64, u64)>,
}

/// Encodes the checkpoint of `table` (and the rest of the state) whose slots are in the
/// slot file as `slots` says: it must cover `table.base_seq..=table.last_seq` when the
/// table has slots, and `deleted` lists the runs (first, count) of slots deleted since
/// the file took them.
#[allow(clippy::too_many_arguments)]
pub fn encode(
    stream_id: u64,
    table: &MessageTable,
    dedupe: &DedupeWindow,
    lost: &[LostRange],
    log: &LogCheckpoint,
    ttl: &TtlIndex,
    flags: &MessageFlags,
    slots: Option<&SlotFileRef>,
    deleted: &[(u64, u64)],
) -> Vec<u8> {
    let mut out = Writer::default();
    out.bytes.reserve(256 + table.subjects.len() * 64 + ttl.len() * 16);
    out.u32(CHECKPOINT_VERSION);
    out.u64(stream_id);
    out.u64(table.base_seq);
    out.u64(table.last_seq);
    out.i64(table.last_timestamp_ns);
    match slots.filter(|_| !table.slots.is_empty()) {
        Some(reference) => {
            out.u8(1);
            reference.encode(&mut out);
            out.u64(deleted.len() as u64);
            for (first, count) in deleted {
                out.u64(*first);
                out.u64(*count);
            }
        }
        None => out.u8(0),
    }
    let subjects: Vec<(SubjectId, &SubjectEntry)> = table.subjects.live_entries().collect();
    out.u64(subjects.len() as u64);
    for (id, entry) in subjects {
        out.u32(id.0);
        out.blob(entry.name.as_bytes());
        out.u64(entry.count);
        out.u64(entry.first_hint);
        out.u64(entry.last_seq);
    }
    let entries: Vec<(i64, &str, u64)> = dedupe.entries().collect();
    out.u64(entries.len() as u64);
    for (at, id, seq) in entries {
        out.i64(at);
        out.blob(id.as_bytes());
        out.u64(seq);
    }
    out.blob(dedupe.last_msg_id.as_deref().unwrap_or("").as_bytes());
    encode_lost(&mut out, lost);
    log.encode(&mut out);
    let live: Vec<(i64, u64)> = ttl.entries().filter(|(_, seq)| table.slot(*seq).is_some()).collect();
    out.u64(live.len() as u64);
    for (deadline_ns, seq) in live {
        out.i64(deadline_ns);
        out.u64(seq);
    }
    for set in [flags.never_expiring().collect::<Vec<_>>(), flags.markers().collect()] {
        let live: Vec<u64> = set.into_iter().filter(|seq| table.slot(*seq).is_some()).collect();
        out.u64(live.len() as u64);
        for seq in live {
            out.u64(seq);
        }
    }
    out.bytes
}

/// Ascending sequences as runs (first, count).
pub fn runs(seqs: impl Iterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for seq in seqs {
        match runs.last_mut() {
            Some((first, count)) if *first + *count == seq => *count += 1,
            Some((first, count)) if *first + *count > seq => {}
            _ => runs.push((seq, 1)),
        }
    }
    runs
}

fn encode_lost(out: &mut Writer, lost: &[LostRange]) {
    out.u64(lost.len() as u64);
    for range in lost {
        let (first, last) = range.seqs.unwrap_or((0, 0));
        let bytes = range.bytes.clone().unwrap_or(0..0);
        out.u8(range.seqs.is_some() as u8 | (range.segment.is_some() as u8) << 1 | (range.bytes.is_some() as u8) << 2);
        for value in [first, last, range.segment.unwrap_or(0), bytes.start, bytes.end] {
            out.u64(value);
        }
    }
}

/// Decodes a checkpoint and the bytes of its slot file; `None` if either is malformed or
/// they are inconsistent.
pub fn decode(bytes: &[u8], slot_file_bytes: Option<&[u8]>) -> Option<Checkpoint> {
    decode_head(bytes)?.complete(slot_file_bytes)
}

/// Decodes a checkpoint's own file; its slots are read from the slot file it names.
pub fn decode_head(bytes: &[u8]) -> Option<Head> {
    let mut input = Reader::new(bytes);
    let version = input.u32()?;
    if version != CHECKPOINT_VERSION {
        return None;
    }
    let stream_id = input.u64()?;
    let mut table = MessageTable {
        base_seq: input.u64()?,
        last_seq: input.u64()?,
        last_timestamp_ns: input.i64()?,
        ..MessageTable::default()
    };
    let (slots, deleted) = match input.u8()? {
        0 => (None, Vec::new()),
        1 => {
            let reference = SlotFileRef::decode(&mut input)?;
            let mut deleted = Vec::with_capacity(input.count(16)?);
            for _ in 0..deleted.capacity() {
                deleted.push((input.u64()?, input.u64()?));
            }
            (Some(reference), deleted)
        }
        _ => return None,
    };
    let subject_count = input.count(32)?;
    let mut live = Vec::with_capacity(subject_count);
    for _ in 0..subject_count {
        let id = SubjectId(input.u32()?);
        let name = std::str::from_utf8(input.blob()?).ok()?.into();
        live.push((id, SubjectEntry { name, count: input.u64()?, first_hint: input.u64()?, last_seq: input.u64()? }));
    }
    table.subjects = SubjectTable::restore(live)?;
    let dedupe = decode_dedupe(&mut input)?;
    let lost = decode_lost(&mut input)?;
    let log = LogCheckpoint::decode(&mut input)?;
    let mut ttl = TtlIndex::default();
    for _ in 0..input.count(16)? {
        let deadline_ns = input.i64()?;
        ttl.insert(input.u64()?, deadline_ns);
    }
    let mut flags = MessageFlags::default();
    for _ in 0..input.count(8)? {
        flags.insert_never_expires(input.u64()?);
    }
    for _ in 0..input.count(8)? {
        flags.insert_marker(input.u64()?);
    }
    let checkpoint = Checkpoint { stream_id, table, dedupe, lost, log, ttl, flags };
    input.is_empty().then_some(Head { checkpoint, slots, deleted })
}

impl Head {
    pub fn stream_id(&self) -> u64 {
        self.checkpoint.stream_id
    }

    /// The whole checkpoint, with its slots from `slot_file_bytes` (the first
    /// `slots.bytes` of the slot file); `None` if they do not fit the rest.
    pub fn complete(self, slot_file_bytes: Option<&[u8]>) -> Option<Checkpoint> {
        let Head { mut checkpoint, slots: reference, deleted } = self;
        let table = &mut checkpoint.table;
        let decoded = match reference {
            Some(reference) if reference.first_seq <= table.base_seq && reference.through_seq == table.last_seq => {
                slot_file::decode(slot_file_bytes?, &reference, table.base_seq)?
            }
            Some(_) => return None,
            None => Vec::new(),
        };
        // Room for the messages the scan after the checkpoint adds: growing a table of
        // millions of slots copies it into fresh memory (measured: a third of a restart's
        // time went to such copies and their page faults). Capacity not yet used is only
        // reserved address space.
        let mut slots = VecDeque::with_capacity(decoded.len().saturating_mul(2));
        slots.extend(decoded);
        for (first, count) in deleted {
            let start = first.checked_sub(table.base_seq)?;
            let end = start.checked_add(count)?;
            if end > slots.len() as u64 {
                return None;
            }
            for slot in slots.range_mut(start as usize..end as usize) {
                *slot = Slot { subject: Slot::DELETED, ..*slot };
            }
        }
        table.messages = slots.iter().filter(|slot| slot.is_live()).count() as u64;
        table.bytes = slots.iter().filter(|slot| slot.is_live()).map(|slot| slot.bytes as u64).sum();
        let consistent = is_consistent(table, &slots);
        table.slots = slots;
        consistent.then_some(checkpoint)
    }
}

fn decode_dedupe(input: &mut Reader<'_>) -> Option<DedupeWindow> {
    let mut dedupe = DedupeWindow::default();
    let count = input.count(20)?;
    for _ in 0..count {
        let at = input.i64()?;
        let id = std::str::from_utf8(input.blob()?).ok()?.to_string();
        dedupe.record(&id, input.u64()?, at, 1);
    }
    let last = std::str::from_utf8(input.blob()?).ok()?;
    dedupe.last_msg_id = (!last.is_empty()).then(|| last.to_string());
    Some(dedupe)
}

fn decode_lost(input: &mut Reader<'_>) -> Option<Vec<LostRange>> {
    let count = input.count(41)?;
    let mut lost = Vec::with_capacity(count);
    for _ in 0..count {
        let flags = input.u8()?;
        let (first, last, segment, start, end) = (input.u64()?, input.u64()?, input.u64()?, input.u64()?, input.u64()?);
        lost.push(LostRange {
            seqs: (flags & 1 != 0).then_some((first, last)),
            segment: (flags & 2 != 0).then_some(segment),
            bytes: (flags & 4 != 0).then_some(start..end),
        });
    }
    Some(lost)
}

/// Cross-checks a decoded table so a damaged checkpoint can never break the table's
/// invariants (which would panic later): sequence bounds, and per-subject counts equal to
/// the live slots that name each subject.
fn is_consistent(table: &MessageTable, slots: &VecDeque<Slot>) -> bool {
    let span_ok = if slots.is_empty() {
        table.base_seq <= table.last_seq.saturating_add(1)
    } else {
        table.base_seq.checked_add(slots.len() as u64 - 1) == Some(table.last_seq)
    };
    let mut counts: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    for slot in slots.iter().filter(|slot| slot.is_live()) {
        *counts.entry(slot.subject).or_default() += 1;
    }
    let counts_ok = counts.len() == table.subjects.len()
        && counts.iter().all(|(id, count)| table.subjects.entry(SubjectId(*id)).is_some_and(|e| e.count == *count));
    span_ok && counts_ok
}
