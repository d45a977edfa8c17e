//! JetStream in every account that enables it (issue 24), over real sockets with
//! async-nats on two shards: two accounts each create a stream `ORDERS` of their own,
//! publish, consume and use KV, and each sees only its own in `STREAM.NAMES`, `LIST`,
//! `INFO` and `$JS.API.INFO`; limits count per account; both survive a restart; a store
//! written before per-account directories keeps serving the account it records; pushes
//! and advisories reach only their own account. The replies were recorded against
//! nats-server 2.15 under the same configuration with `tools/accounts/limits_diff.py`
//! (`tools/accounts/cases/two_accounts.*`: all 21 the same).

mod common;

use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, kv};
use async_nats::Client;
use common::accounts::{config_file, login, server_with};
use common::jetstream::{api, assert_error};
use common::TestServer;
use futures::StreamExt;

#[track_caller]
fn assert_ok(reply: &serde_json::Value) {
    assert!(reply.get("error").is_none(), "{reply}");
}

/// A and B enable JetStream, C does not; `g` is a `$G` user (not enabled: accounts are
/// configured).
const TWO_JETSTREAM_ACCOUNTS: &str = "accounts {\n  A { users: [{user: a, password: a}], jetstream: enabled }\n  \
    B { users: [{user: b, password: b}], jetstream: enabled }\n  C { users: [{user: c, password: c}] }\n}\n\
    authorization { users: [{user: g, password: g}] }\n";

/// Publishes `payloads` to `subject` through JetStream and waits for each ack.
async fn publish_all(client: &Client, subject: &str, payloads: &[&str]) {
    let context = jetstream::new(client.clone());
    for payload in payloads {
        let ack = context.publish(subject.to_string(), payload.to_string().into()).await.unwrap().await.unwrap();
        assert_eq!(ack.stream, "ORDERS");
    }
}

/// The payloads a new pull consumer on `ORDERS` fetches (all of them: one more than
/// `expected` is asked for, so an extra message would show).
async fn consume_all(client: &Client, expected: usize) -> Vec<String> {
    let context = jetstream::new(client.clone());
    let stream = context.get_stream("ORDERS").await.unwrap();
    let consumer = stream.create_consumer(pull::Config::default()).await.unwrap();
    let fetch = consumer.fetch().max_messages(expected + 1).expires(Duration::from_millis(500));
    let mut messages = fetch.messages().await.unwrap();
    let mut payloads = Vec::new();
    while let Some(message) = messages.next().await {
        let message = message.unwrap();
        message.ack().await.unwrap();
        payloads.push(String::from_utf8_lossy(&message.payload).to_string());
    }
    payloads
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_accounts_each_have_their_own_orders_stream() {
    let (server, _config) = server_with(TWO_JETSTREAM_ACCOUNTS);
    let (a, b) = (login(&server, "a").await, login(&server, "b").await);
    assert_ok(&api(&a, "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["orders.>"]}"#).await);
    assert_ok(&api(&b, "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["sales.>"]}"#).await);
    publish_all(&a, "orders.eu", &["a1", "a2"]).await;
    publish_all(&b, "sales.eu", &["b1"]).await;
    // B has no stream on orders.>: its publish there is stored nowhere.
    let error = b.request("orders.eu", "b's".into()).await.unwrap_err();
    assert_eq!(error.kind(), async_nats::RequestErrorKind::NoResponders);
    for (client, subjects, messages) in [(&a, "orders.>", 2), (&b, "sales.>", 1)] {
        let info = api(client, "STREAM.INFO.ORDERS", "").await;
        assert_eq!(info["config"]["subjects"][0], subjects, "{info}");
        assert_eq!(info["state"]["messages"], messages, "{info}");
        let names = api(client, "STREAM.NAMES", "").await;
        assert_eq!(names["streams"], serde_json::json!(["ORDERS"]), "{names}");
        assert_eq!(names["total"], 1);
        let list = api(client, "STREAM.LIST", "").await;
        assert_eq!(list["total"], 1, "{list}");
        assert_eq!(list["streams"][0]["config"]["subjects"][0], subjects);
        let account = api(client, "INFO", "").await;
        assert_eq!((account["streams"].as_u64(), account["consumers"].as_u64()), (Some(1), Some(0)), "{account}");
    }
    assert_eq!(consume_all(&a, 2).await, ["a1", "a2"]);
    assert_eq!(consume_all(&b, 1).await, ["b1"]);
    assert_eq!(api(&a, "INFO", "").await["consumers"], 1);
    // KV: a bucket of the same name in each account, each with its own value.
    for (client, value) in [(&a, "from a"), (&b, "from b")] {
        let context = jetstream::new(client.clone());
        let bucket = context.create_key_value(kv::Config { bucket: "cfg".into(), ..Default::default() }).await;
        bucket.unwrap().put("k", value.to_string().into()).await.unwrap();
    }
    for (client, value) in [(&a, "from a"), (&b, "from b")] {
        let bucket = jetstream::new(client.clone()).get_key_value("cfg").await.unwrap();
        assert_eq!(bucket.get("k").await.unwrap().unwrap(), value.as_bytes());
    }
    assert_eq!(api(&a, "INFO", "").await["streams"], 2, "ORDERS and KV_cfg");
    for user in ["c", "g"] {
        let client = login(&server, user).await;
        assert_error(&api(&client, "INFO", "").await, 503, 10039, "JetStream not enabled for account");
        let error = client.request("orders.eu", "x".into()).await.unwrap_err();
        assert_eq!(error.kind(), async_nats::RequestErrorKind::NoResponders, "{user}");
    }
}

const PER_ACCOUNT_LIMITS: &str = "accounts {\n  \
    A { users: [{user: a, password: a}], jetstream: { max_streams: 1, max_file: 10KB } }\n  \
    B { users: [{user: b, password: b}], jetstream: { max_streams: 2, max_file: 10KB } }\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_count_each_accounts_own_streams() {
    let (server, _config) = server_with(PER_ACCOUNT_LIMITS);
    let (a, b) = (login(&server, "a").await, login(&server, "b").await);
    let create = |name: &str, max_bytes: u64| {
        format!(r#"{{"name":"{name}","subjects":["{}.>"],"max_bytes":{max_bytes}}}"#, name.to_lowercase())
    };
    assert_ok(&api(&a, "STREAM.CREATE.S1", &create("S1", 8000)).await);
    // The same name and subjects in B: no overlap across accounts, and A's stream and
    // reservation do not count against B.
    assert_ok(&api(&b, "STREAM.CREATE.S1", &create("S1", 8000)).await);
    let refused = api(&a, "STREAM.CREATE.S2", &create("S2", 100)).await;
    assert_error(&refused, 400, 10027, "maximum number of streams reached");
    let refused = api(&b, "STREAM.CREATE.S2", &create("S2", 8000)).await;
    assert_error(&refused, 500, 10047, "insufficient storage resources available");
    assert_ok(&api(&b, "STREAM.CREATE.S2", &create("S2", 2000)).await);
    let info = api(&b, "INFO", "").await;
    assert_eq!((info["streams"].as_u64(), info["reserved_storage"].as_u64()), (Some(2), Some(10000)), "{info}");
    let info = api(&a, "INFO", "").await;
    assert_eq!((info["streams"].as_u64(), info["reserved_storage"].as_u64()), (Some(1), Some(8000)), "{info}");
    assert_eq!(info["limits"]["max_streams"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_accounts_keep_their_streams_across_a_restart() {
    let (mut server, _config) = server_with(TWO_JETSTREAM_ACCOUNTS);
    let (a, b) = (login(&server, "a").await, login(&server, "b").await);
    assert_ok(&api(&a, "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["orders.>"]}"#).await);
    assert_ok(&api(&b, "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["sales.>"]}"#).await);
    publish_all(&a, "orders.eu", &["a1", "a2"]).await;
    publish_all(&b, "sales.eu", &["b1"]).await;
    drop((a, b));
    for account in ["A", "B"] {
        let dir = server.store_dir.join("jetstream").join(account).join("streams").join("ORDERS");
        assert!(dir.is_dir(), "nats-server's layout: {}", dir.display());
    }
    server.restart();
    let (a, b) = (login(&server, "a").await, login(&server, "b").await);
    for (client, subjects, messages) in [(&a, "orders.>", 2), (&b, "sales.>", 1)] {
        let info = api(client, "STREAM.INFO.ORDERS", "").await;
        assert_eq!(info["config"]["subjects"][0], subjects, "{info}");
        assert_eq!(info["state"]["messages"], messages, "{info}");
        assert_eq!(api(client, "STREAM.NAMES", "").await["total"], 1);
    }
    publish_all(&b, "sales.eu", &["b2"]).await;
    assert_eq!(consume_all(&b, 2).await, ["b1", "b2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_from_before_keeps_serving_the_account_it_records() {
    // What jetcore wrote before per-account directories: one account's streams in
    // `jetstream/streams`, that account named in `jetstream-account`.
    let mut server = TestServer::start(&["--shards", "2"]);
    let client = login(&server, "any").await;
    assert_ok(&api(&client, "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["orders.>"]}"#).await);
    publish_all(&client, "orders.eu", &["old"]).await;
    drop(client);
    server.kill();
    assert!(server.store_dir.join("jetstream/streams/ORDERS").is_dir());
    std::fs::write(server.store_dir.join("jetstream-account"), "A\n").unwrap();
    let config = config_file(TWO_JETSTREAM_ACCOUNTS);
    server.restart_with(&["-c", config.path().to_str().unwrap(), "--shards", "2"]);
    let (a, b) = (login(&server, "a").await, login(&server, "b").await);
    let info = api(&a, "STREAM.INFO.ORDERS", "").await;
    assert_eq!(info["state"]["messages"], 1, "A's old stream is served to A: {info}");
    assert_error(&api(&b, "STREAM.INFO.ORDERS", "").await, 404, 10059, "stream not found");
    assert_ok(&api(&b, "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["orders.>"]}"#).await);
    publish_all(&b, "orders.eu", &["b's"]).await;
    assert_eq!(consume_all(&a, 1).await, ["old"]);
    assert_eq!(consume_all(&b, 1).await, ["b's"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advisories_and_deliveries_stay_in_their_account() {
    let (server, _config) = server_with(TWO_JETSTREAM_ACCOUNTS);
    let (a, b) = (login(&server, "a").await, login(&server, "b").await);
    let mut a_events = a.subscribe("$JS.EVENT.>").await.unwrap();
    let mut b_events = b.subscribe("$JS.EVENT.>").await.unwrap();
    let mut a_deliveries = a.subscribe("deliver.orders").await.unwrap();
    let mut b_deliveries = b.subscribe("deliver.orders").await.unwrap();
    a.flush().await.unwrap();
    b.flush().await.unwrap();
    assert_ok(&api(&a, "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["orders.>"]}"#).await);
    let push = r#"{"stream_name":"ORDERS","config":{"durable_name":"P","deliver_subject":"deliver.orders"}}"#;
    assert_ok(&api(&a, "CONSUMER.CREATE.ORDERS.P", push).await);
    publish_all(&a, "orders.eu", &["a1"]).await;
    let delivered = tokio::time::timeout(Duration::from_secs(5), a_deliveries.next()).await.unwrap().unwrap();
    assert_eq!(&delivered.payload[..], b"a1");
    let advisory = tokio::time::timeout(Duration::from_secs(5), a_events.next()).await.unwrap().unwrap();
    assert!(advisory.subject.starts_with("$JS.EVENT.ADVISORY."), "{}", advisory.subject);
    let quiet = Duration::from_millis(300);
    assert!(tokio::time::timeout(quiet, b_deliveries.next()).await.is_err(), "B gets none of A's deliveries");
    assert!(tokio::time::timeout(quiet, b_events.next()).await.is_err(), "B gets none of A's advisories");
}
