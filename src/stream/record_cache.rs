//! A shard's cache of messages for gets by sequence, shared by its streams.
//!
//! A KV get or a direct get asks for one message anywhere in a stream. From the log that
//! is a direct read (64 KiB around the nearest sparse-index point): measured with
//! async-nats's KV gets, most gets read the disk and the slow ones set the p99. Streams
//! that serve such gets (`StreamConfig::cache_reads`, on for `allow_direct`) put each
//! small message here when it is appended and each message read from the log, and
//! answer gets from here first.
//!
//! Bounded by bytes ([`RECORD_CACHE_BYTES`] per shard) with CLOCK eviction: an entry read
//! since the hand last passed it gets a second chance. Entries are copies, never slices
//! of a read window (a slice would keep the whole window alive). The stream checks its
//! table before asking, so entries of removed messages are never served; they only wait
//! to be evicted. Keys carry the stream id, which is new for every stream created.

use std::cell::RefCell;
use std::collections::hash_map::Entry as Slot;
use std::collections::{HashMap, VecDeque};

use crate::limits::{RECORD_CACHE_BYTES, RECORD_CACHE_ENTRY_BYTES_MAX};
use crate::store::StoredRecord;
use crate::subject::TokenHashBuilder;

/// Bytes an entry is charged beyond its subject, headers and payload (map slot, ring
/// slot, allocation headers).
const ENTRY_OVERHEAD_BYTES: usize = 96;

type Key = (u64, u64);

struct Entry {
    record: StoredRecord,
    bytes: usize,
    referenced: bool,
}

#[derive(Default)]
struct Entries {
    /// Keyed by the crate's fast hash: with std's SipHash, hashing the key twice cost a
    /// KV put ~400 instructions, more than the rest of the insert.
    map: HashMap<Key, Entry, TokenHashBuilder>,
    /// Keys in insertion order; the front is under the CLOCK hand.
    ring: VecDeque<Key>,
    bytes: usize,
}

/// See the module documentation.
pub struct RecordCache {
    budget_bytes: usize,
    entries: RefCell<Entries>,
}

impl Default for RecordCache {
    fn default() -> Self {
        RecordCache::with_budget(RECORD_CACHE_BYTES)
    }
}

impl RecordCache {
    pub fn with_budget(budget_bytes: usize) -> RecordCache {
        RecordCache { budget_bytes, entries: RefCell::new(Entries::default()) }
    }

    /// Message `seq` of stream `stream`, if cached.
    pub fn get(&self, stream: u64, seq: u64) -> Option<StoredRecord> {
        let mut entries = self.entries.borrow_mut();
        let entry = entries.map.get_mut(&(stream, seq))?;
        entry.referenced = true;
        Some(entry.record.clone())
    }

    /// Caches a copy of `record` (not one bigger than [`RECORD_CACHE_ENTRY_BYTES_MAX`]),
    /// evicting as needed.
    pub fn insert(&self, stream: u64, record: &StoredRecord) {
        let StoredRecord { seq, timestamp_ns, subject, headers, payload } = record;
        self.insert_parts(stream, *seq, *timestamp_ns, subject, headers, payload);
    }

    /// [`Self::insert`] from a message's parts (as a publish has them).
    pub fn insert_parts(
        &self,
        stream: u64,
        seq: u64,
        timestamp_ns: i64,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
    ) {
        let bytes = ENTRY_OVERHEAD_BYTES + subject.len() + headers.len() + payload.len();
        if bytes > RECORD_CACHE_ENTRY_BYTES_MAX.min(self.budget_bytes) {
            return;
        }
        let key = (stream, seq);
        let mut entries = self.entries.borrow_mut();
        let Slot::Vacant(slot) = entries.map.entry(key) else {
            return;
        };
        let record = StoredRecord {
            seq,
            timestamp_ns,
            subject: subject.to_string(),
            headers: bytes::Bytes::copy_from_slice(headers),
            payload: bytes::Bytes::copy_from_slice(payload),
        };
        slot.insert(Entry { record, bytes, referenced: false });
        entries.ring.push_back(key);
        entries.bytes += bytes;
        while entries.bytes > self.budget_bytes {
            entries.evict_one();
        }
    }

    /// Drops the entries of stream `stream` past sequence `last`: messages whose publish
    /// failed, and whose sequences the stream gives out again (see `stream/reopen.rs`).
    pub fn forget_after(&self, stream: u64, last: u64) {
        let mut entries = self.entries.borrow_mut();
        let mut freed = 0;
        entries.map.retain(|&(id, seq), entry| {
            let keep = id != stream || seq <= last;
            if !keep {
                freed += entry.bytes;
            }
            keep
        });
        entries.bytes -= freed;
    }

    /// Bytes charged to the cached entries.
    pub fn bytes(&self) -> usize {
        self.entries.borrow().bytes
    }

    /// Entries cached.
    pub fn len(&self) -> usize {
        self.entries.borrow().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Entries {
    /// Moves the hand until it removes an entry: a referenced one loses its mark and goes
    /// to the back (its second chance). Ends within two turns of the ring.
    fn evict_one(&mut self) {
        while let Some(key) = self.ring.pop_front() {
            let Some(entry) = self.map.get_mut(&key) else {
                continue;
            };
            if entry.referenced {
                entry.referenced = false;
                self.ring.push_back(key);
                continue;
            }
            let bytes = entry.bytes;
            self.map.remove(&key);
            self.bytes -= bytes;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64, payload_bytes: usize) -> StoredRecord {
        StoredRecord {
            seq,
            timestamp_ns: seq as i64,
            subject: format!("s.{seq}"),
            headers: bytes::Bytes::new(),
            payload: bytes::Bytes::from(vec![seq as u8; payload_bytes]),
        }
    }

    #[test]
    fn stays_within_its_budget_and_keeps_what_is_read() {
        let cache = RecordCache::with_budget(10 * (ENTRY_OVERHEAD_BYTES + 100 + 5));
        for seq in 1..=5 {
            cache.insert(7, &record(seq, 100));
        }
        assert!(cache.get(7, 1).is_some());
        for seq in 6..=40 {
            cache.insert(7, &record(seq, 100));
            assert!(cache.bytes() <= 10 * (ENTRY_OVERHEAD_BYTES + 100 + 5));
            // Read 1 now and then: it keeps getting second chances.
            if seq % 4 == 0 {
                assert_eq!(cache.get(7, 1).map(|r| r.payload), Some(record(1, 100).payload));
            }
        }
        assert!(cache.get(7, 1).is_some(), "a message read all along was evicted");
        assert!(cache.get(7, 2).is_none(), "an unread old message outlived newer ones");
        assert!(cache.get(7, 40).is_some());
        assert!(cache.get(8, 40).is_none(), "another stream's key");
    }

    #[test]
    fn forgets_a_streams_entries_past_a_sequence() {
        let cache = RecordCache::with_budget(1 << 20);
        for seq in 1..=6 {
            cache.insert(7, &record(seq, 10));
            cache.insert(8, &record(seq, 10));
        }
        let before = cache.bytes();
        cache.forget_after(7, 4);
        assert!(cache.get(7, 4).is_some() && cache.get(7, 5).is_none() && cache.get(7, 6).is_none());
        assert!(cache.get(8, 6).is_some(), "another stream's entry");
        assert_eq!(cache.bytes(), before - 2 * (ENTRY_OVERHEAD_BYTES + 3 + 10));
        // A sequence given out again caches the new message.
        cache.insert(7, &record(5, 20));
        assert_eq!(cache.get(7, 5).map(|r| r.payload.len()), Some(20));
    }

    #[test]
    fn skips_records_too_big_for_it() {
        let cache = RecordCache::with_budget(1024);
        cache.insert(1, &record(1, 2048));
        assert!(cache.is_empty());
    }
}
