//! JetStream across a leaf link to a real nats-server hub: a hub stream mirrors a jetcore
//! stream through jetcore's domain (the hub's mirror consumer delivers across the leaf),
//! and push consumers on either side are consumed and acknowledged from the other, each
//! delivery showing the subject it was stored under.

mod common;

use std::time::{Duration, Instant};

use common::hub::{cluster, spoke_config, HubNode, SpokePair};
use common::TestServer;
use futures::StreamExt;
use serde_json::Value;

const RECEIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Both clients connected, and the link carries interest both ways.
async fn connect(pair: &SpokePair) -> (async_nats::Client, async_nats::Client) {
    let hub = async_nats::connect(pair.hub.url()).await.unwrap();
    let spoke = async_nats::connect(pair.spoke.url()).await.unwrap();
    common::await_interest(&spoke, &hub).await;
    common::await_interest(&hub, &spoke).await;
    (hub, spoke)
}

/// A `$JS.API` request through `prefix` (`$JS.API`, or `$JS.<domain>.API` to reach
/// another side's JetStream); the reply as JSON, with no error in it.
async fn api(client: &async_nats::Client, prefix: &str, call: &str, body: &str) -> Value {
    let reply = client.request(format!("{prefix}.{call}"), body.to_string().into()).await.unwrap();
    let value: Value = serde_json::from_slice(&reply.payload).unwrap();
    assert!(value.get("error").is_none(), "{call}: {value}");
    value
}

async fn publish_acked(client: &async_nats::Client, subject: &str, payload: &str) {
    let reply = client.request(subject.to_string(), payload.to_string().into()).await.unwrap();
    let ack: Value = serde_json::from_slice(&reply.payload).unwrap();
    assert!(ack.get("seq").is_some(), "{subject}: {ack}");
}

/// Polls `check` every 100 ms for up to 20 s; panics with the last value if it never holds.
async fn eventually(what: &str, check: impl AsyncFnMut() -> (bool, Value)) {
    eventually_within(Duration::from_secs(20), what, check).await;
}

async fn eventually_within(patience: Duration, what: &str, mut check: impl AsyncFnMut() -> (bool, Value)) {
    let deadline = Instant::now() + patience;
    loop {
        let (done, last) = check().await;
        if done {
            return;
        }
        assert!(Instant::now() < deadline, "{what} never held; last: {last}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_hub_stream_mirrors_a_jetcore_stream_through_its_domain() {
    let pair = SpokePair::start();
    let (hub, spoke) = connect(&pair).await;
    api(&spoke, "$JS.API", "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["orders.>"]}"#).await;
    for i in 0..50 {
        publish_acked(&spoke, &format!("orders.{}", i % 7), &format!("before {i}")).await;
    }
    let mirror = r#"{"name":"M","mirror":{"name":"ORDERS","external":{"api":"$JS.edge.API"}}}"#;
    api(&hub, "$JS.API", "STREAM.CREATE.M", mirror).await;
    for i in 50..100 {
        publish_acked(&spoke, &format!("orders.{}", i % 7), &format!("after {i}")).await;
    }
    eventually("the hub's mirror holds all 100 messages", async || {
        let info = api(&hub, "$JS.API", "STREAM.INFO.M", "").await;
        (info["state"]["messages"] == 100, info["state"].clone())
    })
    .await;
    // Stored under the origin's subjects, with the origin's payloads, in order.
    let stream = async_nats::jetstream::new(hub.clone()).get_stream("M").await.unwrap();
    for seq in [1u64, 50, 51, 100] {
        let message = stream.get_raw_message(seq).await.unwrap();
        let i = seq - 1;
        assert_eq!(message.subject.as_str(), format!("orders.{}", i % 7), "seq {seq}");
        let label = if i < 50 { "before" } else { "after" };
        assert_eq!(message.payload, format!("{label} {i}").as_bytes(), "seq {seq}");
    }
}

#[tokio::test]
async fn a_hub_client_consumes_and_acks_a_jetcore_push_consumer() {
    let pair = SpokePair::start();
    let (hub, spoke) = connect(&pair).await;
    api(&spoke, "$JS.API", "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["orders.>"]}"#).await;
    for i in 0..20 {
        publish_acked(&spoke, &format!("orders.{i}"), "x").await;
    }
    let mut deliveries = hub.subscribe("deliver.hub").await.unwrap();
    common::await_interest(&hub, &spoke).await;
    let consumer = r#"{"stream_name":"ORDERS","config":{"durable_name":"C","deliver_subject":"deliver.hub",
        "ack_policy":"explicit","ack_wait":30000000000}}"#;
    api(&hub, "$JS.edge.API", "CONSUMER.CREATE.ORDERS.C", consumer).await;
    for i in 0..20 {
        let message = tokio::time::timeout(RECEIVE_TIMEOUT, deliveries.next()).await.expect("a delivery").unwrap();
        assert_eq!(message.subject.as_str(), format!("orders.{i}"), "the stored subject is shown");
        let reply = message.reply.expect("an ack subject");
        assert!(reply.starts_with("$JS.ACK.ORDERS.C."), "{reply}");
        assert!(!reply.contains('@'), "the carried subject is stripped: {reply}");
        hub.publish(reply, "+ACK".into()).await.unwrap();
    }
    hub.flush().await.unwrap();
    eventually("jetcore's consumer has every ack", async || {
        let info = api(&hub, "$JS.edge.API", "CONSUMER.INFO.ORDERS.C", "").await;
        (info["num_ack_pending"] == 0 && info["ack_floor"]["stream_seq"] == 20, info)
    })
    .await;
}

#[tokio::test]
async fn a_jetcore_client_consumes_and_acks_a_hub_push_consumer() {
    let pair = SpokePair::start();
    let (hub, spoke) = connect(&pair).await;
    api(&hub, "$JS.API", "STREAM.CREATE.HUBS", r#"{"name":"HUBS","subjects":["hubs.>"]}"#).await;
    for i in 0..20 {
        publish_acked(&hub, &format!("hubs.{i}"), "x").await;
    }
    let mut deliveries = spoke.subscribe("deliver.spoke").await.unwrap();
    common::await_interest(&spoke, &hub).await;
    let consumer = r#"{"stream_name":"HUBS","config":{"durable_name":"C","deliver_subject":"deliver.spoke",
        "ack_policy":"explicit","ack_wait":30000000000}}"#;
    api(&spoke, "$JS.hub.API", "CONSUMER.CREATE.HUBS.C", consumer).await;
    for i in 0..20 {
        let message = tokio::time::timeout(RECEIVE_TIMEOUT, deliveries.next()).await.expect("a delivery").unwrap();
        assert_eq!(message.subject.as_str(), format!("hubs.{i}"), "the stored subject is shown");
        let reply = message.reply.expect("an ack subject");
        assert!(reply.starts_with("$JS.ACK.HUBS.C."), "{reply}");
        assert!(!reply.contains('@'), "the carried subject is stripped: {reply}");
        spoke.publish(reply, "+ACK".into()).await.unwrap();
    }
    spoke.flush().await.unwrap();
    eventually("the hub's consumer has every ack", async || {
        let info = api(&hub, "$JS.API", "CONSUMER.INFO.HUBS.C", "").await;
        (info["num_ack_pending"] == 0 && info["ack_floor"]["stream_seq"] == 20, info)
    })
    .await;
}

#[tokio::test]
async fn a_hub_r3_mirror_catches_up_after_its_leader_dies() {
    let mut nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let urls: Vec<String> = nodes.iter().map(HubNode::leaf_url).collect();
    let config = spoke_config(dir.path(), "edge-1", &urls, "");
    let spoke_server = TestServer::start(&["-c", config.to_str().unwrap(), "--shards", "2"]);
    let spoke = async_nats::connect(spoke_server.url()).await.unwrap();
    let mut hubs = Vec::new();
    for node in &nodes {
        hubs.push(async_nats::connect(node.url()).await.unwrap());
    }
    common::await_interest(&hubs[0], &spoke).await;
    common::await_interest(&spoke, &hubs[0]).await;
    api(&spoke, "$JS.API", "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["orders.>"]}"#).await;
    for i in 0..20 {
        publish_acked(&spoke, &format!("orders.{i}"), "before").await;
    }
    let mirror = r#"{"name":"M","num_replicas":3,"mirror":{"name":"ORDERS","external":{"api":"$JS.edge.API"}}}"#;
    // A fresh cluster answers nothing until it has elected its meta leader.
    eventually_within(Duration::from_secs(30), "the hub cluster creates the R3 mirror", async || {
        match hubs[0].request("$JS.API.STREAM.CREATE.M", mirror.into()).await {
            Ok(reply) => {
                let value: Value = serde_json::from_slice(&reply.payload).unwrap();
                (value.get("error").is_none(), value)
            }
            Err(error) => (false, Value::String(error.to_string())),
        }
    })
    .await;
    eventually("the mirror holds the first 20", async || {
        let info = api(&hubs[0], "$JS.API", "STREAM.INFO.M", "").await;
        (info["state"]["messages"] == 20, info)
    })
    .await;
    let info = api(&hubs[0], "$JS.API", "STREAM.INFO.M", "").await;
    let leader = info["cluster"]["leader"].as_str().expect("a leader").to_string();
    let dead = nodes.iter().position(|node| node.name == leader).expect("the leader is a node");
    nodes[dead].kill();
    let survivor = &hubs[(dead + 1) % 3];
    for i in 20..40 {
        publish_acked(&spoke, &format!("orders.{i}"), "after").await;
    }
    // A new leader recreates the mirror's consumer on jetcore (nats-server checks for a
    // stalled mirror every 10 s) and copies what came after the old one died.
    eventually_within(Duration::from_secs(90), "the new leader's mirror holds all 40", async || {
        match survivor.request("$JS.API.STREAM.INFO.M", "".into()).await {
            Ok(reply) => {
                let info: Value = serde_json::from_slice(&reply.payload).unwrap();
                (info["state"]["messages"] == 40 && info["cluster"]["leader"] != leader.as_str(), info)
            }
            Err(error) => (false, Value::String(error.to_string())),
        }
    })
    .await;
    let stream = async_nats::jetstream::new(survivor.clone()).get_stream("M").await.unwrap();
    let last = stream.get_raw_message(40).await.unwrap();
    assert_eq!((last.subject.as_str(), &last.payload[..]), ("orders.39", &b"after"[..]));
}
