//! Stream and consumer action advisories on `$JS.EVENT.ADVISORY.>` with nats-server's
//! subjects and JSON, seen by a subscriber on another connection (any shard).

mod common;

use std::time::Duration;

use common::jetstream::{api, connect, stream_config};
use common::TestServer;
use futures::StreamExt;
use serde_json::Value;

#[tokio::test]
async fn stream_and_consumer_actions_are_advised() {
    let server = TestServer::start(&["--shards", "2"]);
    let (client, js) = connect(&server).await;
    let watcher = async_nats::connect(server.url()).await.expect("connect");
    let mut advisories = watcher.subscribe("$JS.EVENT.ADVISORY.>").await.expect("subscribe");
    watcher.flush().await.expect("flush");
    common::await_interest(&watcher, &client).await;

    js.create_stream(stream_config("ADV", &["adv.*"])).await.expect("create");
    let update = r#"{"name":"ADV","subjects":["adv.*"],"max_msgs":10}"#;
    let updated = api(&client, "STREAM.UPDATE.ADV", update).await;
    assert!(updated.get("error").is_none(), "{updated}");
    let created =
        api(&client, "CONSUMER.CREATE.ADV.c1", r#"{"stream_name":"ADV","config":{"durable_name":"c1"}}"#).await;
    assert!(created.get("error").is_none(), "{created}");
    api(&client, "CONSUMER.DELETE.ADV.c1", "").await;
    api(&client, "STREAM.DELETE.ADV", "").await;

    let expected = [
        ("$JS.EVENT.ADVISORY.STREAM.CREATED.ADV", "stream_action", "create", None),
        ("$JS.EVENT.ADVISORY.STREAM.UPDATED.ADV", "stream_action", "modify", None),
        ("$JS.EVENT.ADVISORY.CONSUMER.CREATED.ADV.c1", "consumer_action", "create", Some("c1")),
        ("$JS.EVENT.ADVISORY.CONSUMER.DELETED.ADV.c1", "consumer_action", "delete", Some("c1")),
        ("$JS.EVENT.ADVISORY.STREAM.DELETED.ADV", "stream_action", "delete", None),
    ];
    for (subject, kind, action, consumer) in expected {
        // The API audits on `$JS.EVENT.ADVISORY.API` come in between (their own test:
        // jetstream_advisories_vs_nats.rs).
        let message = loop {
            let message = tokio::time::timeout(Duration::from_secs(5), advisories.next())
                .await
                .unwrap_or_else(|_| panic!("no advisory on {subject}"))
                .expect("subscription open");
            if message.subject.as_str() != "$JS.EVENT.ADVISORY.API" {
                break message;
            }
        };
        assert_eq!(message.subject.as_str(), subject);
        let body: Value = serde_json::from_slice(&message.payload).expect("json");
        assert_eq!(body["type"], format!("io.nats.jetstream.advisory.v1.{kind}"), "{body}");
        assert_eq!(body["stream"], "ADV");
        assert_eq!(body["action"], action);
        assert!(body["id"].as_str().is_some_and(|id| !id.is_empty()), "{body}");
        assert!(body["timestamp"].as_str().is_some_and(|ts| ts.ends_with('Z')), "{body}");
        if let Some(consumer) = consumer {
            assert_eq!(body["consumer"], consumer);
        }
    }
}
