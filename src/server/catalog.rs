//! Every shard's replica of which streams exist, which shard owns each, and which subjects
//! each captures (DESIGN §2, routing table (a)). Changes arrive by broadcast; a publish
//! consults the local replica to find the owning shard without asking anyone.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::jetstream::service::{OwnerKey, Reservation};
use crate::shard::ShardId;
use crate::subject::{self, SubjectTrie};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogEntry {
    pub name: String,
    pub owner: ShardId,
    /// Capture patterns (nats-server defaults an empty list to the stream's name).
    pub subjects: Vec<String>,
    /// Whether `$JS.API.DIRECT.GET` is answered for this stream.
    pub allow_direct: bool,
    /// Where the stream's owner sits on the owning shard (a publish resolves it by this).
    pub owner_key: OwnerKey,
    /// Its `max_bytes` and storage, for the account's and server's byte limits.
    pub reservation: Reservation,
}

#[derive(Clone, Debug)]
pub enum CatalogChange {
    Upsert(CatalogEntry),
    Remove { name: String },
}

#[derive(Default)]
pub struct Catalog {
    streams: BTreeMap<String, Rc<CatalogEntry>>,
    capture: SubjectTrie<Rc<CatalogEntry>>,
    /// The last subject looked up and its answer: a publisher usually repeats its subject,
    /// and every core publish asks. Kept inline (no allocation); forgotten on any change.
    last: RefCell<LastCapture>,
}

/// Subjects longer than this are not remembered.
const LAST_SUBJECT_BYTES_MAX: usize = 64;

#[derive(Default)]
struct LastCapture {
    subject: Option<([u8; LAST_SUBJECT_BYTES_MAX], usize)>,
    entry: Option<Rc<CatalogEntry>>,
}

impl Catalog {
    pub fn apply(&mut self, change: CatalogChange) {
        *self.last.get_mut() = LastCapture::default();
        match change {
            CatalogChange::Upsert(entry) => {
                self.remove(&entry.name);
                let entry = Rc::new(entry);
                for pattern in &entry.subjects {
                    // Subjects were validated when the stream was created.
                    let _ = self.capture.insert(pattern.as_bytes(), entry.clone());
                }
                self.streams.insert(entry.name.clone(), entry);
            }
            CatalogChange::Remove { name } => self.remove(&name),
        }
    }

    fn remove(&mut self, name: &str) {
        if let Some(old) = self.streams.remove(name) {
            for pattern in &old.subjects {
                self.capture.remove(pattern.as_bytes(), |entry| Rc::ptr_eq(entry, &old));
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&Rc<CatalogEntry>> {
        self.streams.get(name)
    }

    /// The stream that stores messages published to `subject`, if any. Subjects of
    /// different streams never overlap, so there is at most one.
    pub fn capture(&self, subject: &[u8]) -> Option<Rc<CatalogEntry>> {
        if self.streams.is_empty() {
            return None;
        }
        if let Some((bytes, len)) = &self.last.borrow().subject {
            if bytes[..*len] == *subject {
                return self.last.borrow().entry.clone();
            }
        }
        let mut found = None;
        self.capture.for_each_match(subject, |entry| {
            if found.is_none() {
                found = Some(entry.clone());
            }
        });
        if subject.len() <= LAST_SUBJECT_BYTES_MAX {
            let mut bytes = [0u8; LAST_SUBJECT_BYTES_MAX];
            bytes[..subject.len()].copy_from_slice(subject);
            *self.last.borrow_mut() = LastCapture { subject: Some((bytes, subject.len())), entry: found.clone() };
        }
        found
    }

    /// Stream names in order, optionally only those whose subjects collide with `filter`.
    pub fn names(&self, filter: Option<&str>) -> Vec<String> {
        self.streams
            .values()
            .filter(|entry| filter.is_none_or(|f| collides_with(entry, f)))
            .map(|entry| entry.name.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.streams.len()
    }

    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Another stream whose subjects overlap `subjects` (nats-server error 10065).
    pub fn overlapping(&self, name: &str, subjects: &[String]) -> Option<&Rc<CatalogEntry>> {
        self.streams.values().find(|entry| entry.name != name && subjects.iter().any(|mine| collides_with(entry, mine)))
    }

    pub fn entries(&self) -> impl Iterator<Item = &Rc<CatalogEntry>> {
        self.streams.values()
    }

    /// Bytes the streams reserve in memory or on disk (the `max_bytes` of those that set
    /// it), as nats-server counts `reserved_memory` / `reserved_storage`.
    pub fn reserved_bytes(&self, memory: bool) -> i64 {
        let reserved = self.streams.values().map(|entry| entry.reservation);
        reserved.filter(|r| r.memory == memory && r.max_bytes > 0).map(|r| r.max_bytes).sum()
    }
}

fn collides_with(entry: &CatalogEntry, pattern: &str) -> bool {
    entry.subjects.iter().any(|theirs| subject::collide(theirs.as_bytes(), pattern.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, owner: u16, subjects: &[&str]) -> CatalogEntry {
        CatalogEntry {
            name: name.to_string(),
            owner: ShardId(owner),
            subjects: subjects.iter().map(|s| s.to_string()).collect(),
            allow_direct: false,
            owner_key: OwnerKey::NONE,
            reservation: Reservation::default(),
        }
    }

    #[test]
    fn capture_follows_upserts_and_removals() {
        let mut catalog = Catalog::default();
        catalog.apply(CatalogChange::Upsert(entry("ORDERS", 1, &["orders.*"])));
        assert_eq!(catalog.capture(b"orders.eu").unwrap().owner, ShardId(1));
        assert!(catalog.capture(b"orders.eu.x").is_none());
        catalog.apply(CatalogChange::Upsert(entry("ORDERS", 0, &["orders.>"])));
        assert_eq!(catalog.capture(b"orders.eu.x").unwrap().owner, ShardId(0));
        catalog.apply(CatalogChange::Remove { name: "ORDERS".into() });
        assert!(catalog.capture(b"orders.eu").is_none());
        assert!(catalog.is_empty());
    }

    #[test]
    fn overlap_and_name_filters() {
        let mut catalog = Catalog::default();
        catalog.apply(CatalogChange::Upsert(entry("A", 0, &["a.*"])));
        catalog.apply(CatalogChange::Upsert(entry("B", 1, &["b.>"])));
        assert_eq!(catalog.overlapping("C", &["a.x".into()]).unwrap().name, "A");
        assert!(catalog.overlapping("A", &["a.>".into()]).is_none(), "a stream never overlaps itself");
        assert!(catalog.overlapping("C", &["c.>".into()]).is_none());
        assert_eq!(catalog.names(None), ["A", "B"]);
        assert_eq!(catalog.names(Some("b.x.y")), ["B"]);
    }
}
