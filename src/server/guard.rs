//! One connection's permissions at work: the user's rules, a small cache of publish and
//! delivery verdicts (a publisher usually repeats a few subjects), and the reply subjects
//! it may answer under `allow_responses`. A connection without permissions has no guard
//! and pays one `None` check per publish and per delivery.
//!
//! Shard-local: the reader task and the delivery path (same thread) share it through `Rc`;
//! no borrow crosses an `.await`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Instant;

use super::permissions::Permissions;
use crate::limits;

/// A reply subject this connection may publish to, so many times, until a deadline.
struct Grant {
    remaining: u32,
    expires: Instant,
}

pub struct Guard {
    permissions: Permissions,
    publish_verdicts: RefCell<HashMap<Box<[u8]>, bool>>,
    receive_verdicts: RefCell<HashMap<Box<[u8]>, bool>>,
    grants: RefCell<HashMap<Box<[u8]>, Grant>>,
}

impl Guard {
    pub fn new(permissions: Permissions) -> Guard {
        Guard {
            permissions,
            publish_verdicts: RefCell::default(),
            receive_verdicts: RefCell::default(),
            grants: RefCell::default(),
        }
    }

    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// Whether this connection may publish to `subject` now. A publish allowed only as a
    /// response uses up one of that reply's grants.
    pub fn may_publish(&self, subject: &[u8]) -> bool {
        let allowed = cached(&self.publish_verdicts, subject, |s| self.permissions.may_publish(s));
        allowed || self.use_grant(subject)
    }

    pub fn may_subscribe(&self, subject: &[u8], queue: Option<&[u8]>) -> bool {
        self.permissions.may_subscribe(subject, queue)
    }

    /// Called for each message about to be delivered to this connection's subscription on
    /// `pattern`: whether it may be delivered (a wildcard subscription may cover denied
    /// subjects), and if so, records its reply subject as answerable.
    pub fn admits_delivery(&self, pattern: &[u8], subject: &[u8], reply: Option<&[u8]>) -> bool {
        if self.permissions.filters_deliveries_to(pattern)
            && !cached(&self.receive_verdicts, subject, |s| self.permissions.may_receive(s))
        {
            return false;
        }
        if let (Some(responses), Some(reply)) = (self.permissions.responses, reply) {
            self.grant(reply, responses.messages_max, Instant::now() + responses.expires);
        }
        true
    }

    fn grant(&self, reply: &[u8], remaining: u32, expires: Instant) {
        let mut grants = self.grants.borrow_mut();
        if grants.len() >= limits::RESPONSE_GRANTS_MAX && !grants.contains_key(reply) {
            let now = Instant::now();
            grants.retain(|_, grant| grant.expires > now);
            if grants.len() >= limits::RESPONSE_GRANTS_MAX {
                // Still full of live grants: the one closest to expiry makes room, so
                // the table stays bounded however many requests arrive.
                let oldest = grants.iter().min_by_key(|(_, grant)| grant.expires).map(|(key, _)| key.clone());
                if let Some(oldest) = oldest {
                    grants.remove(&oldest);
                }
            }
        }
        grants.insert(reply.into(), Grant { remaining, expires });
    }

    fn use_grant(&self, subject: &[u8]) -> bool {
        if self.permissions.responses.is_none() {
            return false;
        }
        let mut grants = self.grants.borrow_mut();
        let Some(grant) = grants.get_mut(subject) else { return false };
        let live = grant.expires > Instant::now() && grant.remaining > 0;
        if live {
            grant.remaining -= 1;
        }
        if !live || grant.remaining == 0 {
            grants.remove(subject);
        }
        live
    }
}

/// A verdict from `cache`, computing and remembering it on a miss. The cache is emptied
/// when full (nats-server prunes its permission caches similarly): bounded, and a
/// publisher's working set refills it at once.
fn cached(cache: &RefCell<HashMap<Box<[u8]>, bool>>, subject: &[u8], decide: impl Fn(&[u8]) -> bool) -> bool {
    if let Some(verdict) = cache.borrow().get(subject) {
        return *verdict;
    }
    let verdict = decide(subject);
    let mut cache = cache.borrow_mut();
    if cache.len() >= limits::PERMISSION_CACHE_ENTRIES_MAX {
        cache.clear();
    }
    cache.insert(subject.into(), verdict);
    verdict
}

#[cfg(test)]
mod tests {
    use super::super::permissions::{ResponsePermission, Rule, SubjectRules};
    use super::*;

    #[test]
    fn responses_are_granted_by_deliveries_and_used_up() {
        let responses = ResponsePermission { messages_max: 2, expires: std::time::Duration::from_secs(60) };
        let permissions = Permissions { responses: Some(responses), ..Default::default() }.settled();
        let guard = Guard::new(permissions);
        assert!(!guard.may_publish(b"inbox.1"));
        assert!(guard.admits_delivery(b"svc", b"svc", Some(b"inbox.1")));
        assert!(guard.may_publish(b"inbox.1"));
        assert!(guard.may_publish(b"inbox.1"));
        assert!(!guard.may_publish(b"inbox.1"));
        assert!(!guard.may_publish(b"inbox.2"));
    }

    #[test]
    fn grants_stay_bounded() {
        let permissions =
            Permissions { responses: Some(ResponsePermission::default()), ..Default::default() }.settled();
        let guard = Guard::new(permissions);
        for index in 0..limits::RESPONSE_GRANTS_MAX * 2 {
            guard.admits_delivery(b"svc", b"svc", Some(format!("inbox.{index}").as_bytes()));
        }
        assert!(guard.grants.borrow().len() <= limits::RESPONSE_GRANTS_MAX);
        let last = format!("inbox.{}", limits::RESPONSE_GRANTS_MAX * 2 - 1);
        assert!(guard.may_publish(last.as_bytes()));
    }

    #[test]
    fn wildcard_deliveries_on_denied_subjects_are_dropped() {
        let deny = vec![Rule::parse("secret.>").unwrap()];
        let permissions = Permissions { subscribe: SubjectRules { allow: None, deny }, ..Default::default() };
        let guard = Guard::new(permissions);
        assert!(!guard.admits_delivery(b">", b"secret.x", None));
        assert!(guard.admits_delivery(b">", b"open.x", None));
        for index in 0..limits::PERMISSION_CACHE_ENTRIES_MAX * 3 {
            guard.may_publish(format!("s.{index}").as_bytes());
        }
        assert!(guard.publish_verdicts.borrow().len() <= limits::PERMISSION_CACHE_ENTRIES_MAX);
    }
}
