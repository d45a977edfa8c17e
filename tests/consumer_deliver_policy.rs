//! Where consumers start (deliver policies), filters, num_pending, replay original.

#[path = "consumer_fixture.rs"]
mod fixture;

use fixture::*;

fn stream_fixture() -> Harness {
    let mut h = Harness::new();
    for subject in ["a.1", "b.1", "a.2", "a.1", "b.2", "a.2"] {
        h.publish(subject, 4);
    }
    h
}

fn first_pull(h: &mut Harness, json: &str) -> Vec<u64> {
    h.create(json);
    h.pull("_INBOX.p", r#"{"batch":100,"no_wait":true}"#);
    stream_seqs(&h.take_deliveries())
}

#[test]
fn deliver_policies_pick_their_start() {
    let cases = [
        (r#"{"durable_name":"C","ack_policy":"explicit"}"#, vec![1, 2, 3, 4, 5, 6]),
        (r#"{"durable_name":"C","ack_policy":"explicit","deliver_policy":"last"}"#, vec![6]),
        (r#"{"durable_name":"C","ack_policy":"explicit","deliver_policy":"last","filter_subject":"b.*"}"#, vec![5]),
        (r#"{"durable_name":"C","ack_policy":"explicit","deliver_policy":"new"}"#, vec![]),
        (
            r#"{"durable_name":"C","ack_policy":"explicit","deliver_policy":"by_start_sequence","opt_start_seq":4}"#,
            vec![4, 5, 6],
        ),
        (
            r#"{"durable_name":"C","ack_policy":"explicit","deliver_policy":"last_per_subject","filter_subject":"a.*"}"#,
            vec![4, 6],
        ),
        (r#"{"durable_name":"C","ack_policy":"explicit","filter_subjects":["b.1","a.2"]}"#, vec![2, 3, 6]),
    ];
    for (json, expected) in cases {
        let mut h = stream_fixture();
        assert_eq!(first_pull(&mut h, json), expected, "{json}");
    }
}

#[test]
fn by_start_time_uses_the_stream_clock() {
    let mut h = stream_fixture();
    let third = h.stream.messages[2].timestamp_nanos;
    let time = jetcore::jetstream::Timestamp::from_unix_nanos(third);
    let json = format!(
        r#"{{"durable_name":"C","ack_policy":"explicit","deliver_policy":"by_start_time","opt_start_time":"{time}"}}"#
    );
    assert_eq!(first_pull(&mut h, &json), vec![3, 4, 5, 6]);
}

#[test]
fn num_pending_is_right_at_creation_and_follows_publishes() {
    let mut h = stream_fixture();
    h.create(r#"{"durable_name":"C","ack_policy":"explicit","filter_subject":"a.*"}"#);
    assert_eq!(h.consumer().counters().num_pending, 4);
    h.publish("a.9", 1);
    h.publish("b.9", 1);
    assert_eq!(h.consumer().counters().num_pending, 5);
    h.pull("_INBOX.p", "2");
    assert_eq!(h.consumer().counters().num_pending, 3);
    let mut h = stream_fixture();
    h.create(
        r#"{"durable_name":"L","ack_policy":"explicit","deliver_policy":"last_per_subject","filter_subject":">"}"#,
    );
    assert_eq!(h.consumer().counters().num_pending, 4, "one per subject");
}

#[test]
fn messages_removed_from_the_stream_are_settled_and_skipped() {
    let mut h = stream_fixture();
    h.create(r#"{"durable_name":"C","ack_policy":"explicit","ack_wait":1000000000}"#);
    h.pull("_INBOX.p", "2");
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![1, 2]);
    h.stream.delete(1);
    h.stream.delete(2);
    h.stream.delete(3);
    h.with(|consumer, cx| consumer.on_stream_removed(cx));
    let counters = h.consumer().counters();
    assert_eq!(
        (counters.num_ack_pending, counters.ack_floor.stream.get(), counters.num_pending),
        (0, 2, 3),
        "a delete (unlike a purge) leaves the ack floor at the delivered position, as nats-server"
    );
    h.pull("_INBOX.p", "10");
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![4, 5, 6]);
}

#[test]
fn replay_original_spaces_messages_by_their_timestamps() {
    let mut h = Harness::new();
    for gap_millis in [0, 100, 300] {
        h.clock_nanos += gap_millis * MILLIS;
        h.publish("r", 1);
    }
    // publish adds 1 ms per message: gaps are 101 ms and 301 ms.
    h.create(r#"{"durable_name":"C","ack_policy":"none","replay_policy":"original"}"#);
    h.pull("_INBOX.p", "10");
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![1]);
    h.advance(100 * MILLIS);
    assert!(h.take_deliveries().is_empty());
    h.advance(MILLIS);
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![2]);
    h.advance(300 * MILLIS);
    assert!(h.take_deliveries().is_empty());
    h.advance(MILLIS);
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![3]);
    h.publish("r", 1);
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![4], "messages after creation go at once");
}

#[test]
fn start_sequence_in_the_future_waits_for_it() {
    let mut h = stream_fixture();
    let json = r#"{"durable_name":"C","ack_policy":"explicit","deliver_policy":"by_start_sequence","opt_start_seq":9}"#;
    assert_eq!(first_pull(&mut h, json), Vec::<u64>::new());
    let counters = h.consumer().counters();
    assert_eq!(
        (counters.delivered.stream.get(), counters.ack_floor.stream.get()),
        (8, 8),
        "the position before the start, past the stream's end (nats-server 2.15.1)"
    );
    assert_eq!(counters.delivered.consumer.get(), 0, "nothing delivered");
    h.pull("_INBOX.p", "5");
    h.publish_many("a.1", 3);
    assert_eq!(stream_seqs(&h.take_deliveries()), vec![9]);
}
