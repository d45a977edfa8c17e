//! Interest retention through async-nats, with the figures nats-server 2.15 gives for the
//! same steps: a publish nobody is interested in is acknowledged but not kept (and its
//! sequence is never reused, even after kill -9); a message goes once every consumer whose
//! filter matches it has acked it; ack none settles on delivery; deleting a consumer
//! drops what only it still held, and deleting the last one empties the stream.

mod common;

use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy, stream::RetentionPolicy, Context};
use common::jetstream::{publish, stream_config};
use common::TestServer;
use futures::StreamExt;

/// (messages, first_seq, last_seq, num_deleted)
async fn state(js: &Context, name: &str) -> (u64, u64, u64, u64) {
    let info = js.get_stream(name).await.unwrap().info().await.unwrap().clone();
    let state = info.state;
    (state.messages, state.first_sequence, state.last_sequence, state.deleted_count.unwrap_or(0) as u64)
}

async fn pull_consumer(js: &Context, stream: &str, name: &str, ack: AckPolicy, filter: &str) -> pull::Stream {
    let stream = js.get_stream(stream).await.unwrap();
    let consumer: jetstream::consumer::PullConsumer = stream
        .create_consumer(pull::Config {
            durable_name: Some(name.into()),
            ack_policy: ack,
            filter_subject: filter.into(),
            ..Default::default()
        })
        .await
        .unwrap();
    consumer.stream().max_messages_per_batch(10).messages().await.unwrap()
}

async fn next_seqs(messages: &mut pull::Stream, count: usize) -> Vec<jetstream::Message> {
    let mut got = Vec::new();
    while got.len() < count {
        let message = tokio::time::timeout(Duration::from_secs(5), messages.next())
            .await
            .expect("a message in time")
            .expect("stream open")
            .expect("a message");
        got.push(message);
    }
    got
}

fn stream_seq(message: &jetstream::Message) -> u64 {
    message.info().unwrap().stream_sequence
}

async fn interest_stream(server: &TestServer, name: &str) -> Context {
    let js = jetstream::new(async_nats::connect(server.url()).await.unwrap());
    let config = jetstream::stream::Config {
        retention: RetentionPolicy::Interest,
        ..stream_config(name, &[&format!("{name}.>")])
    };
    js.create_stream(config).await.unwrap();
    js
}

#[tokio::test]
async fn without_interest_a_publish_is_acked_but_not_kept_and_its_sequence_survives_kill_9() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let js = interest_stream(&server, "I0").await;
    for expected in 1..=3 {
        assert_eq!(publish(&js, "I0.a", "x").await.sequence, expected);
    }
    assert_eq!(state(&js, "I0").await, (0, 4, 3, 0), "nothing kept, the sequence moved on");

    server.kill();
    server.restart();
    let js = jetstream::new(async_nats::connect(server.url()).await.unwrap());
    assert_eq!(state(&js, "I0").await, (0, 4, 3, 0), "skips are durable");
    let _messages = pull_consumer(&js, "I0", "A", AckPolicy::Explicit, "").await;
    assert_eq!(publish(&js, "I0.a", "kept").await.sequence, 4, "no sequence reused");
    assert_eq!(state(&js, "I0").await, (1, 4, 4, 0));
    // A subject no consumer's filter matches is skipped too.
    let _filtered = pull_consumer(&js, "I0", "B", AckPolicy::Explicit, "I0.b").await;
    js.delete_consumer_from_stream("A", "I0").await.unwrap();
    assert_eq!(state(&js, "I0").await.0, 0, "A held the only copy");
    assert_eq!(publish(&js, "I0.c", "nobody").await.sequence, 5);
    assert_eq!(publish(&js, "I0.b", "b").await.sequence, 6);
    assert_eq!(state(&js, "I0").await, (1, 6, 6, 0));
}

#[tokio::test]
async fn a_message_goes_once_every_interested_consumer_acked_it() {
    let server = TestServer::start(&["--shards", "2"]);
    let js = interest_stream(&server, "I1").await;
    let mut all = pull_consumer(&js, "I1", "A", AckPolicy::Explicit, "").await;
    let mut only_b = pull_consumer(&js, "I1", "B", AckPolicy::Explicit, "I1.b").await;
    for subject in ["I1.a", "I1.b", "I1.c", "I1.b"] {
        publish(&js, subject, "y").await;
    }
    assert_eq!(state(&js, "I1").await, (4, 1, 4, 0));

    let got = next_seqs(&mut all, 4).await;
    assert_eq!(got.iter().map(stream_seq).collect::<Vec<_>>(), [1, 2, 3, 4]);
    for message in &got {
        message.double_ack().await.unwrap();
    }
    assert_eq!(state(&js, "I1").await, (2, 2, 4, 1), "B still needs 2 and 4");

    let got = next_seqs(&mut only_b, 2).await;
    assert_eq!(got.iter().map(stream_seq).collect::<Vec<_>>(), [2, 4]);
    got[0].double_ack().await.unwrap();
    assert_eq!(state(&js, "I1").await, (1, 4, 4, 0));

    // Deleting A drops what only A still needed (5); B's unacked 4 and 6 stay.
    publish(&js, "I1.z", "z").await;
    publish(&js, "I1.b", "b2").await;
    assert_eq!(state(&js, "I1").await, (3, 4, 6, 0));
    drop(all);
    js.delete_consumer_from_stream("A", "I1").await.unwrap();
    assert_eq!(state(&js, "I1").await, (2, 4, 6, 1));

    // Ack none settles on delivery, but B's claim keeps 4, 6 and 7.
    let mut none = pull_consumer(&js, "I1", "N", AckPolicy::None, "").await;
    publish(&js, "I1.b", "n1").await;
    let got = next_seqs(&mut none, 3).await;
    assert_eq!(got.iter().map(stream_seq).collect::<Vec<_>>(), [4, 6, 7]);
    assert_eq!(state(&js, "I1").await, (3, 4, 7, 1));
    publish(&js, "I1.q", "only N").await;
    let got = next_seqs(&mut none, 1).await;
    assert_eq!(stream_seq(&got[0]), 8);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(state(&js, "I1").await, (3, 4, 8, 2), "ack none removed what only it wanted");

    drop((none, only_b));
    js.delete_consumer_from_stream("N", "I1").await.unwrap();
    js.delete_consumer_from_stream("B", "I1").await.unwrap();
    assert_eq!(state(&js, "I1").await, (0, 9, 8, 0), "no consumer left: purged");
}
