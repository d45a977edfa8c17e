//! What crosses a leaf link, and the interest the spoke advertises to its hub.
//!
//! The spoke advertises the union of every shard's subscriptions (`LS+` when a
//! (subject, queue) goes from none to some, `LS-` back to none; a queue group's `LS+` is
//! re-sent with its new weight when its size changes), never the hub's own interest
//! echoed back. With JetStream on, `$JS.API.>`, `$KV.>` and `$OBJ.>` never cross in
//! either direction (a request must get exactly one answer: ours or the hub's); with a
//! domain, `$JS.<domain>.API.…` is advertised and mapped to the local `$JS.API.…`
//! (nats-server `addLeafNodeConnection`, `generateJSMappingTable`).

use std::collections::HashMap;

use bytes::Bytes;

/// The `$JS.<domain>.API.` subjects a domain answers (nats-server's mapping table).
const DOMAIN_API_SUFFIXES: &[&str] = &["INFO", "STREAM.>", "CONSUMER.>", "DIRECT.>", "META.>", "SERVER.>", "ACCOUNT.>"];

/// Which subjects may cross a link and how the domain's subjects map to local ones.
pub struct Crossing {
    /// Local JetStream answers `$JS.API`: its subjects stay on this side.
    jetstream_local: bool,
    /// `$JS.<domain>.API.`, when a domain is set.
    domain_prefix: Option<Vec<u8>>,
    /// This server's loop-detection subject, `$LDS.<random>`.
    pub loop_subject: Bytes,
}

impl Crossing {
    pub fn new(jetstream: bool, domain: Option<&str>, loop_token: &str) -> Crossing {
        Crossing {
            jetstream_local: jetstream,
            domain_prefix: domain.filter(|_| jetstream).map(|d| format!("$JS.{d}.API.").into_bytes()),
            loop_subject: Bytes::from(format!("$LDS.{loop_token}")),
        }
    }

    /// Whether `subject` (a subscription pattern or a message subject) may cross the
    /// link at all, in either direction.
    pub fn crosses(&self, subject: &[u8]) -> bool {
        if !self.jetstream_local {
            return true;
        }
        crosses_with_local_jetstream(subject) && !self.domain_prefix.as_ref().is_some_and(|p| subject.starts_with(p))
    }

    pub fn jetstream_local(&self) -> bool {
        self.jetstream_local
    }

    /// The local subject a hub's message to this server's domain is for: `$JS.<d>.API.X`
    /// → `$JS.API.X`, `$JS.<d>.API.$KV.X` → `$KV.X` (and `$OBJ`). None: not mapped.
    pub fn map_inbound(&self, subject: &[u8]) -> Option<Vec<u8>> {
        let prefix = self.domain_prefix.as_ref()?;
        let rest = subject.strip_prefix(prefix.as_slice())?;
        if rest.starts_with(b"$KV.") || rest.starts_with(b"$OBJ.") {
            return Some(rest.to_vec());
        }
        let mut local = b"$JS.API.".to_vec();
        local.extend_from_slice(rest);
        Some(local)
    }

    /// Subjects advertised on every link besides the subscriptions: the loop subject, the
    /// domain's API, and, with JetStream here, its consumers' acks and flow-control
    /// replies (a hub client consuming through the domain, a hub mirror answering flow
    /// control). nats-server advertises each consumer's own subjects; the wildcards also
    /// bring the hub's acks for its own consumers, which no stream here claims.
    pub fn fixed_subjects(&self) -> Vec<Vec<u8>> {
        let mut subjects = vec![self.loop_subject.to_vec()];
        if self.jetstream_local {
            subjects.push(b"$JS.ACK.>".to_vec());
            subjects.push(b"$JS.FC.>".to_vec());
        }
        if let Some(prefix) = &self.domain_prefix {
            let prefix = String::from_utf8_lossy(prefix).into_owned();
            subjects.extend(DOMAIN_API_SUFFIXES.iter().map(|suffix| format!("{prefix}{suffix}").into_bytes()));
            subjects.push(format!("{prefix}$KV.>").into_bytes());
            subjects.push(format!("{prefix}$OBJ.>").into_bytes());
        }
        subjects
    }
}

/// Whether `subject` may cross when this server answers `$JS.API` itself.
pub fn crosses_with_local_jetstream(subject: &[u8]) -> bool {
    let denied = [&b"$JS.API."[..], b"$KV.", b"$OBJ."];
    !denied.iter().any(|prefix| subject.starts_with(prefix) || subject == &prefix[..prefix.len() - 1])
}

/// A change the links must be told about.
#[derive(Debug, PartialEq, Eq)]
pub enum Advertisement {
    /// `LS+ subject [queue weight]`
    Add { subject: Bytes, queue: Option<(Bytes, u32)> },
    /// `LS- subject [queue]`
    Remove { subject: Bytes, queue: Option<Bytes> },
}

/// Local interest counted per (subject, queue): subscriptions on this shard and other
/// shards' announcements, the hub's own (leaf) subscriptions excluded by the caller.
#[derive(Default)]
pub struct AdvertisedInterest {
    counts: HashMap<(Bytes, Option<Bytes>), u32>,
}

impl AdvertisedInterest {
    /// Counts one subscription more (`added`) or less; returns what the hub must hear.
    pub fn change(&mut self, subject: &Bytes, queue: &Option<Bytes>, added: bool) -> Option<Advertisement> {
        let key = (subject.clone(), queue.clone());
        let count = self.counts.entry(key.clone()).or_insert(0);
        let before = *count;
        *count = if added { before + 1 } else { before.saturating_sub(1) };
        let after = *count;
        if after == 0 {
            self.counts.remove(&key);
        }
        match (before, after, queue) {
            (0, 0, _) => None,
            (_, 0, _) => Some(Advertisement::Remove { subject: subject.clone(), queue: queue.clone() }),
            (0, _, None) => Some(Advertisement::Add { subject: subject.clone(), queue: None }),
            (_, _, None) => None,
            (_, _, Some(queue)) => {
                Some(Advertisement::Add { subject: subject.clone(), queue: Some((queue.clone(), after)) })
            }
        }
    }

    /// Everything to advertise on a new link.
    pub fn all(&self) -> Vec<Advertisement> {
        self.counts
            .iter()
            .map(|((subject, queue), count)| Advertisement::Add {
                subject: subject.clone(),
                queue: queue.clone().map(|queue| (queue, *count)),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_interest_is_advertised_on_first_and_last_queue_on_every_change() {
        let mut interest = AdvertisedInterest::default();
        let (foo, group) = (Bytes::from_static(b"foo"), Some(Bytes::from_static(b"q")));
        assert!(matches!(interest.change(&foo, &None, true), Some(Advertisement::Add { queue: None, .. })));
        assert_eq!(interest.change(&foo, &None, true), None);
        assert_eq!(interest.change(&foo, &None, false), None);
        assert!(matches!(interest.change(&foo, &None, false), Some(Advertisement::Remove { .. })));
        interest.change(&foo, &group, true);
        let second = interest.change(&foo, &group, true);
        assert!(matches!(second, Some(Advertisement::Add { queue: Some((_, 2)), .. })), "{second:?}");
        assert_eq!(interest.all().len(), 1);
    }

    #[test]
    fn jetstream_subjects_stay_and_the_domain_maps() {
        let crossing = Crossing::new(true, Some("edge"), "abc");
        assert!(!crossing.crosses(b"$JS.API.INFO"));
        assert!(!crossing.crosses(b"$KV.bucket.key"));
        assert!(crossing.crosses(b"orders.1"));
        assert!(crossing.crosses(b"$JS.hub.API.INFO"));
        assert_eq!(crossing.map_inbound(b"$JS.edge.API.STREAM.INFO.S").unwrap(), b"$JS.API.STREAM.INFO.S");
        assert_eq!(crossing.map_inbound(b"$JS.edge.API.$KV.b.k").unwrap(), b"$KV.b.k");
        assert_eq!(crossing.map_inbound(b"$JS.hub.API.INFO"), None);
        assert!(crossing.fixed_subjects().contains(&b"$JS.edge.API.STREAM.>".to_vec()));
        assert!(crossing.fixed_subjects().contains(&b"$JS.FC.>".to_vec()));
        assert!(!Crossing::new(false, None, "abc").fixed_subjects().contains(&b"$JS.ACK.>".to_vec()));
    }
}
