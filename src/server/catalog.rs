//! Every shard's replica of which streams exist, which shard owns each, and which subjects
//! each captures (DESIGN §2, routing table (a)). Changes arrive by broadcast; a publish
//! consults the local replica to find the owning shard without asking anyone.
//!
//! Streams belong to an account and their names are free per account: an entry is keyed
//! by (account, name), and its capture patterns sit in the trie under their routing keys
//! (`account::routing_key`), so a publish looks its own routing key up once and a match
//! from another account (a `$G` wildcard reaching a prefixed key) is skipped.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use super::account::{routing_key, AccountId};
use crate::jetstream::service::{OwnerKey, Reservation};
use crate::shard::ShardId;
use crate::subject::{self, SubjectTrie};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogEntry {
    /// The account whose stream it is.
    pub account: AccountId,
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
    Remove { account: AccountId, name: String },
}

#[derive(Default)]
pub struct Catalog {
    streams: BTreeMap<(AccountId, String), Rc<CatalogEntry>>,
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
                self.remove(entry.account, &entry.name);
                let entry = Rc::new(entry);
                for pattern in &entry.subjects {
                    // Subjects were validated when the stream was created.
                    let _ = self.capture.insert(&routing_key(entry.account, pattern.as_bytes()), entry.clone());
                }
                self.streams.insert((entry.account, entry.name.clone()), entry);
            }
            CatalogChange::Remove { account, name } => self.remove(account, &name),
        }
    }

    fn remove(&mut self, account: AccountId, name: &str) {
        if let Some(old) = self.streams.remove(&(account, name.to_string())) {
            for pattern in &old.subjects {
                self.capture.remove(&routing_key(account, pattern.as_bytes()), |entry| Rc::ptr_eq(entry, &old));
            }
        }
    }

    /// `account`'s stream `name`.
    pub fn get(&self, account: AccountId, name: &str) -> Option<&Rc<CatalogEntry>> {
        self.streams.get(&(account, name.to_string()))
    }

    /// The stream of `account` that stores messages published to routing key `key` (the
    /// subject's key in `account`), if any. Subjects of one account's streams never
    /// overlap, so there is at most one.
    pub fn capture(&self, account: AccountId, key: &[u8]) -> Option<Rc<CatalogEntry>> {
        if self.streams.is_empty() {
            return None;
        }
        if let Some((bytes, len)) = &self.last.borrow().subject {
            if bytes[..*len] == *key {
                return self.last.borrow().entry.clone();
            }
        }
        let mut found = None;
        self.capture.for_each_match(key, |entry| {
            if found.is_none() && entry.account == account {
                found = Some(entry.clone());
            }
        });
        if key.len() <= LAST_SUBJECT_BYTES_MAX {
            let mut bytes = [0u8; LAST_SUBJECT_BYTES_MAX];
            bytes[..key.len()].copy_from_slice(key);
            *self.last.borrow_mut() = LastCapture { subject: Some((bytes, key.len())), entry: found.clone() };
        }
        found
    }

    /// `account`'s stream names in order, optionally only those whose subjects collide
    /// with `filter`.
    pub fn names(&self, account: AccountId, filter: Option<&str>) -> Vec<String> {
        self.of(account)
            .filter(|entry| filter.is_none_or(|f| collides_with(entry, f)))
            .map(|entry| entry.name.clone())
            .collect()
    }

    /// Streams in all accounts.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// `account`'s streams, by name.
    pub fn of(&self, account: AccountId) -> impl Iterator<Item = &Rc<CatalogEntry>> {
        let first = (account, String::new());
        self.streams.range(first..).map(|(_, entry)| entry).take_while(move |entry| entry.account == account)
    }

    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Another stream of `account` whose subjects overlap `subjects` (nats-server error
    /// 10065; streams of different accounts never capture each other's publishes).
    pub fn overlapping(&self, account: AccountId, name: &str, subjects: &[String]) -> Option<&Rc<CatalogEntry>> {
        self.of(account).find(|entry| entry.name != name && subjects.iter().any(|mine| collides_with(entry, mine)))
    }

    pub fn entries(&self) -> impl Iterator<Item = &Rc<CatalogEntry>> {
        self.streams.values()
    }

    /// Bytes `account`'s streams reserve in memory or on disk (the `max_bytes` of those
    /// that set it), as nats-server counts `reserved_memory` / `reserved_storage`.
    pub fn reserved_bytes(&self, account: AccountId, memory: bool) -> i64 {
        let reserved = self.of(account).map(|entry| entry.reservation);
        reserved.filter(|r| r.memory == memory && r.max_bytes > 0).map(|r| r.max_bytes).sum()
    }

    /// Bytes every account's streams reserve (the server's `max_memory_store` /
    /// `max_file_store` count them all).
    pub fn reserved_bytes_all(&self, memory: bool) -> i64 {
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
            account: AccountId::GLOBAL,
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
        assert_eq!(catalog.capture(AccountId::GLOBAL, b"orders.eu").unwrap().owner, ShardId(1));
        assert!(catalog.capture(AccountId::GLOBAL, b"orders.eu.x").is_none());
        catalog.apply(CatalogChange::Upsert(entry("ORDERS", 0, &["orders.>"])));
        assert_eq!(catalog.capture(AccountId::GLOBAL, b"orders.eu.x").unwrap().owner, ShardId(0));
        catalog.apply(CatalogChange::Remove { account: AccountId::GLOBAL, name: "ORDERS".into() });
        assert!(catalog.capture(AccountId::GLOBAL, b"orders.eu").is_none());
        assert!(catalog.is_empty());
    }

    #[test]
    fn overlap_and_name_filters() {
        let mut catalog = Catalog::default();
        catalog.apply(CatalogChange::Upsert(entry("A", 0, &["a.*"])));
        catalog.apply(CatalogChange::Upsert(entry("B", 1, &["b.>"])));
        assert_eq!(catalog.overlapping(AccountId::GLOBAL, "C", &["a.x".into()]).unwrap().name, "A");
        assert!(
            catalog.overlapping(AccountId::GLOBAL, "A", &["a.>".into()]).is_none(),
            "a stream never overlaps itself"
        );
        assert!(catalog.overlapping(AccountId::GLOBAL, "C", &["c.>".into()]).is_none());
        assert_eq!(catalog.names(AccountId::GLOBAL, None), ["A", "B"]);
        assert_eq!(catalog.names(AccountId::GLOBAL, Some("b.x.y")), ["B"]);
    }

    #[test]
    fn accounts_keep_their_own_names_and_captures() {
        let mut catalog = Catalog::default();
        let (a, b) = (AccountId(1), AccountId(2));
        catalog.apply(CatalogChange::Upsert(CatalogEntry { account: a, ..entry("ORDERS", 0, &["orders.>"]) }));
        catalog.apply(CatalogChange::Upsert(CatalogEntry { account: b, ..entry("ORDERS", 1, &["sales.>"]) }));
        catalog.apply(CatalogChange::Upsert(entry("WIDE", 1, &["*.orders"])));
        assert_eq!(catalog.get(a, "ORDERS").unwrap().owner, ShardId(0));
        assert_eq!(catalog.get(b, "ORDERS").unwrap().owner, ShardId(1));
        assert_eq!(catalog.capture(a, &routing_key(a, b"orders.eu")).unwrap().account, a);
        assert!(catalog.capture(b, &routing_key(b, b"orders.eu")).is_none());
        assert!(catalog.capture(a, &routing_key(a, b"orders")).is_none(), "the $G wildcard is not A's");
        assert_eq!(catalog.names(a, None), ["ORDERS"]);
        assert!(catalog.overlapping(b, "OTHER", &["orders.>".into()]).is_none());
        catalog.apply(CatalogChange::Remove { account: a, name: "ORDERS".into() });
        assert!(catalog.get(a, "ORDERS").is_none() && catalog.get(b, "ORDERS").is_some());
    }
}
