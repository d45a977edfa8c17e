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
use crate::codec::{Reader, Writer};

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
    details: Option<Packed>,
    tls: Option<Box<TlsFacts>>,
}

/// What a connection that sent CONNECT (or TLS, or SUBs) adds: its pending bytes, texts
/// and subscriptions in one allocation. Kept as the snapshot's own `String`s and `Vec`, a
/// closed entry with one subscription held about ten small allocations, and 10 000 of
/// them, scattered over the pages the closed connections had used, kept ~10 MiB from
/// returning to the OS after a CONNECT + SUB loop (perf/limits.md).
///
/// Written and read with `codec`: the ip text (when not an address), name, lang, version,
/// user, account, the pending bytes, then the subscriptions; texts as length-prefixed
/// blobs (an optional one after a presence byte), numbers as u64.
struct Packed(Box<[u8]>);

impl Packed {
    fn pack(connection: &ConnectionSnapshot, ip_text: &str) -> Packed {
        let mut writer = Writer::default();
        for text in [ip_text, &connection.name, &connection.lang, &connection.version, &connection.user] {
            writer.blob(text.as_bytes());
        }
        writer.blob(connection.account.as_bytes());
        writer.u64(connection.pending_bytes as u64);
        writer.u64(connection.subscriptions.len() as u64);
        for subscription in &connection.subscriptions {
            writer.blob(subscription.subject.as_bytes());
            writer.u8(u8::from(subscription.queue.is_some()));
            writer.blob(subscription.queue.as_deref().unwrap_or_default().as_bytes());
            writer.blob(subscription.sid.as_bytes());
            writer.u64(subscription.msgs);
            writer.u8(u8::from(subscription.max.is_some()));
            writer.u64(subscription.max.unwrap_or_default());
        }
        Packed(writer.bytes.into_boxed_slice())
    }
}

fn text(reader: &mut Reader) -> Option<String> {
    reader.blob().map(|bytes| String::from_utf8_lossy(bytes).into_owned())
}

/// A value written after a presence byte (written whether present or not).
fn optional<T>(reader: &mut Reader, read: fn(&mut Reader) -> Option<T>) -> Option<Option<T>> {
    let present = reader.u8()? == 1;
    let value = read(reader)?;
    Some(present.then_some(value))
}

/// The unpacked content of a [`Packed`].
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
        Self::read(&mut Reader::new(&packed.0), connection).expect("read back as `Packed::pack` wrote it")
    }

    fn read(reader: &mut Reader, connection: u64) -> Option<DetailTexts> {
        let [ip_text, name, lang, version, user, account] = [(); 6].map(|()| text(reader));
        let pending_bytes = reader.u64()? as usize;
        let count = reader.u64()?;
        let mut subscriptions = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let subject = text(reader)?;
            let queue = optional(reader, text)?;
            let sid = text(reader)?;
            let msgs = reader.u64()?;
            let max = optional(reader, |reader| reader.u64())?;
            subscriptions.push(SubscriptionSnapshot { connection, subject, queue, sid, msgs, max });
        }
        Some(DetailTexts {
            ip_text: ip_text?,
            name: name?,
            lang: lang?,
            version: version?,
            user: user?,
            account: account?,
            pending_bytes,
            subscriptions,
        })
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
        let connection = ConnectionSnapshot::blank(id);
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
