//! Per-message TTL (`Nats-TTL`, nats-server 2.11's API level 1): parsing the header value
//! and [`TtlIndex`], the deadlines of the live messages that carry one.
//!
//! The index is derived state: on the live path a publish adds its deadline; recovery
//! rebuilds it from the checkpoint plus the `Nats-TTL` headers of replayed records. An
//! entry whose message was removed some other way (limits, purge, rollup) is skipped when
//! it falls due, so removals never need to touch the index.

use std::collections::BTreeSet;

use crate::limits::{MESSAGE_TTL_SECONDS_MIN, NANOS_PER_SECOND};
use crate::protocol::go_duration::parse_go_duration;

/// A parsed `Nats-TTL` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageTtl {
    /// Expire this many seconds after the message was stored.
    Seconds(u64),
    /// `never`: the message does not expire by TTL.
    Never,
}

impl MessageTtl {
    /// This TTL raised to `floor_seconds` (a stream with subject delete markers expires
    /// nothing sooner than its markers live, as nats-server does); `never` stays.
    pub fn at_least(self, floor_seconds: u64) -> MessageTtl {
        match self {
            MessageTtl::Seconds(seconds) => MessageTtl::Seconds(seconds.max(floor_seconds)),
            MessageTtl::Never => MessageTtl::Never,
        }
    }

    /// The deadline (Unix nanoseconds) for a message stored at `timestamp_ns`.
    pub fn deadline_ns(self, timestamp_ns: i64) -> Option<i64> {
        match self {
            MessageTtl::Never => None,
            MessageTtl::Seconds(seconds) => {
                let nanos = i64::try_from(seconds.saturating_mul(NANOS_PER_SECOND)).unwrap_or(i64::MAX);
                Some(timestamp_ns.saturating_add(nanos))
            }
        }
    }
}

/// Parses a `Nats-TTL` value as nats-server does: `never` (any case), a whole number of
/// seconds, or a Go duration (`90s`, `1h30m`, `1.5s`) truncated to whole seconds. Anything
/// below one second (`0`, `-1`, `500ms`) is invalid: `None`.
pub fn parse_ttl(value: &str) -> Option<MessageTtl> {
    if value.eq_ignore_ascii_case("never") {
        return Some(MessageTtl::Never);
    }
    let seconds = match value.parse::<i64>() {
        Ok(seconds) => seconds,
        Err(_) => parse_go_duration(value)? / NANOS_PER_SECOND as i64,
    };
    (seconds >= MESSAGE_TTL_SECONDS_MIN as i64).then_some(MessageTtl::Seconds(seconds as u64))
}

/// Deadlines of live messages with a TTL, soonest first.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TtlIndex {
    by_deadline: BTreeSet<(i64, u64)>,
}

impl TtlIndex {
    pub fn insert(&mut self, seq: u64, deadline_ns: i64) {
        self.by_deadline.insert((deadline_ns, seq));
    }

    /// Whether some deadline is at or before `now_ns`.
    pub fn has_due(&self, now_ns: i64) -> bool {
        self.by_deadline.first().is_some_and(|(deadline, _)| *deadline <= now_ns)
    }

    /// Up to `max` `(deadline_ns, seq)` entries due at `now_ns`, soonest first, left in
    /// the index (take them out with [`TtlIndex::remove`] once handled).
    pub fn due(&self, now_ns: i64, max: usize) -> Vec<(i64, u64)> {
        self.by_deadline.iter().take_while(|(deadline, _)| *deadline <= now_ns).take(max).copied().collect()
    }

    pub fn remove(&mut self, deadline_ns: i64, seq: u64) {
        self.by_deadline.remove(&(deadline_ns, seq));
    }

    /// Removes and returns up to `max` sequences due at `now_ns`, in sequence order.
    pub fn take_due(&mut self, now_ns: i64, max: usize) -> Vec<u64> {
        let mut due = Vec::new();
        while due.len() < max {
            match self.by_deadline.first() {
                Some(&(deadline, seq)) if deadline <= now_ns => {
                    self.by_deadline.pop_first();
                    due.push(seq);
                }
                _ => break,
            }
        }
        due.sort_unstable();
        due
    }

    /// Keeps only entries whose message is still live. Messages removed by limits,
    /// purges or rollups leave their entries behind (cheap removals); the caller prunes
    /// when the index outgrows the stream, so overwriting a key with a long TTL again and
    /// again cannot grow it without bound.
    pub fn retain_live(&mut self, is_live: impl Fn(u64) -> bool) {
        self.by_deadline.retain(|(_, seq)| is_live(*seq));
    }

    /// `(deadline_ns, seq)` pairs, soonest first (for checkpoints).
    pub fn entries(&self) -> impl Iterator<Item = (i64, u64)> + '_ {
        self.by_deadline.iter().copied()
    }

    pub fn len(&self) -> usize {
        self.by_deadline.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_deadline.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_nats_server_accepts_and_refuses() {
        let accepted = [
            ("5s", MessageTtl::Seconds(5)),
            ("5", MessageTtl::Seconds(5)),
            ("NEVER", MessageTtl::Never),
            ("1h", MessageTtl::Seconds(3600)),
            ("1m30s", MessageTtl::Seconds(90)),
            ("1.5s", MessageTtl::Seconds(1)),
        ];
        for (text, ttl) in accepted {
            assert_eq!(parse_ttl(text), Some(ttl), "{text}");
        }
        for text in ["abc", "0", "-1", "500ms", "0s", "", "5x", "-5s", "1.2.3s"] {
            assert_eq!(parse_ttl(text), None, "{text}");
        }
    }

    #[test]
    fn due_entries_come_out_in_sequence_order_and_only_once() {
        let mut index = TtlIndex::default();
        index.insert(7, 100);
        index.insert(3, 200);
        index.insert(9, 50);
        assert!(!index.has_due(49));
        assert_eq!(index.take_due(200, 10), vec![3, 7, 9]);
        assert!(index.is_empty());
        index.insert(1, 10);
        index.insert(2, 10);
        assert_eq!(index.take_due(10, 1).len(), 1);
        assert_eq!(index.len(), 1);
    }

    #[test]
    fn pruning_keeps_only_live_messages() {
        let mut index = TtlIndex::default();
        for seq in 1..=10 {
            index.insert(seq, 1_000 + seq as i64);
        }
        index.retain_live(|seq| seq % 2 == 0);
        assert_eq!(index.len(), 5);
        assert_eq!(index.take_due(i64::MAX, 100), vec![2, 4, 6, 8, 10]);
    }
}
