//! [`MessageFlags`]: the few live messages whose headers change how they may be removed,
//! kept beside the message table so expiry never reads the log to decide:
//!
//! - `Nats-TTL: never`: exempt from `max_age` (nats-server skips them in its age check);
//! - delete markers (`Nats-Marker-Reason`, or a KV purge): removing the last message of a
//!   subject leaves a marker only when that message was not itself one, so markers
//!   expiring do not breed markers.
//!
//! Derived state like the TTL index: a publish notes its message, recovery notes replayed
//! records, and checkpoints carry the sets. Entries of messages removed some other way
//! are pruned when the sets outgrow the stream.

use std::collections::BTreeSet;

use super::headers::PublishExpectations;
use super::ttl::{parse_ttl, MessageTtl};

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MessageFlags {
    never_expires: BTreeSet<u64>,
    markers: BTreeSet<u64>,
}

impl MessageFlags {
    /// Notes message `seq` from its parsed headers.
    pub fn note(&mut self, seq: u64, headers: &PublishExpectations<'_>) {
        if headers.ttl.and_then(parse_ttl) == Some(MessageTtl::Never) {
            self.never_expires.insert(seq);
        }
        if headers.marker {
            self.markers.insert(seq);
        }
    }

    pub fn insert_marker(&mut self, seq: u64) {
        self.markers.insert(seq);
    }

    pub fn insert_never_expires(&mut self, seq: u64) {
        self.never_expires.insert(seq);
    }

    pub fn is_marker(&self, seq: u64) -> bool {
        self.markers.contains(&seq)
    }

    pub fn never_expires(&self, seq: u64) -> bool {
        self.never_expires.contains(&seq)
    }

    /// Whether any message is exempt from `max_age` (then age expiry goes message by
    /// message instead of cutting the front).
    pub fn has_never_expiring(&self) -> bool {
        !self.never_expires.is_empty()
    }

    pub fn markers(&self) -> impl Iterator<Item = u64> + '_ {
        self.markers.iter().copied()
    }

    pub fn never_expiring(&self) -> impl Iterator<Item = u64> + '_ {
        self.never_expires.iter().copied()
    }

    pub fn len(&self) -> usize {
        self.never_expires.len() + self.markers.len()
    }

    /// Keeps only entries of live messages.
    pub fn retain_live(&mut self, is_live: impl Fn(u64) -> bool) {
        self.never_expires.retain(|seq| is_live(*seq));
        self.markers.retain(|seq| is_live(*seq));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_never_and_markers_from_headers() {
        let mut flags = MessageFlags::default();
        let never = b"NATS/1.0\r\nNats-TTL: never\r\n\r\n";
        let marker = b"NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: 1s\r\n\r\n";
        let purge = b"NATS/1.0\r\nKV-Operation: PURGE\r\n\r\n";
        let plain = b"NATS/1.0\r\nKV-Operation: DEL\r\n\r\n";
        for (seq, block) in [(1, &never[..]), (2, &marker[..]), (3, &purge[..]), (4, &plain[..])] {
            flags.note(seq, &PublishExpectations::from_headers(block));
        }
        assert!(flags.never_expires(1) && !flags.is_marker(1));
        assert!(flags.is_marker(2) && flags.is_marker(3) && !flags.is_marker(4));
        flags.retain_live(|seq| seq != 2);
        assert_eq!(flags.markers().collect::<Vec<_>>(), vec![3]);
    }
}
