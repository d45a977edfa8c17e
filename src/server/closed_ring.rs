//! The closed connections a shard remembers for `/connz?state=closed`.
//!
//! nats-server keeps `max_closed_clients` (10 000) for the whole server; each shard keeps
//! its share, so the server as a whole keeps no more than nats-server does. The ring
//! grows by doubling while small and then exactly to its share: a `VecDeque` left to
//! double past the share would hold up to twice the memory it uses (16 384 slots of
//! ~350 bytes for 10 000 entries), which a connect/close loop fills and never gives back.
//! Entries are kept compact (`ClosedEntry`, ~150 bytes): what a connection that never
//! logged in leaves is figures only; names, TLS facts and subscriptions go in a box that
//! only connections that have any of them allocate.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use super::account::GLOBAL_ACCOUNT_NAME;
use super::monitor::snapshot::{ClosedSnapshot, ConnectionSnapshot, SubscriptionSnapshot};
use super::outbound::CloseReason;
use super::shard_ops::TlsFacts;

pub struct ClosedRing {
    entries: VecDeque<ClosedEntry>,
    kept_max: usize,
}

/// A `ClosedSnapshot` as kept: the figures inline, the rest boxed when there is any.
struct ClosedEntry {
    id: u64,
    ip: Option<IpAddr>,
    port: u16,
    started: SystemTime,
    last_activity: SystemTime,
    stopped: SystemTime,
    in_msgs: u64,
    in_bytes: u64,
    out_msgs: u64,
    out_bytes: u64,
    rtt: Duration,
    subscription_count: usize,
    reason: CloseReason,
    details: Option<ClosedDetails>,
    tls: Option<Box<TlsFacts>>,
}

/// What a connection that sent CONNECT (or TLS, or SUBs) adds: its pending bytes, texts
/// and subscriptions packed into one allocation ([`Packed`]). Kept as the snapshot's own
/// `String`s and `Vec`, a closed entry with one subscription held about ten small
/// allocations, and 10 000 of them, scattered over the pages the closed connections had
/// used, kept ~10 MiB from returning to the OS after a CONNECT + SUB loop (perf/limits.md).
/// Packed: the ip text (when not an address), name, lang, version, user, account, the
/// pending bytes, then the subscriptions.
type ClosedDetails = Packed;

/// Texts and numbers in one boxed byte string: each text as its length (u32, little
/// endian) and bytes, numbers as u64.
struct Packed(Box<[u8]>);

/// Length written for a `None` text.
const ABSENT: u32 = u32::MAX;

#[derive(Default)]
struct Packer(Vec<u8>);

impl Packer {
    fn text(&mut self, text: Option<&str>) {
        match text {
            Some(text) => {
                let len = u32::try_from(text.len()).expect("a connection's text fits in 4 GiB");
                self.0.extend_from_slice(&len.to_le_bytes());
                self.0.extend_from_slice(text.as_bytes());
            }
            None => self.0.extend_from_slice(&ABSENT.to_le_bytes()),
        }
    }

    fn number(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    fn done(self) -> Packed {
        Packed(self.0.into_boxed_slice())
    }
}

/// Reads a [`Packed`] back in the order it was written.
struct Unpacker<'a>(&'a [u8]);

impl<'a> Unpacker<'a> {
    fn take(&mut self, len: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(len);
        self.0 = rest;
        head
    }

    fn number(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().expect("8 bytes"))
    }

    fn text(&mut self) -> Option<String> {
        let len = u32::from_le_bytes(self.take(4).try_into().expect("4 bytes"));
        (len != ABSENT).then(|| String::from_utf8_lossy(self.take(len as usize)).into_owned())
    }

    fn string(&mut self) -> String {
        self.text().unwrap_or_default()
    }
}

impl Packed {
    fn pack(connection: &ConnectionSnapshot, ip_text: &str) -> Packed {
        let mut packer = Packer::default();
        for text in [ip_text, &connection.name, &connection.lang, &connection.version, &connection.user] {
            packer.text(Some(text));
        }
        packer.text(Some(&connection.account));
        packer.number(connection.pending_bytes as u64);
        packer.number(connection.subscriptions.len() as u64);
        for subscription in &connection.subscriptions {
            packer.text(Some(&subscription.subject));
            packer.text(subscription.queue.as_deref());
            packer.text(Some(&subscription.sid));
            packer.number(subscription.msgs);
            packer.number(subscription.max.map_or(u64::MAX, |max| max.min(u64::MAX - 1)));
        }
        packer.done()
    }
}

/// The unpacked texts of a [`ClosedDetails`].
struct DetailTexts {
    ip_text: String,
    name: String,
    lang: String,
    version: String,
    user: String,
    account: String,
    pending_bytes: usize,
    subscriptions: Vec<SubscriptionSnapshot>,
}

impl DetailTexts {
    fn unpack(packed: &Packed, connection: u64) -> DetailTexts {
        let mut reader = Unpacker(&packed.0);
        let [ip_text, name, lang, version, user, account] = std::array::from_fn(|_| reader.string());
        let pending_bytes = reader.number() as usize;
        let count = reader.number();
        let subscriptions = (0..count)
            .map(|_| SubscriptionSnapshot {
                connection,
                subject: reader.string(),
                queue: reader.text(),
                sid: reader.string(),
                msgs: reader.number(),
                max: Some(reader.number()).filter(|max| *max != u64::MAX),
            })
            .collect();
        DetailTexts { ip_text, name, lang, version, user, account, pending_bytes, subscriptions }
    }
}

impl ClosedRing {
    /// A shard's share of `kept_total` among `shard_count` shards (at least one entry).
    pub fn for_shard(kept_total: usize, shard_count: u16) -> ClosedRing {
        let kept_max = kept_total.div_ceil(usize::from(shard_count.max(1))).max(1);
        ClosedRing { entries: VecDeque::new(), kept_max }
    }

    /// Remembers `closed`, forgetting the oldest entry once the share is full.
    pub fn push(&mut self, closed: ClosedSnapshot) {
        let closed = ClosedEntry::from(closed);
        if self.entries.len() == self.kept_max {
            self.entries.pop_front();
        } else if self.entries.len() == self.entries.capacity() {
            let doubled = self.entries.len().max(8);
            let room = doubled.min(self.kept_max - self.entries.len());
            self.entries.reserve_exact(room);
        }
        self.entries.push_back(closed);
        assert!(self.entries.len() <= self.kept_max);
    }

    /// Oldest first.
    pub fn snapshots(&self) -> impl Iterator<Item = ClosedSnapshot> + '_ {
        self.entries.iter().map(ClosedEntry::snapshot)
    }

    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    pub fn kept_max(&self) -> usize {
        self.kept_max
    }
}

impl ClosedEntry {
    fn from(closed: ClosedSnapshot) -> ClosedEntry {
        let ClosedSnapshot { connection, stopped, reason } = closed;
        let ip = connection.ip.parse::<IpAddr>().ok();
        let plain = ip.is_some()
            && connection.pending_bytes == 0
            && connection.subscriptions.is_empty()
            && connection.name.is_empty()
            && connection.lang.is_empty()
            && connection.version.is_empty()
            && connection.user.is_empty()
            && connection.account == GLOBAL_ACCOUNT_NAME
            && connection.tls.is_none();
        let details = (!plain).then(|| {
            let ip_text = if ip.is_some() { "" } else { connection.ip.as_str() };
            Packed::pack(&connection, ip_text)
        });
        let tls = connection.tls.clone().map(Box::new);
        ClosedEntry {
            id: connection.id,
            ip,
            port: connection.port,
            started: connection.started,
            last_activity: connection.last_activity,
            stopped,
            in_msgs: connection.in_msgs,
            in_bytes: connection.in_bytes,
            out_msgs: connection.out_msgs,
            out_bytes: connection.out_bytes,
            rtt: connection.rtt,
            subscription_count: connection.subscription_count,
            reason,
            details,
            tls,
        }
    }

    fn snapshot(&self) -> ClosedSnapshot {
        let texts = self.details.as_ref().map(|details| DetailTexts::unpack(details, self.id));
        let ip = match (self.ip, &texts) {
            (Some(ip), _) => ip.to_string(),
            (None, Some(texts)) => texts.ip_text.clone(),
            (None, None) => String::new(),
        };
        let DetailTexts { name, lang, version, user, account, pending_bytes, subscriptions, .. } = texts
            .unwrap_or_else(|| DetailTexts {
                ip_text: String::new(),
                name: String::new(),
                lang: String::new(),
                version: String::new(),
                user: String::new(),
                account: GLOBAL_ACCOUNT_NAME.to_string(),
                pending_bytes: 0,
                subscriptions: Vec::new(),
            });
        let connection = ConnectionSnapshot {
            id: self.id,
            ip,
            port: self.port,
            started: self.started,
            last_activity: self.last_activity,
            pending_bytes,
            in_msgs: self.in_msgs,
            in_bytes: self.in_bytes,
            out_msgs: self.out_msgs,
            out_bytes: self.out_bytes,
            subscription_count: self.subscription_count,
            subscriptions,
            name,
            lang,
            version,
            user,
            account,
            rtt: self.rtt,
            tls: self.tls.as_deref().cloned(),
        };
        ClosedSnapshot { connection, stopped: self.stopped, reason: self.reason.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed(id: u64) -> ClosedSnapshot {
        let at = std::time::SystemTime::UNIX_EPOCH;
        let connection = ConnectionSnapshot {
            id,
            ip: "127.0.0.1".to_string(),
            port: 0,
            started: at,
            last_activity: at,
            pending_bytes: 0,
            in_msgs: 0,
            in_bytes: 0,
            out_msgs: 0,
            out_bytes: 0,
            subscription_count: 0,
            subscriptions: Vec::new(),
            name: String::new(),
            lang: String::new(),
            version: String::new(),
            user: String::new(),
            account: GLOBAL_ACCOUNT_NAME.to_string(),
            rtt: std::time::Duration::ZERO,
            tls: None,
        };
        ClosedSnapshot { connection, stopped: std::time::SystemTime::UNIX_EPOCH, reason: CloseReason::ClientClosed }
    }

    #[test]
    fn shares_split_the_total_and_capacity_stops_at_the_share() {
        for (total, shards, share) in [(10_000, 1, 10_000), (10_000, 2, 5_000), (10_000, 3, 3_334), (1, 4, 1)] {
            let mut ring = ClosedRing::for_shard(total, shards);
            assert_eq!(ring.kept_max(), share);
            for id in 0..(share as u64 * 2 + 7) {
                ring.push(closed(id));
                assert!(ring.capacity() <= share.max(8), "capacity {} over share {share}", ring.capacity());
            }
            let ids: Vec<u64> = ring.snapshots().map(|entry| entry.connection.id).collect();
            assert_eq!(ids.len(), share);
            assert_eq!(ids.first().copied(), Some(share as u64 + 7), "oldest forgotten first");
        }
    }

    #[test]
    fn entries_read_back_as_they_were_closed() {
        let mut plain = closed(1);
        plain.connection.in_msgs = 3;
        let mut named = closed(2);
        named.connection.ip = "not an address".to_string();
        named.connection.name = "sensor".to_string();
        named.connection.account = "A".to_string();
        named.connection.tls =
            Some(TlsFacts { version: "1.3", cipher_suite: "TLS_AES_128_GCM_SHA256".into(), first: false });
        named.connection.pending_bytes = 4096;
        named.connection.subscription_count = 2;
        named.connection.subscriptions = vec![
            SubscriptionSnapshot {
                connection: 2,
                subject: "orders.>".into(),
                queue: None,
                sid: "1".into(),
                msgs: 7,
                max: None,
            },
            SubscriptionSnapshot {
                connection: 2,
                subject: "work".into(),
                queue: Some("workers\tand ünïcode".into()),
                sid: "22".into(),
                msgs: 0,
                max: Some(5),
            },
        ];
        let mut with_subscription_only = closed(3);
        with_subscription_only.connection.subscription_count = 1;
        with_subscription_only.connection.subscriptions = vec![SubscriptionSnapshot {
            connection: 3,
            subject: "x".into(),
            queue: Some(String::new()),
            sid: "9".into(),
            msgs: u64::MAX,
            max: Some(0),
        }];
        let mut ring = ClosedRing::for_shard(10, 1);
        ring.push(plain.clone());
        ring.push(named.clone());
        ring.push(with_subscription_only.clone());
        let read: Vec<String> = ring.snapshots().map(|entry| format!("{entry:?}")).collect();
        let expected = [&plain, &named, &with_subscription_only].map(|entry| format!("{entry:?}"));
        assert_eq!(read, expected);
    }

    #[test]
    fn an_entry_that_never_logged_in_stays_small() {
        assert!(std::mem::size_of::<ClosedEntry>() <= 168, "{}", std::mem::size_of::<ClosedEntry>());
    }
}
