//! `persist_mode: async` (nats-server 2.12): the config is shown, refused and frozen as
//! nats-server 2.15.1 does it (a real process, side by side), and honoured: an async
//! stream's pub acks do not wait for fdatasync (its log syncs every
//! `PERSIST_ASYNC_SYNC_INTERVAL` instead), while a default stream's each do; what was
//! acknowledged is all there after a clean restart.

mod common;

use std::time::Duration;

use common::jetstream::api;
use common::TestServer;
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(10);
const MESSAGES: usize = 50;

async fn connect(url: &str) -> async_nats::Client {
    let options = async_nats::ConnectOptions::new().request_timeout(Some(TIMEOUT));
    options.connect(url).await.expect("connect")
}

/// Creates, then tries to change the mode: each answer reduced to what both servers
/// must agree on (the error, or the mode shown and the API level it requires).
async fn config_answers(client: &async_nats::Client) -> Vec<Value> {
    let cases = [
        json!({"name":"S1","subjects":["s1.>"],"persist_mode":"async"}),
        json!({"name":"S2","subjects":["s2.>"],"persist_mode":"async","storage":"memory"}),
        json!({"name":"S3","subjects":["s3.>"],"persist_mode":"async","num_replicas":3}),
        json!({"name":"S4","subjects":["s4.>"],"persist_mode":"async","storage":"memory","num_replicas":3}),
        json!({"name":"S5","subjects":["s5.>"],"persist_mode":"async","allow_atomic":true}),
        json!({"name":"S6","subjects":["s6.>"],"persist_mode":"default"}),
        json!({"name":"S7","subjects":["s7.>"],"persist_mode":"async","allow_msg_counter":true}),
        json!({"name":"S8","subjects":["s8.>"],"persist_mode":"bogus"}),
    ];
    let mut answers = Vec::new();
    let reduced = |reply: Value| match reply.get("error") {
        Some(error) => error.clone(),
        None => json!([reply["config"]["persist_mode"], reply["config"]["metadata"]["_nats.req.level"]]),
    };
    for config in cases {
        let name = config["name"].as_str().unwrap().to_string();
        answers.push(reduced(api(client, &format!("STREAM.CREATE.{name}"), &config.to_string()).await));
    }
    let to_default = json!({"name":"S1","subjects":["s1.>"]});
    answers.push(reduced(api(client, "STREAM.UPDATE.S1", &to_default.to_string()).await));
    let to_async = json!({"name":"S6","subjects":["s6.>"],"persist_mode":"async"});
    answers.push(reduced(api(client, "STREAM.UPDATE.S6", &to_async.to_string()).await));
    answers.push(reduced(api(client, "STREAM.INFO.S1", "").await));
    answers
}

#[tokio::test]
async fn the_async_mode_is_shown_refused_and_frozen_as_nats_server_does() {
    let nats = common::hub::JetStreamServer::start();
    let port = nats.port;
    let expected = config_answers(&connect(&format!("nats://127.0.0.1:{port}")).await).await;
    drop(nats);
    let server = TestServer::start(&[]);
    let answers = config_answers(&connect(&server.url()).await).await;
    for (index, (got, want)) in answers.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "answer {index}");
    }
    assert_eq!(answers.len(), expected.len());
    assert_eq!(answers[0], json!(["async", "2"]), "recorded from nats-server 2.15.1");
}

/// fdatasync rounds of file streams so far (`/metrics`).
async fn fdatasyncs(monitor_port: u16) -> u64 {
    let text = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", monitor_port)).expect("monitor port");
        stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    })
    .await
    .unwrap();
    text.lines()
        .filter(|line| line.starts_with("jetcore_store_fdatasync_seconds_count") && line.contains(r#"storage="file""#))
        .map(|line| line.rsplit(' ').next().unwrap().parse::<u64>().expect("a count"))
        .sum()
}

async fn publish_all(client: &async_nats::Client, subject: &str) {
    for index in 0..MESSAGES {
        let ack = client.request(subject.to_string(), format!("m{index}").into()).await.expect("pub ack");
        let ack: Value = serde_json::from_slice(&ack.payload).unwrap();
        assert_eq!(ack["seq"], index + 1, "{ack}");
    }
}

#[tokio::test]
async fn async_acks_skip_fdatasync_and_what_they_acknowledged_survives_a_clean_restart() {
    // One way of making a small group durable, so each default ack is one fdatasync.
    std::env::set_var("JETCORE_DURABLE_WRITE", "fdatasync");
    let monitor_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let args = ["--shards", "1", "-m", &monitor_port.to_string()].map(String::from);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut server = TestServer::start(&args);
    let client = connect(&server.url()).await;
    for (name, mode) in [("ASYNC", "async"), ("DEFAULT", "default")] {
        let config = json!({"name":name,"subjects":[format!("{}.>", name.to_lowercase())],"persist_mode":mode});
        let reply = api(&client, &format!("STREAM.CREATE.{name}"), &config.to_string()).await;
        assert!(reply["error"].is_null(), "{reply}");
    }
    let before = fdatasyncs(monitor_port).await;
    publish_all(&client, "default.x").await;
    let default_syncs = fdatasyncs(monitor_port).await - before;
    let before = fdatasyncs(monitor_port).await;
    publish_all(&client, "async.x").await;
    let async_syncs = fdatasyncs(monitor_port).await - before;
    assert!(default_syncs >= MESSAGES as u64, "each default ack waits for one: {default_syncs}");
    // At most one per PERSIST_ASYNC_SYNC_INTERVAL (1 s) while the acks come.
    assert!(async_syncs <= 3, "async acks do not wait for fdatasync: {async_syncs} for {MESSAGES}");
    // ...and the writes are synced soon after, without another publish.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(fdatasyncs(monitor_port).await > before, "the async stream's writes were synced");

    drop(client);
    server.signal(libc::SIGTERM);
    assert!(server.wait_exit(TIMEOUT).is_some(), "a clean stop");
    server.restart_retrying(&args);
    let client = connect(&server.url()).await;
    let info = api(&client, "STREAM.INFO.ASYNC", "").await;
    assert_eq!(info["config"]["persist_mode"], "async", "{info}");
    assert_eq!(info["state"]["messages"], MESSAGES, "{info}");
    let last = api(&client, "STREAM.MSG.GET.ASYNC", &format!(r#"{{"seq":{MESSAGES}}}"#)).await;
    let data = common::jetstream::decode_base64(last["message"]["data"].as_str().expect("the last message"));
    assert_eq!(data, format!("m{}", MESSAGES - 1).into_bytes());
}
