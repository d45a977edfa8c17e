//! Pull consumers with priority groups (nats-server 2.11+): which waiting request a
//! message is offered to under the `overflow` and `prioritized` policies. An overflow
//! request's minimums are checked for each message, so it takes messages only while the
//! backlog (or the unacknowledged count) is at least its minimum.

#[path = "consumer_fixture.rs"]
mod fixture;

use fixture::*;
use jetcore::consumer::Delivery;

const OVERFLOW: &str =
    r#"{"durable_name":"C","ack_policy":"explicit","priority_policy":"overflow","priority_groups":["A"]}"#;
const PRIORITIZED: &str =
    r#"{"durable_name":"C","ack_policy":"explicit","priority_policy":"prioritized","priority_groups":["A"]}"#;

fn delivered_to(deliveries: &[Delivery], inbox: &str) -> Vec<u64> {
    stream_seqs(&deliveries.iter().filter(|delivery| &*delivery.to == inbox).cloned().collect::<Vec<_>>())
}

#[test]
fn overflow_request_waits_until_min_pending_is_reached() {
    let mut h = Harness::new();
    h.publish_many("a", 5);
    h.create(OVERFLOW);
    h.pull("_INBOX.held", r#"{"batch":10,"group":"A","min_pending":10}"#);
    assert!(h.take_deliveries().is_empty(), "5 pending < min_pending 10");
    assert_eq!(h.consumer().counters().num_waiting, 1, "the request keeps waiting");
    h.pull("_INBOX.plain", r#"{"batch":2,"group":"A"}"#);
    assert_eq!(delivered_to(&h.take_deliveries(), "_INBOX.plain"), vec![1, 2], "a request without minimums is served");
    h.publish_many("a", 7);
    // Served only while the backlog is at least 10: one message brings it down to 9.
    assert_eq!(delivered_to(&h.take_deliveries(), "_INBOX.held"), vec![3]);
    assert_eq!(h.consumer().counters().num_pending, 9);
    // Each new message lifts it to 10 again, and the held request takes one.
    h.publish_many("a", 2);
    assert_eq!(delivered_to(&h.take_deliveries(), "_INBOX.held"), vec![4, 5]);
}

#[test]
fn overflow_request_waits_until_min_ack_pending_is_reached() {
    let mut h = Harness::new();
    h.publish_many("a", 5);
    h.create(OVERFLOW);
    h.pull("_INBOX.first", r#"{"batch":2,"group":"A"}"#);
    assert_eq!(h.take_deliveries().len(), 2);
    h.pull("_INBOX.held", r#"{"batch":10,"group":"A","min_ack_pending":3}"#);
    assert!(h.take_deliveries().is_empty(), "2 unacknowledged < min_ack_pending 3");
    h.pull("_INBOX.third", r#"{"batch":1,"group":"A"}"#);
    let deliveries = h.take_deliveries();
    assert_eq!(delivered_to(&deliveries, "_INBOX.third"), vec![3]);
    assert_eq!(delivered_to(&deliveries, "_INBOX.held"), vec![4, 5], "3 unacknowledged: now served");
}

#[test]
fn prioritized_serves_the_lowest_priority_first() {
    let mut h = Harness::new();
    h.create(PRIORITIZED);
    h.pull("_INBOX.low", r#"{"batch":10,"group":"A","priority":5}"#);
    h.pull("_INBOX.high", r#"{"batch":3,"group":"A","priority":1}"#);
    h.publish_many("a", 5);
    let deliveries = h.take_deliveries();
    assert_eq!(delivered_to(&deliveries, "_INBOX.high"), vec![1, 2, 3]);
    assert_eq!(delivered_to(&deliveries, "_INBOX.low"), vec![4, 5], "served once the higher priority is done");
}
