//! A hash map that grows in small steps: up to [`SPLIT_MAP_ONE_PART_MAX`] entries it is one
//! `HashMap`; past that it splits into [`SPLIT_MAP_PARTS`] maps chosen by the key's hash,
//! and each part grows on its own.
//!
//! Why: one client's million SUBs grow a trie node's children and the connection's sid
//! map to a million entries, and a `HashMap` doubles all at once. Measured on this VM
//! (perf, 1 M SUBs on one connection): each doubling past ~0.5 M entries stalled the shard
//! for 120-300 ms, mostly faulting in and zeroing the new table's fresh pages; a PING from
//! another client waited that long. Split, the largest single growth is 1/64 of that, and
//! the parts reach their thresholds at different inserts, so the work spreads between the
//! reader's yields.
//!
//! The price is a second hash of the key once split (the part, then the part's map), paid
//! only by maps past the threshold.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

use crate::limits::{SPLIT_MAP_ONE_PART_MAX, SPLIT_MAP_PARTS};

pub(crate) struct SplitMap<K, V, S> {
    hash_builder: S,
    /// One map, or [`SPLIT_MAP_PARTS`] maps indexed by the key's hash.
    parts: Vec<HashMap<K, V, S>>,
    len: usize,
}

impl<K: Hash + Eq, V, S: BuildHasher + Clone> SplitMap<K, V, S> {
    pub(crate) fn with_capacity_and_hasher(capacity: usize, hash_builder: S) -> Self {
        let one = HashMap::with_capacity_and_hasher(capacity.min(SPLIT_MAP_ONE_PART_MAX), hash_builder.clone());
        SplitMap { hash_builder, parts: vec![one], len: 0 }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn part_of<Q: Hash + ?Sized>(&self, key: &Q) -> usize {
        if self.parts.len() == 1 {
            return 0;
        }
        // Middle bits: a part's own map takes its bucket from the low bits and its
        // control tag from the top seven, and both must still vary within a part.
        (self.hash_builder.hash_one(key) >> 32) as usize % self.parts.len()
    }

    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.parts[self.part_of(key)].get(key)
    }

    pub(crate) fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let part = self.part_of(key);
        self.parts[part].get_mut(key)
    }

    pub(crate) fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get(key).is_some()
    }

    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        if self.parts.len() == 1 && self.len >= SPLIT_MAP_ONE_PART_MAX {
            self.split();
        }
        let part = self.part_of(&key);
        let previous = self.parts[part].insert(key, value);
        if previous.is_none() {
            self.len += 1;
        }
        previous
    }

    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let part = self.part_of(key);
        let removed = self.parts[part].remove(key);
        if removed.is_some() {
            self.len -= 1;
        }
        removed
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.parts.iter().flat_map(HashMap::values)
    }

    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        for part in &mut self.parts {
            part.retain(&mut keep);
        }
        self.len = self.parts.iter().map(HashMap::len).sum();
    }

    /// Takes every entry out (the map keeps its parts, empty).
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (K, V)> + '_ {
        self.len = 0;
        self.parts.iter_mut().flat_map(HashMap::drain)
    }

    /// Moves the one map's entries into [`SPLIT_MAP_PARTS`] maps (once, at the threshold:
    /// moving that many entries is cheap next to one doubling past it).
    fn split(&mut self) {
        let one = std::mem::take(&mut self.parts).pop().expect("one part before the split");
        let per_part = 2 * one.len() / SPLIT_MAP_PARTS;
        self.parts = (0..SPLIT_MAP_PARTS)
            .map(|_| HashMap::with_capacity_and_hasher(per_part, self.hash_builder.clone()))
            .collect();
        for (key, value) in one {
            let part = self.part_of(&key);
            self.parts[part].insert(key, value);
        }
    }
}

impl<K: Hash + Eq, V, S: BuildHasher + Clone + Default> Default for SplitMap<K, V, S> {
    fn default() -> Self {
        SplitMap::with_capacity_and_hasher(0, S::default())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::hash_map::RandomState;

    use super::*;

    #[test]
    fn agrees_with_a_hash_map_across_the_split() {
        let mut split: SplitMap<u64, u64, RandomState> = SplitMap::default();
        let mut plain = HashMap::new();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for step in 0..(3 * SPLIT_MAP_ONE_PART_MAX as u64) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let key = state % (2 * SPLIT_MAP_ONE_PART_MAX as u64);
            if step % 5 == 0 {
                assert_eq!(split.remove(&key), plain.remove(&key));
            } else {
                assert_eq!(split.insert(key, step), plain.insert(key, step));
            }
            assert_eq!(split.len(), plain.len());
        }
        assert!(split.parts.len() > 1, "never split");
        for (key, value) in &plain {
            assert_eq!(split.get(key), Some(value));
        }
        split.retain(|key, _| key % 2 == 0);
        plain.retain(|key, _| key % 2 == 0);
        assert_eq!(split.len(), plain.len());
        assert_eq!(split.values().count(), plain.len());
        let mut drained: Vec<u64> = split.drain().map(|(key, _)| key).collect();
        drained.sort_unstable();
        let mut expected: Vec<u64> = plain.keys().copied().collect();
        expected.sort_unstable();
        assert_eq!(drained, expected);
        assert!(split.is_empty());
    }
}
