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
    let upload = open_restore(client, stream, response).await;
    send_chunks(client, &upload, archive.chunks(4096)).await;
    finish_upload(client, upload).await
}

/// Opens the restore of a backup whose snapshot response is `response`; the upload subject.
async fn open_restore(client: &Client, stream: &str, response: &Value) -> String {
    let request = json!({"config": response["config"], "state": response["state"]});
    let opened = api(client, &format!("STREAM.RESTORE.{stream}"), request).await;
    opened["deliver_subject"].as_str().unwrap_or_else(|| panic!("{opened}")).to_string()
}

/// Sends each chunk to the upload and checks it is acked (not refused).
async fn send_chunks<'a>(client: &Client, upload: &str, chunks: impl Iterator<Item = &'a [u8]>) {
    for chunk in chunks {
        let ack = client.request(upload.to_string(), chunk.to_vec().into()).await.expect("chunk acked");
        assert!(ack.payload.is_empty(), "chunk refused: {:?}", ack.payload);
    }
}

/// Ends the upload; the restore's answer.
async fn finish_upload(client: &Client, upload: String) -> Value {
    let done = client.request(upload, Default::default()).await.expect("restore answered");
    serde_json::from_slice(&done.payload).unwrap()
}

/// Takes a backup of `stream` (4 KiB chunks) and deletes the stream; the snapshot
/// response and the archive.
async fn backup_and_delete(client: &Client, stream: &str) -> (Value, Vec<u8>) {
    let (response, archive, _) = snapshot(client, stream, 4096, 1 << 20).await;
    let deleted = api(client, &format!("STREAM.DELETE.{stream}"), Value::Null).await;
    assert_eq!(deleted["success"], true, "{deleted}");
    (response, archive)
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
        // The config's own subjects are checked at once, as nats-server checks them.
        ("STREAM.RESTORE.W", json!({"config": {"name": "W", "subjects": [">"]}})),
        ("STREAM.RESTORE.X", json!({"config": {"name": "X", "subjects": ["$JS.API.>"]}})),
        ("STREAM.RESTORE.Y", json!({"config": {"name": "Y", "subjects": ["y.>", "y.a"]}})),
        ("STREAM.CREATE.Z", json!({"name": "Z", "subjects": ["a..b"]})),
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
    assert_eq!(staged(&jetcore), Vec::<String>::new(), "nothing staged for a refused restore");
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
    let (response, mut archive) = backup_and_delete(&client, "B").await;
    let middle = archive.len() / 2;
    archive[middle] ^= 0x5a;
    let upload = open_restore(&client, "B", &response).await;
    // Chunks are acked once queued, so the refusal answers a later chunk or the end.
    let mut refusal = Value::Null;
    for chunk in archive.chunks(4096) {
        let ack = client.request(upload.clone(), chunk.to_vec().into()).await.unwrap();
        if !ack.payload.is_empty() {
            refusal = serde_json::from_slice(&ack.payload).unwrap();
            break;
        }
    }
    if refusal.is_null() {
        refusal = finish_upload(&client, upload).await;
    }
    assert_eq!(refusal["error"]["err_code"], 10062, "{refusal}");
    let info = api(&client, "STREAM.INFO.B", Value::Null).await;
    assert_eq!(info["error"]["err_code"], 10059, "no stream was created: {info}");
    assert_eq!(staged(&server), Vec::<String>::new(), "the refused upload's stream is gone");
}

/// The entries of the server's restore staging directory (an upload's unlisted stream).
fn staged(server: &TestServer) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(server.store_dir.join("restore-staging")) else { return Vec::new() };
    entries.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

/// How many of `markers` appear in the files under `dir`.
fn markers_on_disk(dir: &std::path::Path, markers: &[String]) -> usize {
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            bytes.extend(std::fs::read(&path).unwrap());
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    markers.iter().filter(|marker| text.contains(marker.as_str())).count()
}

/// Stream `L` of `count` 1 KiB messages, each holding its own marker.
async fn populate_large(client: &Client, count: usize) -> Vec<String> {
    let created = api(client, "STREAM.CREATE.L", json!({"name": "L", "subjects": ["l.>"]})).await;
    assert!(created["error"].is_null(), "{created}");
    let context = async_nats::jetstream::new(client.clone());
    let markers: Vec<String> = (0..count).map(|index| format!("<marker {index:06}>")).collect();
    let mut acks = Vec::new();
    for marker in &markers {
        let payload = format!("{marker}{}", ".".repeat(1024 - marker.len()));
        acks.push(context.publish("l.x", payload.into()).await.unwrap());
        if acks.len() == 256 {
            for ack in acks.drain(..) {
                ack.await.unwrap();
            }
        }
    }
    for ack in acks {
        ack.await.unwrap();
    }
    markers
}

/// Chunks not yet stored when acked, at most (`restore_routing::CHUNKS_QUEUED_MAX`), and
/// groups stored but not yet known written besides the open one
/// (`service::restore::GROUPS_IN_FLIGHT`), each of `GROUP_COMMIT_BYTES_MAX`.
const CHUNKS_QUEUED_MAX: usize = 8;
const GROUPS_IN_FLIGHT: usize = 2;

/// The upload is stored as it arrives, on disk, in a stream nothing sees until the end:
/// not listed, not found by name, capturing nothing; it is adopted with its messages.
#[tokio::test]
async fn the_upload_is_stored_as_it_arrives_unseen_until_the_end() {
    let server = TestServer::start(&[]);
    let client = async_nats::connect(server.url()).await.unwrap();
    const COUNT: usize = 12_000;
    let markers = populate_large(&client, COUNT).await;
    let (response, archive) = backup_and_delete(&client, "L").await;
    let upload = open_restore(&client, "L", &response).await;
    send_chunks(&client, &upload, archive.chunks(4096)).await;
    let staged_now = staged(&server);
    assert_eq!(staged_now.len(), 1, "one unlisted stream while the upload runs: {staged_now:?}");
    let dir = server.store_dir.join("restore-staging").join(&staged_now[0]);
    // Every message but those still queued or not yet written is on disk already.
    let group_messages = jetcore::limits::GROUP_COMMIT_BYTES_MAX / 1024;
    let unwritten_max = CHUNKS_QUEUED_MAX * 4096 / 1024 + 1 + (GROUPS_IN_FLIGHT + 1) * group_messages;
    let found = markers_on_disk(&dir, &markers);
    assert!(found + unwritten_max >= markers.len(), "{found} of {} messages on disk", markers.len());
    let info = api(&client, "STREAM.INFO.L", Value::Null).await;
    assert_eq!(info["error"]["err_code"], 10059, "not a stream yet: {info}");
    let names = api(&client, "STREAM.NAMES", Value::Null).await;
    assert_eq!(names["streams"], Value::Null, "not listed: {names}");
    let context = async_nats::jetstream::new(client.clone());
    let captured = context.publish("l.x", "live".into()).await.unwrap().await;
    assert!(captured.is_err(), "a publish is not captured by the upload: {captured:?}");

    let done = finish_upload(&client, upload).await;
    assert!(done["error"].is_null(), "{done}");
    assert_eq!(done["state"]["messages"], COUNT, "{done}");
    assert_eq!(staged(&server), Vec::<String>::new(), "the stream moved out of the staging directory");
    let first = api(&client, "STREAM.MSG.GET.L", json!({"seq": 1})).await;
    let last = api(&client, "STREAM.MSG.GET.L", json!({"seq": COUNT})).await;
    assert_eq!(payload_marker(&first), markers[0], "{first}");
    assert_eq!(payload_marker(&last), markers[COUNT - 1], "{last}");
    let published = context.publish("l.x", "live".into()).await.unwrap().await.unwrap();
    assert_eq!(published.sequence, COUNT as u64 + 1, "the restored stream captures its subjects");
}

/// The payload of the message of `marker`, from its `STREAM.MSG.GET` answer.
fn payload_marker(answer: &Value) -> String {
    let data = common::jetstream::decode_base64(answer["message"]["data"].as_str().unwrap_or_default());
    String::from_utf8_lossy(&data).trim_end_matches('.').to_string()
}

/// A server killed mid-upload comes back without the stream and without its files; the
/// backup then restores whole.
#[tokio::test]
async fn a_crash_mid_upload_leaves_nothing_and_the_restore_can_be_made_again() {
    let mut server = TestServer::start(&[]);
    let client = async_nats::connect(server.url()).await.unwrap();
    populate(&client).await;
    let original = contents(&client).await;
    let (response, archive) = backup_and_delete(&client, "B").await;
    let upload = open_restore(&client, "B", &response).await;
    send_chunks(&client, &upload, archive.chunks(4096).take(archive.len() / 4096 / 2 + 1)).await;
    assert_eq!(staged(&server).len(), 1);
    drop(client);
    server.restart();
    assert_eq!(staged(&server), Vec::<String>::new(), "the unlisted stream is gone after the restart");
    let client = async_nats::connect(server.url()).await.unwrap();
    let info = api(&client, "STREAM.INFO.B", Value::Null).await;
    assert_eq!(info["error"]["err_code"], 10059, "no stream was created: {info}");
    let restored = restore(&client, "B", &response, &archive).await;
    assert!(restored["error"].is_null(), "{restored}");
    assert_same(&original, &client).await;
}

/// The files of stream `name` under the store directory, by file name, wherever they are.
fn stream_files(server: &TestServer, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![server.store_dir.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            match path.is_dir() {
                true => dirs.push(path),
                false if path.parent().and_then(|parent| parent.file_name()) == Some(name.as_ref()) => found.push(path),
                false => {}
            }
        }
    }
    found
}

/// When stream `name`'s checkpoint file was last written, if it has one; there is at
/// most one, in the stream's own directory.
fn checkpoint_time(server: &TestServer, name: &str) -> Option<std::time::SystemTime> {
    let found: Vec<_> =
        stream_files(server, name).into_iter().filter(|path| path.ends_with("checkpoint.bin")).collect();
    assert!(found.len() <= 1, "one checkpoint at most: {found:?}");
    found.first().map(|path| std::fs::metadata(path).and_then(|meta| meta.modified()).unwrap())
}

/// A restored stream is adopted with its log reopened in the streams directory and its
/// state kept from memory: what it takes after the restore is written there, a clean
/// stop checkpoints it there, and both a clean restart and a crash bring back the backup's
/// messages and the later ones.
#[tokio::test]
async fn a_restored_stream_keeps_what_it_takes_after_through_restarts() {
    let mut server = TestServer::start(&[]);
    let client = async_nats::connect(server.url()).await.unwrap();
    populate(&client).await;
    let (mut messages, state, _) = contents(&client).await;
    let (response, archive) = backup_and_delete(&client, "B").await;
    let done = restore(&client, "B", &response, &archive).await;
    assert!(done["error"].is_null(), "{done}");
    const AFTER: u64 = 20;
    let context = async_nats::jetstream::new(client.clone());
    for index in 0..AFTER {
        let ack = context.publish("b.after", format!("after {index}").into()).await.unwrap().await.unwrap();
        assert_eq!(ack.sequence, MESSAGES + 1 + index, "the restored stream's sequences go on");
    }
    let deleted = api(&client, "STREAM.MSG.DELETE.B", json!({"seq": 5})).await;
    assert_eq!(deleted["success"], true, "{deleted}");
    messages[4] = json!(null);
    let want = |live_after: u64| {
        (state["messages"].as_u64().unwrap() - 1 + live_after, MESSAGES + AFTER, state["first_seq"].clone())
    };
    let check = |client: Client, live_after: u64| {
        let (messages, want) = (messages.clone(), want(live_after));
        async move {
            let (got, state, _) = contents(&client).await;
            for (index, (want, got)) in messages.iter().zip(&got).enumerate() {
                assert_eq!(want, got, "sequence {}", index + 1);
            }
            let found =
                (state["messages"].as_u64().unwrap(), state["last_seq"].as_u64().unwrap(), state["first_seq"].clone());
            assert_eq!(found, want, "messages, last and first sequence: {state}");
            let last = api(&client, "STREAM.MSG.GET.B", json!({"seq": MESSAGES + AFTER})).await;
            let data = common::jetstream::decode_base64(last["message"]["data"].as_str().unwrap_or_default());
            assert_eq!(data, format!("after {}", AFTER - 1).into_bytes(), "{last}");
        }
    };
    check(client.clone(), AFTER).await;
    drop((client, context));
    let restored_checkpoint = checkpoint_time(&server, "B");

    std::thread::sleep(Duration::from_millis(20));
    server.signal(libc::SIGTERM);
    assert!(server.wait_exit(TIMEOUT).is_some_and(|status| status.success()), "a clean stop");
    let stopped_checkpoint =
        checkpoint_time(&server, "B").expect("the stop checkpointed the stream where it now lives");
    assert!(restored_checkpoint.is_none_or(|before| stopped_checkpoint > before), "a checkpoint written by the stop");
    assert_eq!(staged(&server), Vec::<String>::new(), "nothing left in the staging directory");
    server.restart();
    let client = async_nats::connect(server.url()).await.unwrap();
    check(client.clone(), AFTER).await;

    let context = async_nats::jetstream::new(client.clone());
    let ack = context.publish("b.after", "after the restart".into()).await.unwrap().await.unwrap();
    assert_eq!(ack.sequence, MESSAGES + AFTER + 1);
    drop((client, context));
    server.restart();
    let client = async_nats::connect(server.url()).await.unwrap();
    let info = api(&client, "STREAM.INFO.B", Value::Null).await;
    assert_eq!(info["state"]["last_seq"], MESSAGES + AFTER + 1, "kept through a crash: {info}");
    assert_eq!(info["state"]["messages"], want(AFTER + 1).0, "{info}");
}

/// A restored log read back whole, with no checkpoint (the restore leaves its first one to
/// the shard's maintenance, so a server that dies right after has none): the messages at
/// their sequences, the deleted ones and the deleted last sequence as the backup had them,
/// and a first sequence past 1.
#[tokio::test]
async fn a_restored_stream_recovers_from_its_log_alone() {
    let mut server = TestServer::start(&[]);
    let client = async_nats::connect(server.url()).await.unwrap();
    populate(&client).await;
    // The first messages gone too: the backup's first sequence is past 1.
    let purged = api(&client, "STREAM.PURGE.B", json!({"seq": 5})).await;
    assert_eq!(purged["success"], true, "{purged}");
    let original = contents(&client).await;
    assert_eq!(original.1["first_seq"], 5, "{}", original.1);
    let (response, archive) = backup_and_delete(&client, "B").await;
    let done = restore(&client, "B", &response, &archive).await;
    assert!(done["error"].is_null(), "{done}");
    drop(client);
    server.kill();
    // A small restore has none yet; a background one may have been written meanwhile.
    for path in stream_files(&server, "B") {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "checkpoint.bin" || name.starts_with("slots.") {
            std::fs::remove_file(&path).unwrap();
        }
    }
    server.restart();
    let client = async_nats::connect(server.url()).await.unwrap();
    let (messages, state, _) = contents(&client).await;
    for (index, (want, got)) in original.0.iter().zip(&messages).enumerate() {
        assert_eq!(want, got, "sequence {}", index + 1);
    }
    for key in ["messages", "bytes", "first_seq", "last_seq", "num_deleted", "first_ts"] {
        assert_eq!(original.1[key], state[key], "state {key}: {} vs {}", original.1, state);
    }
}

/// A stream created under the restore's name while the upload runs keeps the name: the
/// restore fails at its end, worded as nats-server words it, and leaves the new stream
/// and nothing else behind. nats-server 2.15.1 differs before that: it already refuses
/// such a create during the upload (10058 for another config, 10065 for overlapping
/// subjects), and a create with the backup's very config is filled by the restore.
#[tokio::test]
async fn a_stream_created_during_the_upload_keeps_its_name() {
    let jetcore = TestServer::start(&[]);
    let client = async_nats::connect(jetcore.url()).await.unwrap();
    populate(&client).await;
    let (response, archive) = backup_and_delete(&client, "B").await;
    let upload = open_restore(&client, "B", &response).await;
    send_chunks(&client, &upload, archive.chunks(4096)).await;
    let created = api(&client, "STREAM.CREATE.B", json!({"name": "B", "subjects": ["other.>"]})).await;
    assert!(created["error"].is_null(), "{created}");
    let done = finish_upload(&client, upload).await;
    // nats-server's words for a stream it cannot add at a restore's end.
    let refusal = "restore failed: error adding stream: stream name already in use, cannot restore (10130)";
    assert_eq!(done["error"]["description"], refusal, "{done}");
    assert_eq!(done["error"]["err_code"], 10062, "{done}");
    let info = api(&client, "STREAM.INFO.B", Value::Null).await;
    assert_eq!(info["state"]["messages"], 0, "the new stream is left alone: {info}");
    assert_eq!(info["config"]["subjects"], json!(["other.>"]), "{info}");
    assert_eq!(staged(&jetcore), Vec::<String>::new());
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

/// A memory stream's backup restores too (its unlisted stream is a hidden memory one).
#[tokio::test]
async fn a_memory_stream_restores() {
    let server = TestServer::start(&[]);
    let client = async_nats::connect(server.url()).await.unwrap();
    let config = json!({"name": "M", "subjects": ["m.>"], "storage": "memory"});
    let created = api(&client, "STREAM.CREATE.M", config).await;
    assert!(created["error"].is_null(), "{created}");
    let context = async_nats::jetstream::new(client.clone());
    for index in 0..50 {
        context.publish(format!("m.{index}"), format!("memory {index}").into()).await.unwrap().await.unwrap();
    }
    let (response, archive) = backup_and_delete(&client, "M").await;
    let restored = restore(&client, "M", &response, &archive).await;
    assert!(restored["error"].is_null(), "{restored}");
    assert_eq!(restored["state"]["messages"], 50, "{restored}");
    assert_eq!(restored["config"]["storage"], "memory", "{restored}");
    let message = api(&client, "STREAM.MSG.GET.M", json!({"seq": 50})).await;
    assert_eq!(message["message"]["subject"], "m.49", "{message}");
    let published = context.publish("m.x", "after".into()).await.unwrap().await.unwrap();
    assert_eq!(published.sequence, 51);
    assert_eq!(staged(&server), Vec::<String>::new());
}
