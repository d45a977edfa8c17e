//! Atomic batch publish (`allow_atomic`, `Nats-Batch-*` headers) through the wire, with
//! the replies nats-server 2.15.1 gave to the same publishes: a batch is stored all or
//! nothing and acknowledged once on commit; a bad batch (gap, failed expectation,
//! duplicate id) stores nothing and leaves the stream as it was; a committed batch
//! survives kill -9.

mod common;

use async_nats::{Client, HeaderMap};
use common::jetstream::{api, assert_error, connect, publish_raw};
use common::TestServer;
use serde_json::Value;

/// Publishes one batch message with a reply inbox; the reply's JSON, `None` when empty.
async fn batch_publish(
    client: &Client,
    subject: &str,
    id: &str,
    seq: u64,
    commit: Option<&str>,
    extra: &[(&str, &str)],
) -> Option<Value> {
    let mut headers = HeaderMap::new();
    headers.insert("Nats-Batch-Id", id);
    headers.insert("Nats-Batch-Sequence", seq.to_string().as_str());
    if let Some(commit) = commit {
        headers.insert("Nats-Batch-Commit", commit);
    }
    for (name, value) in extra {
        headers.insert(*name, *value);
    }
    let reply = client
        .request_with_headers(subject.to_string(), headers, format!("{id}-{seq}").into())
        .await
        .expect("batch reply");
    (!reply.payload.is_empty()).then(|| serde_json::from_slice(&reply.payload).expect("JSON reply"))
}

async fn state(client: &Client, stream: &str) -> (u64, u64) {
    let state = api(client, &format!("STREAM.INFO.{stream}"), "").await["state"].clone();
    (state["messages"].as_u64().unwrap(), state["last_seq"].as_u64().unwrap())
}

#[tokio::test]
async fn a_batch_is_stored_whole_on_commit_and_survives_kill_9() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let (client, _) = connect(&server).await;
    let off = api(&client, "STREAM.CREATE.OFF", r#"{"name":"OFF","subjects":["off.>"]}"#).await;
    assert!(off["error"].is_null(), "{off}");
    let disabled = batch_publish(&client, "off.a", "b", 1, None, &[]).await.expect("an error");
    assert_error(&disabled, 400, 10174, "atomic publish is disabled");

    api(&client, "STREAM.CREATE.B", r#"{"name":"B","subjects":["b.>"],"allow_atomic":true}"#).await;
    assert_eq!(batch_publish(&client, "b.1", "one", 1, None, &[]).await, None);
    assert_eq!(batch_publish(&client, "b.2", "one", 2, None, &[]).await, None);
    // Nothing is visible before the commit.
    assert_eq!(state(&client, "B").await, (0, 0));
    let ack = batch_publish(&client, "b.3", "one", 3, Some("1"), &[]).await.expect("pub ack");
    assert_eq!(ack, serde_json::json!({"stream":"B","seq":3,"batch":"one","count":3}));

    drop(client);
    server.restart();
    let (client, _) = connect(&server).await;
    assert_eq!(state(&client, "B").await, (3, 3));
    let last = api(&client, "STREAM.MSG.GET.B", r#"{"seq":3}"#).await;
    assert_eq!(last["message"]["subject"], "b.3");
}

#[tokio::test]
async fn a_bad_batch_stores_nothing() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    api(&client, "STREAM.CREATE.B", r#"{"name":"B","subjects":["b.>"],"allow_atomic":true}"#).await;
    publish_raw(&client, "b.0", &[("Nats-Msg-Id", "seen")], "before").await;

    // A gap abandons the batch; its commit then finds nothing.
    assert_eq!(batch_publish(&client, "b.1", "gap", 1, None, &[]).await, None);
    let gap = batch_publish(&client, "b.1", "gap", 3, None, &[]).await.expect("an error");
    assert_error(&gap, 400, 10176, "atomic publish batch is incomplete");
    let after = batch_publish(&client, "b.1", "gap", 4, Some("1"), &[]).await.expect("an error");
    assert_error(&after, 400, 10176, "atomic publish batch is incomplete");

    // An expectation that fails on the third message: the first two are not stored.
    assert_eq!(batch_publish(&client, "b.1", "exp", 1, None, &[]).await, None);
    assert_eq!(batch_publish(&client, "b.2", "exp", 2, None, &[]).await, None);
    let failed = batch_publish(&client, "b.3", "exp", 3, Some("1"), &[("Nats-Expected-Last-Sequence", "1")]).await;
    assert_error(&failed.expect("an error"), 400, 10071, "wrong last sequence: 3");

    // A message id seen before fails the batch at its commit.
    assert_eq!(batch_publish(&client, "b.1", "dup", 1, None, &[("Nats-Msg-Id", "seen")]).await, None);
    let duplicate = batch_publish(&client, "b.2", "dup", 2, Some("1"), &[]).await.expect("an error");
    assert_error(&duplicate, 400, 10201, "atomic publish batch contains duplicate message id");

    // Unsupported headers, bad commit values and long ids are refused at once.
    let header = batch_publish(&client, "b.1", "h", 1, Some("1"), &[("Nats-Expected-Last-Msg-Id", "x")]).await;
    assert_error(
        &header.expect("an error"),
        400,
        10177,
        "atomic publish unsupported header used: Nats-Expected-Last-Msg-Id",
    );
    let commit = batch_publish(&client, "b.1", "c", 1, Some("yes"), &[]).await.expect("an error");
    assert_error(&commit, 400, 10200, "atomic publish batch commit is invalid");
    let long = batch_publish(&client, "b.1", &"A".repeat(65), 1, Some("1"), &[]).await.expect("an error");
    assert_error(&long, 400, 10179, "atomic publish batch ID is invalid");

    // Nothing of any of them reached the stream; a good batch still goes through.
    assert_eq!(state(&client, "B").await, (1, 1));
    assert_eq!(batch_publish(&client, "b.1", "good", 1, None, &[("Nats-Expected-Last-Sequence", "1")]).await, None);
    let ack = batch_publish(&client, "b.2", "good", 2, Some("eob"), &[]).await.expect("pub ack");
    assert_eq!(ack, serde_json::json!({"stream":"B","seq":2,"batch":"good","count":1}));
}

/// A batch goes through the stream's subject transform and republish like single
/// publishes do: what nats-server 2.15.1 stored and republished for the same publishes
/// (subjects `st.a, st.a, st.b, st.a`; copies to `rp.*` with `Nats-Last-Sequence` 0, 1,
/// 0, 2).
#[tokio::test]
async fn a_batch_is_transformed_and_republished() {
    let server = TestServer::start(&["--shards", "2"]);
    let (client, _) = connect(&server).await;
    let config = r#"{"name":"T","subjects":["in.>"],"allow_atomic":true,
        "subject_transform":{"src":"in.*","dest":"st.{{wildcard(1)}}"},
        "republish":{"src":"st.*","dest":"rp.{{wildcard(1)}}"}}"#;
    let created = api(&client, "STREAM.CREATE.T", config).await;
    assert!(created["error"].is_null(), "{created}");
    let mut copies = client.subscribe("rp.>").await.expect("subscribe");
    client.flush().await.expect("flush");
    publish_raw(&client, "in.a", &[], "single").await;
    assert_eq!(batch_publish(&client, "in.a", "x", 1, None, &[]).await, None);
    assert_eq!(batch_publish(&client, "in.b", "x", 2, None, &[]).await, None);
    let ack = batch_publish(&client, "in.a", "x", 3, Some("1"), &[]).await.expect("pub ack");
    assert_eq!(ack, serde_json::json!({"stream":"T","seq":4,"batch":"x","count":3}));

    for (seq, subject) in [(1, "st.a"), (2, "st.a"), (3, "st.b"), (4, "st.a")] {
        let stored = api(&client, "STREAM.MSG.GET.T", &format!(r#"{{"seq":{seq}}}"#)).await;
        assert_eq!(stored["message"]["subject"], subject, "seq {seq}");
    }
    let expected =
        [("rp.a", "1", "0", "single"), ("rp.a", "2", "1", "x-1"), ("rp.b", "3", "0", "x-2"), ("rp.a", "4", "2", "x-3")];
    for (subject, seq, last, payload) in expected {
        let copy = tokio::time::timeout(common::jetstream::REPLY_TIMEOUT, futures::StreamExt::next(&mut copies))
            .await
            .expect("a republished copy in time")
            .expect("subscription open");
        let header = |name: &str| {
            copy.headers.as_ref().and_then(|headers| headers.get(name)).map(|value| value.as_str().to_string())
        };
        assert_eq!(copy.subject.as_str(), subject);
        assert_eq!(header("Nats-Sequence").as_deref(), Some(seq), "{subject}");
        assert_eq!(header("Nats-Last-Sequence").as_deref(), Some(last), "{subject} {seq}");
        assert_eq!(&copy.payload[..], payload.as_bytes());
    }
}
