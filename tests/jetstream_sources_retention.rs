//! A source counts as a consumer of its origin, as nats-server's source consumer does:
//! a workqueue origin loses what was copied, an interest origin with no consumer of its
//! own still stores what the source will copy (and drops it once copied), and the
//! origin's info counts the source among its consumers.

mod common;

use std::time::{Duration, Instant};

use async_nats::jetstream::stream::{Config, RetentionPolicy};
use common::jetstream::{api, connect, publish, stream_config};
use common::TestServer;
use serde_json::Value;

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

#[tokio::test]
async fn workqueue_and_interest_origins_treat_a_source_as_their_consumer() {
    let server = TestServer::start(&["--shards", "2"]);
    let (client, js) = connect(&server).await;
    let work = Config { retention: RetentionPolicy::WorkQueue, ..stream_config("WORK", &["work.*"]) };
    let interest = Config { retention: RetentionPolicy::Interest, ..stream_config("SEEN", &["seen.*"]) };
    js.create_stream(work).await.unwrap();
    js.create_stream(interest).await.unwrap();
    let body = r#"{"name":"COLLECT","sources":[{"name":"WORK"},{"name":"SEEN"}]}"#;
    let created = api(&client, "STREAM.CREATE.COLLECT", body).await;
    assert!(created["error"].is_null(), "{created}");
    // The source has made itself known to both origins.
    info_until(&client, "SEEN", |info| info["state"]["consumer_count"] == 1).await;
    info_until(&client, "WORK", |info| info["state"]["consumer_count"] == 1).await;

    for index in 1..=3 {
        publish(&js, "work.a", &format!("work {index}")).await;
        publish(&js, "seen.a", &format!("seen {index}")).await;
    }
    let collected = info_until(&client, "COLLECT", |info| info["state"]["messages"] == 6).await;
    assert_eq!(collected["state"]["last_seq"], 6, "{collected}");
    // Copied, so gone from both origins once the source has told them (its next read).
    let work = info_until(&client, "WORK", |info| info["state"]["messages"] == 0).await;
    assert_eq!(work["state"]["last_seq"], 3, "{work}");
    let seen = info_until(&client, "SEEN", |info| info["state"]["messages"] == 0).await;
    assert_eq!(seen["state"]["last_seq"], 3, "an interest origin stored what only the source wanted: {seen}");
}
