//! Counter streams (`allow_msg_counter`, `Nats-Incr`, ADR-49) as nats-server 2.15.1
//! answers them: the config and its refusals, each increment stored as the subject's
//! new total `{"val":"N"}` and acknowledged with `"val"`, the errors in nats-server's
//! order, and totals that survive a restart. Every expectation was recorded from
//! nats-server 2.15.1 answering the same requests.

mod common;

use async_nats::jetstream::stream;
use common::jetstream::{api, assert_error, connect, decode_base64, publish_raw};
use common::TestServer;
use serde_json::Value;

async fn create(client: &async_nats::Client, name: &str, config: &str) -> Value {
    api(client, &format!("STREAM.CREATE.{name}"), config).await
}

async fn increment(client: &async_nats::Client, subject: &str, by: &str) -> Value {
    publish_raw(client, subject, &[("Nats-Incr", by)], "").await
}

/// The stored body of the subject's last message.
async fn stored_body(client: &async_nats::Client, stream: &str, subject: &str) -> String {
    let reply = api(client, &format!("STREAM.MSG.GET.{stream}"), &format!(r#"{{"last_by_subj":"{subject}"}}"#)).await;
    let data = reply["message"]["data"].as_str().unwrap_or_else(|| panic!("no message: {reply}"));
    String::from_utf8(decode_base64(data)).expect("utf-8 body")
}

#[tokio::test]
async fn counter_config_is_accepted_shown_and_refused_where_nats_server_refuses_it() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    let created = create(&client, "C", r#"{"name":"C","subjects":["c.>"],"allow_msg_counter":true}"#).await;
    assert_eq!(created["config"]["allow_msg_counter"], true, "{created}");
    assert_eq!(created["config"]["metadata"]["_nats.req.level"], "2", "{created}");
    let info = api(&client, "STREAM.INFO.C", "").await;
    assert_eq!(info["config"]["allow_msg_counter"], true, "{info}");
    let refused = [
        (r#""discard":"new""#, 500, 10052, "counter stream cannot use discard new"),
        (r#""allow_msg_ttl":true"#, 500, 10052, "counter stream cannot use message TTLs"),
        (r#""retention":"workqueue""#, 500, 10052, "counter stream can only use limits retention"),
        (r#""retention":"interest""#, 500, 10052, "counter stream can only use limits retention"),
        (r#""allow_msg_schedules":true"#, 500, 10052, "counter stream cannot use message schedules"),
        // The first refusal in nats-server's order wins.
        (r#""discard":"new","allow_msg_ttl":true"#, 500, 10052, "counter stream cannot use discard new"),
        (r#""retention":"workqueue","allow_msg_ttl":true"#, 500, 10052, "counter stream cannot use message TTLs"),
    ];
    for (setting, code, err_code, description) in refused {
        let config = format!(r#"{{"name":"X","subjects":["x.>"],"allow_msg_counter":true,{setting}}}"#);
        assert_error(&create(&client, "X", &config).await, code, err_code, description);
    }
    let mirror = r#"{"name":"X","allow_msg_counter":true,"mirror":{"name":"C"}}"#;
    assert_error(&create(&client, "X", mirror).await, 400, 10173, "stream mirrors can not also calculate counters");
    let off = r#"{"name":"C","subjects":["c.>"],"allow_msg_counter":false}"#;
    let text = "stream configuration update can not change message counter setting";
    assert_error(&api(&client, "STREAM.UPDATE.C", off).await, 500, 10052, text);
    create(&client, "P", r#"{"name":"P","subjects":["p.>"]}"#).await;
    let on = r#"{"name":"P","subjects":["p.>"],"allow_msg_counter":true}"#;
    assert_error(&api(&client, "STREAM.UPDATE.P", on).await, 500, 10052, text);
}

#[tokio::test]
async fn increments_store_the_subjects_new_total_and_ack_it() {
    let server = TestServer::start(&["--shards", "2"]);
    let (client, js) = connect(&server).await;
    let config = stream::Config {
        name: "C".into(),
        subjects: vec!["c.>".into()],
        allow_message_counter: true,
        ..Default::default()
    };
    js.create_stream(config).await.expect("create");
    let steps = [
        ("1", "1"),
        ("+5", "6"),
        ("-10", "-4"),
        ("99999999999999999999999999999", "99999999999999999999999999995"),
        ("3", "99999999999999999999999999998"),
        ("0", "99999999999999999999999999998"),
        ("-0", "99999999999999999999999999998"),
        ("008", "100000000000000000000000000006"),
    ];
    for (seq, (by, total)) in steps.into_iter().enumerate() {
        let ack = increment(&client, "c.a", by).await;
        assert_eq!(ack, serde_json::json!({"stream":"C","seq":seq + 1,"val":total}), "Nats-Incr: {by}");
    }
    assert_eq!(stored_body(&client, "C", "c.a").await, r#"{"val":"100000000000000000000000000006"}"#);
    // Each subject counts on its own; async-nats reads the total from the ack.
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Incr", "2");
    let ack = js.publish_with_headers("c.b", headers, "".into()).await.expect("send").await.expect("ack");
    assert_eq!((ack.sequence, ack.value.as_deref()), (9, Some("2")));
    assert_eq!(stored_body(&client, "C", "c.b").await, r#"{"val":"2"}"#);
    // The stored message keeps the headers it came with.
    let got = api(&client, "STREAM.MSG.GET.C", r#"{"seq":8}"#).await;
    let headers = String::from_utf8(decode_base64(got["message"]["hdrs"].as_str().expect("hdrs"))).unwrap();
    assert!(headers.contains("Nats-Incr: 008"), "{headers:?}");
}

#[tokio::test]
async fn bad_increments_get_nats_server_errors_in_its_order() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    create(&client, "D", r#"{"name":"D","subjects":["d.>"],"allow_msg_counter":true}"#).await;
    let invalid = (400, 10171, "message counter increment is invalid");
    let payload = (400, 10170, "message counter has payload");
    let missing = (400, 10169, "message counter increment is missing");
    let cases: [(&[(&str, &str)], &str, (u64, u64, &str)); 14] = [
        (&[("Nats-Incr", "abc")], "", invalid),
        (&[("Nats-Incr", "abc")], "x", invalid),
        (&[("Nats-Incr", "1.5")], "", invalid),
        (&[("Nats-Incr", "+-1")], "", invalid),
        (&[("Nats-Incr", "1_000")], "", invalid),
        (&[("Nats-Incr", "0x10")], "", invalid),
        (&[("Nats-Incr", "1")], "x", payload),
        (&[], "", missing),
        (&[], "x", missing),
        (&[("Nats-Incr", "")], "", missing),
        (&[("Nats-Incr", "1"), ("Nats-Rollup", "sub")], "", invalid),
        (&[("Nats-Incr", "1"), ("Nats-Rollup", "sub")], "x", payload),
        (&[("Nats-Incr", "1"), ("Nats-Expected-Stream", "D")], "", invalid),
        (&[("Nats-Incr", "1"), ("Nats-Expected-Last-Subject-Sequence", "0")], "", invalid),
    ];
    for (headers, body, (code, err_code, description)) in cases {
        let reply = publish_raw(&client, "d.a", headers, body).await;
        assert_error(&reply, code, err_code, description);
    }
    let ttl = publish_raw(&client, "d.a", &[("Nats-Incr", "1"), ("Nats-TTL", "1s")], "").await;
    assert_error(&ttl, 400, 10166, "per-message TTL is disabled");
    // A counter's increment is checked before dedupe; a missing one after it.
    let first = publish_raw(&client, "d.a", &[("Nats-Incr", "1"), ("Nats-Msg-Id", "m")], "").await;
    assert_eq!(first, serde_json::json!({"stream":"D","seq":1,"val":"1"}));
    let again = publish_raw(&client, "d.a", &[("Nats-Incr", "1"), ("Nats-Msg-Id", "m")], "x").await;
    assert_error(&again, payload.0, payload.1, payload.2);
    let duplicate = publish_raw(&client, "d.a", &[("Nats-Msg-Id", "m")], "").await;
    assert_eq!(duplicate, serde_json::json!({"stream":"D","seq":1,"duplicate":true}));
    let info = api(&client, "STREAM.INFO.D", "").await;
    assert_eq!(info["state"]["messages"], 1, "nothing refused was stored: {info}");
}

#[tokio::test]
async fn a_total_continues_from_the_subjects_last_message_after_removals_and_restart() {
    let mut server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    create(&client, "D", r#"{"name":"D","subjects":["d.>"],"allow_msg_counter":true}"#).await;
    for _ in 0..5 {
        increment(&client, "d.a", "1").await;
    }
    api(&client, "STREAM.PURGE.D", "").await;
    assert_eq!(increment(&client, "d.a", "3").await["val"], "3", "a purge starts the subject from zero");
    let ack = increment(&client, "d.a", "4").await;
    assert_eq!(ack["val"], "7");
    let deleted = api(&client, "STREAM.MSG.DELETE.D", &format!(r#"{{"seq":{}}}"#, ack["seq"])).await;
    assert_eq!(deleted["success"], true, "{deleted}");
    assert_eq!(increment(&client, "d.a", "10").await["val"], "13", "the last message left holds 3");
    increment(&client, "d.b", "-2").await;
    drop(client);
    server.restart();
    let (client, _) = connect(&server).await;
    assert_eq!(increment(&client, "d.a", "1").await, serde_json::json!({"stream":"D","seq":10,"val":"14"}));
    assert_eq!(increment(&client, "d.b", "-1").await["val"], "-3");
    let info = api(&client, "STREAM.INFO.D", "").await;
    assert_eq!(info["config"]["allow_msg_counter"], true, "persisted: {info}");
}

#[tokio::test]
async fn the_stored_total_counts_toward_the_message_size_limit() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    let config = r#"{"name":"M","subjects":["m.>"],"allow_msg_counter":true,"max_msg_size":37}"#;
    create(&client, "M", config).await;
    // Recorded from nats-server 2.15.1: 26 header bytes and the 11 of `{"val":"1"}` fit;
    // the 12 of `{"val":"10"}`, or a 27-byte `Nats-Incr: -1` block, do not.
    assert_eq!(increment(&client, "m.x", "1").await, serde_json::json!({"stream":"M","seq":1,"val":"1"}));
    for by in ["9", "-1"] {
        let reply = increment(&client, "m.x", by).await;
        assert_error(&reply, 400, 10054, "message size exceeds maximum allowed");
    }
    assert_eq!(stored_body(&client, "M", "m.x").await, r#"{"val":"1"}"#, "nothing stored");
}

#[tokio::test]
async fn an_atomic_batch_adds_each_increment_to_the_total_before_it() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    let config = r#"{"name":"B","subjects":["b.>"],"allow_msg_counter":true,"allow_atomic":true}"#;
    assert_eq!(create(&client, "B", config).await["config"]["allow_atomic"], true);
    increment(&client, "b.a", "5").await;
    let mut first = async_nats::HeaderMap::new();
    for (name, value) in [("Nats-Incr", "1"), ("Nats-Batch-Id", "x"), ("Nats-Batch-Sequence", "1")] {
        first.insert(name, value);
    }
    client.publish_with_headers("b.a", first, "".into()).await.expect("stage");
    let commit = [("Nats-Incr", "2"), ("Nats-Batch-Id", "x"), ("Nats-Batch-Sequence", "2"), ("Nats-Batch-Commit", "1")];
    let ack = publish_raw(&client, "b.a", &commit, "").await;
    assert_eq!(ack, serde_json::json!({"stream":"B","seq":3,"batch":"x","count":2}));
    assert_eq!(stored_body(&client, "B", "b.a").await, r#"{"val":"8"}"#);
    let without = [("Nats-Batch-Id", "y"), ("Nats-Batch-Sequence", "1"), ("Nats-Batch-Commit", "1")];
    let reply = publish_raw(&client, "b.a", &without, "").await;
    assert_error(&reply, 400, 10169, "message counter increment is missing");
    let invalid =
        [("Nats-Incr", "x"), ("Nats-Batch-Id", "z"), ("Nats-Batch-Sequence", "1"), ("Nats-Batch-Commit", "1")];
    let reply = publish_raw(&client, "b.a", &invalid, "").await;
    assert_error(&reply, 400, 10171, "message counter increment is invalid");
}
