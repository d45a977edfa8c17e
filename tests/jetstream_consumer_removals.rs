//! What a consumer reports after the stream removed messages it had delivered, as
//! nats-server 2.15.1 does (recorded with the same requests): limits and deletes leave
//! the delivered position where it was and bring the ack floor up to it; a purge moves
//! both up to the purge's first sequence - 1.

mod common;

use common::jetstream::{api, connect, publish_raw, REPLY_TIMEOUT};
use common::TestServer;
use futures::StreamExt;
use serde_json::Value;

async fn stream_with_messages(client: &async_nats::Client, messages: usize) {
    let created = api(client, "STREAM.CREATE.S", r#"{"name":"S","subjects":["FOO.>"]}"#).await;
    assert!(created.get("error").is_none(), "{created}");
    for _ in 0..messages {
        let ack = publish_raw(client, "FOO.A", &[], "x").await;
        assert!(ack.get("error").is_none(), "{ack}");
    }
}

/// Creates durable `name` and pulls `count` messages without acking them; their ack
/// subjects.
async fn pull_unacked(client: &async_nats::Client, name: &str, count: usize) -> Vec<String> {
    let body = format!(r#"{{"stream_name":"S","config":{{"durable_name":"{name}","ack_policy":"explicit"}}}}"#);
    let created = api(client, &format!("CONSUMER.CREATE.S.{name}"), &body).await;
    assert!(created.get("error").is_none(), "{created}");
    let inbox = client.new_inbox();
    let mut messages = client.subscribe(inbox.clone()).await.unwrap();
    let pull = format!(r#"{{"batch":{count}}}"#);
    client.publish_with_reply(format!("$JS.API.CONSUMER.MSG.NEXT.S.{name}"), inbox, pull.into()).await.unwrap();
    let mut acks = Vec::new();
    while acks.len() < count {
        let message = tokio::time::timeout(REPLY_TIMEOUT, messages.next()).await.expect("a message").unwrap();
        acks.push(message.reply.expect("ack subject").to_string());
    }
    acks
}

fn positions(info: &Value) -> (u64, u64, u64, u64) {
    let seq = |position: &str, field: &str| info[position][field].as_u64().unwrap();
    (
        seq("delivered", "stream_seq"),
        seq("delivered", "consumer_seq"),
        seq("ack_floor", "stream_seq"),
        seq("ack_floor", "consumer_seq"),
    )
}

#[tokio::test]
async fn shrinking_max_msgs_keeps_the_delivered_position() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 100).await;
    let acks = pull_unacked(&client, "P", 50).await;
    let update = api(&client, "STREAM.UPDATE.S", r#"{"name":"S","subjects":["FOO.>"],"max_msgs":1}"#).await;
    assert_eq!(update["state"]["first_seq"], 100, "{update}");
    for ack in acks {
        client.request(ack, "".into()).await.expect("double ack answered");
    }
    publish_raw(&client, "FOO.A", &[], "y").await;
    let info = api(&client, "CONSUMER.INFO.S.P", "").await;
    assert_eq!(positions(&info), (50, 50, 50, 50), "{info}");
    assert_eq!(info["num_ack_pending"], 0, "{info}");
}

#[tokio::test]
async fn deleting_delivered_messages_keeps_the_delivered_position() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 6).await;
    pull_unacked(&client, "Q", 2).await;
    for seq in 1..=3 {
        let deleted = api(&client, "STREAM.MSG.DELETE.S", &format!(r#"{{"seq":{seq}}}"#)).await;
        assert_eq!(deleted["success"], true, "{deleted}");
    }
    let info = api(&client, "CONSUMER.INFO.S.Q", "").await;
    assert_eq!(positions(&info), (2, 2, 2, 2), "{info}");
    assert_eq!((info["num_pending"].as_u64(), info["num_ack_pending"].as_u64()), (Some(3), Some(0)), "{info}");
}

#[tokio::test]
async fn a_purge_moves_both_positions_to_its_first_sequence() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 20).await;
    pull_unacked(&client, "R", 5).await;
    let purged = api(&client, "STREAM.PURGE.S", r#"{"keep":3}"#).await;
    assert_eq!(purged["purged"], 17, "{purged}");
    let info = api(&client, "CONSUMER.INFO.S.R", "").await;
    assert_eq!(positions(&info), (17, 5, 17, 5), "{info}");
    assert_eq!((info["num_pending"].as_u64(), info["num_ack_pending"].as_u64()), (Some(3), Some(0)), "{info}");
}
