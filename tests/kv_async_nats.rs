//! async-nats 0.51's key-value API, unmodified, against jetcore: bucket create and bind,
//! put / get / update / create conflicts, delete and purge markers, history, revisions
//! by direct get, keys, and watches (all keys, one key, updates only).

mod common;

use std::time::Duration;

use async_nats::jetstream::kv::{self, CreateErrorKind, Operation, UpdateErrorKind};
use async_nats::jetstream::Context;
use common::jetstream::connect;
use common::TestServer;
use futures::{StreamExt, TryStreamExt};

const WAIT: Duration = Duration::from_secs(5);

async fn bucket(js: &Context, name: &str, history: i64) -> kv::Store {
    js.create_key_value(kv::Config { bucket: name.into(), history, ..Default::default() })
        .await
        .unwrap_or_else(|error| panic!("create bucket {name}: {error}"))
}

async fn next_entry(watch: &mut kv::Watch) -> kv::Entry {
    tokio::time::timeout(WAIT, watch.next())
        .await
        .expect("a watch entry within 5 s")
        .expect("watch open")
        .expect("watch entry")
}

#[tokio::test]
async fn put_get_update_create_delete_purge_and_history() {
    let server = TestServer::start(&["--shards", "2"]);
    let (_client, js) = connect(&server).await;
    let store = bucket(&js, "PROFILES", 5).await;

    // The bucket is a stream with KV's flags, echoed back by the server.
    let info = js.get_stream("KV_PROFILES").await.expect("bucket stream").cached_info().clone();
    assert_eq!(info.config.subjects, vec!["$KV.PROFILES.>".to_string()]);
    assert_eq!(info.config.max_messages_per_subject, 5);
    assert!(info.config.allow_direct && info.config.allow_rollup && info.config.deny_delete);
    // Binding to the existing bucket works and creating it again is idempotent.
    js.get_key_value("PROFILES").await.expect("bind");
    bucket(&js, "PROFILES", 5).await;

    let first = store.put("alice", "v1".into()).await.expect("put");
    assert_eq!(first, 1);
    assert_eq!(store.get("alice").await.expect("get").as_deref(), Some(&b"v1"[..]));
    assert_eq!(store.get("nobody").await.expect("get missing"), None);

    let second = store.update("alice", "v2".into(), first).await.expect("update at revision");
    assert_eq!(second, 2);
    let stale = store.update("alice", "v3".into(), first).await.expect_err("stale revision");
    assert_eq!(stale.kind(), UpdateErrorKind::WrongLastRevision);
    let exists = store.create("alice", "again".into()).await.expect_err("create of existing key");
    assert_eq!(exists.kind(), CreateErrorKind::AlreadyExists);
    let created = store.create("bob", "b1".into()).await.expect("create new key");
    assert_eq!(created, 3);

    let entry = store.entry("alice").await.expect("entry").expect("alice present");
    assert_eq!((entry.revision, entry.operation), (2, Operation::Put));
    let old = store.entry_for_revision("alice", 1).await.expect("by revision").expect("revision 1");
    assert_eq!(old.value.as_ref(), b"v1");

    store.delete("alice").await.expect("delete");
    assert_eq!(store.get("alice").await.expect("get deleted"), None);
    let marker = store.entry("alice").await.expect("entry").expect("delete marker");
    assert_eq!(marker.operation, Operation::Delete);
    // A deleted key may be created again (create retries at the marker's revision).
    let recreated = store.create("alice", "v4".into()).await.expect("create after delete");
    assert_eq!(recreated, 5);

    let history: Vec<kv::Entry> = store.history("alice").await.expect("history").try_collect().await.expect("entries");
    let operations: Vec<(u64, Operation)> = history.iter().map(|e| (e.revision, e.operation)).collect();
    assert_eq!(operations, vec![(1, Operation::Put), (2, Operation::Put), (4, Operation::Delete), (5, Operation::Put)]);

    // Purge leaves only its marker (Nats-Rollup: sub removed the key's history).
    store.purge("alice").await.expect("purge");
    let history: Vec<kv::Entry> = store.history("alice").await.expect("history").try_collect().await.expect("entries");
    assert_eq!(history.len(), 1);
    assert_eq!((history[0].revision, history[0].operation), (6, Operation::Purge));
    assert_eq!(store.get("alice").await.expect("get purged"), None);
    assert_eq!(store.get("bob").await.expect("bob untouched").as_deref(), Some(&b"b1"[..]));
    let state = js.get_stream("KV_PROFILES").await.expect("stream").cached_info().state.clone();
    assert_eq!((state.messages, state.last_sequence), (2, 6));
}

#[tokio::test]
async fn history_is_bounded_and_keys_skip_deleted() {
    let server = TestServer::start(&["--shards", "2"]);
    let (_client, js) = connect(&server).await;
    let store = bucket(&js, "LIMITED", 3).await;
    for index in 0..10 {
        store.put("counter", index.to_string().into()).await.expect("put beyond history");
    }
    let history: Vec<kv::Entry> =
        store.history("counter").await.expect("history").try_collect().await.expect("entries");
    let values: Vec<&[u8]> = history.iter().map(|e| e.value.as_ref()).collect();
    assert_eq!(values, vec![&b"7"[..], b"8", b"9"]);

    for key in ["a", "b.c", "d"] {
        store.put(key, "x".into()).await.expect("put");
    }
    store.delete("d").await.expect("delete");
    let mut keys: Vec<String> = store.keys().await.expect("keys").try_collect().await.expect("key list");
    keys.sort();
    assert_eq!(keys, vec!["a", "b.c", "counter"]);
}

#[tokio::test]
async fn watch_all_one_key_and_updates_only() {
    let server = TestServer::start(&["--shards", "2"]);
    let (_client, js) = connect(&server).await;
    let store = bucket(&js, "WATCHED", 1).await;
    store.put("a", "a1".into()).await.expect("put");
    store.put("b", "b1".into()).await.expect("put");
    store.put("a", "a2".into()).await.expect("put");

    // watch_with_history on all keys: the latest value of each key, then live changes.
    let mut all = store.watch_with_history(">").await.expect("watch all");
    let initial = [next_entry(&mut all).await, next_entry(&mut all).await];
    let seen: Vec<(&str, &[u8])> = initial.iter().map(|e| (e.key.as_str(), e.value.as_ref())).collect();
    assert_eq!(seen, vec![("b", &b"b1"[..]), ("a", b"a2")]);

    // watch (updates only) on one key, and watch_all (updates only) on every key.
    let mut only_a = store.watch("a").await.expect("watch a");
    let mut updates = store.watch_all().await.expect("watch all updates");
    store.put("b", "b2".into()).await.expect("put");
    store.put("a", "a3".into()).await.expect("put");
    store.delete("a").await.expect("delete");

    let live = next_entry(&mut all).await;
    assert_eq!((live.key.as_str(), live.value.as_ref()), ("b", &b"b2"[..]));
    let a3 = next_entry(&mut only_a).await;
    assert_eq!((a3.key.as_str(), a3.value.as_ref(), a3.revision), ("a", &b"a3"[..], 5));
    let deleted = next_entry(&mut only_a).await;
    assert_eq!((deleted.key.as_str(), deleted.operation), ("a", Operation::Delete));
    let keys: Vec<String> =
        [next_entry(&mut updates).await, next_entry(&mut updates).await, next_entry(&mut updates).await]
            .into_iter()
            .map(|e| format!("{}:{:?}", e.key, e.operation))
            .collect();
    assert_eq!(keys, vec!["b:Put", "a:Put", "a:Delete"]);
}

#[tokio::test]
async fn memory_bucket_with_value_size_and_byte_limits() {
    let server = TestServer::start(&["--shards", "2"]);
    let (_client, js) = connect(&server).await;
    let store = js
        .create_key_value(kv::Config {
            bucket: "CACHE".into(),
            history: 2,
            storage: async_nats::jetstream::stream::StorageType::Memory,
            max_value_size: 16,
            ..Default::default()
        })
        .await
        .expect("create memory bucket");
    for index in 0..4 {
        store.put("hot", format!("v{index}").into()).await.expect("put");
    }
    let history: Vec<kv::Entry> = store.history("hot").await.expect("history").try_collect().await.expect("entries");
    assert_eq!(history.iter().map(|e| e.revision).collect::<Vec<_>>(), vec![3, 4]);
    store.put("big", vec![b'x'; 17].into()).await.expect_err("value over max_value_size");
    assert_eq!(store.get("hot").await.expect("get").as_deref(), Some(&b"v3"[..]));
}
