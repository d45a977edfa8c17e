//! Who wants which subjects: this shard's own subscriptions, and a replica of which other
//! shards have subscribers for which patterns (DESIGN §2: a publish consults both locally
//! and sends one envelope per interested shard, never a broadcast to all).

use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;

use bytes::Bytes;

use super::match_cache::{MatchCache, Matches};
use super::outbound::Outbound;
use crate::shard::ShardId;
use crate::subject::SubjectTrie;

/// A connection's shard-local identity.
pub type ConnId = u64;

/// One client subscription (`SUB subject [queue] sid`).
pub struct Subscription {
    pub conn: ConnId,
    pub sid: Bytes,
    pub subject: Bytes,
    pub queue: Option<Bytes>,
    pub outbound: Rc<Outbound>,
    /// Messages delivered so far; `UNSUB sid max` compares against it.
    pub delivered: Cell<u64>,
    pub max: Cell<Option<u64>>,
}

impl Subscription {
    /// Counts one delivery; true when the auto-unsubscribe limit is now reached.
    pub fn count_delivery(&self) -> bool {
        let delivered = self.delivered.get() + 1;
        self.delivered.set(delivered);
        self.max.get().is_some_and(|max| delivered >= max)
    }
}

#[derive(Clone)]
pub struct RemoteInterest {
    pub shard: ShardId,
    pub queue: Option<Bytes>,
}

type InterestKey = (Bytes, Option<Bytes>);

#[derive(Default)]
pub struct Interest {
    local: SubjectTrie<Rc<Subscription>>,
    local_counts: HashMap<InterestKey, u32>,
    remote: SubjectTrie<RemoteInterest>,
    matches: MatchCache,
}

impl Interest {
    /// Adds a local subscription; true when it is the first on its (subject, queue), so
    /// the other shards must be told.
    pub fn add_local(&mut self, subscription: Rc<Subscription>) -> bool {
        self.matches.clear();
        let key = (subscription.subject.clone(), subscription.queue.clone());
        if self.local.insert(&subscription.subject, subscription.clone()).is_err() {
            // Callers validate subjects first; an invalid one simply matches nothing.
            return false;
        }
        let count = self.local_counts.entry(key).or_insert(0);
        *count += 1;
        *count == 1
    }

    /// Removes a local subscription; true when it was the last on its (subject, queue).
    pub fn remove_local(&mut self, subscription: &Rc<Subscription>) -> bool {
        let removed = self
            .local
            .remove(&subscription.subject, |candidate| Rc::ptr_eq(candidate, subscription));
        if removed == 0 {
            return false;
        }
        self.matches.clear();
        let key = (subscription.subject.clone(), subscription.queue.clone());
        match self.local_counts.get_mut(&key) {
            Some(count) if *count > 1 => {
                *count -= 1;
                false
            }
            Some(_) => {
                self.local_counts.remove(&key);
                true
            }
            None => false,
        }
    }

    pub fn add_remote(&mut self, shard: ShardId, pattern: &[u8], queue: Option<Bytes>) {
        // The owning shard validated the pattern before announcing it.
        self.matches.clear();
        let _ = self.remote.insert(pattern, RemoteInterest { shard, queue });
    }

    pub fn remove_remote(&mut self, shard: ShardId, pattern: &[u8], queue: &Option<Bytes>) {
        self.matches.clear();
        self.remote
            .remove(pattern, |interest| interest.shard == shard && &interest.queue == queue);
    }

    pub fn for_each_local(&self, subject: &[u8], visit: impl FnMut(&Rc<Subscription>)) {
        self.matches_of(subject).local.iter().for_each(visit);
    }

    pub fn for_each_remote(&self, subject: &[u8], visit: impl FnMut(&RemoteInterest)) {
        self.matches_of(subject).remote.iter().for_each(visit);
    }

    /// Everything `subject` matches, from the cache or the tries.
    pub fn matches_of(&self, subject: &[u8]) -> Rc<Matches> {
        self.matches.get_or(subject, || {
            let mut matches = Matches::default();
            self.local.for_each_match(subject, |subscription| matches.local.push(subscription.clone()));
            self.remote.for_each_match(subject, |remote| matches.remote.push(remote.clone()));
            matches
        })
    }

    /// The (subject, queue) pairs this shard has subscribers for, to tell a shard that
    /// starts later or asks again.
    pub fn local_patterns(&self) -> impl Iterator<Item = &InterestKey> {
        self.local_counts.keys()
    }
}
