//! `$JS.API.CONSUMER.RESET.<stream>.<consumer>` (nats-server 2.14): delivery restarts at
//! a sequence or at the ack floor, pending acks are forgotten, a durable consumer keeps
//! its reset across a restart, and disallowed resets get nats-server's 10204 (replies
//! recorded from nats-server 2.15.1).

mod common;

use async_nats::jetstream::consumer::{pull, PullConsumer};
use async_nats::jetstream::Context;
use common::jetstream::{api, assert_error, connect, publish};
use common::TestServer;
use futures::StreamExt;

async fn setup(js: &Context) -> PullConsumer {
    let stream = js
        .create_stream(async_nats::jetstream::stream::Config {
            name: "RESET".into(),
            subjects: vec!["reset.>".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    for index in 0..5 {
        publish(js, &format!("reset.{index}"), "x").await;
    }
    let config = pull::Config { durable_name: Some("c".into()), ..Default::default() };
    stream.create_consumer(config).await.unwrap()
}

/// The stream sequences of the next `count` messages, acknowledging the first only.
async fn fetch(consumer: &PullConsumer, count: usize) -> Vec<u64> {
    let mut messages = consumer.fetch().max_messages(count).messages().await.unwrap();
    let mut seqs = Vec::new();
    while let Some(message) = messages.next().await {
        let message = message.unwrap();
        seqs.push(message.info().unwrap().stream_sequence);
        if seqs.len() == 1 {
            message.ack().await.unwrap();
        }
    }
    seqs
}

#[tokio::test]
async fn a_reset_restarts_delivery_at_a_sequence_or_the_ack_floor() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let (client, js) = connect(&server).await;
    let consumer = setup(&js).await;
    assert_eq!(fetch(&consumer, 3).await, vec![1, 2, 3]);

    // To the ack floor (1): 2 and 3 were pending and are delivered again, as new.
    let reply = api(&client, "CONSUMER.RESET.RESET.c", "").await;
    assert_eq!(reply["type"], "io.nats.jetstream.api.v1.consumer_reset_response");
    assert_eq!(reply["reset_seq"], 2, "{reply}");
    assert_eq!(reply["delivered"]["stream_seq"], 1);
    assert_eq!(reply["delivered"]["consumer_seq"], 0);
    assert_eq!((reply["num_ack_pending"].as_u64(), reply["num_pending"].as_u64()), (Some(0), Some(4)));
    assert_eq!(fetch(&consumer, 1).await, vec![2]);

    // To a sequence.
    let reply = api(&client, "CONSUMER.RESET.RESET.c", r#"{"seq":4}"#).await;
    assert_eq!((reply["reset_seq"].as_u64(), reply["ack_floor"]["stream_seq"].as_u64()), (Some(4), Some(3)));

    // An answered reset of a durable consumer survives a kill -9 at once.
    drop((client, js, consumer));
    server.restart();
    let (_client, js) = connect(&server).await;
    let consumer: PullConsumer = js.get_stream("RESET").await.unwrap().get_consumer("c").await.unwrap();
    assert_eq!(fetch(&consumer, 5).await, vec![4, 5]);
}

#[tokio::test]
async fn disallowed_resets_get_nats_server_errors() {
    let server = TestServer::start(&[]);
    let (client, js) = connect(&server).await;
    setup(&js).await;
    let by_sequence = r#"{"stream_name":"RESET","config":{"durable_name":"p","deliver_policy":"by_start_sequence","opt_start_seq":3}}"#;
    assert!(api(&client, "CONSUMER.CREATE.RESET.p", by_sequence).await.get("error").is_none());
    let below = api(&client, "CONSUMER.RESET.RESET.p", r#"{"seq":1}"#).await;
    assert_error(&below, 400, 10204, "invalid reset: below start seq");
    assert_eq!(below["reset_seq"], 0, "Go writes the zero reset_seq after the error");
    assert_eq!(api(&client, "CONSUMER.RESET.RESET.p", r#"{"seq":4}"#).await["reset_seq"], 4);

    let last = r#"{"stream_name":"RESET","config":{"durable_name":"l","deliver_policy":"last"}}"#;
    assert!(api(&client, "CONSUMER.CREATE.RESET.l", last).await.get("error").is_none());
    assert_error(
        &api(&client, "CONSUMER.RESET.RESET.l", r#"{"seq":2}"#).await,
        400,
        10204,
        "invalid reset: not allowed",
    );
    // Without a sequence every policy may go back to its ack floor (4 for `last` here).
    assert_eq!(api(&client, "CONSUMER.RESET.RESET.l", "{}").await["reset_seq"], 5);

    // nats-server 2.15.1 leaves these unanswered; jetcore answers with the usual errors.
    assert_error(&api(&client, "CONSUMER.RESET.RESET.nope", "").await, 404, 10014, "consumer not found");
    assert_error(&api(&client, "CONSUMER.RESET.NOPE.c", "").await, 404, 10059, "stream not found");
}
