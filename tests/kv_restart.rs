//! A key-value bucket across kill -9 and restarts (also with another `--shards` count):
//! values, revisions, history, delete markers and purges (rollups) are as they were, and
//! revisions continue from the last one.

mod common;

use async_nats::jetstream::kv::{self, Operation};
use async_nats::jetstream::Context;
use common::jetstream::connect;
use common::TestServer;
use futures::TryStreamExt;

async fn history(store: &kv::Store, key: &str) -> Vec<(u64, Operation, String)> {
    let entries: Vec<kv::Entry> = store.history(key).await.expect("history").try_collect().await.expect("entries");
    entries.into_iter().map(|e| (e.revision, e.operation, String::from_utf8_lossy(&e.value).into_owned())).collect()
}

async fn open(js: &Context) -> kv::Store {
    js.get_key_value("CONFIG").await.expect("bind to bucket after restart")
}

#[tokio::test]
async fn bucket_survives_kill_9_with_markers_and_rollups() {
    let mut server = TestServer::start(&["--shards", "2"]);
    let (client, js) = connect(&server).await;
    let store = js
        .create_key_value(kv::Config { bucket: "CONFIG".into(), history: 4, ..Default::default() })
        .await
        .expect("create bucket");
    for index in 0..6 {
        store.put("limits.cpu", format!("{index}").into()).await.expect("put");
    }
    store.put("limits.mem", "1g".into()).await.expect("put");
    store.put("flags.beta", "on".into()).await.expect("put");
    store.delete("flags.beta").await.expect("delete");
    store.put("owner", "ann".into()).await.expect("put");
    store.put("owner", "bo".into()).await.expect("put");
    store.purge("owner").await.expect("purge");
    drop(client);

    let expected_cpu = vec![
        (3, Operation::Put, "2".to_string()),
        (4, Operation::Put, "3".to_string()),
        (5, Operation::Put, "4".to_string()),
        (6, Operation::Put, "5".to_string()),
    ];
    for shards in ["2", "1", "3"] {
        server.restart_retrying(&["--shards", shards]);
        let (client, js) = connect(&server).await;
        let store = open(&js).await;
        assert_eq!(history(&store, "limits.cpu").await, expected_cpu, "--shards {shards}");
        assert_eq!(store.get("limits.mem").await.expect("get").as_deref(), Some(&b"1g"[..]));
        assert_eq!(store.get("flags.beta").await.expect("get deleted"), None);
        let marker = store.entry("flags.beta").await.expect("entry").expect("delete marker kept");
        assert_eq!(marker.operation, Operation::Delete);
        assert_eq!(history(&store, "owner").await, vec![(12, Operation::Purge, String::new())]);
        let state = js.get_stream("KV_CONFIG").await.expect("stream").cached_info().state.clone();
        assert_eq!((state.messages, state.last_sequence), (8, 12), "--shards {shards}");
        drop(client);
    }

    let (_client, js) = connect(&server).await;
    let store = open(&js).await;
    let next = store.put("owner", "cy".into()).await.expect("put after restarts");
    assert_eq!(next, 13);
    assert_eq!(store.update("limits.mem", "2g".into(), 7).await.expect("update at revision"), 14);
}
