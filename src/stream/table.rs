//! [`MessageTable`]: the in-memory view of which sequences are live, their subject, size and
//! timestamp (16 bytes per sequence), plus per-subject state. The log on disk holds the
//! bytes; this table answers limits, purges and lookups without reading it.
//!
//! Invariants: `slots[0]`, if any, is live; `messages` and `bytes` are the sums over live
//! slots; `first_seq() <= last_seq + 1`.

use std::collections::VecDeque;

use super::subjects::{SubjectId, SubjectTable};

#[derive(Debug, Clone, Copy)]
pub struct Slot {
    pub subject: u32,
    pub bytes: u32,
    pub timestamp_ns: i64,
}

impl Slot {
    /// The subject of a deleted (or lost) sequence.
    pub const DELETED: u32 = u32::MAX;

    pub fn is_live(&self) -> bool {
        self.subject != Slot::DELETED
    }
}

#[derive(Debug, Default, Clone)]
pub struct MessageTable {
    /// Sequence of `slots[0]` (or the next sequence when `slots` is empty).
    pub base_seq: u64,
    pub slots: VecDeque<Slot>,
    pub last_seq: u64,
    pub last_timestamp_ns: i64,
    pub messages: u64,
    pub bytes: u64,
    pub subjects: SubjectTable,
    /// Messages removed so far (limits, purge, delete), so readers can notice removals.
    pub removed_total: u64,
    /// Sequences removed behind the front since the last checkpoint took them: what the
    /// next checkpoint lists as deleted after the slot file holds them live
    /// (`checkpointing.rs`), without scanning the table.
    pub removals: Vec<u64>,
}

impl MessageTable {
    pub fn new() -> MessageTable {
        MessageTable { base_seq: 1, ..MessageTable::default() }
    }

    pub fn first_seq(&self) -> u64 {
        if self.messages == 0 {
            return self.last_seq + 1;
        }
        self.base_seq
    }

    /// Deleted sequences between first and last.
    pub fn num_deleted(&self) -> u64 {
        self.slots.len() as u64 - self.messages
    }

    /// The deleted sequences between first and last, ascending.
    pub fn deleted(&self) -> impl Iterator<Item = u64> + '_ {
        let first = self.first_seq();
        (first..=self.last_seq).filter(move |seq| self.slot(*seq).is_none())
    }

    pub fn slot(&self, seq: u64) -> Option<&Slot> {
        let index = seq.checked_sub(self.base_seq)?;
        self.slots.get(index as usize).filter(|slot| slot.is_live())
    }

    /// Adds message `seq` (> last_seq; a gap becomes deleted slots).
    pub fn insert(&mut self, seq: u64, subject: &str, bytes: u32, timestamp_ns: i64) {
        assert!(seq > self.last_seq, "sequence {seq} not above {}", self.last_seq);
        if self.slots.is_empty() {
            self.base_seq = seq;
        }
        while self.base_seq + (self.slots.len() as u64) < seq {
            self.slots.push_back(Slot { subject: Slot::DELETED, bytes: 0, timestamp_ns });
        }
        let id = self.subjects.add(subject, seq);
        self.slots.push_back(Slot { subject: id.0, bytes, timestamp_ns });
        self.last_seq = seq;
        self.last_timestamp_ns = self.last_timestamp_ns.max(timestamp_ns);
        self.messages += 1;
        self.bytes += bytes as u64;
    }

    /// Raises `last_seq` without a message (a purge or restart never lets it go back).
    /// Keeps the invariant that `slots` span `base_seq..=last_seq` when not empty.
    pub fn raise_last_seq(&mut self, seq: u64) {
        if seq <= self.last_seq {
            return;
        }
        if self.messages == 0 {
            self.slots.clear();
            self.base_seq = seq + 1;
        } else {
            let timestamp_ns = self.last_timestamp_ns;
            while self.base_seq + (self.slots.len() as u64) <= seq {
                self.slots.push_back(Slot { subject: Slot::DELETED, bytes: 0, timestamp_ns });
            }
        }
        self.last_seq = seq;
    }

    /// Removes live message `seq`; returns its slot.
    pub fn remove(&mut self, seq: u64) -> Option<Slot> {
        let index = seq.checked_sub(self.base_seq)? as usize;
        let slot = *self.slots.get(index).filter(|slot| slot.is_live())?;
        self.slots[index].subject = Slot::DELETED;
        self.messages -= 1;
        self.removed_total += 1;
        self.bytes -= slot.bytes as u64;
        let id = SubjectId(slot.subject);
        let emptied = self.subjects.remove_one(id);
        if !emptied && self.subjects.entry(id).is_some_and(|entry| entry.last_seq == seq) {
            let previous = self.previous_of_subject(id, seq);
            self.subjects.entry_mut(id).last_seq = previous;
        }
        self.trim_front();
        if seq >= self.base_seq {
            self.removals.push(seq);
        }
        Some(slot)
    }

    /// Removes every message below `first`; returns how many.
    pub fn remove_below(&mut self, first: u64) -> u64 {
        let mut removed = 0;
        while self.base_seq < first && !self.slots.is_empty() {
            if self.slots[0].is_live() {
                self.remove(self.base_seq);
                removed += 1;
            } else {
                self.slots.pop_front();
                self.base_seq += 1;
            }
        }
        if self.slots.is_empty() {
            self.base_seq = self.base_seq.max(first.min(self.last_seq + 1));
        }
        removed
    }

    fn trim_front(&mut self) {
        while self.slots.front().is_some_and(|slot| !slot.is_live()) {
            self.slots.pop_front();
            self.base_seq += 1;
        }
    }

    fn previous_of_subject(&self, id: SubjectId, before: u64) -> u64 {
        (self.base_seq..before).rev().find(|seq| self.slot(*seq).is_some_and(|s| s.subject == id.0)).unwrap_or(0)
    }

    /// Oldest live sequence of subject `id`, advancing its hint.
    pub fn first_of_subject(&mut self, id: SubjectId) -> Option<u64> {
        let entry = self.subjects.entry(id)?;
        let (hint, last) = (entry.first_hint.max(self.base_seq), entry.last_seq);
        let found = (hint..=last).find(|seq| self.slot(*seq).is_some_and(|s| s.subject == id.0))?;
        self.subjects.entry_mut(id).first_hint = found;
        Some(found)
    }

    /// Live sequences ≥ `from` whose subject is one of `ids` (all when `ids` is `None`).
    pub fn live_from<'a>(&'a self, from: u64, ids: Option<&'a [SubjectId]>) -> impl Iterator<Item = u64> + 'a {
        let start = from.max(self.base_seq);
        (start..=self.last_seq).filter(move |seq| {
            self.slot(*seq).is_some_and(|slot| ids.is_none_or(|ids| ids.iter().any(|id| id.0 == slot.subject)))
        })
    }

    /// First sequence whose timestamp is ≥ `timestamp_ns` (timestamps never decrease).
    pub fn first_at_or_after(&self, timestamp_ns: i64) -> u64 {
        let index = self.slots.partition_point(|slot| slot.timestamp_ns < timestamp_ns);
        self.base_seq + index as u64
    }
}
