//! Ack floor and pending-set invariants under random ack orders, redeliveries and
//! max-delivery drops; ack policies `all` and `none`.

#[path = "consumer_fixture.rs"]
mod fixture;

use std::collections::BTreeSet;

use fixture::*;
use jetcore::consumer::{ConsumerSeq, Effect, PendingSet, StreamSeq};
use jetcore::jetstream::policies::RetentionPolicy;

/// Model: settling moves the floor up to just below the lowest unsettled delivered
/// sequence (to `delivered` when none is left); deliveries alone never move it.
fn expected_floor(delivered: u64, unsettled: &BTreeSet<u64>) -> u64 {
    unsettled.first().map_or(delivered, |lowest| lowest - 1)
}

#[test]
fn floor_tracks_lowest_unsettled_under_random_settle_orders() {
    for seed in seeds(50) {
        let mut rng = Rng::new(seed);
        let mut set = PendingSet::starting_after(StreamSeq(0));
        let mut unsettled = BTreeSet::new();
        let mut delivered = 0u64;
        let mut model_floor = 0u64;
        for step in 0..600 {
            match rng.below(6) {
                0 | 1 => {
                    delivered += 1 + rng.below(3) * u64::from(rng.chance(20)); // gaps: filtered messages
                    set.record_delivery(StreamSeq(delivered), 1, true);
                    unsettled.insert(delivered);
                }
                2 if !unsettled.is_empty() => {
                    let seq = *unsettled.iter().nth(rng.below(unsettled.len() as u64) as usize).unwrap();
                    let count = set.get(StreamSeq(seq)).unwrap().delivery_count;
                    set.queue_redelivery(StreamSeq(seq));
                    set.unqueue_redelivery(StreamSeq(seq));
                    set.record_delivery(StreamSeq(seq), count + 1, true);
                }
                3 if !unsettled.is_empty() => {
                    let seq = *unsettled.iter().nth(rng.below(unsettled.len() as u64) as usize).unwrap();
                    set.queue_redelivery(StreamSeq(seq));
                }
                _ => {
                    let seq = 1 + rng.below(delivered.max(1));
                    let was_pending = set.settle(StreamSeq(seq)).is_some();
                    assert_eq!(was_pending, unsettled.remove(&seq), "seed {seed} step {step}");
                    if was_pending {
                        model_floor = model_floor.max(expected_floor(delivered, &unsettled));
                    }
                }
            }
            set.check_invariants();
            let floor = set.ack_floor();
            assert_eq!(floor.stream.get(), model_floor, "seed {seed} step {step}");
            assert!(floor.consumer <= set.delivered().consumer, "seed {seed} step {step}");
            assert_eq!(set.len(), unsettled.len(), "seed {seed} step {step}");
            let redelivered = set.iter().filter(|(_, entry)| entry.delivery_count > 1).count() as u64;
            assert_eq!(set.redelivered_count(), redelivered, "seed {seed} step {step}");
        }
    }
}

#[test]
fn consumer_keeps_invariants_under_random_acks_naks_and_timeouts() {
    for seed in seeds(20) {
        let mut rng = Rng::new(seed);
        let mut h = Harness::new();
        h.publish_many("s.a", 40);
        h.create(r#"{"durable_name":"C","ack_policy":"explicit","ack_wait":1000000000,"max_deliver":4,"max_ack_pending":16}"#);
        let mut outstanding = Vec::new();
        for step in 0..400 {
            match rng.below(8) {
                0 => h.pull("_INBOX.x", &(1 + rng.below(5)).to_string()),
                1 => h.advance((rng.below(1500) as i64) * MILLIS),
                2 => {
                    h.publish("s.b", 5);
                }
                _ if !outstanding.is_empty() => {
                    let index = rng.below(outstanding.len() as u64) as usize;
                    let delivery: jetcore::consumer::Delivery = outstanding.swap_remove(index);
                    let body = ["", "-NAK", "+WPI", "+TERM", "+ACK"][rng.below(5) as usize];
                    h.ack(&delivery, body);
                }
                _ => {}
            }
            outstanding.extend(h.take_deliveries());
            let consumer = h.consumer();
            consumer.pending_set().check_invariants();
            let counters = consumer.counters();
            assert!(counters.ack_floor.stream <= counters.delivered.stream, "seed {seed} step {step}");
            assert!(counters.delivered.stream.get() <= h.stream.messages.len() as u64, "seed {seed} step {step}");
            assert!(counters.num_ack_pending <= 16, "seed {seed} step {step}: max_ack_pending exceeded");
            let pending_seqs: Vec<u64> = consumer.pending_set().iter().map(|(seq, _)| seq.get()).collect();
            assert!(
                pending_seqs
                    .iter()
                    .all(|seq| *seq > counters.ack_floor.stream.get() && *seq <= counters.delivered.stream.get()),
                "seed {seed} step {step}: pending outside (floor, delivered]"
            );
        }
    }
}

#[test]
fn ack_all_settles_everything_up_to_the_acked_message() {
    let mut h = Harness::new();
    h.publish_many("a", 5);
    h.create(r#"{"durable_name":"C","ack_policy":"all"}"#);
    h.pull("_INBOX.1", "5");
    let delivered = h.take_deliveries();
    h.ack(&delivered[2], "");
    let counters = h.consumer().counters();
    assert_eq!(counters.ack_floor.stream, StreamSeq(3));
    assert_eq!(counters.ack_floor.consumer, ConsumerSeq(3));
    assert_eq!(counters.num_ack_pending, 2);
    h.ack(&delivered[1], "");
    assert_eq!(h.consumer().counters().num_ack_pending, 2, "acking below the floor changes nothing");
    h.ack(&delivered[4], "");
    assert_eq!(h.consumer().counters().ack_floor.stream, StreamSeq(5));
    assert_eq!(h.consumer().counters().num_ack_pending, 0);
}

#[test]
fn ack_none_counts_delivery_as_ack_and_reports_for_interest_retention() {
    let mut h = Harness::new();
    h.publish_many("a", 3);
    h.create_with_retention(r#"{"durable_name":"C","ack_policy":"none"}"#, RetentionPolicy::Interest);
    h.pull("_INBOX.1", "3");
    let effects = h.take();
    let acked: Vec<u64> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Acked { stream_seq } => Some(stream_seq.get()),
            _ => None,
        })
        .collect();
    assert_eq!(acked, vec![1, 2, 3]);
    let counters = h.consumer().counters();
    assert_eq!((counters.ack_floor, counters.num_ack_pending), (counters.delivered, 0));
    assert_eq!(counters.delivered.stream, StreamSeq(3));
}

#[test]
fn explicit_acks_are_reported_for_workqueue_retention_only_once() {
    let mut h = Harness::new();
    h.publish_many("a", 2);
    h.create_with_retention(r#"{"durable_name":"C","ack_policy":"explicit"}"#, RetentionPolicy::WorkQueue);
    h.pull("_INBOX.1", "2");
    let delivered = h.take_deliveries();
    h.ack(&delivered[1], "");
    h.ack(&delivered[1], "");
    let acked = h.take().iter().filter(|e| matches!(e, Effect::Acked { .. })).count();
    assert_eq!(acked, 1);
    assert_eq!(h.consumer().counters().ack_floor.stream, StreamSeq(0), "1 is still pending");
}
