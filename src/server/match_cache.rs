//! Remembered subject matches: the subscriptions (local and on other shards) a subject
//! matched, so a stream of messages to one subject (a publisher's subject, a consumer's
//! deliver subject or pull inbox) walks the subject tries once instead of twice per
//! message. Any change to interest empties it; it is also emptied when full.
//!
//! A subject is remembered only on its second sighting (a small table of recent misses'
//! hashes says whether it was seen), so subjects used once (request inboxes, pub ack
//! replies) cost neither an allocation nor an eviction of the subjects that repeat.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::rc::Rc;

use super::interest::{RemoteInterest, Subscription};
use crate::limits::MATCH_CACHE_SUBJECTS_MAX;
use crate::subject::TokenHashBuilder;

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
    subjects: RefCell<HashMap<Rc<[u8]>, Rc<Matches>, TokenHashBuilder>>,
    /// Hashes of recent misses, by their low bits: a miss whose hash is here is a repeat.
    seen: Box<[Cell<u64>]>,
    hasher: TokenHashBuilder,
}

impl Default for MatchCache {
    fn default() -> MatchCache {
        MatchCache {
            last: RefCell::default(),
            subjects: RefCell::default(),
            seen: (0..SEEN_SLOTS).map(|_| Cell::new(0)).collect(),
            hasher: TokenHashBuilder::new(),
        }
    }
}

/// Slots of the recent-miss table (a power of two).
const SEEN_SLOTS: usize = 4096;

impl MatchCache {
    /// The matches of `subject`, computed by `compute` when not remembered.
    pub fn get_or(&self, subject: &[u8], compute: impl FnOnce() -> Matches) -> Rc<Matches> {
        if let Some((last, matches)) = &*self.last.borrow() {
            if **last == *subject {
                return matches.clone();
            }
        }
        // Unseen subjects skip the map: most are used once.
        let hash = self.hasher.hash_one(subject);
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
