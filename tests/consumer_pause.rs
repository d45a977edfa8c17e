//! Pausing a consumer: nothing is delivered before the pause ends, pull requests keep
//! waiting meanwhile, and delivery resumes by itself when the pause is over (or at once
//! when resumed).

#[path = "consumer_fixture.rs"]
mod fixture;

use fixture::*;
use jetcore::consumer::Tick;

const PULL: &str = r#"{"durable_name":"C","ack_policy":"explicit"}"#;
const PUSH: &str = r#"{"durable_name":"C","ack_policy":"explicit","deliver_subject":"push.in"}"#;

fn pause_for(h: &mut Harness, nanos: i64) {
    h.with(|consumer, cx| {
        let until = cx.now.after_nanos(nanos);
        consumer.pause(Some(until), cx);
    });
}

#[test]
fn a_paused_pull_consumer_delivers_when_the_pause_ends() {
    let mut h = Harness::new();
    h.publish_many("a", 3);
    h.create(PULL);
    pause_for(&mut h, 2 * SECONDS);
    h.pull("_INBOX.1", r#"{"batch":5,"expires":10000000000}"#);
    assert!(h.take_deliveries().is_empty(), "paused: the request waits");
    assert_eq!(h.consumer().counters().num_waiting, 1);
    h.advance(SECONDS);
    assert!(h.take_deliveries().is_empty(), "still paused after 1 s");
    h.advance(SECONDS + SECONDS / 10);
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![1, 2, 3], "the pause ended");
}

#[test]
fn resuming_delivers_at_once() {
    let mut h = Harness::new();
    h.create(PUSH);
    pause_for(&mut h, 60 * SECONDS);
    h.with(|consumer, cx| consumer.on_interest_change(true, cx));
    h.publish_many("a", 2);
    assert!(h.take_deliveries().is_empty(), "paused push consumer");
    h.with(|consumer, cx| consumer.pause(None, cx));
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![1, 2]);
    assert!(!h.consumer().is_paused(Tick(u64::MAX / 2)));
}
