//! Shared fixture for the consumer tests: an in-memory stream (a Vec of stored
//! messages) implementing `StreamView`, a seeded PRNG, and a harness that owns the
//! shard-side pieces (timer wheel, effects, interest) and drives one consumer.
//! Included by the `consumer_*` tests with `#[path = "consumer_fixture.rs"] mod fixture;`.
#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;

use jetcore::consumer::{
    Consumer, ConsumerId, Context, Delivery, Effect, Filters, InterestView, MessageMeta, ShardTimers, StatusReply,
    StreamSeq, StreamView, Tick,
};
use jetcore::jetstream::consumer_config::ConsumerConfig;
use jetcore::jetstream::policies::RetentionPolicy;
use jetcore::jetstream::stream_config::StreamConfig;
use jetcore::limits::CONSUMER_TICK_NANOS;

/// SplitMix64: small, seeded, good enough for test schedules.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (bound > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Seeds for randomized tests: `CONSUMER_TEST_SEED` pins one, else a fixed spread.
pub fn seeds(count: u64) -> Vec<u64> {
    match std::env::var("CONSUMER_TEST_SEED").ok().and_then(|seed| seed.parse().ok()) {
        Some(seed) => vec![seed],
        None => (0..count).map(|index| 0x5EED_0000 + index * 7919).collect(),
    }
}

/// One stored message.
#[derive(Clone, Debug)]
pub struct Stored {
    pub seq: u64,
    pub subject: String,
    pub header_bytes: u32,
    pub payload_bytes: u32,
    pub timestamp_nanos: i64,
    pub deleted: bool,
}

/// The stream fixture: sequences start at 1, `first_seq` moves on front removals.
#[derive(Default)]
pub struct TestStream {
    pub messages: Vec<Stored>,
}

impl TestStream {
    pub fn append(&mut self, subject: &str, payload_bytes: u32, timestamp_nanos: i64) -> MessageMeta {
        let seq = self.messages.len() as u64 + 1;
        self.messages.push(Stored {
            seq,
            subject: subject.to_string(),
            header_bytes: 0,
            payload_bytes,
            timestamp_nanos,
            deleted: false,
        });
        meta(self.messages.last().unwrap())
    }

    pub fn delete(&mut self, seq: u64) {
        self.messages[seq as usize - 1].deleted = true;
    }

    fn live(&self) -> impl DoubleEndedIterator<Item = &Stored> {
        self.messages.iter().filter(|stored| !stored.deleted)
    }
}

fn meta(stored: &Stored) -> MessageMeta {
    MessageMeta {
        seq: StreamSeq(stored.seq),
        timestamp_nanos: stored.timestamp_nanos,
        subject_bytes: stored.subject.len() as u32,
        header_bytes: stored.header_bytes,
        payload_bytes: stored.payload_bytes,
    }
}

impl StreamView for TestStream {
    fn first_seq(&self) -> StreamSeq {
        self.live().next().map_or(self.last_seq().next(), |stored| StreamSeq(stored.seq))
    }

    fn last_seq(&self) -> StreamSeq {
        StreamSeq(self.messages.len() as u64)
    }

    fn message(&self, seq: StreamSeq) -> Option<MessageMeta> {
        let stored = self.messages.get((seq.get() as usize).checked_sub(1)?)?;
        (!stored.deleted).then(|| meta(stored))
    }

    fn next_matching(&self, from: StreamSeq, filters: &Filters) -> Option<MessageMeta> {
        self.live().find(|s| s.seq >= from.get() && filters.matches(s.subject.as_bytes())).map(meta)
    }

    fn seq_for_time(&self, unix_nanos: i64) -> Option<StreamSeq> {
        self.live().find(|s| s.timestamp_nanos >= unix_nanos).map(|s| StreamSeq(s.seq))
    }

    fn last_per_subject(&self, filters: &Filters) -> Vec<StreamSeq> {
        let mut seen = HashSet::new();
        let mut seqs: Vec<StreamSeq> = self
            .live()
            .rev()
            .filter(|s| filters.matches(s.subject.as_bytes()) && seen.insert(s.subject.clone()))
            .map(|s| StreamSeq(s.seq))
            .collect();
        seqs.sort();
        seqs
    }

    fn num_pending(&self, from: StreamSeq, filters: &Filters) -> u64 {
        self.live().filter(|s| s.seq >= from.get() && filters.matches(s.subject.as_bytes())).count() as u64
    }
}

/// Interest: everything, except subjects marked gone.
#[derive(Default)]
pub struct TestInterest {
    pub gone: RefCell<HashSet<String>>,
}

impl InterestView for TestInterest {
    fn has_interest(&self, subject: &str) -> bool {
        !self.gone.borrow().contains(subject)
    }
}

/// Owns the shard-side pieces and one consumer.
pub struct Harness {
    pub stream: TestStream,
    pub timers: ShardTimers,
    pub effects: Vec<Effect>,
    pub interest: TestInterest,
    pub now: Tick,
    pub consumer: Option<Consumer>,
    pub clock_nanos: i64,
}

pub const MILLIS: i64 = 1_000_000;
pub const SECONDS: i64 = 1_000_000_000;

/// A normalised config from JSON (stream defaults: limits retention).
pub fn config(json: &str) -> ConsumerConfig {
    let config: ConsumerConfig = serde_json::from_str(json).expect("config JSON");
    config.normalized(&StreamConfig { name: "S".into(), ..StreamConfig::default() }).expect("valid config")
}

impl Default for Harness {
    fn default() -> Harness {
        Harness::new()
    }
}

impl Harness {
    pub fn new() -> Harness {
        Harness {
            stream: TestStream::default(),
            timers: ShardTimers::new(Tick(0)),
            effects: Vec::new(),
            interest: TestInterest::default(),
            now: Tick(0),
            consumer: None,
            clock_nanos: 1_700_000_000 * SECONDS,
        }
    }

    /// Runs `f` with a context over the harness's pieces.
    pub fn with<R>(&mut self, f: impl FnOnce(&mut Consumer, &mut Context<'_>) -> R) -> R {
        let consumer = self.consumer.as_mut().expect("consumer created");
        let mut cx = Context {
            now: self.now,
            stream: &self.stream,
            interest: &self.interest,
            timers: &mut self.timers,
            effects: &mut self.effects,
        };
        f(consumer, &mut cx)
    }

    pub fn create(&mut self, json: &str) {
        self.create_with_retention(json, RetentionPolicy::Limits);
    }

    pub fn create_with_retention(&mut self, json: &str, retention: RetentionPolicy) {
        let config = config(json);
        let mut cx = Context {
            now: self.now,
            stream: &self.stream,
            interest: &self.interest,
            timers: &mut self.timers,
            effects: &mut self.effects,
        };
        self.consumer = Some(Consumer::new(
            ConsumerId(1),
            "S",
            "C",
            jetcore::jetstream::consumer_settings::settings(&config, retention),
            &mut cx,
        ));
    }

    /// Stores a message (1 ms after the previous) and tells the consumer.
    pub fn publish(&mut self, subject: &str, payload_bytes: u32) -> u64 {
        self.clock_nanos += MILLIS;
        let meta = self.stream.append(subject, payload_bytes, self.clock_nanos);
        if self.consumer.is_some() {
            let subject = subject.as_bytes().to_vec();
            self.with(|consumer, cx| consumer.on_stream_append(&meta, &subject, cx));
        }
        meta.seq.get()
    }

    pub fn publish_many(&mut self, subject: &str, count: u64) {
        for _ in 0..count {
            self.publish(subject, 10);
        }
    }

    /// Advances time by `nanos`, firing due timers into the consumer.
    pub fn advance(&mut self, nanos: i64) {
        let ticks = nanos as u64 / CONSUMER_TICK_NANOS;
        self.advance_to(Tick(self.now.get() + ticks));
    }

    /// Fires due timers as a shard would: all of one consumer's expirations in one call.
    pub fn advance_to(&mut self, to: Tick) {
        let mut expired = Vec::new();
        self.timers.advance(to, &mut expired);
        self.now = to;
        if let Some(consumer) = self.consumer.as_ref() {
            assert!(expired.iter().all(|timer| timer.key.consumer == consumer.id()));
        }
        if !expired.is_empty() {
            self.with(|consumer, cx| consumer.on_timers(expired.iter().map(|timer| timer.key.kind), cx));
        }
    }

    pub fn pull(&mut self, reply: &str, body: &str) {
        self.with(|consumer, cx| consumer.on_pull_request(reply, body.as_bytes(), cx));
    }

    /// Sends an ack body for a delivery, with an optional reply subject.
    pub fn ack_with(&mut self, delivery: &Delivery, body: &str, reply: Option<&str>) {
        let subject = delivery.ack_reply();
        let ack = jetcore::consumer::AckSubject::parse(&subject).expect("ack subject");
        self.with(|consumer, cx| consumer.on_ack(&ack, body.as_bytes(), reply, cx));
    }

    pub fn ack(&mut self, delivery: &Delivery, body: &str) {
        self.ack_with(delivery, body, None);
    }

    pub fn take(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    pub fn take_deliveries(&mut self) -> Vec<Delivery> {
        deliveries(&self.take())
    }

    pub fn consumer(&self) -> &Consumer {
        self.consumer.as_ref().unwrap()
    }
}

pub fn deliveries(effects: &[Effect]) -> Vec<Delivery> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Deliver(delivery) => Some(delivery.clone()),
            _ => None,
        })
        .collect()
}

pub fn statuses(effects: &[Effect]) -> Vec<StatusReply> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Status(status) => Some(status.clone()),
            _ => None,
        })
        .collect()
}

/// `(code, description)` of each status, in order.
pub fn status_lines(effects: &[Effect]) -> Vec<(u16, String)> {
    statuses(effects).into_iter().map(|status| (status.code, status.description)).collect()
}

pub fn stream_seqs(deliveries: &[Delivery]) -> Vec<u64> {
    deliveries.iter().map(|delivery| delivery.stream_seq.get()).collect()
}

pub fn header<'a>(status: &'a StatusReply, name: &str) -> Option<&'a str> {
    status.headers.iter().find(|(key, _)| *key == name).map(|(_, value)| value.as_str())
}

pub fn rc(text: &str) -> Rc<str> {
    Rc::from(text)
}

#[test]
fn fixture_stream_matches_filters() {
    let mut stream = TestStream::default();
    stream.append("a.1", 1, 10);
    stream.append("b.1", 1, 20);
    stream.append("a.2", 1, 30);
    let filters = Filters::new(vec!["a.*".into()]);
    assert_eq!(stream.num_pending(StreamSeq(1), &filters), 2);
    assert_eq!(stream.next_matching(StreamSeq(2), &filters).unwrap().seq, StreamSeq(3));
    assert_eq!(stream.seq_for_time(15), Some(StreamSeq(2)));
}
