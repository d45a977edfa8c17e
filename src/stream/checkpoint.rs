//! A stream checkpoint: the in-memory state plus the log position it reflects, so recovery
//! scans only what was written after it. Taken at a cut while appends go on, written
//! atomically once the cut is durable (`checkpointing.rs`), and ignored (full scan) if
//! damaged.

use std::collections::VecDeque;

use super::dedupe::DedupeWindow;
use super::flags::MessageFlags;
use super::replay::LostRange;
use super::subjects::{SubjectEntry, SubjectId, SubjectTable};
use super::table::{MessageTable, Slot};
use super::ttl::TtlIndex;
use crate::codec::{Reader, Writer};
use crate::store::LogCheckpoint;

/// Version 4 counts each slot's bytes as nats-server does (`stored_size`). Earlier
/// versions hold jetcore's own record sizes, which would disagree with `state.bytes` and
/// `max_bytes`: they are not loaded, and the stream is rebuilt from its segments once.
const CHECKPOINT_VERSION: u32 = 4;

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

/// Encoded bytes per table slot (subject id, size, timestamp).
const SLOT_BYTES: usize = 4 + 4 + 8;

pub fn encode(
    stream_id: u64,
    table: &MessageTable,
    dedupe: &DedupeWindow,
    lost: &[LostRange],
    log: &LogCheckpoint,
    ttl: &TtlIndex,
    flags: &MessageFlags,
) -> Vec<u8> {
    let mut out = Writer::default();
    // The slots dominate; reserving for them avoids regrowing (and re-faulting) a large
    // buffer several times.
    out.bytes.reserve(64 + table.slots.len() * SLOT_BYTES + table.subjects.len() * 64);
    out.u32(CHECKPOINT_VERSION);
    out.u64(stream_id);
    out.u64(table.base_seq);
    out.u64(table.last_seq);
    out.i64(table.last_timestamp_ns);
    out.u64(table.slots.len() as u64);
    for slot in &table.slots {
        out.u32(slot.subject);
        out.u32(slot.bytes);
        out.i64(slot.timestamp_ns);
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

/// Decodes a checkpoint; `None` if it is malformed or inconsistent.
pub fn decode(bytes: &[u8]) -> Option<Checkpoint> {
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
    let slot_count = input.count(16)?;
    // Room for the messages the scan after the checkpoint adds: growing a table of
    // millions of slots copies it into fresh memory (measured: a third of a restart's
    // time went to such copies and their page faults). Capacity not yet used is only
    // reserved address space.
    let mut slots = VecDeque::with_capacity(slot_count.saturating_mul(2));
    for _ in 0..slot_count {
        slots.push_back(Slot { subject: input.u32()?, bytes: input.u32()?, timestamp_ns: input.i64()? });
    }
    let subject_count = input.count(32)?;
    let mut live = Vec::with_capacity(subject_count);
    for _ in 0..subject_count {
        let id = SubjectId(input.u32()?);
        let name = std::str::from_utf8(input.blob()?).ok()?.into();
        live.push((id, SubjectEntry { name, count: input.u64()?, first_hint: input.u64()?, last_seq: input.u64()? }));
    }
    table.subjects = SubjectTable::restore(live)?;
    table.messages = slots.iter().filter(|slot| slot.is_live()).count() as u64;
    table.bytes = slots.iter().filter(|slot| slot.is_live()).map(|slot| slot.bytes as u64).sum();
    let consistent = is_consistent(&table, &slots);
    table.slots = slots;
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
    (consistent && input.is_empty()).then_some(Checkpoint { stream_id, table, dedupe, lost, log, ttl, flags })
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
