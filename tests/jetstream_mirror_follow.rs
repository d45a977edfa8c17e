//! A mirror follows a live origin: it holds the origin's messages under the origin's
//! sequences (deleted ones stay gaps) and timestamps, follows new publishes, takes no
//! publishes of its own, and reports its origin in stream info. A mirror created
//! before its origin shows the missing origin and starts once the origin appears.

mod common;

use std::time::{Duration, Instant};

use async_nats::jetstream::Context;
use common::jetstream::{api, connect, publish, stream_config};
use common::TestServer;
use serde_json::Value;

/// Polls stream info until `done` holds (or panics after 10 s with the last info).
async fn info_until(client: &async_nats::Client, stream: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = api(client, &format!("STREAM.INFO.{stream}"), "").await;
        if done(&info) {
            return info;
        }
        assert!(Instant::now() < deadline, "{stream} never got there: {info}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn message(js: &Context, stream: &str, seq: u64) -> Option<async_nats::jetstream::message::StreamMessage> {
    js.get_stream(stream).await.unwrap().get_raw_message(seq).await.ok()
}

#[tokio::test]
async fn a_mirror_holds_the_origins_sequences_and_follows_new_messages() {
    // Two shards: the mirror and its origin may live on either.
    let server = TestServer::start(&["--shards", "2"]);
    let (client, js) = connect(&server).await;
    js.create_stream(stream_config("ORIGIN", &["orders.*"])).await.unwrap();
    for index in 1..=5 {
        publish(&js, &format!("orders.{index}"), &format!("order {index}")).await;
    }
    let deleted = api(&client, "STREAM.MSG.DELETE.ORIGIN", r#"{"seq":2}"#).await;
    assert_eq!(deleted["success"], true, "{deleted}");

    let created = api(&client, "STREAM.CREATE.COPY", r#"{"name":"COPY","mirror":{"name":"ORIGIN"}}"#).await;
    assert_eq!(created["mirror"]["name"], "ORIGIN", "{created}");
    let info = info_until(&client, "COPY", |info| info["state"]["last_seq"] == 5).await;
    assert_eq!(info["state"]["messages"], 4, "{info}");
    assert_eq!(info["state"]["num_deleted"], 1, "the origin's gap stays a gap: {info}");
    assert_eq!(info["mirror"]["lag"], 0, "{info}");
    assert!(info["mirror"]["active"].as_i64().unwrap() >= 0, "{info}");
    assert!(info["mirror"]["error"].is_null(), "{info}");
    for seq in [1, 3, 4, 5] {
        let original = message(&js, "ORIGIN", seq).await.unwrap();
        let copy = message(&js, "COPY", seq).await.unwrap_or_else(|| panic!("COPY seq {seq}"));
        assert_eq!((copy.subject.as_str(), &copy.payload), (original.subject.as_str(), &original.payload));
        assert_eq!(copy.time, original.time, "a mirror keeps the origin's timestamp");
    }
    assert!(message(&js, "COPY", 2).await.is_none());

    // Live: a new publish reaches the mirror under the same sequence.
    let ack = publish(&js, "orders.6", "order 6").await;
    assert_eq!(ack.sequence, 6);
    info_until(&client, "COPY", |info| info["state"]["last_seq"] == 6).await;
    assert_eq!(message(&js, "COPY", 6).await.unwrap().payload, "order 6");

    // A mirror captures nothing: its name is not a subject of it (no responders).
    let reply = client.request("COPY", "direct".into()).await;
    assert!(reply.is_err(), "a publish to the mirror's name was answered: {reply:?}");
    let info = api(&client, "STREAM.INFO.COPY", "").await;
    assert_eq!(info["state"]["messages"], 5, "{info}");
}

#[tokio::test]
async fn a_mirror_created_before_its_origin_starts_when_the_origin_appears() {
    let server = TestServer::start(&[]);
    let (client, js) = connect(&server).await;
    let created =
        api(&client, "STREAM.CREATE.EARLY", r#"{"name":"EARLY","mirror":{"name":"LATE","opt_start_seq":2}}"#).await;
    assert!(created["error"].is_null(), "{created}");
    let waiting = info_until(&client, "EARLY", |info| !info["mirror"]["error"].is_null()).await;
    assert_eq!(waiting["mirror"]["error"]["err_code"], 10059, "{waiting}");

    js.create_stream(stream_config("LATE", &["late"])).await.unwrap();
    for index in 1..=3 {
        publish(&js, "late", &format!("late {index}")).await;
    }
    let info = info_until(&client, "EARLY", |info| info["state"]["last_seq"] == 3).await;
    assert_eq!(info["state"]["first_seq"], 2, "opt_start_seq skips the first: {info}");
    assert_eq!(info["state"]["messages"], 2, "{info}");
    assert!(info["mirror"]["error"].is_null(), "{info}");

    // The origin goes away: the mirror keeps what it has and says so; a new origin of
    // the same name is followed from where the mirror is.
    js.delete_stream("LATE").await.unwrap();
    let gone = info_until(&client, "EARLY", |info| !info["mirror"]["error"].is_null()).await;
    assert_eq!(gone["state"]["messages"], 2, "{gone}");
    js.create_stream(stream_config("LATE", &["late"])).await.unwrap();
    for index in 1..=4 {
        publish(&js, "late", &format!("again {index}")).await;
    }
    let info = info_until(&client, "EARLY", |info| info["state"]["last_seq"] == 4).await;
    assert_eq!(message(&js, "EARLY", 4).await.unwrap().payload, "again 4");
    assert_eq!(info["state"]["messages"], 3, "{info}");
}
