//! A jetcore stream follows a hub stream through the hub's domain (`external.api:
//! "$JS.hub.API"`, across the leaf link): as mirror and as source, compared with
//! nats-server acting as the same leaf (its consumer-create request, byte for byte but
//! for its random names, and its stream info), across a jetcore restart and across the
//! loss of an R3 hub stream's leader, with no message missing or stored twice.

mod common;

use std::time::{Duration, Instant};

use common::hub::{cluster, spoke_config, HubNode, SpokePair};
use common::TestServer;
use futures::StreamExt;
use serde_json::Value;

const MIRROR: &str = r#"{"name":"M","mirror":{"name":"ORDERS","external":{"api":"$JS.hub.API","deliver":""}}}"#;
const SOURCE: &str = r#"{"name":"S","sources":[{"name":"ORDERS","filter_subject":"orders.1","external":{"api":"$JS.hub.API","deliver":""}}]}"#;

async fn api(client: &async_nats::Client, call: &str, body: &str) -> Value {
    let reply = client.request(format!("$JS.API.{call}"), body.to_string().into()).await.unwrap();
    let value: Value = serde_json::from_slice(&reply.payload).unwrap();
    assert!(value.get("error").is_none(), "{call}: {value}");
    value
}

/// Publishes until acknowledged (a new hub stream leader may not answer at once).
async fn publish_acked(client: &async_nats::Client, subject: &str, payload: &str) {
    eventually_within(Duration::from_secs(30), "a publish is acknowledged", async || {
        match client.request(subject.to_string(), payload.to_string().into()).await {
            Ok(reply) => {
                let ack: Value = serde_json::from_slice(&reply.payload).unwrap_or_default();
                (ack.get("seq").is_some(), ack)
            }
            Err(error) => (false, Value::String(error.to_string())),
        }
    })
    .await;
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

/// Waits until `stream` on `client` holds exactly `first..=last`, `messages` of them.
async fn await_state(client: &async_nats::Client, stream: &str, messages: u64, first: u64, last: u64) {
    eventually_within(Duration::from_secs(60), &format!("{stream} holds {messages}"), async || {
        let reply = client.request(format!("$JS.API.STREAM.INFO.{stream}"), "".into()).await;
        let info: Value = reply.map(|r| serde_json::from_slice(&r.payload).unwrap_or_default()).unwrap_or_default();
        let state = &info["state"];
        (state["messages"] == messages && state["first_seq"] == first && state["last_seq"] == last, info)
    })
    .await;
}

/// Replaces the eight random characters after each marker with `*`.
fn normalized(text: &str) -> String {
    let mut out = text.to_string();
    for marker in ["JS_MIRROR_", "JS_SRC_", "$JS.M.", "$JS.S."] {
        let mut from = 0;
        while let Some(at) = out[from..].find(marker).map(|at| at + from + marker.len()) {
            let end = (at + 8).min(out.len());
            out.replace_range(at..end, "*");
            from = at;
        }
    }
    out
}

/// The next consumer-create request of `kind` (`JS_MIRROR_` or `JS_SRC_`) the hub saw:
/// (subject, headers, body), names normalized.
async fn next_create(requests: &mut async_nats::Subscriber, kind: &str) -> (String, Vec<(String, String)>, String) {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(20), requests.next()).await.unwrap().unwrap();
        let body = String::from_utf8(message.payload.to_vec()).unwrap();
        if !body.contains(kind) {
            continue;
        }
        let mut headers: Vec<(String, String)> = message
            .headers
            .iter()
            .flat_map(|map| map.iter())
            .flat_map(|(name, values)| values.iter().map(move |v| (name.to_string(), v.to_string())))
            .collect();
        headers.sort();
        return (normalized(message.subject.as_str()), headers, normalized(&body));
    }
}

/// Stream info's `mirror` or `sources` without the time since last contact.
fn progress(info: &Value, field: &str) -> Value {
    let mut value = info[field].clone();
    let strip = |entry: &mut Value| {
        entry.as_object_mut().map(|object| object.remove("active"));
    };
    match &mut value {
        Value::Array(entries) => entries.iter_mut().for_each(strip),
        entry => strip(entry),
    }
    value
}

#[tokio::test]
async fn mirror_and_source_of_a_hub_stream_match_nats_server_as_the_leaf() {
    let hub_node = HubNode::start("hub", None, "");
    let dir = tempfile::tempdir().unwrap();
    let config = spoke_config(dir.path(), "edge-1", &[hub_node.leaf_url()], "");
    let jetcore_server = TestServer::start(&["-c", config.to_str().unwrap(), "--shards", "2"]);
    let nats_leaf = HubNode::start_leaf_of("edge-2", &hub_node.leaf_url());
    let hub = async_nats::connect(hub_node.url()).await.unwrap();
    let jetcore = async_nats::connect(jetcore_server.url()).await.unwrap();
    let go_leaf = async_nats::connect(nats_leaf.url()).await.unwrap();
    common::await_interest(&hub, &jetcore).await;
    common::await_interest(&jetcore, &hub).await;
    api(&hub, "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["orders.>"]}"#).await;
    for i in 0..10 {
        publish_acked(&hub, &format!("orders.{}", i % 3), &format!("m{i}")).await;
    }
    let mut requests = hub.subscribe("$JS.API.CONSUMER.CREATE.>").await.unwrap();
    hub.flush().await.unwrap();
    let mut created = Vec::new();
    for leaf in [&jetcore, &go_leaf] {
        api(leaf, "STREAM.CREATE.M", MIRROR).await;
        let mirror = next_create(&mut requests, "JS_MIRROR_").await;
        api(leaf, "STREAM.CREATE.S", SOURCE).await;
        let source = next_create(&mut requests, "JS_SRC_").await;
        created.push((mirror, source));
    }
    assert_eq!(created[0].0, created[1].0, "the mirror's consumer-create request (jetcore, then nats-server)");
    assert_eq!(created[0].1, created[1].1, "the source's consumer-create request (jetcore, then nats-server)");
    for i in 10..20 {
        publish_acked(&hub, &format!("orders.{}", i % 3), &format!("m{i}")).await;
    }
    let mut infos = Vec::new();
    for leaf in [&jetcore, &go_leaf] {
        await_state(leaf, "M", 20, 1, 20).await;
        await_state(leaf, "S", 7, 1, 7).await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        infos.push((api(leaf, "STREAM.INFO.M", "").await, api(leaf, "STREAM.INFO.S", "").await));
    }
    assert_eq!(progress(&infos[0].0, "mirror"), progress(&infos[1].0, "mirror"), "stream info's mirror");
    assert_eq!(progress(&infos[0].1, "sources"), progress(&infos[1].1, "sources"), "stream info's sources");
    let stream = async_nats::jetstream::new(jetcore.clone()).get_stream("M").await.unwrap();
    let message = stream.get_raw_message(8).await.unwrap();
    assert_eq!((message.subject.as_str(), &message.payload[..]), ("orders.1", &b"m7"[..]));
    // Each copy names its origin as nats-server does: `ORDERS:<hash of the API> <seq>
    // <filter> <dest> <subject> <origin identity>`.
    let mut stamps = Vec::new();
    for leaf in [&jetcore, &go_leaf] {
        let stream = async_nats::jetstream::new(leaf.clone()).get_stream("S").await.unwrap();
        let message = stream.get_raw_message(3).await.unwrap();
        stamps.push(message.headers.get("Nats-Stream-Source").map(|value| value.to_string()));
    }
    assert!(
        stamps[0].as_deref().is_some_and(|stamp| stamp.starts_with("ORDERS:bTMUkJQk 8 orders.1 > orders.1 ")),
        "{stamps:?}"
    );
    assert_eq!(stamps[0], stamps[1], "the source header (jetcore, then nats-server)");
}

/// Origin sequences recorded in `S`'s copies, in order.
async fn sourced_sequences(client: &async_nats::Client, count: u64) -> Vec<u64> {
    let stream = async_nats::jetstream::new(client.clone()).get_stream("S").await.unwrap();
    let mut seqs = Vec::new();
    for seq in 1..=count {
        let message = stream.get_raw_message(seq).await.unwrap();
        let header = message.headers.get("Nats-Stream-Source").expect("a source header").to_string();
        seqs.push(header.split(' ').nth(1).unwrap().parse().unwrap());
    }
    seqs
}

#[tokio::test]
async fn a_jetcore_restart_leaves_no_gap_and_no_duplicate() {
    let mut pair = SpokePair::start();
    let hub = async_nats::connect(pair.hub.url()).await.unwrap();
    let spoke = async_nats::connect(pair.spoke.url()).await.unwrap();
    common::await_interest(&hub, &spoke).await;
    api(&hub, "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["orders.>"]}"#).await;
    let all_source = r#"{"name":"S","sources":[{"name":"ORDERS","external":{"api":"$JS.hub.API","deliver":""}}]}"#;
    api(&spoke, "STREAM.CREATE.M", MIRROR).await;
    api(&spoke, "STREAM.CREATE.S", all_source).await;
    for i in 0..10 {
        publish_acked(&hub, &format!("orders.{i}"), "before").await;
    }
    await_state(&spoke, "M", 10, 1, 10).await;
    await_state(&spoke, "S", 10, 1, 10).await;
    pair.spoke.kill();
    for i in 10..20 {
        publish_acked(&hub, &format!("orders.{i}"), "while down").await;
    }
    pair.spoke.restart();
    let spoke = async_nats::connect(pair.spoke.url()).await.unwrap();
    await_state(&spoke, "M", 20, 1, 20).await;
    await_state(&spoke, "S", 20, 1, 20).await;
    for i in 20..25 {
        publish_acked(&hub, &format!("orders.{i}"), "after").await;
    }
    await_state(&spoke, "M", 25, 1, 25).await;
    await_state(&spoke, "S", 25, 1, 25).await;
    assert_eq!(sourced_sequences(&spoke, 25).await, (1..=25).collect::<Vec<u64>>());
}

#[tokio::test]
async fn losing_the_hub_stream_leader_loses_nothing() {
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
    let origin = r#"{"name":"ORDERS","subjects":["orders.>"],"num_replicas":3}"#;
    eventually_within(Duration::from_secs(30), "the hub cluster creates the R3 stream", async || {
        match hubs[0].request("$JS.API.STREAM.CREATE.ORDERS", origin.into()).await {
            Ok(reply) => {
                let value: Value = serde_json::from_slice(&reply.payload).unwrap();
                (value.get("error").is_none(), value)
            }
            Err(error) => (false, Value::String(error.to_string())),
        }
    })
    .await;
    api(&spoke, "STREAM.CREATE.M", MIRROR).await;
    for i in 0..20 {
        publish_acked(&hubs[0], &format!("orders.{i}"), "before").await;
    }
    await_state(&spoke, "M", 20, 1, 20).await;
    let leader = api(&hubs[0], "STREAM.INFO.ORDERS", "").await["cluster"]["leader"].as_str().unwrap().to_string();
    let killed = nodes.iter().position(|node| node.name == leader).unwrap();
    nodes[killed].kill();
    let survivor = &hubs[(killed + 1) % 3];
    for i in 20..40 {
        publish_acked(survivor, &format!("orders.{i}"), "after").await;
    }
    await_state(&spoke, "M", 40, 1, 40).await;
    let stream = async_nats::jetstream::new(spoke.clone()).get_stream("M").await.unwrap();
    for seq in [20u64, 21, 40] {
        let message = stream.get_raw_message(seq).await.unwrap();
        assert_eq!(message.subject.as_str(), format!("orders.{}", seq - 1));
    }
}

#[tokio::test]
async fn a_large_backlog_is_paced_by_flow_control() {
    let pair = SpokePair::start();
    let hub = async_nats::connect(pair.hub.url()).await.unwrap();
    let spoke = async_nats::connect(pair.spoke.url()).await.unwrap();
    common::await_interest(&hub, &spoke).await;
    api(&hub, "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["orders.>"]}"#).await;
    let js = async_nats::jetstream::new(hub.clone());
    let payload = bytes::Bytes::from(vec![b'x'; 16 * 1024]);
    for round in 0..BACKLOG_ROUNDS {
        let mut acks = Vec::new();
        for i in 0..100 {
            acks.push(js.publish(format!("orders.{}", round * 100 + i), payload.clone()).await.unwrap());
        }
        for ack in acks {
            ack.await.unwrap();
        }
    }
    // The follower's flow-control answers go back to the hub on `$JS.FC.`.
    let mut answers = hub.subscribe("$JS.FC.>").await.unwrap();
    hub.flush().await.unwrap();
    api(&spoke, "STREAM.CREATE.M", MIRROR).await;
    let total = BACKLOG_ROUNDS * 100;
    await_state(&spoke, "M", total, 1, total).await;
    let answer = tokio::time::timeout(Duration::from_secs(5), answers.next()).await;
    assert!(answer.is_ok_and(|answer| answer.is_some()), "no flow-control answer reached the hub");
}

/// Rounds of 100 messages of 16 KiB in the backlog: 64 MiB, past the origin's
/// flow-control window.
const BACKLOG_ROUNDS: u64 = 40;
