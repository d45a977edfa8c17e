//! Push consumers: interest gating, idle heartbeats with last-sequence headers, flow
//! control stall and resume, ordered-consumer sequences, inactive-threshold cleanup.

#[path = "consumer_fixture.rs"]
mod fixture;

use fixture::*;
use jetcore::consumer::{DeleteReason, Effect};

fn interest(h: &mut Harness, active: bool) {
    h.with(|consumer, cx| consumer.on_interest_change(active, cx));
}

#[test]
fn nothing_is_delivered_until_the_deliver_subject_has_interest() {
    let mut h = Harness::new();
    h.publish_many("a", 2);
    h.create(r#"{"durable_name":"C","deliver_subject":"push.here","ack_policy":"explicit"}"#);
    h.publish("a", 1);
    assert!(h.take_deliveries().is_empty(), "held while nobody listens");
    assert!(!h.consumer().counters().push_bound);
    interest(&mut h, true);
    let delivered = h.take_deliveries();
    assert_eq!(stream_seqs(&delivered), vec![1, 2, 3]);
    assert!(delivered.iter().all(|d| d.to.as_ref() == "push.here"));
    assert!(h.consumer().counters().push_bound);
    interest(&mut h, false);
    h.publish("a", 1);
    assert!(h.take_deliveries().is_empty());
}

#[test]
fn idle_heartbeat_carries_last_sequences() {
    let mut h = Harness::new();
    h.publish_many("a", 3);
    h.create(r#"{"name":"E","deliver_subject":"push.hb","ack_policy":"none","idle_heartbeat":5000000000,"filter_subject":"a"}"#);
    interest(&mut h, true);
    assert_eq!(h.take_deliveries().len(), 3);
    h.publish("other", 1);
    h.advance(4999 * MILLIS);
    assert!(statuses(&h.take()).is_empty());
    h.advance(MILLIS);
    let beat = statuses(&h.take()).pop().expect("heartbeat");
    assert_eq!((beat.code, beat.description.as_str(), beat.reply.as_deref()), (100, "Idle Heartbeat", None));
    assert_eq!(header(&beat, "Nats-Last-Consumer"), Some("3"));
    assert_eq!(
        header(&beat, "Nats-Last-Stream"),
        Some("3"),
        "next to consider minus one: the unmatched message 4 was never looked at"
    );
    let mut encoded = Vec::new();
    beat.encode_headers(&mut encoded);
    assert_eq!(
        String::from_utf8(encoded).unwrap(),
        "NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 3\r\nNats-Last-Stream: 3\r\n\r\n"
    );
    h.advance(5 * SECONDS);
    assert_eq!(statuses(&h.take()).len(), 1, "repeats every interval while idle");
}

#[test]
fn flow_control_pauses_delivery_until_answered() {
    let mut h = Harness::new();
    h.create(r#"{"name":"E","deliver_subject":"push.fc","ack_policy":"none","flow_control":true,"idle_heartbeat":1000000000}"#);
    interest(&mut h, true);
    for _ in 0..8 {
        h.publish("big", 1024 * 1024);
    }
    let effects = h.take();
    let fc: Vec<_> = statuses(&effects).into_iter().filter(|s| s.description == "FlowControl Request").collect();
    assert_eq!(fc.len(), 1, "one outstanding request at a time");
    let reply = fc[0].reply.clone().expect("flow control has a reply subject");
    assert!(reply.starts_with("$JS.FC.S.C.") && reply.len() == "$JS.FC.S.C.".len() + 4, "{reply}");
    let sent = deliveries(&effects).len();
    assert!(sent < 8, "delivery pauses past the window ({sent} sent)");
    h.advance(SECONDS);
    let beat = statuses(&h.take()).pop().expect("heartbeat while stalled");
    assert_eq!(header(&beat, "Nats-Consumer-Stalled"), Some(reply.as_str()));
    h.with(|consumer, cx| consumer.on_flow_control_reply("$JS.FC.S.C.nope", cx));
    assert!(h.take_deliveries().is_empty(), "a stale answer does not resume");
    h.with(|consumer, cx| consumer.on_flow_control_reply(&reply, cx));
    assert!(!h.take_deliveries().is_empty(), "the answer resumes delivery");
}

#[test]
fn ordered_consumer_sees_contiguous_consumer_sequences_from_one() {
    let mut h = Harness::new();
    h.publish_many("kv.a", 2);
    h.publish("other", 1);
    h.publish_many("kv.b", 2);
    h.create(r#"{"name":"O","deliver_subject":"_INBOX.ord","ack_policy":"none","max_deliver":1,"flow_control":true,"idle_heartbeat":5000000000,"mem_storage":true,"filter_subject":"kv.>"}"#);
    interest(&mut h, true);
    let delivered = h.take_deliveries();
    let consumer_seqs: Vec<u64> = delivered.iter().map(|d| d.consumer_seq.get()).collect();
    assert_eq!(consumer_seqs, vec![1, 2, 3, 4]);
    assert_eq!(stream_seqs(&delivered), vec![1, 2, 4, 5]);
    let pending: Vec<u64> = delivered.iter().map(|d| d.pending).collect();
    assert_eq!(pending, vec![3, 2, 1, 0], "pending 0 marks caught up");
}

#[test]
fn ephemeral_without_interest_asks_to_be_deleted_after_threshold() {
    let mut h = Harness::new();
    h.create(r#"{"name":"E","deliver_subject":"push.eph","ack_policy":"none","inactive_threshold":3000000000}"#);
    interest(&mut h, true);
    h.advance(10 * SECONDS);
    assert!(!h.take().contains(&Effect::Delete(DeleteReason::InactiveThreshold)));
    interest(&mut h, false);
    h.advance(2999 * MILLIS);
    assert!(!h.take().contains(&Effect::Delete(DeleteReason::InactiveThreshold)));
    h.advance(MILLIS);
    assert!(h.take().contains(&Effect::Delete(DeleteReason::InactiveThreshold)));
}

#[test]
fn idle_pull_ephemeral_is_reaped_but_not_while_requests_wait() {
    let mut h = Harness::new();
    h.create(r#"{"name":"E","ack_policy":"explicit"}"#); // ephemeral default: 5 s
    h.pull("_INBOX.1", r#"{"batch":1,"expires":20000000000}"#);
    h.advance(10 * SECONDS);
    assert!(!h.take().contains(&Effect::Delete(DeleteReason::InactiveThreshold)));
    h.advance(15 * SECONDS);
    let effects = h.take();
    assert_eq!(status_lines(&effects), vec![(408, "Request Timeout".to_string())]);
    // 5 s after the last request, plus nats-server's pull grace and jitter (under 1 s).
    h.advance(6 * SECONDS);
    assert!(h.take().contains(&Effect::Delete(DeleteReason::InactiveThreshold)));
}
