//! Streams across a kill -9 and restart (there is no graceful shutdown yet): config,
//! state and every acknowledged message are intact, publishing continues at
//! last_seq + 1, removals stay removed, and every stream is still found when the
//! restart changes the `--shards` count.

mod common;

use std::collections::BTreeMap;

use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::stream::{Config, StorageType};
use async_nats::jetstream::Context;
use async_nats::HeaderMap;
use common::jetstream::{connect, publish, stream_config};
use common::TestServer;
use futures::TryStreamExt;

/// What one acknowledged publish put where: stream → seq → (subject, payload, trace header).
type Acked = BTreeMap<String, BTreeMap<u64, (String, String, String)>>;

async fn publish_acked(js: &Context, acked: &mut Acked, stream: &str, subject: &str, index: usize) {
    let payload = format!("{stream}/{subject}/{index}/{}", "x".repeat(index % 97));
    let trace = format!("trace-{index}");
    let mut headers = HeaderMap::new();
    headers.insert("X-Trace", trace.as_str());
    let ack = js
        .publish_with_headers(subject.to_string(), headers, payload.clone().into())
        .await
        .expect("send")
        .await
        .expect("ack");
    assert_eq!(ack.stream, stream);
    acked.entry(stream.to_string()).or_default().insert(ack.sequence, (subject.to_string(), payload, trace));
}

/// Every acknowledged message is served by MSG.GET exactly as published.
async fn assert_all_acked_present(js: &Context, acked: &Acked) {
    for (name, messages) in acked {
        let stream = js.get_stream(name).await.unwrap_or_else(|e| panic!("stream {name} after restart: {e}"));
        let state = &stream.cached_info().state;
        assert_eq!(state.messages, messages.len() as u64, "{name} message count");
        assert_eq!(state.last_sequence, *messages.keys().last().unwrap(), "{name} last_seq");
        for (seq, (subject, payload, trace)) in messages {
            let message = stream.get_raw_message(*seq).await.unwrap_or_else(|e| panic!("{name} seq {seq}: {e}"));
            assert_eq!(message.subject.as_str(), subject, "{name} seq {seq}");
            assert_eq!(message.payload, payload.as_bytes(), "{name} seq {seq}");
            assert_eq!(message.headers.get("X-Trace").map(|v| v.as_str()), Some(trace.as_str()));
        }
    }
}

#[tokio::test]
async fn acknowledged_messages_survive_kill_9() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let (_client, js) = connect(&server).await;
    let configs = [
        Config { max_messages: 1_000, description: Some("orders".into()), ..stream_config("ORDERS", &["orders.*"]) },
        Config { max_messages_per_subject: 5, ..stream_config("SENSORS", &["sensors.>"]) },
        Config { allow_direct: true, ..stream_config("AUDIT", &["audit"]) },
    ];
    let mut expected_configs = BTreeMap::new();
    for config in configs {
        let info = js.create_stream(config).await.expect("create").cached_info().clone();
        expected_configs.insert(info.config.name.clone(), (info.config, info.created));
    }
    let mut acked = Acked::new();
    for index in 0..300 {
        publish_acked(&js, &mut acked, "ORDERS", &format!("orders.{}", index % 7), index).await;
        if index % 3 == 0 {
            publish_acked(&js, &mut acked, "AUDIT", "audit", index).await;
        }
    }
    // SENSORS keeps only the newest 5 per subject: expect just those.
    let mut sensors = BTreeMap::new();
    for index in 0..40 {
        let mut one = Acked::new();
        publish_acked(&js, &mut one, "SENSORS", &format!("sensors.{}", index % 4), index).await;
        sensors.extend(one.remove("SENSORS").unwrap());
    }
    let kept: BTreeMap<_, _> = sensors.into_iter().filter(|(seq, _)| *seq > 20).collect();
    acked.insert("SENSORS".into(), kept);
    // Dedupe ids within the window are remembered across the restart, as nats-server's are.
    let once = || PublishMessage::build().payload("once".into()).message_id("before-restart").header("X-Trace", "once");
    let first = js.send_publish("audit", once()).await.unwrap().await.expect("ack");
    acked.get_mut("AUDIT").unwrap().insert(first.sequence, ("audit".into(), "once".into(), "once".into()));
    drop(js);

    server.restart_retrying(&["--shards", "2"]);
    let (_client, js) = connect(&server).await;

    for (name, (config, created)) in &expected_configs {
        let info = js.get_stream(name).await.expect("stream after restart").cached_info().clone();
        assert_eq!(&info.config, config, "{name} config survives");
        assert_eq!(&info.created, created, "{name} creation time survives");
    }
    assert_all_acked_present(&js, &acked).await;
    let again = js.send_publish("audit", once()).await.unwrap().await.expect("ack");
    assert_eq!((again.sequence, again.duplicate), (first.sequence, true), "dedupe across restart");

    for (name, subject) in [("ORDERS", "orders.new"), ("SENSORS", "sensors.9"), ("AUDIT", "audit")] {
        let last = *acked[name].keys().last().unwrap();
        assert_eq!(publish(&js, subject, "after").await.sequence, last + 1, "{name} continues");
    }
    let direct = js.get_stream("AUDIT").await.unwrap().direct_get(1).await.expect("direct get");
    assert_eq!(direct.headers.get("X-Trace").map(|v| v.as_str()), Some("trace-0"));
}

#[tokio::test]
async fn purges_deletes_and_stream_removal_stay_done() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let (_client, js) = connect(&server).await;
    for name in ["KEPT", "GONE"] {
        js.create_stream(stream_config(name, &[&format!("{}.*", name.to_lowercase())])).await.expect("create");
        for index in 0..10 {
            publish(&js, &format!("{}.{}", name.to_lowercase(), index % 2), &format!("{index}")).await;
        }
    }
    let kept = js.get_stream("KEPT").await.unwrap();
    assert_eq!(kept.purge().filter("kept.0").await.expect("purge").purged, 5);
    assert!(kept.delete_message(2).await.expect("delete 2"));
    assert!(js.delete_stream("GONE").await.expect("delete GONE").success);
    drop(js);

    server.restart_retrying(&["--shards", "2"]);
    let (_client, js) = connect(&server).await;
    let names: Vec<String> = js.stream_names().try_collect().await.expect("names");
    assert_eq!(names, vec!["KEPT".to_string()], "a deleted stream stays deleted");
    let kept = js.get_stream("KEPT").await.unwrap();
    let state = &kept.cached_info().state;
    // Left: seq 4, 6, 8, 10 (kept.1, seq 2 deleted).
    assert_eq!((state.messages, state.first_sequence, state.last_sequence), (4, 4, 10));
    assert!(kept.get_raw_message(2).await.is_err());
    assert!(kept.get_raw_message(3).await.is_err());
    assert_eq!(&kept.get_raw_message(4).await.unwrap().payload[..], b"3");
    // The removed stream's subjects are free; its name can be reused from scratch.
    js.create_stream(stream_config("GONE", &["gone.*"])).await.expect("recreate");
    assert_eq!(publish(&js, "gone.0", "fresh").await.sequence, 1);
}

#[tokio::test]
async fn a_memory_stream_does_not_outlive_the_process() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let (_client, js) = connect(&server).await;
    let config = Config { storage: StorageType::Memory, ..stream_config("MEM", &["mem.*"]) };
    js.create_stream(config).await.expect("create");
    js.create_stream(stream_config("DISK", &["disk.*"])).await.expect("create");
    for _ in 0..5 {
        publish(&js, "mem.a", "volatile").await;
        publish(&js, "disk.a", "durable").await;
    }
    drop(js);
    server.restart_retrying(&["--shards", "2"]);
    let (_client, js) = connect(&server).await;
    // A standalone nats-server 2.15 forgets memory streams at restart (checked by hand:
    // STREAM.LIST lists only the file stream), so its name and subjects are free again.
    let names: Vec<String> = js.stream_names().try_collect().await.expect("names");
    assert_eq!(names, vec!["DISK".to_string()]);
    let config = Config { storage: StorageType::Memory, ..stream_config("MEM", &["mem.*"]) };
    js.create_stream(config).await.expect("recreate");
    assert_eq!(publish(&js, "mem.a", "fresh").await.sequence, 1);
    assert_eq!(js.get_stream("DISK").await.unwrap().cached_info().state.messages, 5);
}

#[tokio::test]
async fn every_stream_is_found_when_the_shard_count_changes() {
    const STREAM_COUNT: usize = 6;
    let mut server = TestServer::start(&["--shards", "2"]);
    let names: Vec<String> = (0..STREAM_COUNT).map(|index| format!("PLACE{index:02}")).collect();
    let mut acked = Acked::new();
    {
        let (_client, js) = connect(&server).await;
        for (index, name) in names.iter().enumerate() {
            js.create_stream(stream_config(name, &[&format!("place.{index}.*")])).await.expect("create");
            publish_acked(&js, &mut acked, name, &format!("place.{index}.first"), index).await;
        }
    }
    // 2 → 1 → 2 → 3 shards: each restart finds every stream, serves what was acked and
    // takes new publishes at the next sequence (which are then expected too).
    for (round, shards) in ["1", "2", "3"].into_iter().enumerate() {
        server.restart_retrying(&["--shards", shards]);
        let (_client, js) = connect(&server).await;
        let mut listed: Vec<String> = js.stream_names().try_collect().await.expect("names");
        listed.sort();
        assert_eq!(listed, names, "--shards {shards}: every stream listed");
        assert_all_acked_present(&js, &acked).await;
        for (index, name) in names.iter().enumerate() {
            let subject = format!("place.{index}.round{round}");
            publish_acked(&js, &mut acked, name, &subject, index + round).await;
            let seqs: Vec<u64> = acked[name].keys().copied().collect();
            assert_eq!(seqs, (1..=round as u64 + 2).collect::<Vec<_>>(), "{name} sequences");
        }
        let account = js.query_account().await.expect("account");
        assert_eq!(account.streams as usize, STREAM_COUNT, "--shards {shards}");
    }
}
