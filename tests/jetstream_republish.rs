//! A stream's `republish`: once stored, a copy goes to the mapped subject with
//! nats-server's headers, to subscribers on every shard and into streams that capture it;
//! bad configs get nats-server's errors (texts recorded from nats-server 2.15.1).

mod common;

use async_nats::{Client, HeaderMap, Message, Subscriber};
use common::jetstream::{api, assert_error, connect, REPLY_TIMEOUT};
use common::{await_interest, TestServer};
use futures::StreamExt;

fn server() -> TestServer {
    TestServer::start(&["--shards", "2"])
}

async fn create(client: &Client, name: &str, config: &str) {
    let reply = api(client, &format!("STREAM.CREATE.{name}"), config).await;
    assert!(reply.get("error").is_none(), "{reply}");
}

async fn next(subscriber: &mut Subscriber) -> Message {
    tokio::time::timeout(REPLY_TIMEOUT, subscriber.next())
        .await
        .expect("a republished message in time")
        .expect("subscription open")
}

fn header<'a>(message: &'a Message, name: &str) -> Option<&'a str> {
    message.headers.as_ref()?.get(name).map(|value| value.as_str())
}

/// Several connections, so some land on a shard that does not own the stream. Each
/// client is returned beside its subscription to keep the connection open.
async fn subscribers(server: &TestServer, publisher: &Client, subject: &str) -> Vec<(Client, Subscriber)> {
    let mut all = Vec::new();
    for _ in 0..4 {
        let (client, _) = connect(server).await;
        let subscriber = client.subscribe(subject.to_string()).await.unwrap();
        await_interest(&client, publisher).await;
        all.push((client, subscriber));
    }
    all
}

#[tokio::test]
async fn republished_copies_carry_nats_server_headers_to_every_shard() {
    let server = server();
    let (client, _js) = connect(&server).await;
    create(&client, "R", r#"{"name":"R","subjects":["in.>"],"republish":{"src":"in.*","dest":"rp.{{wildcard(1)}}"}}"#)
        .await;
    let mut subscribers = subscribers(&server, &client, "rp.>").await;
    let mut headers = HeaderMap::new();
    headers.insert("Foo", "bar");
    for (subject, payload) in [("in.a", "one"), ("in.a.b", "not matched"), ("in.a", "three")] {
        let ack = client.request_with_headers(subject, headers.clone(), payload.into()).await.unwrap();
        assert!(std::str::from_utf8(&ack.payload).unwrap().contains("\"seq\""));
    }
    for (_, subscriber) in &mut subscribers {
        let first = next(subscriber).await;
        assert_eq!(first.subject.as_str(), "rp.a");
        assert_eq!(&first.payload[..], b"one");
        assert_eq!(header(&first, "Foo"), Some("bar"));
        assert_eq!(header(&first, "Nats-Stream"), Some("R"));
        assert_eq!(header(&first, "Nats-Subject"), Some("in.a"));
        assert_eq!(header(&first, "Nats-Sequence"), Some("1"));
        assert_eq!(header(&first, "Nats-Last-Sequence"), Some("0"));
        assert!(header(&first, "Nats-Time-Stamp").is_some_and(|stamp| stamp.ends_with('Z')));
        assert_eq!(header(&first, "Nats-Msg-Size"), None);
        // `in.a.b` does not match `in.*`: the next copy is sequence 3, after 1 on `in.a`.
        let second = next(subscriber).await;
        assert_eq!((header(&second, "Nats-Sequence"), header(&second, "Nats-Last-Sequence")), (Some("3"), Some("1")));
    }
}

#[tokio::test]
async fn headers_only_sends_the_size_instead_of_the_payload() {
    let server = server();
    let (client, _js) = connect(&server).await;
    create(&client, "H", r#"{"name":"H","subjects":["h.>"],"republish":{"dest":"copy.>","headers_only":true}}"#).await;
    let mut subscribers = subscribers(&server, &client, "copy.>").await;
    client.request("h.q", "0123456789".into()).await.unwrap();
    for (_, subscriber) in &mut subscribers {
        let message = next(subscriber).await;
        assert_eq!(message.subject.as_str(), "copy.h.q");
        assert!(message.payload.is_empty());
        assert_eq!(header(&message, "Nats-Msg-Size"), Some("10"));
    }
}

/// async-nats's `republish_headers_handling`: a stream republishes into the subjects of
/// a KV bucket's stream, which stores the copies; once the original is acknowledged its
/// copy can be read (the pub ack waits for the capturing stream).
#[tokio::test]
async fn copies_are_stored_by_a_stream_that_captures_them_before_the_ack() {
    let server = server();
    let (client, _js) = connect(&server).await;
    create(&client, "SRC", r#"{"name":"SRC","subjects":["A.>","B.>"],"republish":{"src":"A.>","dest":"$KV.test.>"}}"#)
        .await;
    create(&client, "KV_test", r#"{"name":"KV_test","subjects":["$KV.test.>"]}"#).await;
    for (subject, revision) in [("B.foo", None), ("A.orange", Some(1)), ("A.tomato", Some(2))] {
        client.request(subject, "x".into()).await.unwrap();
        let key = subject.trim_start_matches(['A', 'B', '.']);
        let entry = api(&client, "STREAM.MSG.GET.KV_test", &format!(r#"{{"last_by_subj":"$KV.test.{key}"}}"#)).await;
        assert_eq!(entry["message"]["seq"].as_u64(), revision, "{subject}: {entry}");
    }
    assert_eq!(api(&client, "STREAM.INFO.KV_test", "").await["state"]["messages"], 2);
}

/// Republish matches and reports the subject as stored, after the subject transform.
#[tokio::test]
async fn republish_sees_the_transformed_subject() {
    let server = server();
    let (client, _js) = connect(&server).await;
    let config = r#"{"name":"T","subjects":["c.*"],"subject_transform":{"src":"c.*","dest":"t.$1"},
        "republish":{"src":"t.*","dest":"o.$1"}}"#;
    create(&client, "T", config).await;
    let mut subscribers = subscribers(&server, &client, "o.>").await;
    client.request("c.a", "v".into()).await.unwrap();
    let message = next(&mut subscribers[0].1).await;
    assert_eq!((message.subject.as_str(), header(&message, "Nats-Subject")), ("o.a", Some("t.a")));
}

#[tokio::test]
async fn bad_republish_configs_get_nats_server_errors() {
    let server = server();
    let (client, _js) = connect(&server).await;
    let cases = [
        (
            r#"{"name":"C","subjects":["c.>"],"republish":{"src":">","dest":"c.x"}}"#,
            "stream configuration for republish destination forms a cycle",
        ),
        (
            r#"{"name":"C","subjects":["c.*"],"republish":{"src":"c.*","dest":"o.$2"}}"#,
            "stream configuration for republish with transform from 'c.*' to 'o.$2' not valid",
        ),
        (
            r#"{"name":"C","subjects":["c.*"],"republish":{"src":"c.*","dest":"o.*"}}"#,
            "stream configuration for republish with transform from 'c.*' to 'o.*' not valid",
        ),
        // `>` to `>` beside a transform of the only subject republishes the transform's
        // destination, which here is no valid transform source.
        (
            r#"{"name":"C","subjects":["c.*"],"subject_transform":{"src":"c.*","dest":"t.$1"},"republish":{"src":">","dest":">"}}"#,
            "stream configuration for republish with transform from 't.$1' to 't.$1' not valid",
        ),
    ];
    for (config, description) in cases {
        assert_error(&api(&client, "STREAM.CREATE.C", config).await, 500, 10052, description);
    }
    let reply = api(&client, "STREAM.CREATE.E", r#"{"name":"E","subjects":["e.*"],"republish":{"dest":"o.>"}}"#).await;
    assert_eq!(reply["config"]["republish"]["src"], ">", "an empty source reads as all: {reply}");
}
