//! Who wants which subjects: this shard's own subscriptions, and a replica of which other
//! shards have subscribers for which patterns (DESIGN §2: a publish consults both locally
//! and sends one envelope per interested shard, never a broadcast to all).

use std::cell::Cell;
use std::rc::Rc;

use bytes::Bytes;

use super::account::{key_account, AccountId};
use super::match_cache::{MatchCache, Matcher, Matches};
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
    /// The subscriber's account, and `subject` as its routing key in that account
    /// (`account::routing_key`): the tries hold keys, so accounts never share an entry.
    pub account: AccountId,
    pub key: Bytes,
    pub queue: Option<Bytes>,
    pub outbound: Rc<Outbound>,
    /// Messages delivered so far; `UNSUB sid max` compares against it.
    pub delivered: Cell<u64>,
    pub max: Cell<Option<u64>>,
    /// A hub's interest over a leaf link (`LS+`): delivered as one `LMSG` per message and
    /// link, and a queue member only when no local one exists (`leaf::forwarding`).
    pub leaf: bool,
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
    /// The account of the subscribers behind it (read from the announced key).
    pub account: AccountId,
}

#[derive(Default)]
pub struct Interest {
    local: SubjectTrie<Rc<Subscription>>,
    remote: SubjectTrie<RemoteInterest>,
    matches: MatchCache,
}

impl Interest {
    /// Adds a local subscription; true when it is the first on its (subject, queue), so
    /// the other shards must be told.
    pub fn add_local(&mut self, subscription: Rc<Subscription>) -> bool {
        self.matches.clear();
        // Counted in the trie node itself, not in a map keyed by (subject, queue): such a
        // map's rehash at a million entries stalled the shard (matrix row 18).
        let same_queue = |other: &Rc<Subscription>| other.queue == subscription.queue;
        let first = !self.local.any_exact(&subscription.key, same_queue);
        if self.local.insert(&subscription.key, subscription.clone()).is_err() {
            // Callers validate subjects first; an invalid one simply matches nothing.
            return false;
        }
        first
    }

    /// Removes a local subscription; true when it was the last on its (subject, queue).
    pub fn remove_local(&mut self, subscription: &Rc<Subscription>) -> bool {
        let removed = self.local.remove(&subscription.key, |candidate| Rc::ptr_eq(candidate, subscription));
        if removed == 0 {
            return false;
        }
        self.matches.clear();
        let same_queue = |other: &Rc<Subscription>| other.queue == subscription.queue;
        !self.local.any_exact(&subscription.key, same_queue)
    }

    /// `pattern` is a routing key, as the owning shard announced it.
    pub fn add_remote(&mut self, shard: ShardId, pattern: &[u8], queue: Option<Bytes>) {
        // The owning shard validated the pattern before announcing it.
        self.matches.clear();
        let account = key_account(pattern).0;
        let _ = self.remote.insert(pattern, RemoteInterest { shard, queue, account });
    }

    pub fn remove_remote(&mut self, shard: ShardId, pattern: &[u8], queue: &Option<Bytes>) {
        self.matches.clear();
        self.remote.remove(pattern, |interest| interest.shard == shard && &interest.queue == queue);
    }

    pub fn for_each_local(&self, subject: &[u8], visit: impl FnMut(&Rc<Subscription>)) {
        self.matches_of(subject).local.iter().for_each(visit);
    }

    pub fn for_each_remote(&self, subject: &[u8], visit: impl FnMut(&RemoteInterest)) {
        self.matches_of(subject).remote.iter().for_each(visit);
    }

    /// Everything the routing key `subject` matches, from the cache or the tries. A `$G`
    /// wildcard can match another account's key, so only entries of the key's account
    /// (`account::key_account`) are kept; the cache holds them so filtered.
    pub fn matches_of(&self, subject: &[u8]) -> Rc<Matches> {
        let tries = Tries { local: &self.local, remote: &self.remote, account: key_account(subject).0 };
        self.matches.get_or(subject, &tries)
    }
}

/// The tries of one shard's interest, matched for one account's keys.
struct Tries<'a> {
    local: &'a SubjectTrie<Rc<Subscription>>,
    remote: &'a SubjectTrie<RemoteInterest>,
    account: AccountId,
}

impl Tries<'_> {
    /// Keeps `subscription` if it is of the account matched for.
    fn keep_local(&self, matches: &mut Matches, subscription: &Rc<Subscription>) {
        if subscription.account == self.account {
            matches.local.push(subscription.clone());
        }
    }

    fn keep_remote(&self, matches: &mut Matches, interest: &RemoteInterest) {
        if interest.account == self.account {
            matches.remote.push(interest.clone());
        }
    }
}

impl Matcher for Tries<'_> {
    fn matches(&self, subject: &[u8]) -> Matches {
        let mut matches = Matches::default();
        self.local.for_each_match(subject, |subscription| self.keep_local(&mut matches, subscription));
        self.remote.for_each_match(subject, |interest| self.keep_remote(&mut matches, interest));
        matches
    }

    fn matches_any_last(&self, prefix: &[u8]) -> Option<Matches> {
        let mut matches = Matches::default();
        let whole =
            self.local.for_each_match_any_last(prefix, |subscription| self.keep_local(&mut matches, subscription))
                && self.remote.for_each_match_any_last(prefix, |interest| self.keep_remote(&mut matches, interest));
        whole.then_some(matches)
    }
}
