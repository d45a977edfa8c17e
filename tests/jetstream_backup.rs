//! Stream backups (`$JS.API.STREAM.SNAPSHOT` / `STREAM.RESTORE`, nats-server 2.15's V2
//! archive): a backup taken from one server restores onto another with every message at
//! its sequence (headers, times, deleted sequences and a deleted last message kept) and
//! the consumer at its ack floor: jetcore to jetcore, nats-server to jetcore and jetcore to
//! nats-server, both servers running in the test. Refusals are compared with
//! nats-server's replies to the same requests; a corrupt upload creates nothing.

mod common;

use std::time::Duration;

use async_nats::jetstream::consumer::{pull, AckPolicy};
use async_nats::Client;
use common::hub::JetStreamServer;
use common::TestServer;
use futures::StreamExt;
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(10);
const MESSAGES: u64 = 300;
const DELETED: [u64; 5] = [2, 3, 50, 151, MESSAGES];
const ACKED: usize = 10;

async fn api(client: &Client, call: &str, body: Value) -> Value {
    let body = if body.is_null() { String::new() } else { body.to_string() };
    let reply = client.request(format!("$JS.API.{call}"), body.into()).await.expect("API reply");
    serde_json::from_slice(&reply.payload).expect("JSON reply")
}

/// Stream `B` with messages (some with headers, several sizes), deleted sequences
/// (including the last) and a durable pull consumer that acked the first messages.
async fn populate(client: &Client) {
    let created = api(client, "STREAM.CREATE.B", json!({"name": "B", "subjects": ["b.>"]})).await;
    assert!(created["error"].is_null(), "{created}");
    let context = async_nats::jetstream::new(client.clone());
    for index in 0..MESSAGES {
        let payload = format!("message {index} ").repeat(index as usize % 17 + 1);
        let subject = format!("b.{}", index % 7);
        if index % 3 == 0 {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert("X-Index", index.to_string().as_str());
            context.publish_with_headers(subject, headers, payload.into()).await.unwrap().await.unwrap();
        } else {
            context.publish(subject, payload.into()).await.unwrap().await.unwrap();
        }
    }
    for seq in DELETED {
        let deleted = api(client, "STREAM.MSG.DELETE.B", json!({"seq": seq})).await;
        assert_eq!(deleted["success"], true, "{deleted}");
    }
    let stream = context.get_stream("B").await.unwrap();
    let config = pull::Config { durable_name: Some("D".into()), ack_policy: AckPolicy::Explicit, ..Default::default() };
    let consumer = stream.create_consumer(config).await.unwrap();
    let mut messages = consumer.fetch().max_messages(ACKED).messages().await.unwrap();
    while let Some(message) = messages.next().await {
        message.unwrap().double_ack().await.unwrap();
    }
}

/// Takes a backup of `stream`: the response, the archive bytes and the final status.
async fn snapshot(client: &Client, stream: &str, chunk_size: usize, window_size: usize) -> (Value, Vec<u8>, String) {
    let inbox = client.new_inbox();
    let mut chunks = client.subscribe(inbox.clone()).await.unwrap();
    let request = json!({"deliver_subject": inbox, "chunk_size": chunk_size, "window_size": window_size});
    let response = api(client, &format!("STREAM.SNAPSHOT.{stream}"), request).await;
    assert!(response["error"].is_null(), "{response}");
    let (archive, status) = receive_archive(client, &mut chunks).await;
    (response, archive, status)
}

/// Reads a backup's chunks, acking each, up to the empty end message: the archive bytes
/// and the end's status (empty without one).
async fn receive_archive(client: &Client, chunks: &mut async_nats::Subscriber) -> (Vec<u8>, String) {
    let mut archive = Vec::new();
    loop {
        let chunk = tokio::time::timeout(TIMEOUT, chunks.next()).await.expect("a chunk in time").unwrap();
        if chunk.payload.is_empty() {
            let status = chunk.status.map(|status| status.as_u16().to_string()).unwrap_or_default();
            return (archive, status);
        }
        archive.extend_from_slice(&chunk.payload);
        if let Some(reply) = chunk.reply {
            client.publish(reply, Default::default()).await.unwrap();
        }
    }
}

/// Restores a backup as `nats stream restore` does; the final stream-create response.
async fn restore(client: &Client, stream: &str, response: &Value, archive: &[u8]) -> Value {
    let request = json!({"config": response["config"], "state": response["state"]});
    let opened = api(client, &format!("STREAM.RESTORE.{stream}"), request).await;
    let upload = opened["deliver_subject"].as_str().unwrap_or_else(|| panic!("{opened}")).to_string();
    for chunk in archive.chunks(4096) {
        let ack = client.request(upload.clone(), chunk.to_vec().into()).await.expect("chunk acked");
        assert!(ack.payload.is_empty(), "chunk refused: {:?}", ack.payload);
    }
    let done = client.request(upload, Default::default()).await.expect("restore answered");
    serde_json::from_slice(&done.payload).unwrap()
}

/// Every sequence of `B` as `STREAM.MSG.GET` answers it (message or error), the state and
/// the consumer's ack floor.
async fn contents(client: &Client) -> (Vec<Value>, Value, Value) {
    let mut messages = Vec::new();
    for seq in 1..=MESSAGES {
        let reply = api(client, "STREAM.MSG.GET.B", json!({"seq": seq})).await;
        messages.push(if reply["error"].is_null() { reply["message"].clone() } else { json!(null) });
    }
    let info = api(client, "STREAM.INFO.B", Value::Null).await;
    (messages, info["state"].clone(), ack_floor(client).await)
}

async fn ack_floor(client: &Client) -> Value {
    let info = api(client, "CONSUMER.INFO.B.D", Value::Null).await;
    assert!(info["error"].is_null(), "{info}");
    let floor = &info["ack_floor"];
    json!({"consumer_seq": floor["consumer_seq"], "stream_seq": floor["stream_seq"]})
}

/// The restored stream holds what the original held, and its consumer resumes after the ack floor.
async fn assert_same(original: &(Vec<Value>, Value, Value), restored_client: &Client) {
    let (messages, state, floor) = contents(restored_client).await;
    for (index, (want, got)) in original.0.iter().zip(&messages).enumerate() {
        assert_eq!(want, got, "sequence {}", index + 1);
    }
    // Not `last_ts`: with the last message deleted, the archive does not carry its time
    // (nats-server restoring its own backup reports the last remaining message's time too).
    for key in ["messages", "bytes", "first_seq", "last_seq", "num_deleted", "first_ts"] {
        assert_eq!(original.1[key], state[key], "state {key}: {} vs {}", original.1, state);
    }
    assert_eq!(state["last_seq"], MESSAGES, "the deleted last sequence is kept");
    // Ten acked, sequences 2 and 3 deleted before: the floor is past sequence 10.
    assert_eq!(original.2, json!({"consumer_seq": ACKED, "stream_seq": 12}));
    assert_eq!(floor, original.2, "the consumer's ack floor");
}

#[tokio::test]
async fn a_jetcore_backup_restores_onto_jetcore() {
    let server = TestServer::start(&[]);
    let client = async_nats::connect(server.url()).await.unwrap();
    populate(&client).await;
    let original = contents(&client).await;
    // Small chunks and a two-chunk window: the transfer waits on acks many times.
    let (response, archive, status) = snapshot(&client, "B", 1024, 2048).await;
    assert_eq!(status, "204");
    assert_eq!(response["state"]["last_seq"], MESSAGES);
    let deleted = api(&client, "STREAM.DELETE.B", Value::Null).await;
    assert_eq!(deleted["success"], true);
    let done = restore(&client, "B", &response, &archive).await;
    assert!(done["error"].is_null(), "{done}");
    assert_eq!(done["state"]["last_seq"], MESSAGES);
    assert_same(&original, &client).await;
}

#[tokio::test]
async fn a_nats_server_backup_restores_onto_jetcore() {
    let reference = JetStreamServer::start();
    let jetcore = TestServer::start(&[]);
    let source = async_nats::connect(reference.url()).await.unwrap();
    let target = async_nats::connect(jetcore.url()).await.unwrap();
    populate(&source).await;
    let original = contents(&source).await;
    let (response, archive, _) = snapshot(&source, "B", 4096, 1 << 20).await;
    let done = restore(&target, "B", &response, &archive).await;
    assert!(done["error"].is_null(), "{done}");
    assert_same(&original, &target).await;
}

#[tokio::test]
async fn a_jetcore_backup_restores_onto_nats_server() {
    let reference = JetStreamServer::start();
    let jetcore = TestServer::start(&[]);
    let source = async_nats::connect(jetcore.url()).await.unwrap();
    let target = async_nats::connect(reference.url()).await.unwrap();
    populate(&source).await;
    let original = contents(&source).await;
    let (response, archive, _) = snapshot(&source, "B", 4096, 1 << 20).await;
    let done = restore(&target, "B", &response, &archive).await;
    assert!(done["error"].is_null(), "{done}");
    assert_same(&original, &target).await;
}

#[tokio::test]
async fn refusals_are_nats_servers() {
    let reference = JetStreamServer::start();
    let jetcore = TestServer::start(&[]);
    let theirs = async_nats::connect(reference.url()).await.unwrap();
    let ours = async_nats::connect(jetcore.url()).await.unwrap();
    let config = json!({"name": "R", "subjects": ["r.>"]});
    let requests = [
        ("STREAM.SNAPSHOT.R", Value::Null),
        ("STREAM.SNAPSHOT.R", json!({})),
        ("STREAM.SNAPSHOT.NOPE", json!({"deliver_subject": "x"})),
        ("STREAM.RESTORE.R", json!({"config": config, "state": {}})),
        ("STREAM.RESTORE.U", Value::Null),
        ("STREAM.RESTORE.U", json!({})),
        ("STREAM.RESTORE.U", json!({"config": {"name": "V"}})),
    ];
    for client in [&theirs, &ours] {
        let created = api(client, "STREAM.CREATE.R", config.clone()).await;
        assert!(created["error"].is_null(), "{created}");
    }
    for (call, body) in requests {
        let want = api(&theirs, call, body.clone()).await;
        let got = api(&ours, call, body.clone()).await;
        assert!(want["error"].is_object(), "{call} {body}: nats-server accepted it: {want}");
        assert_eq!(got, want, "{call} {body}");
    }
}

/// nats-server checks a restore's config and the account's limits when the restore is
/// requested, before any chunk is sent; so does jetcore (it used to find out only after
/// the whole upload).
#[tokio::test]
async fn a_restore_the_account_cannot_take_is_refused_before_the_upload() {
    let config = common::accounts::config_file(
        "no_auth_user: foo\naccounts: { A { users: [{ user: foo }]\n  \
         jetstream: { max_streams: 2, store_max_stream_bytes: 4096, max_stream_bytes: true } } }\n",
    );
    let reference = JetStreamServer::start_with(Some(config.path()));
    let path = config.path().display().to_string();
    let jetcore = TestServer::start(&["-c", path.as_str()]);
    let theirs = async_nats::connect(reference.url()).await.unwrap();
    let ours = async_nats::connect(jetcore.url()).await.unwrap();
    let stream = |name: &str, extra: Value| {
        let mut config = json!({"name": name, "subjects": [format!("{}.>", name.to_lowercase())]});
        config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        config
    };
    for client in [&theirs, &ours] {
        for name in ["S1", "S2"] {
            let created = api(client, &format!("STREAM.CREATE.{name}"), stream(name, json!({"max_bytes": 1024}))).await;
            assert!(created["error"].is_null(), "{created}");
        }
    }
    let requests = [
        json!({"config": stream("U", json!({}))}),
        json!({"config": stream("U", json!({"max_bytes": 8192}))}),
        json!({"config": stream("U", json!({"max_bytes": 1024}))}),
        json!({"config": stream("U", json!({"max_bytes": 1024, "discard_new_per_subject": true, "discard": "new"}))}),
    ];
    for body in requests {
        let want = api(&theirs, "STREAM.RESTORE.U", body.clone()).await;
        let got = api(&ours, "STREAM.RESTORE.U", body.clone()).await;
        assert!(want["error"].is_object(), "{body}: nats-server accepted it: {want}");
        assert_eq!(got, want, "{body}");
    }
    assert_eq!(staged_files(&jetcore), Vec::<u64>::new(), "nothing staged for a refused restore");
}

/// The snapshot waits (about two seconds, as nats-server 2.15) for a subscription on its
/// deliver subject, so a client that subscribes only after the response still gets the
/// whole backup; jetcore used to send at once, to nobody.
#[tokio::test]
async fn a_snapshot_waits_for_its_receiver_to_subscribe() {
    let reference = JetStreamServer::start();
    let jetcore = TestServer::start(&[]);
    for url in [reference.url(), jetcore.url()] {
        let client = async_nats::connect(&url).await.unwrap();
        populate(&client).await;
        let request = json!({"deliver_subject": "late.receiver", "chunk_size": 1024});
        let response = api(&client, "STREAM.SNAPSHOT.B", request).await;
        assert!(response["error"].is_null(), "{url}: {response}");
        tokio::time::sleep(Duration::from_millis(300)).await;
        let mut chunks = client.subscribe("late.receiver").await.unwrap();
        let (archive, end) = receive_archive(&client, &mut chunks).await;
        assert!(archive.len() > 1024, "{url}: the whole backup, from its first chunk");
        assert_eq!(end, "204", "{url}");
    }
}

#[tokio::test]
async fn a_corrupt_upload_is_refused_and_creates_nothing() {
    let server = TestServer::start(&[]);
    let client = async_nats::connect(server.url()).await.unwrap();
    populate(&client).await;
    let (response, mut archive, _) = snapshot(&client, "B", 4096, 1 << 20).await;
    let middle = archive.len() / 2;
    archive[middle] ^= 0x5a;
    let deleted = api(&client, "STREAM.DELETE.B", Value::Null).await;
    assert_eq!(deleted["success"], true);
    let request = json!({"config": response["config"], "state": response["state"]});
    let opened = api(&client, "STREAM.RESTORE.B", request).await;
    let upload = opened["deliver_subject"].as_str().unwrap().to_string();
    let mut refusal = Value::Null;
    for chunk in archive.chunks(4096) {
        let ack = client.request(upload.clone(), chunk.to_vec().into()).await.unwrap();
        if !ack.payload.is_empty() {
            refusal = serde_json::from_slice(&ack.payload).unwrap();
            break;
        }
    }
    assert_eq!(refusal["error"]["err_code"], 10062, "{refusal}");
    let info = api(&client, "STREAM.INFO.B", Value::Null).await;
    assert_eq!(info["error"]["err_code"], 10059, "no stream was created: {info}");
    assert_eq!(staged_files(&server), Vec::<u64>::new(), "the refused upload's staging file is gone");
}

/// The most of an acked upload the server may hold in memory rather than in its staging
/// file (`restore_routing.rs`: 1 MiB buffers, four of them written behind the acks).
const STAGING_BUFFERED_MAX: u64 = 5 << 20;

/// Sizes of the files in the server's restore staging directory.
fn staged_files(server: &TestServer) -> Vec<u64> {
    let Ok(entries) = std::fs::read_dir(server.store_dir.join("restore-staging")) else { return Vec::new() };
    entries.map(|entry| entry.unwrap().metadata().unwrap().len()).collect()
}

#[tokio::test]
async fn the_upload_is_staged_on_disk_not_in_memory_and_removed_at_the_end() {
    let server = TestServer::start(&[]);
    let client = async_nats::connect(server.url()).await.unwrap();
    populate(&client).await;
    let original = contents(&client).await;
    let (response, archive, _) = snapshot(&client, "B", 4096, 1 << 20).await;
    let deleted = api(&client, "STREAM.DELETE.B", Value::Null).await;
    assert_eq!(deleted["success"], true);
    let request = json!({"config": response["config"], "state": response["state"]});
    let opened = api(&client, "STREAM.RESTORE.B", request).await;
    let upload = opened["deliver_subject"].as_str().unwrap().to_string();
    for chunk in archive.chunks(4096) {
        let ack = client.request(upload.clone(), chunk.to_vec().into()).await.unwrap();
        assert!(ack.payload.is_empty(), "chunk refused: {:?}", ack.payload);
    }
    // The upload goes to its staging file as it arrives: all of it but what the
    // server's direct-I/O writer still buffers (one 1 MiB buffer filling, four being
    // written), whatever the backup's size.
    let staged = staged_files(&server);
    assert_eq!(staged.len(), 1, "one staging file while the upload runs: {staged:?}");
    assert!(staged[0] <= archive.len() as u64 && archive.len() as u64 - staged[0] <= STAGING_BUFFERED_MAX);
    let done = client.request(upload, Default::default()).await.unwrap();
    let done: Value = serde_json::from_slice(&done.payload).unwrap();
    assert!(done["error"].is_null(), "{done}");
    assert_eq!(staged_files(&server), Vec::<u64>::new(), "the staging file is removed once stored");
    assert_same(&original, &client).await;
}

/// The chunks sent and the end message's status and description, never acking.
async fn snapshot_without_acks(client: &Client) -> (usize, String, String) {
    let inbox = client.new_inbox();
    let mut chunks = client.subscribe(inbox.clone()).await.unwrap();
    let request = json!({"deliver_subject": inbox, "chunk_size": 1024, "window_size": 1024});
    let response = api(client, "STREAM.SNAPSHOT.B", request).await;
    assert!(response["error"].is_null(), "{response}");
    let mut sent = 0;
    loop {
        let chunk = tokio::time::timeout(TIMEOUT, chunks.next()).await.expect("a message in time").unwrap();
        if chunk.payload.is_empty() {
            let status = chunk.status.map(|status| status.as_u16().to_string()).unwrap_or_default();
            return (sent, status, chunk.description.unwrap_or_default());
        }
        sent += 1;
    }
}

#[tokio::test]
async fn a_client_that_stops_acking_gets_408_no_flow_response_as_from_nats_server() {
    let reference = JetStreamServer::start();
    let jetcore = TestServer::start(&[]);
    let theirs = async_nats::connect(reference.url()).await.unwrap();
    let ours = async_nats::connect(jetcore.url()).await.unwrap();
    tokio::join!(populate(&theirs), populate(&ours));
    let (want, got) = tokio::join!(snapshot_without_acks(&theirs), snapshot_without_acks(&ours));
    assert_eq!(want.1, "408", "{want:?}");
    assert_eq!(got, want, "chunks sent in a one-chunk window, then the status");
}
