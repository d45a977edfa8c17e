//! The Jepsen-style oracle of a kill -9 run (reliability matrix, "Oracle used by every
//! row"): what producers attempted and what the server acknowledged, what the durable
//! consumer confirmed, and the final classification of what a drain read back.
//!
//! Every publish carries a unique `(producer, counter)`. Counters of one producer are
//! attempted in order 1, 2, 3..., so "attempted" is one high-water mark per producer.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::time::Duration;

/// The matrix's bound on the time from a restart to the first acknowledged publish.
pub const RESTART_TO_FIRST_ACK_MAX: Duration = Duration::from_secs(5);

/// A message's identity: which producer sent it and its counter there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId {
    pub producer: u32,
    pub counter: u64,
}

impl MessageId {
    /// The payload carrying this id, padded to `len` bytes with a recognisable filler.
    pub fn payload(&self, len: usize) -> Vec<u8> {
        let mut bytes = format!("k9 {} {} ", self.producer, self.counter).into_bytes();
        let filler = (self.counter % 26) as u8 + b'a';
        bytes.resize(len.max(bytes.len()), filler);
        bytes
    }

    /// The id in `payload`, if it is exactly a payload made by [`MessageId::payload`].
    pub fn parse(payload: &[u8], len: usize) -> Option<MessageId> {
        let text = std::str::from_utf8(payload).ok()?;
        let mut fields = text.splitn(4, ' ');
        (fields.next()? == "k9").then_some(())?;
        let id = MessageId { producer: fields.next()?.parse().ok()?, counter: fields.next()?.parse().ok()? };
        (id.payload(len) == payload).then_some(id)
    }
}

/// Everything observed while the run went on.
#[derive(Default)]
pub struct History {
    /// Highest counter each producer attempted (sent or about to send).
    pub attempted: HashMap<u32, u64>,
    /// Stream sequence → the message the server acknowledged under it.
    pub acked: BTreeMap<u64, MessageId>,
    /// Publishes that got an error reply or no reply (their fate is unknown).
    pub errored: u64,
    /// A sequence acknowledged twice for different messages.
    pub reused_sequences: Vec<(u64, MessageId, MessageId)>,
    /// Stream sequences the durable consumer's double acks confirmed.
    pub consumer_acked: HashSet<u64>,
    /// Deliveries of a sequence whose ack had been confirmed (must stay empty).
    pub redelivered_after_ack: Vec<u64>,
    /// Deliveries the durable consumer received.
    pub consumer_deliveries: u64,
    /// (cycle, the stream's last sequence as recovered at that restart).
    pub last_seqs: Vec<(usize, u64)>,
    /// (cycle, reported last_seq, highest sequence known before) where it went backwards.
    pub last_seq_backwards: Vec<(usize, u64, u64)>,
    /// Per cycle that got an ack: time from the restart to the first acknowledged publish.
    pub restart_to_first_ack: Vec<Duration>,
    /// Kill delays of the cycles that were killed before any publish was acknowledged.
    pub killed_before_first_ack: Vec<Duration>,
    /// The same, measured after the last restart (always measured: nothing kills it).
    pub final_restart_to_first_ack: Option<Duration>,
    pub cycles: usize,
}

impl History {
    pub fn note_attempt(&mut self, id: MessageId) {
        let high = self.attempted.entry(id.producer).or_default();
        *high = (*high).max(id.counter);
    }

    pub fn note_ack(&mut self, seq: u64, id: MessageId) {
        if let Some(previous) = self.acked.insert(seq, id) {
            if previous != id {
                self.reused_sequences.push((seq, previous, id));
            }
        }
    }

    /// The end of a cycle: when its first ack came after the restart, when it was killed.
    pub fn note_cycle(&mut self, first_ack: Option<Duration>, ended_after: Duration) {
        self.cycles += 1;
        match first_ack {
            Some(first_ack) => self.restart_to_first_ack.push(first_ack),
            None => self.killed_before_first_ack.push(ended_after),
        }
    }

    /// A durable-consumer delivery of `seq`; records a violation if its ack was confirmed.
    pub fn note_delivery(&mut self, seq: u64) {
        self.consumer_deliveries += 1;
        if self.consumer_acked.contains(&seq) {
            self.redelivered_after_ack.push(seq);
        }
    }

    /// The last sequence a restarted server reports before anything is published to it
    /// (what it recovered: written before a crash, so no later crash may lose it); it may
    /// not be below `known`, the highest sequence known before that restart
    /// ([`History::highest_known_seq`]).
    pub fn note_last_seq(&mut self, cycle: usize, last_seq: u64, known: u64) {
        if last_seq < known {
            self.last_seq_backwards.push((cycle, last_seq, known));
        }
        self.last_seqs.push((cycle, last_seq));
    }

    pub fn highest_known_seq(&self) -> u64 {
        let acked = self.acked.keys().next_back().copied().unwrap_or(0);
        acked.max(self.last_seqs.iter().map(|(_, seq)| *seq).max().unwrap_or(0))
    }

    fn was_attempted(&self, id: MessageId) -> bool {
        id.counter >= 1 && self.attempted.get(&id.producer).is_some_and(|high| id.counter <= *high)
    }

    /// Classifies what a final drain read (`read`: sequence → id, `None` for a payload
    /// that is no message of this run).
    pub fn check(&self, read: &BTreeMap<u64, Option<MessageId>>, final_last_seq: u64) -> Verdict {
        let mut seen: HashMap<MessageId, u32> = HashMap::new();
        let mut unexpected = Vec::new();
        for (seq, id) in read {
            match id {
                Some(id) if self.was_attempted(*id) => *seen.entry(*id).or_default() += 1,
                _ => unexpected.push(*seq),
            }
        }
        let lost: Vec<(u64, MessageId)> =
            self.acked.iter().filter(|(_, id)| !seen.contains_key(id)).map(|(seq, id)| (*seq, *id)).collect();
        let moved: Vec<u64> = self
            .acked
            .iter()
            .filter(|(seq, id)| seen.contains_key(id) && read.get(seq).copied().flatten() != Some(**id))
            .map(|(seq, _)| *seq)
            .collect();
        let mut backwards = self.last_seq_backwards.clone();
        if final_last_seq < self.highest_known_seq() {
            backwards.push((self.cycles, final_last_seq, self.highest_known_seq()));
        }
        Verdict {
            attempted: self.attempted.values().sum(),
            acked: self.acked.len() as u64,
            errored: self.errored,
            read: read.len() as u64,
            lost,
            unexpected,
            moved,
            duplicates: seen.values().filter(|count| **count > 1).map(|count| u64::from(count - 1)).sum(),
            reused_sequences: self.reused_sequences.clone(),
            last_seq_backwards: backwards,
            consumer_acked: self.consumer_acked.len() as u64,
            consumer_deliveries: self.consumer_deliveries,
            redelivered_after_ack: self.redelivered_after_ack.clone(),
            restart_to_first_ack_max: self.restart_to_first_ack.iter().max().copied().unwrap_or_default(),
            restart_to_first_ack_median: median(&self.restart_to_first_ack),
            killed_before_first_ack: self.killed_before_first_ack.len(),
            killed_before_first_ack_max: self.killed_before_first_ack.iter().max().copied().unwrap_or_default(),
            final_restart_to_first_ack: self.final_restart_to_first_ack.unwrap_or_default(),
            cycles: self.cycles,
            final_last_seq,
            damage_reported: None,
        }
    }
}

fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// The classification at the end of a run.
pub struct Verdict {
    pub attempted: u64,
    pub acked: u64,
    pub errored: u64,
    pub read: u64,
    /// Acknowledged messages not read back: (sequence, id). Must be empty.
    pub lost: Vec<(u64, MessageId)>,
    /// Read sequences holding nothing any producer attempted. Must be empty.
    pub unexpected: Vec<u64>,
    /// Acknowledged sequences that now hold another message (the acked one is elsewhere).
    pub moved: Vec<u64>,
    /// Extra copies of a message (allowed: at-least-once, no Msg-Id used).
    pub duplicates: u64,
    pub reused_sequences: Vec<(u64, MessageId, MessageId)>,
    pub last_seq_backwards: Vec<(usize, u64, u64)>,
    pub consumer_acked: u64,
    pub consumer_deliveries: u64,
    pub redelivered_after_ack: Vec<u64>,
    pub restart_to_first_ack_max: Duration,
    pub restart_to_first_ack_median: Duration,
    /// Cycles killed before their first ack, and the latest such kill.
    pub killed_before_first_ack: usize,
    pub killed_before_first_ack_max: Duration,
    pub final_restart_to_first_ack: Duration,
    pub cycles: usize,
    pub final_last_seq: u64,
    /// The `lost` the server's stream info reported at the end, if any (must be none).
    pub damage_reported: Option<String>,
}

impl Verdict {
    /// Every violation, one line each (empty when the run passed).
    pub fn violations(&self) -> Vec<String> {
        let mut found = Vec::new();
        let mut add = |count: usize, what: &str, sample: String| {
            if count > 0 {
                found.push(format!("{count} {what}, e.g. {sample}"));
            }
        };
        add(self.lost.len(), "acknowledged messages lost", format!("{:?}", first(&self.lost)));
        add(self.unexpected.len(), "unexpected messages", format!("{:?}", first(&self.unexpected)));
        add(self.moved.len(), "acked sequences holding other data", format!("{:?}", first(&self.moved)));
        add(self.reused_sequences.len(), "sequences reused", format!("{:?}", first(&self.reused_sequences)));
        add(self.last_seq_backwards.len(), "last_seq went backwards", format!("{:?}", first(&self.last_seq_backwards)));
        add(
            self.redelivered_after_ack.len(),
            "redeliveries after a confirmed ack",
            format!("{:?}", first(&self.redelivered_after_ack)),
        );
        if let Some(lost) = &self.damage_reported {
            found.push(format!("stream info reports damage after kill -9 only: {lost}"));
        }
        let slowest = self.restart_to_first_ack_max.max(self.final_restart_to_first_ack);
        if slowest > RESTART_TO_FIRST_ACK_MAX || self.killed_before_first_ack_max > RESTART_TO_FIRST_ACK_MAX {
            found.push(format!(
                "restart to first ack over {RESTART_TO_FIRST_ACK_MAX:?}: {slowest:?}, \
                or no ack before it was killed or aborted at {:?}",
                self.killed_before_first_ack_max
            ));
        }
        found
    }
}

fn first<T: Clone>(items: &[T]) -> Vec<T> {
    items.iter().take(5).cloned().collect()
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "cycles {} | attempted {} | acked {} | errored/unknown {} | read {} | final last_seq {}",
            self.cycles, self.attempted, self.acked, self.errored, self.read, self.final_last_seq
        )?;
        writeln!(
            f,
            "lost {} | unexpected {} | moved {} | duplicates {} | reused seqs {} | last_seq backwards {}",
            self.lost.len(),
            self.unexpected.len(),
            self.moved.len(),
            self.duplicates,
            self.reused_sequences.len(),
            self.last_seq_backwards.len()
        )?;
        writeln!(f, "damage reported by the server: {}", self.damage_reported.as_deref().unwrap_or("none"))?;
        writeln!(
            f,
            "consumer: deliveries {} | acks confirmed {} | redelivered after confirmed ack {}",
            self.consumer_deliveries,
            self.consumer_acked,
            self.redelivered_after_ack.len()
        )?;
        write!(
            f,
            "restart to first ack: median {:?} | max {:?} | after the last restart {:?} | \
            cycles killed before a first ack {} (latest such kill at {:?})",
            self.restart_to_first_ack_median,
            self.restart_to_first_ack_max,
            self.final_restart_to_first_ack,
            self.killed_before_first_ack,
            self.killed_before_first_ack_max
        )
    }
}
