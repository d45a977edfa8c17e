//! Consumer management over the `$JS.API` subjects, as raw requests and through
//! async-nats: every create subject form, idempotent create, conflicts, names, list,
//! delete; plus workqueue retention and `max_ack_pending` backpressure.

mod common;

use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy};
use common::TestServer;
use futures::StreamExt;
use serde_json::{json, Value};

async fn request(client: &async_nats::Client, subject: &str, body: Value) -> Value {
    let reply = client.request(subject.to_string(), body.to_string().into()).await.expect("reply");
    serde_json::from_slice(&reply.payload).expect("json reply")
}

async fn setup(server: &TestServer, stream: &str, retention: &str) -> async_nats::Client {
    let client = async_nats::connect(server.url()).await.unwrap();
    let body = json!({"name": stream, "subjects": [format!("{stream}.>")], "retention": retention});
    let reply = request(&client, &format!("$JS.API.STREAM.CREATE.{stream}"), body).await;
    assert!(reply.get("error").is_none(), "{reply}");
    client
}

#[tokio::test]
async fn every_create_form_and_the_management_endpoints() {
    let server = TestServer::start(&["--shards", "2"]);
    let client = setup(&server, "API1", "limits").await;
    let config = json!({"ack_policy": "explicit"});
    let legacy =
        request(&client, "$JS.API.CONSUMER.CREATE.API1", json!({"stream_name": "API1", "config": config})).await;
    let legacy_name = legacy["name"].as_str().expect("server-chosen name").to_string();
    assert_eq!(legacy_name.len(), 8, "{legacy}");
    let durable = request(
        &client,
        "$JS.API.CONSUMER.DURABLE.CREATE.API1.dur",
        json!({"stream_name": "API1", "config": {"durable_name": "dur", "ack_policy": "explicit"}}),
    )
    .await;
    assert_eq!(durable["config"]["durable_name"], "dur", "{durable}");
    assert_eq!(durable["config"]["ack_wait"], 30_000_000_000i64, "defaults echoed");
    let filtered = request(
        &client,
        "$JS.API.CONSUMER.CREATE.API1.f.API1.*",
        json!({"stream_name": "API1", "config": {"name": "f", "filter_subject": "API1.*", "ack_policy": "none"}}),
    )
    .await;
    assert_eq!(filtered["name"], "f", "{filtered}");
    let mismatch = request(
        &client,
        "$JS.API.CONSUMER.CREATE.API1.g.API1.x",
        json!({"stream_name": "API1", "config": {"name": "g", "filter_subject": "API1.y"}}),
    )
    .await;
    assert_eq!(mismatch["error"]["err_code"], 10131, "{mismatch}");
    let again = request(
        &client,
        "$JS.API.CONSUMER.CREATE.API1.dur",
        json!({"stream_name": "API1", "action": "create", "config": {"durable_name": "dur", "ack_policy": "explicit"}}),
    )
    .await;
    assert!(again.get("error").is_none(), "identical create is idempotent: {again}");
    let conflict = request(
        &client,
        "$JS.API.CONSUMER.CREATE.API1.dur",
        json!({"stream_name": "API1", "action": "create", "config": {"durable_name": "dur", "ack_policy": "all"}}),
    )
    .await;
    assert_eq!(conflict["error"]["err_code"], 10148, "{conflict}");
    let names = request(&client, "$JS.API.CONSUMER.NAMES.API1", json!({})).await;
    let mut expected = vec![legacy_name.clone(), "dur".to_string(), "f".to_string()];
    expected.sort();
    assert_eq!(names["consumers"], json!(expected), "{names}");
    assert_eq!(names["total"], 3);
    let list = request(&client, "$JS.API.CONSUMER.LIST.API1", json!({})).await;
    assert_eq!(list["consumers"].as_array().map(Vec::len), Some(3), "{list}");
    let deleted = request(&client, "$JS.API.CONSUMER.DELETE.API1.dur", json!(null)).await;
    assert_eq!(deleted["success"], true, "{deleted}");
    let gone = request(&client, "$JS.API.CONSUMER.INFO.API1.dur", json!(null)).await;
    assert_eq!(gone["error"]["err_code"], 10014, "{gone}");
    let no_stream = request(&client, "$JS.API.CONSUMER.INFO.NOPE.dur", json!(null)).await;
    assert_eq!(no_stream["error"]["err_code"], 10059, "{no_stream}");
    let update_missing = request(
        &client,
        "$JS.API.CONSUMER.CREATE.API1.new",
        json!({"stream_name": "API1", "action": "update", "config": {"durable_name": "new"}}),
    )
    .await;
    assert_eq!(update_missing["error"]["err_code"], 10149, "{update_missing}");
}

#[tokio::test]
async fn workqueue_acks_remove_messages_and_max_ack_pending_holds_back() {
    let server = TestServer::start(&["--shards", "2"]);
    let client = setup(&server, "WQ1", "workqueue").await;
    let js = jetstream::new(client);
    for index in 1..=5u32 {
        js.publish("WQ1.job", index.to_string().into()).await.unwrap().await.unwrap();
    }
    let mut stream = js.get_stream("WQ1").await.unwrap();
    let consumer: jetstream::consumer::PullConsumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("w".into()),
            ack_policy: AckPolicy::Explicit,
            max_ack_pending: 2,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut batch = consumer.batch().max_messages(5).expires(Duration::from_millis(500)).messages().await.unwrap();
    let mut got = Vec::new();
    while let Some(message) = tokio::time::timeout(Duration::from_secs(5), batch.next()).await.expect("batch ends") {
        got.push(message.unwrap());
    }
    assert_eq!(got.len(), 2, "max_ack_pending 2 holds the rest back");
    for message in &got {
        message.double_ack().await.unwrap();
    }
    assert_eq!(stream.info().await.unwrap().state.messages, 3, "acked work is removed");
    let mut rest = consumer.fetch().max_messages(5).messages().await.unwrap();
    let mut count = 0;
    while let Some(message) = tokio::time::timeout(Duration::from_secs(5), rest.next()).await.expect("fetch ends") {
        message.unwrap().double_ack().await.unwrap();
        count += 1;
    }
    assert_eq!(count, 3, "acking as they come frees slots for the rest");
    assert_eq!(stream.info().await.unwrap().state.messages, 0);
    let second = stream.create_consumer(pull::Config { durable_name: Some("x".into()), ..Default::default() }).await;
    let error = second.expect_err("a second unfiltered workqueue consumer is refused").to_string();
    assert!(error.contains("10099") || error.contains("filtered"), "{error}");
}

#[tokio::test]
async fn purge_and_stream_delete_reach_consumers() {
    let server = TestServer::start(&["--shards", "2"]);
    let client = setup(&server, "PRG1", "limits").await;
    let js = jetstream::new(client.clone());
    for index in 1..=6u32 {
        js.publish("PRG1.a", index.to_string().into()).await.unwrap().await.unwrap();
    }
    let stream = js.get_stream("PRG1").await.unwrap();
    let mut consumer: jetstream::consumer::PullConsumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("c".into()),
            ack_policy: AckPolicy::Explicit,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(consumer.info().await.unwrap().num_pending, 6);
    stream.purge().sequence(5).await.expect("purge below 5");
    assert_eq!(consumer.info().await.unwrap().num_pending, 2, "purged messages are no longer pending");
    let mut batch = consumer.fetch().max_messages(10).messages().await.unwrap();
    let mut got = Vec::new();
    while let Some(message) = tokio::time::timeout(Duration::from_secs(5), batch.next()).await.expect("fetch ends") {
        got.push(String::from_utf8_lossy(&message.unwrap().payload).to_string());
    }
    assert_eq!(got, ["5", "6"]);
    js.delete_stream("PRG1").await.expect("delete stream");
    let names = request(&client, "$JS.API.CONSUMER.NAMES.PRG1", json!({})).await;
    assert_eq!(names["error"]["err_code"], 10059, "{names}");
}

/// An update may change what nats-server lets change (ack wait, max deliver, description,
/// ...); the rest is refused with 10012 and nats-server's wording, and the consumer keeps
/// its config.
#[tokio::test]
async fn updates_refuse_what_nats_server_refuses() {
    let server = TestServer::start(&["--shards", "2"]);
    let client = setup(&server, "UPD", "limits").await;
    let subject = "$JS.API.CONSUMER.CREATE.UPD.c1";
    let base = json!({"durable_name": "c1", "ack_policy": "explicit", "filter_subject": "UPD.a"});
    let created = request(&client, subject, json!({"stream_name": "UPD", "config": base})).await;
    assert!(created.get("error").is_none(), "{created}");

    let update = |change: Value| {
        let mut config = base.clone();
        config.as_object_mut().unwrap().extend(change.as_object().unwrap().clone());
        json!({"stream_name": "UPD", "action": "update", "config": config})
    };
    let refused = [
        (json!({"deliver_policy": "new"}), "deliver policy can not be updated"),
        (json!({"deliver_policy": "by_start_sequence", "opt_start_seq": 5}), "deliver policy can not be updated"),
        (json!({"ack_policy": "all"}), "ack policy can not be updated"),
        (json!({"replay_policy": "original"}), "replay policy can not be updated"),
        (json!({"deliver_subject": "push.here"}), "can not update pull consumer to push based"),
        (json!({"max_waiting": 10}), "max waiting can not be updated"),
        (json!({"mem_storage": true}), "storage type can not be updated"),
    ];
    for (change, description) in refused {
        let reply = request(&client, subject, update(change.clone())).await;
        assert_eq!(reply["error"]["err_code"], 10012, "{change}: {reply}");
        assert_eq!(reply["error"]["description"], description, "{change}");
    }
    let allowed = request(&client, subject, update(json!({"ack_wait": 5_000_000_000i64, "max_deliver": 3}))).await;
    assert!(allowed.get("error").is_none(), "{allowed}");
    assert_eq!(allowed["config"]["max_deliver"], 3, "{allowed}");
    let info = request(&client, "$JS.API.CONSUMER.INFO.UPD.c1", json!(null)).await;
    assert_eq!(info["config"]["ack_policy"], "explicit");
    assert_eq!(info["config"]["deliver_policy"], "all");
    assert_eq!(info["config"]["ack_wait"], 5_000_000_000i64);
}
