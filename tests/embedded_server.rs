//! `jetcore::Server` in-process: the example's own code (started twice on one directory,
//! with a graceful shutdown between), free ports, and the store lock's release.

#[path = "../examples/embedded_server.rs"]
#[allow(dead_code)]
mod example;

use async_nats::jetstream;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_publishes_consumes_and_finds_both_after_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let summary = example::run(dir.path(), 300).await.expect("example run");
    let expected =
        example::Summary { published: 300, consumed: 300, stored_after_restart: 300, acked_after_restart: 300 };
    assert_eq!(summary, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_zero_gives_each_server_its_own_port_and_shutdown_releases_the_store() {
    let first_dir = tempfile::tempdir().expect("temp dir");
    let second_dir = tempfile::tempdir().expect("temp dir");
    let start = |dir: &std::path::Path| jetcore::Server::builder().port(0).store_dir(dir).shards(1).start();
    let first = start(first_dir.path()).expect("first server");
    let second = start(second_dir.path()).expect("second server");
    assert_ne!(first.port(), 0);
    assert_ne!(first.port(), second.port());
    let refused = start(first_dir.path()).err().expect("the store directory is the first server's");
    assert!(refused.to_string().contains("in use by another server"), "{refused}");

    let client = async_nats::connect(second.client_url()).await.expect("connect");
    let info = jetstream::new(client).query_account().await.expect("account info");
    assert_eq!(info.streams, 0);

    tokio::task::spawn_blocking(move || first.shutdown()).await.expect("join").expect("shutdown");
    let again = start(first_dir.path()).expect("the store is free once the first server shut down");
    tokio::task::spawn_blocking(move || again.shutdown()).await.expect("join").expect("shutdown");
    // Dropping shuts down too.
    tokio::task::spawn_blocking(move || drop(second)).await.expect("join");
}

#[test]
fn the_builder_takes_the_command_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().to_str().expect("utf-8 path").to_string();
    let builder = jetcore::ServerBuilder::from_args(["-js", "-p", "0", "--shards", "1", "-sd", &store]).expect("flags");
    let server = builder.start().expect("start");
    assert_eq!(server.store_dir(), dir.path());
    let address = format!("127.0.0.1:{}", server.port());
    assert!(std::net::TcpStream::connect(address).is_ok(), "listening once start returned");
    server.shutdown().expect("shutdown");
    assert!(jetcore::ServerBuilder::from_args(["--help"]).is_err());
}

#[test]
fn a_store_the_shards_cannot_open_is_refused_by_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Where the shards create their streams' directory, a plain file.
    std::fs::write(dir.path().join("jetstream"), b"").expect("file");
    let refused = jetcore::Server::builder().port(0).store_dir(dir.path()).shards(2).start();
    let error = refused.err().expect("start refuses").to_string();
    assert!(error.contains("could not open its streams"), "{error}");
}

/// A program that restarts its embedded server (a test suite, an upgrade in place) gets
/// the monitoring port back: `shutdown` stops the monitor's thread too.
#[test]
fn shutdown_frees_the_monitoring_port() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().to_str().expect("utf-8 path").to_string();
    let http_port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port();
    let http = http_port.to_string();
    let args = ["-js", "-p", "0", "--shards", "1", "-m", &http, "-sd", &store];
    for round in 0..2 {
        let server = jetcore::ServerBuilder::from_args(args).expect("flags").start();
        let server = server.unwrap_or_else(|error| panic!("start {round}: {error}"));
        let health = http_get(http_port, "/healthz");
        assert!(health.starts_with("HTTP/1.1 200"), "round {round}: {health}");
        server.shutdown().expect("shutdown");
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", http_port)).is_err(),
            "round {round}: the monitoring port still answers after shutdown"
        );
    }
}

fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the monitor");
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("response");
    response
}
