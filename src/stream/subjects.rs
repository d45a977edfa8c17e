//! Per-subject state: message count and last sequence, by interned subject id.
//! Supports `max_msgs_per_subject`, last-by-subject reads and `num_subjects`.

use std::collections::HashMap;

use super::subject_match::matches;
use crate::subject::TokenHashBuilder;

/// Index of an interned subject. Ids of subjects with no messages are reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubjectId(pub u32);

#[derive(Debug, Clone)]
pub struct SubjectEntry {
    pub name: Box<str>,
    pub count: u64,
    /// Lowest sequence that may hold this subject (a hint: nothing live is below it).
    pub first_hint: u64,
    pub last_seq: u64,
}

/// Every subject with at least one live message.
#[derive(Debug, Default, Clone)]
pub struct SubjectTable {
    /// Keyed by the subject hash (one lookup per stored message: SipHash was ~8 % of a
    /// restore's shard, perf/backup.md).
    by_name: HashMap<Box<str>, SubjectId, TokenHashBuilder>,
    entries: Vec<Option<SubjectEntry>>,
    free: Vec<u32>,
}

impl SubjectTable {
    /// Counts message `seq` under `name`, returning the subject's id.
    pub fn add(&mut self, name: &str, seq: u64) -> SubjectId {
        if let Some(id) = self.by_name.get(name).copied() {
            let entry = self.entry_mut(id);
            entry.count += 1;
            entry.last_seq = seq;
            return id;
        }
        let entry = SubjectEntry { name: name.into(), count: 1, first_hint: seq, last_seq: seq };
        let id = match self.free.pop() {
            Some(slot) => {
                self.entries[slot as usize] = Some(entry);
                SubjectId(slot)
            }
            None => {
                self.entries.push(Some(entry));
                SubjectId(self.entries.len() as u32 - 1)
            }
        };
        self.by_name.insert(name.into(), id);
        id
    }

    /// Uncounts one message; returns `true` if the subject now has none.
    pub fn remove_one(&mut self, id: SubjectId) -> bool {
        let entry = self.entry_mut(id);
        entry.count -= 1;
        if entry.count > 0 {
            return false;
        }
        let name = entry.name.clone();
        self.by_name.remove(&name);
        self.entries[id.0 as usize] = None;
        self.free.push(id.0);
        true
    }

    pub fn entry(&self, id: SubjectId) -> Option<&SubjectEntry> {
        self.entries.get(id.0 as usize)?.as_ref()
    }

    pub fn entry_mut(&mut self, id: SubjectId) -> &mut SubjectEntry {
        self.entries[id.0 as usize].as_mut().expect("live subject id")
    }

    pub fn id_of(&self, name: &str) -> Option<SubjectId> {
        self.by_name.get(name).copied()
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Ids of live subjects matching `filter` (a literal or wildcard pattern).
    pub fn matching(&self, filter: &str) -> Vec<SubjectId> {
        if !filter.contains(['*', '>']) {
            return self.id_of(filter).into_iter().collect();
        }
        self.by_name.iter().filter(|(name, _)| matches(filter, name)).map(|(_, id)| *id).collect()
    }

    /// (name, count) of live subjects.
    pub fn counts(&self) -> impl Iterator<Item = (&str, u64)> {
        self.entries.iter().flatten().map(|entry| (&*entry.name, entry.count))
    }
}

impl SubjectTable {
    /// Every live (id, entry), for checkpoints.
    pub fn live_entries(&self) -> impl Iterator<Item = (SubjectId, &SubjectEntry)> {
        self.entries.iter().enumerate().filter_map(|(id, entry)| Some((SubjectId(id as u32), entry.as_ref()?)))
    }

    /// Rebuilds a table from checkpointed entries; `None` if ids collide or are absurd.
    pub fn restore(live: Vec<(SubjectId, SubjectEntry)>) -> Option<SubjectTable> {
        let size = live.iter().map(|(id, _)| id.0 as usize + 1).max().unwrap_or(0);
        if size > live.len().saturating_mul(2) + 1024 {
            return None;
        }
        let mut table = SubjectTable { entries: vec![None; size], ..SubjectTable::default() };
        for (id, entry) in live {
            if table.entries[id.0 as usize].is_some() || table.by_name.insert(entry.name.clone(), id).is_some() {
                return None;
            }
            table.entries[id.0 as usize] = Some(entry);
        }
        table.free = (0..size as u32).filter(|id| table.entries[*id as usize].is_none()).collect();
        Some(table)
    }
}
