//! Subject delete markers (`subject_delete_marker_ttl`) through the wire, checked against
//! what nats-server 2.15.1 answered to the same requests: `max_age` leaves a marker on
//! each emptied subject, the marker is durable (kill -9 and restart), expires itself
//! after its TTL without leaving another, and `Nats-TTL: never` is exempt from
//! `max_age`. Config checks keep nats-server's texts.

mod common;

use std::time::Duration;

use common::jetstream::{api, assert_error, connect, publish_raw};
use common::TestServer;
use jetcore::jetstream::base64;
use serde_json::Value;

async fn create(client: &async_nats::Client, name: &str, extra: &str) -> Value {
    let body = format!(r#"{{"name":"{name}","subjects":["{}.>"]{extra}}}"#, name.to_lowercase());
    api(client, &format!("STREAM.CREATE.{name}"), &body).await
}

async fn last_headers(client: &async_nats::Client, stream: &str, subject: &str) -> Option<String> {
    let reply = api(client, &format!("STREAM.MSG.GET.{stream}"), &format!(r#"{{"last_by_subj":"{subject}"}}"#)).await;
    let hdrs = reply["message"]["hdrs"].as_str()?;
    Some(String::from_utf8(base64::decode(hdrs).expect("base64 headers")).expect("utf-8 headers"))
}

async fn messages(client: &async_nats::Client, stream: &str) -> u64 {
    api(client, &format!("STREAM.INFO.{stream}"), "").await["state"]["messages"].as_u64().expect("messages")
}

#[tokio::test]
async fn config_is_checked_and_switches_ttl_and_rollups_on() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    let short = create(&client, "SHORT", r#","subject_delete_marker_ttl":500000000"#).await;
    assert_error(&short, 500, 10052, "subject delete marker TTL must be at least 1 second");
    let negative = create(&client, "NEG", r#","subject_delete_marker_ttl":-5"#).await;
    assert_error(&negative, 500, 10052, "subject delete marker TTL must not be negative");
    let made = create(&client, "OK", r#","subject_delete_marker_ttl":2000000000,"deny_purge":true"#).await;
    let config = &made["config"];
    assert_eq!(config["allow_msg_ttl"], true, "{made}");
    assert_eq!(config["allow_rollup_hdrs"], true);
    assert_eq!(config["deny_purge"], false);
    assert_eq!(config["metadata"]["_nats.req.level"], "1");
}

#[tokio::test]
async fn max_age_leaves_a_durable_marker_that_expires_itself() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let (client, _) = connect(&server).await;
    // A long marker TTL: the marker must outlive a restart.
    create(&client, "LONG", r#","max_age":1000000000,"subject_delete_marker_ttl":30000000000"#).await;
    // A short one: the marker must go by itself.
    create(&client, "BRIEF", r#","max_age":1000000000,"subject_delete_marker_ttl":1000000000"#).await;
    publish_raw(&client, "long.a", &[], "one").await;
    publish_raw(&client, "long.b", &[("Nats-TTL", "never")], "kept").await;
    publish_raw(&client, "brief.a", &[], "one").await;
    tokio::time::sleep(Duration::from_millis(1700)).await;

    let marker = "NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: 30s\r\nNats-Rollup: sub\r\n\r\n";
    assert_eq!(last_headers(&client, "LONG", "long.a").await.as_deref(), Some(marker));
    // `never` is exempt from max_age; the marker replaced long.a.
    assert_eq!(last_headers(&client, "LONG", "long.b").await.as_deref(), Some("NATS/1.0\r\nNats-TTL: never\r\n\r\n"));
    assert_eq!(messages(&client, "LONG").await, 2);

    drop(client);
    server.restart();
    let (client, _) = connect(&server).await;
    assert_eq!(last_headers(&client, "LONG", "long.a").await.as_deref(), Some(marker));
    assert_eq!(messages(&client, "LONG").await, 2);

    // BRIEF's marker (1 s) has expired by now (restart included), leaving none behind.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while messages(&client, "BRIEF").await > 0 {
        assert!(tokio::time::Instant::now() < deadline, "the marker did not expire");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let state = api(&client, "STREAM.INFO.BRIEF", "").await["state"].clone();
    assert_eq!(state["last_seq"], 2, "one message and one marker: {state}");
}

#[tokio::test]
async fn an_expired_ttl_leaves_a_marker_but_an_expired_purge_does_not() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    create(&client, "T", r#","allow_msg_ttl":true,"subject_delete_marker_ttl":1000000000"#).await;
    publish_raw(&client, "t.a", &[("Nats-TTL", "1s")], "one").await;
    publish_raw(&client, "t.b", &[("Nats-TTL", "1s"), ("KV-Operation", "PURGE")], "").await;
    for bad in ["abc", "0", "-1", "500ms"] {
        let refused = publish_raw(&client, "t.c", &[("Nats-TTL", bad)], "x").await;
        assert_error(&refused, 400, 10165, "invalid per-message TTL");
    }
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let state = api(&client, "STREAM.INFO.T", "").await["state"].clone();
    assert_eq!((state["messages"].as_u64(), state["last_seq"].as_u64()), (Some(1), Some(3)), "{state}");
    let marker = last_headers(&client, "T", "t.a").await.expect("a marker on t.a");
    assert!(marker.contains("Nats-Marker-Reason: MaxAge"), "{marker}");
}
