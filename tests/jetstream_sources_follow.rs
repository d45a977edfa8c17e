//! A stream sourcing two origins on different shards (`--shards 2`) and taking its own
//! publishes: each copy gets a new sequence and a `Nats-Stream-Source` header in
//! nats-server's format, and a kill -9 in the middle of copying neither loses nor
//! duplicates a message (progress comes back from what was stored).

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use async_nats::jetstream::Context;
use common::jetstream::{api, connect, publish, stream_config};
use common::TestServer;
use jetcore::shard::placement::shard_for;
use serde_json::Value;

const SHARDS: u16 = 2;

/// Two origin names that live on different shards, and the aggregate's.
fn names() -> (String, String) {
    let first = "ALPHA".to_string();
    let second = (0..100)
        .map(|index| format!("BETA{index}"))
        .find(|name| shard_for(name, SHARDS) != shard_for(&first, SHARDS))
        .expect("some name lands on the other shard");
    (first, second)
}

async fn stream_info(client: &async_nats::Client, stream: &str) -> Value {
    api(client, &format!("STREAM.INFO.{stream}"), "").await
}

/// Every message of `stream` as (payload → how many times), checking each copy's header.
async fn copies(js: &Context, stream: &str, last_seq: u64) -> BTreeMap<String, u32> {
    let stream = js.get_stream(stream).await.unwrap();
    let mut seen = BTreeMap::new();
    for seq in 1..=last_seq {
        let Ok(message) = stream.get_raw_message(seq).await else { continue };
        let payload = String::from_utf8(message.payload.to_vec()).unwrap();
        if let Some(origin) = payload.split('/').next().filter(|origin| *origin != "own") {
            let header = message.headers.get("Nats-Stream-Source").map(|v| v.as_str().to_string());
            let header = header.unwrap_or_else(|| panic!("seq {seq} ({payload}) has no Nats-Stream-Source"));
            let tokens: Vec<&str> = header.split(' ').collect();
            assert_eq!(tokens.len(), 6, "{header}");
            assert_eq!((tokens[0], tokens[2], tokens[3]), (origin, ">", ">"), "{header}");
            assert_eq!(tokens[4], message.subject.as_str(), "{header}");
            let index: u64 = payload.rsplit('/').next().unwrap().parse().unwrap();
            assert_eq!(tokens[1], index.to_string(), "the origin's sequence: {header}");
        }
        *seen.entry(payload).or_insert(0) += 1;
    }
    seen
}

async fn wait_for_messages(client: &async_nats::Client, stream: &str, messages: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info = stream_info(client, stream).await;
        if info["state"]["messages"] == messages {
            return info;
        }
        assert!(Instant::now() < deadline, "{stream} never reached {messages}: {info}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn sources_on_two_shards_survive_a_restart_without_loss_or_duplicates() {
    let (alpha, beta) = names();
    let mut server = TestServer::start(&["--shards", "2"]);
    let (client, js) = connect(&server).await;
    js.create_stream(stream_config(&alpha, &["alpha.*"])).await.unwrap();
    js.create_stream(stream_config(&beta, &["beta.*"])).await.unwrap();
    let body =
        format!(r#"{{"name":"AGG","subjects":["agg.own"],"sources":[{{"name":"{alpha}"}},{{"name":"{beta}"}}]}}"#);
    let created = api(&client, "STREAM.CREATE.AGG", &body).await;
    assert!(created["error"].is_null(), "{created}");

    // Origin sequences are 1..=N in each origin: the payload names origin and sequence.
    for index in 1..=150u64 {
        publish(&js, "alpha.x", &format!("{alpha}/{index}")).await;
        publish(&js, "beta.y", &format!("{beta}/{index}")).await;
        if index % 50 == 0 {
            publish(&js, "agg.own", &format!("own/{index}")).await;
        }
    }
    // Kill while copying may still be going on, then publish more after the restart.
    server.restart();
    let (client, js) = connect(&server).await;
    for index in 151..=200u64 {
        publish(&js, "alpha.x", &format!("{alpha}/{index}")).await;
        publish(&js, "beta.y", &format!("{beta}/{index}")).await;
    }
    let info = wait_for_messages(&client, "AGG", 403).await;
    let sources = info["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 2, "{info}");
    for source in sources {
        assert_eq!(source["seq"], 200, "{info}");
        assert_eq!(source["lag"], 0, "{info}");
    }
    let last_seq = info["state"]["last_seq"].as_u64().unwrap();
    assert_eq!(last_seq, 403, "no sequence was used twice: {info}");
    let seen = copies(&js, "AGG", last_seq).await;
    assert_eq!(seen.len(), 403);
    assert!(seen.values().all(|count| *count == 1), "a message was copied twice");

    // Nothing more arrives later (no late duplicates).
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(stream_info(&client, "AGG").await["state"]["messages"], 403);
}
