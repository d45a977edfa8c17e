//! Counters aggregated through sources (ADR-49), side by side with nats-server 2.15.1 (a
//! real process): two origin counter streams, one aggregate counter stream sourcing both
//! onto one subject, increments on both origins and on the aggregate itself. Each
//! aggregate message must be stored as nats-server stores it: the origin's increment
//! replaced by the difference from that origin's previous total (`Nats-Incr`), every
//! origin's last total in `Nats-Counter-Sources`, and the sum as the body. jetcore is
//! killed and restarted in the middle: what it knows of each source must come back from
//! the last stored message.

mod common;

use std::time::Duration;

use common::jetstream::{api, decode_base64, publish_raw};
use common::TestServer;
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(10);

/// One stored message as both servers must agree on it: subject, headers (the source
/// header's last field, a random per-server id, left out) and body.
type Stored = (String, String, String);

async fn connect(url: &str) -> async_nats::Client {
    let options = async_nats::ConnectOptions::new().request_timeout(Some(TIMEOUT));
    options.connect(url).await.expect("connect")
}

async fn create(client: &async_nats::Client, config: Value) -> Value {
    let reply = api(client, &format!("STREAM.CREATE.{}", config["name"].as_str().unwrap()), &config.to_string()).await;
    assert!(reply["error"].is_null(), "{reply}");
    reply
}

async fn increment(client: &async_nats::Client, subject: &str, by: &str) -> Value {
    publish_raw(client, subject, &[("Nats-Incr", by)], "").await
}

/// Waits until `stream` holds `count` messages (sourcing is asynchronous), so the next
/// step's order is the same on both servers.
async fn await_messages(client: &async_nats::Client, stream: &str, count: u64) {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let info = api(client, &format!("STREAM.INFO.{stream}"), "").await;
        if info["state"]["messages"] == count {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{stream} never reached {count} messages: {info}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn stored(client: &async_nats::Client, stream: &str, seq: u64) -> Stored {
    let reply = api(client, &format!("STREAM.MSG.GET.{stream}"), &format!(r#"{{"seq":{seq}}}"#)).await;
    let message = &reply["message"];
    let text = |field: &str| String::from_utf8(decode_base64(message[field].as_str().unwrap_or(""))).unwrap();
    let headers: Vec<String> = text("hdrs")
        .split("\r\n")
        .map(|line| match line.strip_prefix("Nats-Stream-Source: ") {
            Some(value) => format!("Nats-Stream-Source: {}", value.rsplit_once(' ').map_or(value, |(kept, _)| kept)),
            None => line.to_string(),
        })
        .collect();
    (
        message["subject"].as_str().unwrap_or_else(|| panic!("no message {seq}: {reply}")).into(),
        headers.join("\r\n"),
        text("data"),
    )
}

/// Origins A and B and the aggregate ALL, then increments on A and B, one copy at a time.
async fn first_half(client: &async_nats::Client) -> Vec<Value> {
    create(client, serde_json::json!({"name":"A","subjects":["a.hits"],"allow_msg_counter":true})).await;
    create(client, serde_json::json!({"name":"B","subjects":["b.hits"],"allow_msg_counter":true})).await;
    let source = |name: &str, subject: &str| serde_json::json!({"name":name,"subject_transforms":[{"src":subject,"dest":"all.hits"}]});
    let all = serde_json::json!({
        "name":"ALL","subjects":["all.hits"],"allow_msg_counter":true,
        "sources":[source("A","a.hits"),source("B","b.hits")]
    });
    create(client, all).await;
    let mut acks = Vec::new();
    for (count, (subject, by)) in [("a.hits", "+5"), ("b.hits", "3"), ("a.hits", "-2")].into_iter().enumerate() {
        acks.push(increment(client, subject, by).await);
        await_messages(client, "ALL", count as u64 + 1).await;
    }
    acks
}

/// After the restart: more copies, an increment on the aggregate itself, and a copy after it.
async fn second_half(client: &async_nats::Client) -> Vec<Value> {
    let mut acks = Vec::new();
    let steps = [("b.hits", "10"), ("a.hits", "1"), ("all.hits", "100"), ("b.hits", "-4")];
    for (count, (subject, by)) in steps.into_iter().enumerate() {
        acks.push(increment(client, subject, by).await);
        await_messages(client, "ALL", count as u64 + 4).await;
    }
    acks
}

async fn aggregate(client: &async_nats::Client) -> Vec<Stored> {
    let mut messages = Vec::new();
    for seq in 1..=7 {
        messages.push(stored(client, "ALL", seq).await);
    }
    messages
}

#[tokio::test]
async fn an_aggregate_counter_sums_its_sources_as_nats_server_does_across_a_restart() {
    let nats = common::hub::JetStreamServer::start();
    let port = nats.port;
    let reference = connect(&format!("nats://127.0.0.1:{port}")).await;
    let mut expected_acks = first_half(&reference).await;
    expected_acks.extend(second_half(&reference).await);
    let expected = aggregate(&reference).await;
    drop(nats);

    let mut server = TestServer::start(&["--shards", "2"]);
    let client = connect(&server.url()).await;
    let mut acks = first_half(&client).await;
    drop(client);
    server.restart_retrying(&["--shards", "2"]);
    let client = connect(&server.url()).await;
    acks.extend(second_half(&client).await);
    assert_eq!(acks, expected_acks, "pub acks");
    let messages = aggregate(&client).await;
    for (seq, (got, want)) in messages.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "ALL message {}", seq + 1);
    }
    // The sum of the origins' totals (4 + 9) and the aggregate's own 100.
    let last = messages.last().unwrap();
    assert_eq!(last.2, r#"{"val":"113"}"#);
    assert!(last.1.contains(r#"Nats-Counter-Sources: {"A":{"a.hits":"4"},"B":{"b.hits":"9"}}"#), "{}", last.1);
}

#[tokio::test]
async fn a_source_that_is_no_counter_is_dropped_without_stalling_the_aggregate() {
    let server = TestServer::start(&[]);
    let client = connect(&server.url()).await;
    create(&client, serde_json::json!({"name":"P","subjects":["p.x"]})).await;
    create(&client, serde_json::json!({"name":"C","subjects":["c.x"],"allow_msg_counter":true})).await;
    let all = serde_json::json!({"name":"ALL","allow_msg_counter":true,"sources":[{"name":"P"},{"name":"C"}]});
    create(&client, all).await;
    client.request("p.x", "hello".into()).await.expect("stored in P");
    increment(&client, "c.x", "2").await;
    await_messages(&client, "ALL", 1).await;
    let (subject, headers, body) = stored(&client, "ALL", 1).await;
    assert_eq!((subject.as_str(), body.as_str()), ("c.x", r#"{"val":"2"}"#));
    assert!(headers.contains(r#"Nats-Counter-Sources: {"C":{"c.x":"2"}}"#), "{headers}");
    // Recorded from nats-server 2.15.1: the plain source shows no error and no copy.
    let info = api(&client, "STREAM.INFO.ALL", "").await;
    let plain = info["sources"].as_array().unwrap().iter().find(|source| source["name"] == "P").cloned().unwrap();
    assert!(plain["error"].is_null() && plain["seq"].is_null(), "{info}");
    assert_eq!(info["state"]["messages"], 1, "{info}");
}
