//! Pull consumers with priority groups (nats-server 2.11+): which waiting request a
//! message is offered to under the `overflow`, `prioritized` and `pinned_client`
//! policies. An overflow request's minimums are checked for each message, so it takes
//! messages only while the backlog (or the unacknowledged count) is at least its minimum.
//! A pin is held until `priority_timeout` passes on the shard's wheel without a request
//! from its client.

#[path = "consumer_fixture.rs"]
mod fixture;

use fixture::*;
use jetcore::consumer::{Advisory, Delivery, Effect, UnpinReason};

const OVERFLOW: &str =
    r#"{"durable_name":"C","ack_policy":"explicit","priority_policy":"overflow","priority_groups":["A"]}"#;
const PINNED: &str = concat!(
    r#"{"durable_name":"C","ack_policy":"explicit","priority_policy":"pinned_client","#,
    r#""priority_groups":["A"],"priority_timeout":2000000000}"#
);
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

fn pins(deliveries: &[Delivery]) -> Vec<(String, String)> {
    deliveries
        .iter()
        .map(|delivery| (delivery.to.to_string(), delivery.pin_id.as_deref().unwrap().to_string()))
        .collect()
}

fn advisories(effects: &[Effect]) -> Vec<Advisory> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Advisory(advisory) => Some(advisory.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn pinned_client_hands_the_pin_over_when_its_client_stops_pulling() {
    let mut h = Harness::new();
    h.create(PINNED);
    h.pull("_INBOX.a", r#"{"batch":10,"group":"A"}"#);
    h.publish_many("a", 1);
    let effects = h.take();
    let first = pins(&deliveries(&effects));
    assert_eq!(first.len(), 1);
    let (to, pin) = first[0].clone();
    assert_eq!(to, "_INBOX.a");
    assert_eq!(advisories(&effects), vec![Advisory::Pinned { group: rc("A"), pin_id: rc(&pin) }]);
    h.pull("_INBOX.b", r#"{"batch":10,"group":"A"}"#);
    h.publish_many("a", 1);
    assert_eq!(pins(&h.take_deliveries()), vec![("_INBOX.a".to_string(), pin.clone())], "b waits");
    // A request from the pinned client restarts the timer.
    h.advance(1900 * MILLIS);
    h.pull("_INBOX.a2", &format!(r#"{{"batch":1,"group":"A","id":"{pin}"}}"#));
    h.advance(1900 * MILLIS);
    assert!(advisories(&h.take()).is_empty(), "still pinned");
    h.advance(200 * MILLIS);
    let unpinned = Advisory::Unpinned { group: rc("A"), reason: UnpinReason::Timeout };
    assert_eq!(advisories(&h.take()), vec![unpinned]);
    assert!(h.consumer().pin().is_none());
    // The next message pins the waiting request without an id.
    h.publish_many("a", 1);
    let handed = pins(&h.take_deliveries());
    assert_eq!(handed.len(), 1);
    assert_eq!(handed[0].0, "_INBOX.b");
    assert_ne!(handed[0].1, pin, "a new pin id");
    // The requests still holding the old pin are told when the next message comes.
    h.publish_many("a", 1);
    let effects = h.take();
    assert_eq!(pins(&deliveries(&effects)), vec![handed[0].clone()]);
    let told: Vec<_> = statuses(&effects).iter().map(|status| (status.to.to_string(), status.code)).collect();
    assert_eq!(told, vec![("_INBOX.a".to_string(), 423), ("_INBOX.a2".to_string(), 423)]);
}

#[test]
fn pinned_client_unpin_releases_at_once_and_refuses_other_ids_on_arrival() {
    let mut h = Harness::new();
    h.create(PINNED);
    h.publish_many("a", 3);
    h.pull("_INBOX.a", r#"{"batch":1,"group":"A"}"#);
    let pin = pins(&h.take_deliveries())[0].1.clone();
    h.pull("_INBOX.other", r#"{"batch":1,"group":"A","id":"other"}"#);
    assert_eq!(status_lines(&h.take()), vec![(423, "Nats-Pin-Id mismatch".to_string())]);
    h.pull("_INBOX.b", r#"{"batch":1,"group":"A"}"#);
    assert!(h.take_deliveries().is_empty(), "a request without an id waits");
    h.with(|consumer, cx| consumer.unpin("A", cx));
    let effects = h.take();
    assert_eq!(advisories(&effects)[0], Advisory::Unpinned { group: rc("A"), reason: UnpinReason::Admin });
    let handed = pins(&deliveries(&effects));
    assert_eq!(handed.len(), 1);
    assert_eq!(handed[0].0, "_INBOX.b");
    assert_ne!(handed[0].1, pin);
}
