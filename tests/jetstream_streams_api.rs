//! Stream management over the wire with async-nats: create, info, update, delete, the
//! create/overlap refusals, names and list paging, memory storage, and the answers for a
//! stream that does not exist. Every test starts its own two-shard server.

mod common;

use std::time::Duration;

use async_nats::jetstream::context::{CreateStreamErrorKind, GetStreamErrorKind};
use async_nats::jetstream::stream::{Config, DiscardPolicy, StorageType};
use common::jetstream::{api, assert_error, connect, publish, stream_config};
use common::TestServer;
use futures::TryStreamExt;

fn server() -> TestServer {
    TestServer::start(&["--shards", "2"])
}

#[tokio::test]
async fn create_info_update_delete_round_trip() {
    let server = server();
    let (_client, js) = connect(&server).await;

    let mut stream = js.create_stream(stream_config("ORDERS", &["orders.*"])).await.expect("create");
    let created = stream.info().await.expect("info").clone();
    // Defaults are filled in and echoed back as nats-server does.
    assert_eq!(created.config.name, "ORDERS");
    assert_eq!(created.config.subjects, vec!["orders.*".to_string()]);
    assert_eq!(created.config.max_messages, -1);
    assert_eq!(created.config.max_bytes, -1);
    assert_eq!(created.config.max_messages_per_subject, -1);
    assert_eq!(created.config.max_message_size, -1);
    assert_eq!(created.config.max_consumers, -1);
    assert_eq!(created.config.num_replicas, 1);
    assert_eq!(created.config.discard, DiscardPolicy::Old);
    assert_eq!(created.config.storage, StorageType::File);
    assert_eq!(created.config.duplicate_window, Duration::from_secs(120));
    assert_eq!(created.state.messages, 0);
    assert_eq!(created.state.first_sequence, 0);
    assert_eq!(created.state.last_sequence, 0);

    let fetched = js.get_stream("ORDERS").await.expect("get_stream").cached_info().clone();
    assert_eq!(fetched.config, created.config);
    assert_eq!(fetched.created, created.created);

    let updated = js
        .update_stream(Config {
            subjects: vec!["orders.*".into(), "refunds.>".into()],
            max_messages: 1_000,
            description: Some("all orders".into()),
            ..stream_config("ORDERS", &[])
        })
        .await
        .expect("update");
    assert_eq!(updated.config.subjects, vec!["orders.*".to_string(), "refunds.>".to_string()]);
    assert_eq!(updated.config.max_messages, 1_000);
    assert_eq!(updated.config.description.as_deref(), Some("all orders"));
    assert_eq!(updated.created, created.created, "update keeps the creation time");
    // The new subject is captured at once.
    assert_eq!(publish(&js, "refunds.eu.1", "r").await.sequence, 1);

    let info = js.get_stream("ORDERS").await.expect("get after update").cached_info().clone();
    assert_eq!(info.config.max_messages, 1_000);
    assert_eq!(info.state.messages, 1);

    assert!(js.delete_stream("ORDERS").await.expect("delete").success);
    let missing = js.get_stream("ORDERS").await.expect_err("deleted stream is gone");
    match missing.kind() {
        GetStreamErrorKind::JetStream(error) => assert_eq!(error.error_code().0, 10059),
        other => panic!("unexpected get_stream error {other:?}"),
    }
    assert!(js.delete_stream("ORDERS").await.is_err(), "second delete fails");
    // Its subjects are free again: publishing there has no stream to answer.
    let error = js.publish("orders.1", "x".into()).await.unwrap().await.expect_err("no stream");
    assert_eq!(error.kind(), async_nats::jetstream::context::PublishErrorKind::StreamNotFound);
}

#[tokio::test]
async fn create_is_idempotent_for_the_same_config_only() {
    let server = server();
    let (client, js) = connect(&server).await;
    let config = Config { max_messages: 10, ..stream_config("EVENTS", &["events.>"]) };
    let first = js.create_stream(config.clone()).await.expect("create").cached_info().clone();
    let second = js.create_stream(config.clone()).await.expect("identical create succeeds");
    assert_eq!(second.cached_info().config, first.config);
    assert_eq!(second.cached_info().created, first.created);

    let changed = Config { max_messages: 11, ..config.clone() };
    let error = js.create_stream(changed).await.expect_err("different config refused");
    match error.kind() {
        CreateStreamErrorKind::JetStream(error) => {
            assert_eq!(error.error_code().0, 10058);
            assert_eq!(error.code(), 400);
        }
        other => panic!("unexpected create error {other:?}"),
    }
    let reply = api(&client, "STREAM.CREATE.EVENTS", r#"{"name":"EVENTS","subjects":["events.*"]}"#).await;
    assert_error(&reply, 400, 10058, "stream name already in use with a different configuration");
    assert_eq!(reply["type"], "io.nats.jetstream.api.v1.stream_create_response");
    // The refused creates changed nothing.
    let info = js.get_stream("EVENTS").await.unwrap().cached_info().clone();
    assert_eq!(info.config.max_messages, 10);
    assert_eq!(info.config.subjects, vec!["events.>".to_string()]);
}

#[tokio::test]
async fn overlapping_subjects_are_refused() {
    let server = server();
    let (client, js) = connect(&server).await;
    js.create_stream(stream_config("ORDERS", &["orders.*"])).await.expect("create ORDERS");

    for subjects in [r#"["orders.new"]"#, r#"["orders.>"]"#, r#"["other.b","orders.new"]"#, r#"["x.y","orders.*"]"#] {
        let body = format!(r#"{{"name":"OTHER","subjects":{subjects}}}"#);
        let reply = api(&client, "STREAM.CREATE.OTHER", &body).await;
        assert_error(&reply, 400, 10065, "subjects overlap with an existing stream");
    }
    let error = js.create_stream(stream_config("OTHER", &["orders.eu"])).await.expect_err("overlap");
    match error.kind() {
        CreateStreamErrorKind::JetStream(error) => assert_eq!(error.error_code().0, 10065),
        other => panic!("unexpected create error {other:?}"),
    }
    // Nothing was created by the refusals, and disjoint subjects are fine.
    let names: Vec<String> = js.stream_names().try_collect().await.expect("names");
    assert_eq!(names, vec!["ORDERS".to_string()]);
    js.create_stream(stream_config("PAYMENTS", &["payments.*", "orders"])).await.expect("disjoint");

    // An update may not take another stream's subjects either.
    let reply = api(&client, "STREAM.UPDATE.PAYMENTS", r#"{"name":"PAYMENTS","subjects":["orders.*"]}"#).await;
    assert_error(&reply, 400, 10065, "subjects overlap with an existing stream");
    // But a stream's update may keep overlapping its own subjects.
    let reply = api(&client, "STREAM.UPDATE.ORDERS", r#"{"name":"ORDERS","subjects":["orders.>"]}"#).await;
    assert!(reply.get("error").is_none(), "self-overlap on update: {reply}");
    assert_eq!(publish(&js, "orders.eu.1", "x").await.stream, "ORDERS");
}

#[tokio::test]
async fn subjects_in_jetstream_and_system_spaces_need_no_ack() {
    let server = server();
    let (client, _js) = connect(&server).await;
    let jetstream_api = "subjects that overlap with jetstream api require no-ack to be true";
    let system_api = "subjects that overlap with system api require no-ack to be true";
    let cases = [
        ("*.eu", jetstream_api),
        ("*.*.x", jetstream_api),
        ("*.>", jetstream_api),
        ("$JS.API.x", jetstream_api),
        ("$JSC.x", jetstream_api),
        ("$NRG.x", jetstream_api),
        ("$SYS.x", system_api),
        (">", "capturing all subjects requires no-ack to be true"),
    ];
    for (subject, description) in cases {
        let body = format!(r#"{{"name":"A","subjects":["{subject}"]}}"#);
        let reply = api(&client, "STREAM.CREATE.A", &body).await;
        assert_error(&reply, 500, 10052, description);
    }
    // The exceptions nats-server makes, and no_ack streams, are accepted.
    for (name, subject, no_ack) in
        [("EV", "$JS.EVENT.foo", false), ("SA", "$SYS.ACCOUNT.x", false), ("NA", "*.eu", true)]
    {
        let body = format!(r#"{{"name":"{name}","subjects":["{subject}"],"no_ack":{no_ack}}}"#);
        let reply = api(&client, &format!("STREAM.CREATE.{name}"), &body).await;
        assert!(reply.get("error").is_none(), "{subject}: {reply}");
    }
    let names = api(&client, "STREAM.NAMES", "").await;
    assert_eq!(names["total"], 3);
}

#[tokio::test]
async fn names_and_list_page_through_many_streams() {
    const STREAM_COUNT: usize = 260;
    let server = server();
    let (client, js) = connect(&server).await;
    let mut expected = Vec::new();
    for index in 0..STREAM_COUNT {
        let name = format!("S{index:03}");
        let config = Config { storage: StorageType::Memory, ..stream_config(&name, &[&format!("paging.{index}.*")]) };
        js.create_stream(config).await.unwrap_or_else(|e| panic!("create {name}: {e}"));
        expected.push(name);
    }

    let mut names: Vec<String> = js.stream_names().try_collect().await.expect("names");
    names.sort();
    assert_eq!(names, expected);
    let infos: Vec<_> = js.streams().try_collect().await.expect("list");
    let mut listed: Vec<String> = infos.iter().map(|info| info.config.name.clone()).collect();
    listed.sort();
    assert_eq!(listed, expected, "STREAM.LIST pages through every stream once");

    let first = api(&client, "STREAM.LIST", "{}").await;
    assert_eq!(first["total"], STREAM_COUNT);
    assert_eq!(first["limit"], 256);
    assert_eq!(first["streams"].as_array().unwrap().len(), 256);
    let rest = api(&client, "STREAM.LIST", r#"{"offset":256}"#).await;
    assert_eq!(rest["offset"], 256);
    assert_eq!(rest["streams"].as_array().unwrap().len(), STREAM_COUNT - 256);
    let past = api(&client, "STREAM.NAMES", r#"{"offset":1000}"#).await;
    assert_eq!(past["total"], STREAM_COUNT);
    assert_eq!(past["streams"].as_array().map(Vec::len).unwrap_or(0), 0);
    let names = api(&client, "STREAM.NAMES", r#"{"offset":250}"#).await;
    assert_eq!(names["limit"], 1024);
    assert_eq!(names["streams"].as_array().unwrap().len(), 10);

    // A subject filter keeps the streams whose subjects collide with it.
    let filtered = api(&client, "STREAM.NAMES", r#"{"subject":"paging.7.x"}"#).await;
    assert_eq!(filtered["streams"], serde_json::json!(["S007"]));
    let found = js.stream_by_subject("paging.123.abc").await.expect("stream_by_subject");
    assert_eq!(found, "S123");
    let account = js.query_account().await.expect("account info");
    assert_eq!(account.streams as usize, STREAM_COUNT);
}

#[tokio::test]
async fn memory_storage_stream_stores_and_serves() {
    let server = server();
    let (_client, js) = connect(&server).await;
    let config = Config { storage: StorageType::Memory, ..stream_config("MEM", &["mem.>"]) };
    let stream = js.create_stream(config).await.expect("create memory stream");
    assert_eq!(stream.cached_info().config.storage, StorageType::Memory);
    for index in 1..=20u64 {
        assert_eq!(publish(&js, &format!("mem.{}", index % 3), &format!("m{index}")).await.sequence, index);
    }
    let info = js.get_stream("MEM").await.unwrap().cached_info().clone();
    assert_eq!(info.state.messages, 20);
    assert_eq!(info.state.last_sequence, 20);
    assert_eq!(info.state.subjects_count, 3);
    let message = stream.get_raw_message(7).await.expect("get 7");
    assert_eq!(message.subject.as_str(), "mem.1");
    assert_eq!(&message.payload[..], b"m7");
    let account = js.query_account().await.expect("account");
    assert!(account.memory > 0, "memory usage is counted: {account:?}");
}

#[tokio::test]
async fn small_memory_streams_cost_little_memory() {
    const STREAM_COUNT: u64 = 16;
    /// Allowance per memory stream holding one small message (the file segment default,
    /// which an in-memory segment used to take in full, is 64 MiB).
    const STREAM_BYTES_MAX: u64 = 8 * 1024 * 1024;
    let server = server();
    let (_client, js) = connect(&server).await;
    let before = server.resident_bytes();
    for index in 0..STREAM_COUNT {
        let name = format!("M{index}");
        let config = Config { storage: StorageType::Memory, ..stream_config(&name, &[&format!("m.{index}")]) };
        js.create_stream(config).await.expect("create");
        publish(&js, &format!("m.{index}"), "small").await;
    }
    // Let stream maintenance run a few times (it syncs and checkpoints).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let grown = server.resident_bytes().saturating_sub(before);
    assert!(grown < STREAM_COUNT * STREAM_BYTES_MAX, "{STREAM_COUNT} small memory streams took {grown} bytes");
    // A 1 MiB message (the default max_payload) still fits a memory stream.
    let big = "b".repeat(1024 * 1024 - 64);
    assert_eq!(publish(&js, "m.0", &big).await.sequence, 2);
}

#[tokio::test]
async fn account_info_reserves_each_streams_max_bytes() {
    let server = server();
    let (client, js) = connect(&server).await;
    js.create_stream(Config { max_bytes: 2_000, ..stream_config("F1", &["f1"]) }).await.expect("create");
    js.create_stream(Config { max_bytes: 500, ..stream_config("F2", &["f2"]) }).await.expect("create");
    js.create_stream(stream_config("F3", &["f3"])).await.expect("unlimited: no reservation");
    let config = Config { max_bytes: 4_096, storage: StorageType::Memory, ..stream_config("M1", &["m1"]) };
    js.create_stream(config).await.expect("create");
    let account = api(&client, "INFO", "").await;
    assert_eq!(account["reserved_storage"], 2_500, "{account}");
    assert_eq!(account["reserved_memory"], 4_096, "{account}");
    assert_eq!(account["streams"], 4);
    js.delete_stream("F1").await.expect("delete");
    assert_eq!(api(&client, "INFO", "").await["reserved_storage"], 500);
}

#[tokio::test]
async fn requests_for_a_missing_stream_are_not_found() {
    let server = server();
    let (client, _js) = connect(&server).await;
    let cases = [
        ("STREAM.INFO.NOPE", "", "stream_info_response"),
        ("STREAM.UPDATE.NOPE", r#"{"name":"NOPE","subjects":["nope"]}"#, "stream_update_response"),
        ("STREAM.DELETE.NOPE", "", "stream_delete_response"),
        ("STREAM.PURGE.NOPE", "", "stream_purge_response"),
        ("STREAM.MSG.GET.NOPE", r#"{"seq":1}"#, "stream_msg_get_response"),
        ("STREAM.MSG.DELETE.NOPE", r#"{"seq":1}"#, "stream_msg_delete_response"),
    ];
    for (subject, body, response_type) in cases {
        let reply = api(&client, subject, body).await;
        assert_error(&reply, 404, 10059, "stream not found");
        assert_eq!(reply["type"], format!("io.nats.jetstream.api.v1.{response_type}"), "{subject}");
    }
    let reply = api(&client, "STREAM.CREATE.A", r#"{"name":"B","subjects":["a"]}"#).await;
    assert_error(&reply, 400, 10056, "stream name in subject does not match request");
}

/// `deleted_details` lists the deleted sequences between the first and the last message
/// (nats-server: `state.deleted`); without it only `num_deleted` is given.
#[tokio::test]
async fn stream_info_lists_deleted_sequences_on_request() {
    let server = server();
    let (client, js) = connect(&server).await;
    js.create_stream(stream_config("DEL", &["del.*"])).await.expect("create");
    for n in 1..=6 {
        publish(&js, "del.a", &n.to_string()).await;
    }
    for seq in [2, 3, 5] {
        let reply = api(&client, "STREAM.MSG.DELETE.DEL", &format!(r#"{{"seq":{seq}}}"#)).await;
        assert_eq!(reply["success"], true, "{reply}");
    }
    let detailed = api(&client, "STREAM.INFO.DEL", r#"{"deleted_details":true}"#).await;
    assert_eq!(detailed["state"]["deleted"], serde_json::json!([2, 3, 5]), "{detailed}");
    assert_eq!(detailed["state"]["num_deleted"], 3);
    let plain = api(&client, "STREAM.INFO.DEL", "").await;
    assert!(plain["state"].get("deleted").is_none(), "{plain}");
    assert_eq!(plain["state"]["num_deleted"], 3);
}
