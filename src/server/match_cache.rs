//! Remembered subject matches: the subscriptions (local and on other shards) a subject
//! matched, so a stream of messages to one subject (a publisher's subject, a consumer's
//! deliver subject or pull inbox) walks the subject tries once instead of twice per
//! message. Any change to interest empties it; it is also emptied when full.
//!
//! A subject is remembered only on its second sighting (a small table of recent misses'
//! hashes says whether it was seen), so subjects used once (request inboxes, pub ack
//! replies) cost neither an allocation nor an eviction of the subjects that repeat.
//!
//! Subjects used once still share their matches when they differ only in a last token no
//! pattern names: every pub ack and reply to one client goes to `_INBOX.<id>.<token>`,
//! matched by its `_INBOX.<id>.*`. Such a prefix is remembered, also on its second
//! sighting, with the matches of any last token (`SubjectTrie::for_each_match_any_last`),
//! or as one whose last token some pattern names, where the subject is matched whole.

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

/// Where matches come from when they are not remembered.
pub trait Matcher {
    /// Everything `subject` matches.
    fn matches(&self, subject: &[u8]) -> Matches;
    /// What `prefix.X` matches for every token `X` no pattern names there; `None` when a
    /// pattern names a token there.
    fn matches_any_last(&self, prefix: &[u8]) -> Option<Matches>;
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
    /// The prefix (a subject but its last token) looked up last, and the matches of its
    /// subjects: `None` when some pattern names a last token under it.
    last_prefix: RefCell<Option<(Rc<[u8]>, Option<Rc<Matches>>)>>,
    prefixes: RefCell<HashMap<Rc<[u8]>, Option<Rc<Matches>>, TokenHashBuilder>>,
}

impl Default for MatchCache {
    fn default() -> MatchCache {
        MatchCache {
            last: RefCell::default(),
            subjects: RefCell::default(),
            seen: (0..SEEN_SLOTS).map(|_| Cell::new(0)).collect(),
            hasher: TokenHashBuilder::new(),
            last_prefix: RefCell::default(),
            prefixes: RefCell::default(),
        }
    }
}

/// Slots of the recent-miss table (a power of two).
const SEEN_SLOTS: usize = 4096;
/// Told into a prefix's hash, so that a prefix and a subject of the same bytes have
/// different slots in the recent-miss table.
const PREFIX_SALT: u64 = 0x9e37_79b9_7f4a_7c15;

impl MatchCache {
    /// The matches of `subject`, from `matcher` when not remembered.
    pub fn get_or(&self, subject: &[u8], matcher: &impl Matcher) -> Rc<Matches> {
        if let Some((last, matches)) = &*self.last.borrow() {
            if **last == *subject {
                return matches.clone();
            }
        }
        let mut prefix = shared_prefix(subject);
        if let (Some(known), Some((last, matches))) = (prefix, &*self.last_prefix.borrow()) {
            if **last == *known {
                match matches {
                    // The next reply to the same inbox: neither hashed nor noted as seen.
                    Some(matches) => return matches.clone(),
                    // A prefix whose last token a pattern names: not looked up again.
                    None => prefix = None,
                }
            }
        }
        let unremembered = || {
            let shared = prefix.and_then(|prefix| self.by_prefix(prefix, matcher));
            shared.unwrap_or_else(|| Rc::new(matcher.matches(subject)))
        };
        // Unseen subjects skip the map: most are used once.
        if !self.seen_before(self.hasher.hash_one(subject)) {
            return unremembered();
        }
        let (key, matches) = remembered(&self.subjects, subject, unremembered);
        *self.last.borrow_mut() = Some((key, matches.clone()));
        matches
    }

    /// The matches every subject `prefix.X` shares, when no pattern names a token at
    /// `X` and the prefix is remembered (or seen before, and remembered now).
    fn by_prefix(&self, prefix: &[u8], matcher: &impl Matcher) -> Option<Rc<Matches>> {
        if !self.seen_before(self.hasher.hash_one(prefix) ^ PREFIX_SALT) {
            return None;
        }
        let (key, matches) = remembered(&self.prefixes, prefix, || matcher.matches_any_last(prefix).map(Rc::new));
        *self.last_prefix.borrow_mut() = Some((key, matches.clone()));
        matches
    }

    /// Whether `hash` is the last miss noted in its slot of the recent-miss table; notes
    /// it there either way.
    fn seen_before(&self, hash: u64) -> bool {
        self.seen[hash as usize & (SEEN_SLOTS - 1)].replace(hash) == hash
    }

    /// Forgets everything (interest changed).
    pub fn clear(&self) {
        self.last.borrow_mut().take();
        self.subjects.borrow_mut().clear();
        self.last_prefix.borrow_mut().take();
        self.prefixes.borrow_mut().clear();
    }
}

/// `key`'s entry in `map`, made by `compute` when absent (a full map is emptied first).
fn remembered<V: Clone>(
    map: &RefCell<HashMap<Rc<[u8]>, V, TokenHashBuilder>>,
    key: &[u8],
    compute: impl FnOnce() -> V,
) -> (Rc<[u8]>, V) {
    let found = map.borrow().get_key_value(key).map(|(key, value)| (key.clone(), value.clone()));
    found.unwrap_or_else(|| {
        let entry: (Rc<[u8]>, V) = (key.into(), compute());
        let mut map = map.borrow_mut();
        if map.len() >= MATCH_CACHE_SUBJECTS_MAX {
            map.clear();
        }
        map.insert(entry.0.clone(), entry.1.clone());
        entry
    })
}

/// `subject` but its last token, when both are non-empty.
fn shared_prefix(subject: &[u8]) -> Option<&[u8]> {
    let dot = subject.iter().rposition(|&byte| byte == b'.')?;
    (dot > 0 && dot + 1 < subject.len()).then(|| &subject[..dot])
}
