//! Persisted consumer state: round trips, every single bit flip detected, garbage is a
//! typed error, and a restart keeps acked messages acked and redelivers the rest.

#[path = "consumer_fixture.rs"]
mod fixture;

use fixture::*;
use jetcore::consumer::{
    Consumer, ConsumerId, ConsumerSeq, ConsumerState, Context, PendingRecord, Position, StateDecodeError, StreamSeq,
};
use jetcore::jetstream::policies::RetentionPolicy;

fn random_state(rng: &mut Rng) -> ConsumerState {
    let floor_stream = rng.below(1 << 40);
    let floor_consumer = rng.below(1 << 40);
    let mut pending = Vec::new();
    let (mut stream, mut consumer) = (floor_stream, floor_consumer);
    for _ in 0..rng.below(40) {
        stream += 1 + rng.below(1000);
        consumer += 1 + rng.below(3);
        pending.push(PendingRecord {
            stream_seq: StreamSeq(stream),
            consumer_seq: ConsumerSeq(consumer),
            delivery_count: 1 + rng.below(5),
        });
    }
    ConsumerState {
        delivered: Position {
            stream: StreamSeq(stream + rng.below(10)),
            consumer: ConsumerSeq(consumer + rng.below(10)),
        },
        ack_floor: Position { stream: StreamSeq(floor_stream), consumer: ConsumerSeq(floor_consumer) },
        pending,
    }
}

#[test]
fn random_states_round_trip() {
    for seed in seeds(200) {
        let state = random_state(&mut Rng::new(seed));
        let bytes = state.encode();
        assert_eq!(ConsumerState::decode(&bytes), Ok(state), "seed {seed}");
    }
}

#[test]
fn every_single_bit_flip_is_detected() {
    for seed in seeds(8) {
        let bytes = random_state(&mut Rng::new(seed)).encode();
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(ConsumerState::decode(&flipped).is_err(), "seed {seed}: flip of bit {bit} undetected");
        }
    }
}

#[test]
fn truncation_and_garbage_are_typed_errors() {
    let bytes = random_state(&mut Rng::new(7)).encode();
    for length in 0..bytes.len() {
        assert!(ConsumerState::decode(&bytes[..length]).is_err(), "truncated to {length}");
    }
    assert_eq!(ConsumerState::decode(b"abc"), Err(StateDecodeError::TooShort { bytes: 3 }));
    let mut rng = Rng::new(99);
    for _ in 0..2_000 {
        let garbage: Vec<u8> = (0..rng.below(64)).map(|_| rng.below(256) as u8).collect();
        let _ = ConsumerState::decode(&garbage);
    }
}

#[test]
fn checksummed_but_inconsistent_state_is_refused() {
    let mut body = vec![1u8, 5, 5, 6, 6, 0]; // floor (6,6) above delivered (5,5)
    let checksum = crc32c::crc32c(&body);
    body.extend_from_slice(&checksum.to_le_bytes());
    assert_eq!(ConsumerState::decode(&body), Err(StateDecodeError::Inconsistent { what: "ack floor above delivered" }));
    let mut wrong_version = vec![9u8, 0, 0, 0, 0, 0];
    let checksum = crc32c::crc32c(&wrong_version);
    wrong_version.extend_from_slice(&checksum.to_le_bytes());
    assert_eq!(ConsumerState::decode(&wrong_version), Err(StateDecodeError::UnsupportedVersion { version: 9 }));
}

#[test]
fn restart_keeps_acks_and_redelivers_unacked() {
    let config_json = r#"{"durable_name":"C","ack_policy":"explicit","ack_wait":5000000000}"#;
    let mut h = Harness::new();
    h.publish_many("a", 6);
    h.create(config_json);
    h.pull("_INBOX.1", "4");
    let delivered = h.take_deliveries();
    h.ack(&delivered[0], "");
    h.ack(&delivered[2], "");
    let bytes = h.consumer().state().encode();

    // "kill -9": a fresh shard with the same stream and the persisted bytes.
    h.consumer = None;
    h.timers = jetcore::consumer::ShardTimers::new(h.now);
    h.effects.clear();
    let state = ConsumerState::decode(&bytes).unwrap();
    let config = config(config_json);
    let mut cx = Context {
        now: h.now,
        stream: &h.stream,
        interest: &h.interest,
        timers: &mut h.timers,
        effects: &mut h.effects,
    };
    let restored = Consumer::restore(
        ConsumerId(1),
        "S",
        "C",
        jetcore::jetstream::consumer_settings::settings(&config, RetentionPolicy::Limits),
        &state,
        &mut cx,
    );
    h.consumer = Some(restored.expect("state fits the stream"));
    let counters = h.consumer().counters();
    assert_eq!((counters.ack_floor.stream.get(), counters.delivered.stream.get()), (1, 4));
    assert_eq!(counters.num_ack_pending, 2);
    assert_eq!(counters.num_pending, 2);

    h.pull("_INBOX.2", "2");
    let fresh = h.take_deliveries();
    assert_eq!(stream_seqs(&fresh), vec![5, 6], "new messages continue after delivered");
    h.ack(&fresh[0], "");
    h.ack(&fresh[1], "");
    h.pull("_INBOX.3", "10");
    h.advance(4999 * MILLIS);
    assert!(h.take_deliveries().is_empty(), "restored pending get a fresh ack wait");
    h.advance(MILLIS);
    let redelivered = h.take_deliveries();
    assert_eq!(stream_seqs(&redelivered), vec![2, 4], "exactly the unacked ones come back");
    assert!(redelivered.iter().all(|d| d.delivery_count == 2));
}

#[test]
fn restore_refuses_state_ahead_of_the_stream() {
    let mut h = Harness::new();
    h.publish_many("a", 2);
    let state = ConsumerState {
        delivered: Position { stream: StreamSeq(9), consumer: ConsumerSeq(9) },
        ..ConsumerState::default()
    };
    let config = config(r#"{"durable_name":"C","ack_policy":"explicit"}"#);
    let mut cx = Context {
        now: h.now,
        stream: &h.stream,
        interest: &h.interest,
        timers: &mut h.timers,
        effects: &mut h.effects,
    };
    let result = Consumer::restore(
        ConsumerId(1),
        "S",
        "C",
        jetcore::jetstream::consumer_settings::settings(&config, RetentionPolicy::Limits),
        &state,
        &mut cx,
    );
    assert!(matches!(result, Err(jetcore::consumer::RestoreError::AheadOfStream { .. })));
}
