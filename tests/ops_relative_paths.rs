//! The store directory as a new user gives it: the default (`./data`) and relative `-sd`
//! values, resolved against the working directory the server was started in. Each case
//! creates a file stream and a KV bucket, publishes, restarts (kill -9) from the same
//! working directory and reads everything back; the data is where the user asked.

mod common;

use std::path::Path;

use async_nats::jetstream::{kv, stream};
use common::jetstream::connect;
use common::TestServer;

const MESSAGES: u64 = 20;

async fn write_stream_and_bucket(server: &TestServer) {
    let (_client, js) = connect(server).await;
    js.create_stream(stream::Config { name: "ORDERS".into(), subjects: vec!["orders.>".into()], ..Default::default() })
        .await
        .expect("create a file stream");
    for index in 0..MESSAGES {
        js.publish(format!("orders.{index}"), format!("order {index}").into())
            .await
            .expect("publish")
            .await
            .expect("durable pub ack");
    }
    let bucket = js
        .create_key_value(kv::Config { bucket: "SETTINGS".into(), ..Default::default() })
        .await
        .expect("create a KV bucket");
    bucket.put("mode", "live".into()).await.expect("put");
}

async fn read_back(server: &TestServer) {
    let (_client, js) = connect(server).await;
    let mut orders = js.get_stream("ORDERS").await.expect("stream after restart");
    let state = orders.info().await.expect("info").state.clone();
    assert_eq!((state.messages, state.last_sequence), (MESSAGES, MESSAGES));
    let last = orders.get_raw_message(MESSAGES).await.expect("last message");
    assert_eq!(&last.payload[..], format!("order {}", MESSAGES - 1).as_bytes());
    let bucket = js.get_key_value("SETTINGS").await.expect("bucket after restart");
    assert_eq!(bucket.get("mode").await.expect("get").as_deref(), Some(&b"live"[..]));
}

/// Runs the whole case from `working_dir` with `args`; the streams must end up in
/// `expected_store` (relative to `working_dir`).
async fn round_trip(args: &[&str], expected_store: &str) {
    let working_dir = tempfile::tempdir().expect("temp dir");
    let mut server = TestServer::start_in(working_dir.path(), args);
    write_stream_and_bucket(&server).await;
    server.restart();
    read_back(&server).await;
    let streams = working_dir.path().join(expected_store).join("jetstream");
    assert!(is_non_empty_dir(&streams), "{args:?}: no stream data under {}", streams.display());
}

fn is_non_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).map(|mut entries| entries.next().is_some()).unwrap_or(false)
}

#[tokio::test]
async fn the_default_store_directory_is_data_in_the_working_directory() {
    round_trip(&[], "data").await;
}

#[tokio::test]
async fn a_relative_store_directory_with_a_dot_works() {
    round_trip(&["-sd", "./d2"], "d2").await;
}

#[tokio::test]
async fn a_bare_relative_store_directory_works() {
    round_trip(&["-sd", "d3"], "d3").await;
}

#[tokio::test]
async fn a_nested_relative_store_directory_from_a_config_file_works() {
    let working_dir = tempfile::tempdir().expect("temp dir");
    let config = "jetstream {\n  store_dir: \"nested/js\"\n}\n";
    std::fs::write(working_dir.path().join("jetcore.conf"), config).expect("write config");
    let mut server = TestServer::start_in(working_dir.path(), &["-c", "jetcore.conf", "-P", "jetcore.pid"]);
    write_stream_and_bucket(&server).await;
    let pid = std::fs::read_to_string(working_dir.path().join("jetcore.pid")).expect("pid file in the working dir");
    assert_eq!(pid.trim(), server.pid().to_string());
    server.restart();
    read_back(&server).await;
    assert!(is_non_empty_dir(&working_dir.path().join("nested/js/jetstream")));
}
