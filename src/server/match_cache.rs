//! Remembered subject matches: the subscriptions (local and on other shards) a subject
//! matched, so a stream of messages to one subject (a publisher's subject, a consumer's
//! deliver subject or pull inbox) walks the subject tries once instead of twice per
//! message. Any change to interest empties it; it is also emptied when full.
//!
//! A subject is remembered only on its second sighting (a small table of recent misses'
//! hashes says whether it was seen), so subjects used once (request inboxes, pub ack
//! replies) cost neither an allocation nor an eviction of the subjects that repeat.

use std::cell::RefCell;
use std::collections::HashMap;
use std::cell::Cell;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use super::interest::{RemoteInterest, Subscription};
use crate::limits::MATCH_CACHE_SUBJECTS_MAX;

/// What one subject matched.
#[derive(Default)]
pub struct Matches {
    pub local: Vec<Rc<Subscription>>,
    pub remote: Vec<RemoteInterest>,
}

pub struct MatchCache {
    /// The subject looked up last: consecutive messages usually share it, and comparing
    /// it is cheaper than hashing.
    last: RefCell<Option<(Rc<[u8]>, Rc<Matches>)>>,
    /// Keys are shared with `last`, so switching between known subjects allocates nothing.
    subjects: RefCell<HashMap<Rc<[u8]>, Rc<Matches>, BuildHasherDefault<SubjectHasher>>>,
    /// Hashes of recent misses, by their low bits: a miss whose hash is here is a repeat.
    seen: Box<[Cell<u64>]>,
}

impl Default for MatchCache {
    fn default() -> MatchCache {
        MatchCache {
            last: RefCell::default(),
            subjects: RefCell::default(),
            seen: (0..SEEN_SLOTS).map(|_| Cell::new(0)).collect(),
        }
    }
}

/// Slots of the recent-miss table (a power of two).
const SEEN_SLOTS: usize = 4096;

fn subject_hash(bytes: &[u8]) -> u64 {
    let mut hasher = SubjectHasher::default();
    hasher.write(bytes);
    hasher.finish()
}

impl MatchCache {
    /// The matches of `subject`, computed by `compute` when not remembered.
    pub fn get_or(&self, subject: &[u8], compute: impl FnOnce() -> Matches) -> Rc<Matches> {
        if let Some((last, matches)) = &*self.last.borrow() {
            if **last == *subject {
                return matches.clone();
            }
        }
        // Unseen subjects skip the map: most are used once.
        let hash = subject_hash(subject);
        let slot = &self.seen[hash as usize & (SEEN_SLOTS - 1)];
        if slot.replace(hash) != hash {
            return Rc::new(compute());
        }
        let found = self.subjects.borrow().get_key_value(subject).map(|(key, matches)| (key.clone(), matches.clone()));
        let (key, matches) = found.unwrap_or_else(|| {
            let entry: (Rc<[u8]>, Rc<Matches>) = (subject.into(), Rc::new(compute()));
            let mut subjects = self.subjects.borrow_mut();
            if subjects.len() >= MATCH_CACHE_SUBJECTS_MAX {
                subjects.clear();
            }
            subjects.insert(entry.0.clone(), entry.1.clone());
            entry
        });
        *self.last.borrow_mut() = Some((key, matches.clone()));
        matches
    }

    /// Forgets everything (interest changed).
    pub fn clear(&self) {
        self.last.borrow_mut().take();
        self.subjects.borrow_mut().clear();
    }
}

/// A word-at-a-time multiply-rotate hash (FxHash's): subjects are short, SipHash's cost
/// showed in publish profiles, and byte-at-a-time FNV did too for inbox-length subjects.
pub struct SubjectHasher(u64);

const HASH_SEED: u64 = 0xcbf2_9ce4_8422_2325;
const HASH_K: u64 = 0x517c_c1b7_2722_0a95;

impl Default for SubjectHasher {
    fn default() -> SubjectHasher {
        SubjectHasher(HASH_SEED)
    }
}

impl SubjectHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(HASH_K);
    }
}

impl Hasher for SubjectHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            // The length keeps "a" and "a\0" apart.
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
    }
}
