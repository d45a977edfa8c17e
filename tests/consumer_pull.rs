//! Pull consumers: batches, no_wait, expiry, max_waiting, max_bytes, caps and their
//! exact nats-server status texts.

#[path = "consumer_fixture.rs"]
mod fixture;

use fixture::*;
use jetcore::consumer::Effect;

const EXPLICIT: &str = r#"{"durable_name":"C","ack_policy":"explicit"}"#;

#[test]
fn batch_fills_then_completes_without_status() {
    let mut h = Harness::new();
    h.publish_many("orders.new", 5);
    h.create(EXPLICIT);
    h.pull("_INBOX.1", r#"{"batch":3}"#);
    let effects = h.take();
    assert_eq!(stream_seqs(&deliveries(&effects)), vec![1, 2, 3]);
    assert!(statuses(&effects).is_empty(), "a batch completed by count sends no status");
    assert_eq!(h.consumer().counters().num_waiting, 0);
    assert_eq!(h.consumer().counters().num_pending, 2);
    let first = &deliveries(&effects)[0];
    assert_eq!(&*first.to, "_INBOX.1");
    assert_eq!(first.pending, 4, "pending counts what is left after this message");
    assert_eq!(first.ack_reply(), format!("$JS.ACK.S.C.1.1.1.{}.4", first.timestamp_nanos));
}

#[test]
fn waiting_request_is_served_as_messages_arrive() {
    let mut h = Harness::new();
    h.create(EXPLICIT);
    h.pull("_INBOX.1", r#"{"batch":2}"#);
    assert!(h.take_deliveries().is_empty());
    assert_eq!(h.consumer().counters().num_waiting, 1);
    h.publish("a", 1);
    h.publish("a", 1);
    h.publish("a", 1);
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![1, 2]);
    assert_eq!(h.consumer().counters().num_waiting, 0);
    assert_eq!(h.consumer().counters().num_pending, 1);
}

#[test]
fn no_wait_with_nothing_pending_is_404() {
    let mut h = Harness::new();
    h.create(EXPLICIT);
    h.pull("_INBOX.1", r#"{"batch":10,"no_wait":true}"#);
    assert_eq!(status_lines(&h.take()), vec![(404, "No Messages".to_string())]);
    assert_eq!(h.consumer().counters().num_waiting, 0);
}

#[test]
fn no_wait_partial_batch_ends_with_404() {
    let mut h = Harness::new();
    h.publish_many("a", 3);
    h.create(EXPLICIT);
    h.pull("_INBOX.1", r#"{"batch":10,"no_wait":true,"expires":5000000000}"#);
    let effects = h.take();
    assert_eq!(stream_seqs(&deliveries(&effects)), vec![1, 2, 3]);
    assert_eq!(status_lines(&effects), vec![(404, "No Messages".to_string())]);
    assert!(matches!(effects.last(), Some(Effect::Status(_)) | Some(Effect::StateChanged)));
    assert_eq!(h.consumer().counters().num_waiting, 0);
}

#[test]
fn no_wait_with_expires_and_nothing_pending_waits_then_408() {
    let mut h = Harness::new();
    h.create(EXPLICIT);
    h.pull("_INBOX.1", r#"{"batch":4,"no_wait":true,"expires":1000000000}"#);
    assert!(h.take().iter().all(|effect| !matches!(effect, Effect::Status(_))));
    h.advance(1000 * MILLIS);
    let effects = h.take();
    assert_eq!(status_lines(&effects), vec![(408, "Request Timeout".to_string())]);
}

#[test]
fn expiry_is_408_with_pending_headers() {
    let mut h = Harness::new();
    h.publish_many("a", 2);
    h.create(EXPLICIT);
    h.pull("_INBOX.1", r#"{"batch":5,"expires":2000000000,"max_bytes":1000}"#);
    let delivered = h.take_deliveries();
    assert_eq!(delivered.len(), 2);
    h.advance(1999 * MILLIS);
    assert!(statuses(&h.take()).is_empty(), "not before expiry");
    h.advance(MILLIS);
    let status = statuses(&h.take()).pop().expect("408");
    assert_eq!((status.code, status.description.as_str()), (408, "Request Timeout"));
    assert_eq!(header(&status, "Nats-Pending-Messages"), Some("3"));
    let used: u64 = delivered.iter().map(|d| 1 + d.ack_reply().len() as u64 + 10).sum();
    assert_eq!(header(&status, "Nats-Pending-Bytes"), Some((1000 - used).to_string().as_str()));
    let mut encoded = Vec::new();
    status.encode_headers(&mut encoded);
    let text = String::from_utf8(encoded).unwrap();
    assert!(text.starts_with("NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 3\r\nNats-Pending-Bytes: "));
    assert!(text.ends_with("\r\n\r\n"));
    assert_eq!(h.consumer().counters().num_waiting, 0);
}

#[test]
fn max_waiting_is_409_unless_heartbeats_requested() {
    let mut h = Harness::new();
    h.create(r#"{"durable_name":"C","ack_policy":"explicit","max_waiting":2}"#);
    h.pull("_INBOX.1", "1");
    h.pull("_INBOX.2", "1");
    h.pull("_INBOX.3", "1");
    assert_eq!(status_lines(&h.take()), vec![(409, "Exceeded MaxWaiting".to_string())]);
    h.pull("_INBOX.4", r#"{"expires":30000000000,"idle_heartbeat":5000000000}"#);
    assert!(statuses(&h.take()).is_empty(), "suppressed when the request has heartbeats");
    assert_eq!(h.consumer().counters().num_waiting, 2);
}

#[test]
fn max_bytes_refuses_a_message_too_big_and_reports_batch_completed() {
    let mut h = Harness::new();
    h.publish("a", 10);
    h.publish("a", 500);
    h.create(EXPLICIT);
    h.pull("_INBOX.1", r#"{"batch":5,"max_bytes":200}"#);
    let effects = h.take();
    assert_eq!(stream_seqs(&deliveries(&effects)), vec![1]);
    let status = statuses(&effects).pop().expect("409");
    assert_eq!((status.code, status.description.as_str()), (409, "Message Size Exceeds MaxBytes"));
    assert_eq!(header(&status, "Nats-Pending-Messages"), Some("4"));

    h.pull("_INBOX.2", r#"{"batch":1,"max_bytes":100000}"#);
    let effects = h.take();
    assert_eq!(stream_seqs(&deliveries(&effects)), vec![2]);
    let status = statuses(&effects).pop().expect("batch completed");
    assert_eq!((status.code, status.description.as_str()), (409, "Batch Completed"));
    assert_eq!(header(&status, "Nats-Pending-Messages"), Some("0"));
    let position_status = effects.iter().position(|e| matches!(e, Effect::Status(_))).unwrap();
    let position_delivery = effects.iter().position(|e| matches!(e, Effect::Deliver(_))).unwrap();
    assert!(position_delivery < position_status, "the status follows the message");
}

#[test]
fn request_caps_use_go_texts() {
    let mut h = Harness::new();
    h.create(
        r#"{"durable_name":"C","ack_policy":"explicit","max_batch":10,"max_expires":60000000000,"max_bytes":1024}"#,
    );
    h.pull("_INBOX.1", r#"{"batch":11}"#);
    h.pull("_INBOX.1", r#"{"batch":1,"expires":61000000000}"#);
    h.pull("_INBOX.1", r#"{"batch":1,"max_bytes":2048}"#);
    h.pull("_INBOX.1", r#"{"batch":1,"idle_heartbeat":1000000000}"#);
    assert_eq!(
        status_lines(&h.take()),
        vec![
            (409, "Exceeded MaxRequestBatch of 10".to_string()),
            (409, "Exceeded MaxRequestExpires of 1m0s".to_string()),
            (409, "Exceeded MaxRequestMaxBytes of 1024".to_string()),
            (400, "Bad Request - heartbeat value too large".to_string()),
        ]
    );
}

#[test]
fn push_consumer_refuses_pulls() {
    let mut h = Harness::new();
    h.create(r#"{"deliver_subject":"deliver.here","ack_policy":"explicit"}"#);
    h.pull("_INBOX.1", "");
    assert_eq!(status_lines(&h.take()), vec![(409, "Consumer is push based".to_string())]);
}

#[test]
fn requests_are_served_round_robin() {
    let mut h = Harness::new();
    h.create(EXPLICIT);
    h.pull("_INBOX.a", r#"{"batch":2}"#);
    h.pull("_INBOX.b", r#"{"batch":2}"#);
    h.publish_many("x", 4);
    let targets: Vec<String> = h.take_deliveries().iter().map(|d| d.to.to_string()).collect();
    assert_eq!(targets, vec!["_INBOX.a", "_INBOX.b", "_INBOX.a", "_INBOX.b"]);
}

#[test]
fn request_without_interest_is_dropped_silently() {
    let mut h = Harness::new();
    h.create(EXPLICIT);
    h.pull("_INBOX.gone", r#"{"batch":5}"#);
    h.pull("_INBOX.live", r#"{"batch":5}"#);
    h.interest.gone.borrow_mut().insert("_INBOX.gone".into());
    h.publish("x", 1);
    let effects = h.take();
    assert_eq!(deliveries(&effects)[0].to.as_ref(), "_INBOX.live");
    assert!(statuses(&effects).is_empty());
    assert_eq!(h.consumer().counters().num_waiting, 1);
    h.with(|consumer, cx| consumer.on_reply_interest_lost("_INBOX.live", cx));
    assert_eq!(h.consumer().counters().num_waiting, 0);
}

#[test]
fn pull_heartbeats_while_idle() {
    let mut h = Harness::new();
    h.create(EXPLICIT);
    h.pull("_INBOX.1", r#"{"batch":5,"expires":10000000000,"idle_heartbeat":2000000000}"#);
    h.advance(1999 * MILLIS);
    assert!(statuses(&h.take()).is_empty());
    h.advance(MILLIS);
    let beat = statuses(&h.take()).pop().expect("heartbeat");
    assert_eq!((beat.code, beat.description.as_str(), beat.to.as_ref()), (100, "Idle Heartbeat", "_INBOX.1"));
    h.advance(1000 * MILLIS);
    h.publish("x", 1);
    h.take();
    h.advance(1999 * MILLIS);
    assert!(statuses(&h.take()).is_empty(), "a delivery restarts the idle clock");
    h.advance(MILLIS);
    assert_eq!(status_lines(&h.take()), vec![(100, "Idle Heartbeat".to_string())]);
}

#[test]
fn delete_answers_waiting_requests() {
    let mut h = Harness::new();
    h.create(EXPLICIT);
    h.pull("_INBOX.1", r#"{"batch":5,"expires":10000000000}"#);
    h.with(|consumer, cx| consumer.delete(cx));
    assert_eq!(status_lines(&h.take()), vec![(409, "Consumer Deleted".to_string())]);
    assert!(h.timers.is_empty(), "every timer cancelled");
}

#[test]
fn next_ack_acks_and_pulls_on_its_reply() {
    let mut h = Harness::new();
    h.publish_many("x", 3);
    h.create(EXPLICIT);
    h.pull("_INBOX.1", "1");
    let first = h.take_deliveries().pop().unwrap();
    h.ack_with(&first, "+NXT 2", Some("_INBOX.2"));
    let effects = h.take();
    assert_eq!(stream_seqs(&deliveries(&effects)), vec![2, 3]);
    assert!(deliveries(&effects).iter().all(|d| d.to.as_ref() == "_INBOX.2"));
    assert!(!effects.iter().any(|e| matches!(e, Effect::AckReply { .. })), "+NXT gets no ack reply");
    assert_eq!(h.consumer().counters().ack_floor.stream.get(), 1);
}

#[test]
fn max_ack_pending_stalls_until_acks() {
    let mut h = Harness::new();
    h.publish_many("x", 5);
    h.create(r#"{"durable_name":"C","ack_policy":"explicit","max_ack_pending":2}"#);
    h.pull("_INBOX.1", r#"{"batch":5,"no_wait":true}"#);
    let first = h.take();
    assert_eq!(stream_seqs(&deliveries(&first)), vec![1, 2]);
    assert!(statuses(&first).is_empty(), "no_wait keeps waiting while stalled on max_ack_pending");
    h.ack(&deliveries(&first)[0], "");
    let effects = h.take();
    assert_eq!(stream_seqs(&deliveries(&effects)), vec![3]);
    assert_eq!(h.consumer().counters().num_ack_pending, 2);
}

#[test]
fn update_config_keeps_position_and_applies_new_limits() {
    let mut h = Harness::new();
    h.publish_many("x", 6);
    h.create(r#"{"durable_name":"C","ack_policy":"explicit","max_ack_pending":2}"#);
    h.pull("_INBOX.1", r#"{"batch":6}"#);
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![1, 2]);
    let raised = config(r#"{"durable_name":"C","ack_policy":"explicit","max_ack_pending":4}"#);
    h.with(|consumer, cx| {
        let settings = jetcore::jetstream::consumer_settings::settings(
            &raised,
            jetcore::jetstream::policies::RetentionPolicy::Limits,
        );
        consumer.update_config(settings, cx)
    });
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![3, 4], "the waiting request gets two more");
    assert_eq!(h.consumer().counters().num_ack_pending, 4);
}

#[test]
fn negative_expires_is_already_over() {
    let mut h = Harness::new();
    h.create(EXPLICIT);
    h.pull("_INBOX.1", r#"{"batch":3,"no_wait":true,"expires":-1}"#);
    let status = statuses(&h.take()).pop().expect("408");
    assert_eq!((status.code, status.description.as_str()), (408, "Request Timeout"));
    assert_eq!(header(&status, "Nats-Pending-Messages"), Some("3"));
    assert_eq!(h.consumer().counters().num_waiting, 0);
}
