//! Redelivery: ack wait, backoff, max_deliver with its advisory, NAK (with delay), TERM,
//! WPI, and the delivery count and consumer sequence in redelivered ack subjects.

#[path = "consumer_fixture.rs"]
mod fixture;

use fixture::*;
use jetcore::consumer::{AckSubject, Advisory, Effect, StreamSeq};

fn pull_one(h: &mut Harness) -> Vec<jetcore::consumer::Delivery> {
    h.pull("_INBOX.r", r#"{"batch":10}"#);
    h.take_deliveries()
}

#[test]
fn unacked_message_is_redelivered_after_ack_wait() {
    let mut h = Harness::new();
    h.publish("a", 1);
    h.create(r#"{"durable_name":"C","ack_policy":"explicit","ack_wait":2000000000}"#);
    let first = pull_one(&mut h);
    assert_eq!(first.len(), 1);
    h.advance(1999 * MILLIS);
    assert!(h.take_deliveries().is_empty(), "not before ack_wait");
    h.advance(MILLIS);
    let again = h.take_deliveries();
    assert_eq!(again.len(), 1, "the open pull request receives the redelivery");
    let redelivery = &again[0];
    assert_eq!((redelivery.stream_seq, redelivery.delivery_count), (StreamSeq(1), 2));
    assert_eq!(redelivery.consumer_seq.get(), 2, "consumer seq counts every delivery");
    let reply = redelivery.ack_reply();
    let parsed = AckSubject::parse(&reply).unwrap();
    assert_eq!((parsed.delivery_count, parsed.consumer_seq.get()), (2, 2));
    assert_eq!(h.consumer().counters().num_redelivered, 1);
    assert_eq!(h.consumer().counters().num_ack_pending, 1);
}

#[test]
fn backoff_schedule_sets_each_ack_wait() {
    let mut h = Harness::new();
    h.publish("a", 1);
    h.create(r#"{"durable_name":"C","ack_policy":"explicit","backoff":[1000000000,3000000000],"max_deliver":5}"#);
    assert_eq!(pull_one(&mut h).len(), 1);
    let mut times = Vec::new();
    let mut elapsed = 0;
    for _ in 0..20_000 {
        h.advance(MILLIS);
        elapsed += 1;
        for delivery in h.take_deliveries() {
            times.push((elapsed, delivery.delivery_count));
        }
    }
    // delivery 1 waits backoff[0] = 1 s, then 3 s each (the last step repeats).
    assert_eq!(times, vec![(1000, 2), (4000, 3), (7000, 4), (10000, 5)]);
}

#[test]
fn max_deliver_stops_and_emits_one_advisory() {
    let mut h = Harness::new();
    h.publish("a", 1);
    h.publish("a", 1);
    h.create(r#"{"durable_name":"C","ack_policy":"explicit","ack_wait":1000000000,"max_deliver":2}"#);
    let first = pull_one(&mut h);
    h.ack(&first[1], "");
    h.advance(1000 * MILLIS);
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![1]);
    h.advance(1000 * MILLIS);
    let effects = h.take();
    assert!(deliveries(&effects).is_empty(), "no third delivery");
    let advisories: Vec<_> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Advisory(advisory) => Some(advisory.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(advisories, vec![Advisory::MaxDeliveries { stream_seq: StreamSeq(1), deliveries: 2 }]);
    assert_eq!(advisories[0].subject("S", "C"), "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.S.C");
    let counters = h.consumer().counters();
    assert_eq!(counters.num_ack_pending, 0, "dropped from pending");
    assert_eq!(counters.ack_floor.stream.get(), 2, "the floor moves past it");
    h.advance(60 * SECONDS);
    assert!(h.take().is_empty(), "nothing more happens");
}

#[test]
fn nak_redelivers_now_and_nak_with_delay_later() {
    let mut h = Harness::new();
    h.publish("a", 1);
    h.publish("a", 1);
    h.create(r#"{"durable_name":"C","ack_policy":"explicit","ack_wait":30000000000}"#);
    let first = pull_one(&mut h);
    h.ack(&first[0], "-NAK");
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![1], "plain NAK redelivers at once");
    h.ack(&first[1], r#"-NAK {"delay": 2000000000}"#);
    assert!(h.take_deliveries().is_empty());
    h.advance(1999 * MILLIS);
    assert!(h.take_deliveries().is_empty());
    h.advance(MILLIS);
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![2]);
}

#[test]
fn nak_with_go_duration_and_for_unknown_sequences() {
    let mut h = Harness::new();
    h.publish("a", 1);
    h.create(r#"{"durable_name":"C","ack_policy":"explicit","ack_wait":30000000000}"#);
    let first = pull_one(&mut h);
    h.ack(&first[0], "-NAK 1s");
    h.advance(999 * MILLIS);
    assert!(h.take_deliveries().is_empty());
    h.advance(MILLIS);
    let second = h.take_deliveries();
    assert_eq!(second.len(), 1);
    h.ack(&second[0], "");
    h.ack(&second[0], "-NAK");
    assert!(h.take_deliveries().is_empty(), "NAK of an acked message is ignored");
}

#[test]
fn term_stops_redelivery_and_settles() {
    let mut h = Harness::new();
    h.publish("a", 1);
    h.create(r#"{"durable_name":"C","ack_policy":"explicit","ack_wait":1000000000}"#);
    let first = pull_one(&mut h);
    h.ack_with(&first[0], "+TERM bad payload", Some("_INBOX.ack"));
    let effects = h.take();
    assert!(effects.iter().any(|e| matches!(e,
        Effect::Advisory(Advisory::Terminated { reason: Some(reason), .. }) if reason == "bad payload")));
    assert!(effects.contains(&Effect::AckReply { to: "_INBOX.ack".into() }));
    h.advance(10 * SECONDS);
    assert!(h.take_deliveries().is_empty());
    assert_eq!(h.consumer().counters().ack_floor.stream.get(), 1);
}

#[test]
fn progress_resets_the_ack_deadline() {
    let mut h = Harness::new();
    h.publish("a", 1);
    h.create(r#"{"durable_name":"C","ack_policy":"explicit","ack_wait":2000000000}"#);
    let first = pull_one(&mut h);
    h.advance(1500 * MILLIS);
    h.ack(&first[0], "+WPI");
    h.advance(1999 * MILLIS);
    assert!(h.take_deliveries().is_empty(), "WPI moved the deadline to 3.5 s");
    h.advance(MILLIS);
    assert_eq!(h.take_deliveries().len(), 1);
}

#[test]
fn redeliveries_go_before_new_messages() {
    let mut h = Harness::new();
    h.publish_many("a", 3);
    h.create(r#"{"durable_name":"C","ack_policy":"explicit","ack_wait":1000000000}"#);
    h.pull("_INBOX.r", "2");
    let first = h.take_deliveries();
    h.ack(&first[1], "-NAK");
    h.ack(&first[0], "-NAK");
    h.pull("_INBOX.r", "3");
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![1, 2, 3]);
}

#[test]
fn double_ack_is_answered_but_not_beyond_delivered() {
    let mut h = Harness::new();
    h.publish_many("a", 2);
    h.create(r#"{"durable_name":"C","ack_policy":"explicit"}"#);
    h.pull("_INBOX.r", "1");
    let first = h.take_deliveries();
    h.ack_with(&first[0], "", Some("_INBOX.d1"));
    h.ack_with(&first[0], "+ACK", Some("_INBOX.d2"));
    let replies: Vec<_> = h.take().into_iter().filter(|e| matches!(e, Effect::AckReply { .. })).collect();
    assert_eq!(replies.len(), 2, "a repeated ack is still answered");
    let beyond = first[0].ack_reply().replace(".1.1.1.", ".1.2.2.");
    let ack = AckSubject::parse(&beyond).unwrap();
    h.with(|consumer, cx| consumer.on_ack(&ack, b"", Some("_INBOX.d3"), cx));
    assert!(h.take().is_empty(), "an ack beyond what was delivered is ignored without reply");
}
