//! The monitoring endpoints answer over HTTP while clients work: `/connz` lists the
//! connections with nats-server's field names, `/subsz` counts subscriptions, `/jsz`
//! reports streams and consumers, `/metrics` is Prometheus text with per-shard and
//! per-stream series (group commit's write, fdatasync and size histograms, the
//! cross-shard rings' fill level), and `/varz` carries the totals.

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull, consumer::AckPolicy};
use common::TestServer;
use futures::StreamExt;
use serde_json::Value;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// GET `path`; the status code and body.
fn get(port: u16, path: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to monitor");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP response");
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("status");
    (status, body.to_string())
}

fn get_json(port: u16, path: &str) -> Value {
    let (status, body) = get(port, path);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path} is not JSON ({e}): {body}"))
}

/// The value of the series `name{labels}` in Prometheus text.
fn series(text: &str, name_and_labels: &str) -> f64 {
    let line = text
        .lines()
        .find(|line| line.starts_with(name_and_labels) && line[name_and_labels.len()..].starts_with(' '))
        .unwrap_or_else(|| panic!("no series {name_and_labels} in\n{text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// The per-shard series `name{shard="i",rest}` summed over `shards` shards.
fn shard_sum(text: &str, name: &str, rest: &str, shards: u16) -> f64 {
    (0..shards).map(|shard| series(text, &format!("{name}{{shard=\"{shard}\"{rest}}}"))).sum()
}

/// Checks the histogram `name{labels,...}` is well formed: buckets cumulative, `+Inf`
/// equal to `_count`. Returns `(count, sum)`.
fn histogram(text: &str, name: &str, labels: &str) -> (f64, f64) {
    let prefix = format!("{name}_bucket{{{labels},le=");
    let buckets: Vec<f64> = text
        .lines()
        .filter(|line| line.starts_with(&prefix))
        .map(|line| line.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(buckets.len() > 10, "{name}{{{labels}}} has {} buckets in\n{text}", buckets.len());
    let cumulative = buckets.windows(2).all(|pair| pair[0] <= pair[1]);
    assert!(cumulative, "{name}{{{labels}}} buckets not cumulative: {buckets:?}");
    let count = series(text, &format!("{name}_count{{{labels}}}"));
    assert_eq!(series(text, &format!("{name}_bucket{{{labels},le=\"+Inf\"}}")), count);
    (count, series(text, &format!("{name}_sum{{{labels}}}")))
}

/// `(count, sum)` of a group-commit histogram of file storage, summed over 2 shards.
fn file_histogram(text: &str, name: &str) -> (f64, f64) {
    let [zero, one] = [0, 1].map(|shard| histogram(text, name, &format!("shard=\"{shard}\",storage=\"file\"")));
    (zero.0 + one.0, zero.1 + one.1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_commit_histograms_count_every_stored_record_and_ring_fill_is_reported() {
    let http_port = free_port();
    let server = TestServer::start(&["--shards", "2", "-m", &http_port.to_string()]);
    let client = async_nats::connect(server.url()).await.unwrap();
    let js = jetstream::new(client.clone());
    let config = jetstream::stream::Config { name: "GC".into(), subjects: vec!["gc.>".into()], ..Default::default() };
    js.create_stream(config).await.unwrap();
    let metric_names = [
        "jetcore_store_append_seconds",
        "jetcore_store_fdatasync_seconds",
        "jetcore_store_group_commit_records",
        "jetcore_store_group_commit_bytes",
    ];
    let (status, before) = tokio::task::spawn_blocking(move || get(http_port, "/metrics")).await.unwrap();
    assert_eq!(status, 200);
    let before: Vec<(f64, f64)> = metric_names.iter().map(|name| file_histogram(&before, name)).collect();
    assert_eq!(before[2], (0.0, 0.0), "no record was stored yet");

    // Concurrent publishes, so some groups carry more than one record.
    const PUBLISHES: usize = 200;
    let mut acks = Vec::new();
    for index in 0..PUBLISHES {
        acks.push(js.publish(format!("gc.{}", index % 7), "y".repeat(300).into()).await.unwrap());
    }
    for ack in acks {
        ack.await.unwrap();
    }

    let (_, after) = tokio::task::spawn_blocking(move || get(http_port, "/metrics")).await.unwrap();
    let [append, fdatasync, records, bytes] = metric_names.map(|name| file_histogram(&after, name));
    assert_eq!(records.1, PUBLISHES as f64, "records per group commit sum to the records stored:\n{after}");
    assert!(records.0 >= 1.0 && records.0 <= PUBLISHES as f64, "{records:?}");
    assert_eq!(append.0 - before[0].0, records.0, "one write per group");
    assert!(append.1 > before[0].1, "write time grew: {append:?}");
    assert!(fdatasync.0 > before[1].0 && fdatasync.1 > before[1].1, "fdatasyncs counted: {fdatasync:?}");
    assert_eq!(bytes.0, records.0);
    assert!(bytes.1 >= (PUBLISHES * 300) as f64, "group bytes hold the payloads: {bytes:?}");
    assert_eq!(bytes.1 as u64 % 512, 0, "groups are written in whole blocks: {bytes:?}");
    let stores = shard_sum(&after, "jetcore_stores_total", "", 2);
    assert_eq!(stores, PUBLISHES as f64);

    // One at a time, nothing else on the server: groups an idle shard writes with one
    // blocking call (at least the first one-write group; store/blocking_write.rs).
    for index in 0..20 {
        js.publish(format!("gc.{index}"), "z".into()).await.unwrap().await.unwrap();
    }
    let (_, later) = tokio::task::spawn_blocking(move || get(http_port, "/metrics")).await.unwrap();
    let blocking = shard_sum(&later, "jetcore_store_blocking_writes_total", ",storage=\"file\"", 2);
    let groups = file_histogram(&later, "jetcore_store_group_commit_records").0;
    assert!(blocking >= 1.0 && blocking <= groups, "{blocking} blocking writes of {groups} groups:\n{later}");

    let capacity = series(&after, "jetcore_mesh_ring_capacity_envelopes");
    assert!(capacity >= 2.0, "{after}");
    for (shard, peer) in [(0, 1), (1, 0)] {
        let depth = series(&after, &format!("jetcore_mesh_ring_depth_envelopes{{shard=\"{shard}\",peer=\"{peer}\"}}"));
        assert!((0.0..=capacity).contains(&depth), "ring {shard}->{peer}: {depth}");
        series(&after, &format!("jetcore_mesh_overflow_envelopes{{shard=\"{shard}\",peer=\"{peer}\"}}"));
    }
    assert!(!after.contains("jetcore_mesh_ring_depth_envelopes{shard=\"0\",peer=\"0\"}"), "no ring to itself");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_report_connections_subscriptions_streams_and_metrics() {
    let http_port = free_port();
    let server = TestServer::start(&["--shards", "2", "-m", &http_port.to_string()]);
    let client = async_nats::ConnectOptions::new().name("monitored").connect(server.url()).await.unwrap();
    let _subscription = client.subscribe("watch.>").await.unwrap();
    let js = jetstream::new(client.clone());
    let stream = js
        .create_stream(jetstream::stream::Config {
            name: "MON".into(),
            subjects: vec!["mon.>".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    for index in 0..25 {
        js.publish(format!("mon.{}", index % 3), "x".repeat(100).into()).await.unwrap().await.unwrap();
    }
    let consumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("reader".into()),
            ack_policy: AckPolicy::Explicit,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut batch = consumer.fetch().max_messages(5).messages().await.unwrap();
    let mut fetched = 0;
    while let Some(message) = tokio::time::timeout(Duration::from_secs(5), batch.next()).await.unwrap() {
        message.unwrap();
        fetched += 1;
    }
    assert_eq!(fetched, 5);
    client.flush().await.unwrap();

    let connz = tokio::task::spawn_blocking(move || get_json(http_port, "/connz?subs=1")).await.unwrap();
    assert_eq!(connz["num_connections"], 1, "{connz}");
    let connection = &connz["connections"][0];
    assert_eq!(connection["name"], "monitored");
    assert_eq!(connection["kind"], "Client");
    assert!(connection["in_msgs"].as_u64().unwrap() >= 25, "{connection}");
    assert!(connection["subscriptions_list"].as_array().unwrap().iter().any(|s| s == "watch.>"), "{connection}");
    for field in [
        "cid",
        "ip",
        "port",
        "start",
        "last_activity",
        "uptime",
        "idle",
        "pending_bytes",
        "out_msgs",
        "in_bytes",
        "out_bytes",
        "lang",
        "version",
    ] {
        assert!(!connection[field].is_null(), "connz lacks {field}: {connection}");
    }

    let subsz = tokio::task::spawn_blocking(move || get_json(http_port, "/subsz")).await.unwrap();
    assert!(subsz["num_subscriptions"].as_u64().unwrap() >= 2, "{subsz}");

    let jsz = tokio::task::spawn_blocking(move || get_json(http_port, "/jsz?consumers=1")).await.unwrap();
    assert_eq!(jsz["streams"], 1, "{jsz}");
    assert_eq!(jsz["consumers"], 1, "{jsz}");
    assert_eq!(jsz["messages"], 25, "{jsz}");
    let detail = &jsz["account_details"][0]["stream_detail"][0];
    assert_eq!(detail["name"], "MON");
    assert_eq!(detail["state"]["messages"], 25);
    let consumer_detail = &detail["consumer_detail"][0];
    assert_eq!(consumer_detail["name"], "reader");
    assert_eq!(consumer_detail["num_ack_pending"], 5);
    assert_eq!(consumer_detail["num_pending"], 20);

    let (status, metrics) = tokio::task::spawn_blocking(move || get(http_port, "/metrics")).await.unwrap();
    assert_eq!(status, 200);
    let publishes: f64 =
        (0..2).map(|shard| series(&metrics, &format!("jetcore_client_publishes_total{{shard=\"{shard}\"}}"))).sum();
    assert!(publishes >= 25.0, "{metrics}");
    let stores: f64 = (0..2).map(|shard| series(&metrics, &format!("jetcore_stores_total{{shard=\"{shard}\"}}"))).sum();
    assert_eq!(stores, 25.0);
    let stored_latencies: f64 = (0..2)
        .map(|shard| series(&metrics, &format!("jetcore_store_latency_seconds_count{{shard=\"{shard}\"}}")))
        .sum();
    assert_eq!(stored_latencies, 25.0);
    let deliveries: f64 =
        (0..2).map(|shard| series(&metrics, &format!("jetcore_jetstream_deliveries_total{{shard=\"{shard}\"}}"))).sum();
    assert_eq!(deliveries, 5.0);
    assert!(metrics.contains("jetcore_stream_messages{stream=\"MON\""), "{metrics}");
    assert_eq!(series(&metrics, "jetcore_consumer_ack_pending{stream=\"MON\",consumer=\"reader\"}"), 5.0);
    assert_eq!(series(&metrics, "jetcore_consumer_pending{stream=\"MON\",consumer=\"reader\"}"), 20.0);
    assert_eq!(series(&metrics, "jetcore_consumer_redelivered{stream=\"MON\",consumer=\"reader\"}"), 0.0);

    let varz = tokio::task::spawn_blocking(move || get_json(http_port, "/varz")).await.unwrap();
    assert_eq!(varz["connections"], 1);
    assert!(varz["in_msgs"].as_u64().unwrap() >= 25, "{varz}");
    assert_eq!(tokio::task::spawn_blocking(move || get(http_port, "/healthz")).await.unwrap().0, 200);
}

/// The counting rules of issue 30, as nats-server counts: a connection that receives its
/// own messages (echo) counts them in `out_msgs`; `out_bytes` and `in_bytes` are header
/// and payload bytes (no protocol lines); a closed connection's deliveries stay in
/// `/varz`'s totals and it is listed by `/connz?state=closed` with its reason; `/metrics`
/// carries the totals under prometheus-nats-exporter's names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echoes_count_as_deliveries_and_bytes_are_payload_bytes() {
    let http_port = free_port();
    let server = TestServer::start(&["--shards", "2", "-m", &http_port.to_string()]);
    let echoer = async_nats::ConnectOptions::new().name("echoer").connect(server.url()).await.unwrap();
    let mut own = echoer.subscribe("echo.me").await.unwrap();
    echoer.publish("echo.me", "hello".into()).await.unwrap();
    echoer.publish("echo.me", "world!".into()).await.unwrap();
    for _ in 0..2 {
        tokio::time::timeout(Duration::from_secs(5), own.next()).await.unwrap().unwrap();
    }
    let publisher = async_nats::ConnectOptions::new().name("publisher").connect(server.url()).await.unwrap();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("K", "v");
    publisher.publish_with_headers("echo.me", headers, "abc".into()).await.unwrap();
    publisher.flush().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), own.next()).await.unwrap().unwrap();

    let connz = tokio::task::spawn_blocking(move || get_json(http_port, "/connz")).await.unwrap();
    let named =
        |name: &str| connz["connections"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned().expect(name);
    let (echoer_row, publisher_row) = (named("echoer"), named("publisher"));
    // "NATS/1.0\r\nK: v\r\n\r\n" is 18 bytes of headers.
    let header_message = 18 + 3;
    assert_eq!((echoer_row["in_msgs"].as_u64(), echoer_row["in_bytes"].as_u64()), (Some(2), Some(11)));
    assert_eq!(echoer_row["out_msgs"], 3, "its own two echoes and the other's one: {echoer_row}");
    assert_eq!(echoer_row["out_bytes"], 11 + header_message, "{echoer_row}");
    assert_eq!(publisher_row["in_bytes"], header_message, "{publisher_row}");
    assert_eq!((publisher_row["out_msgs"].as_u64(), publisher_row["out_bytes"].as_u64()), (Some(0), Some(0)));

    drop(own);
    drop(echoer);
    let closed = loop {
        let closed = tokio::task::spawn_blocking(move || get_json(http_port, "/connz?state=closed")).await.unwrap();
        if closed["total"] == 1 {
            break closed;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let row = &closed["connections"][0];
    assert_eq!((row["name"].as_str(), row["reason"].as_str()), (Some("echoer"), Some("Client Closed")), "{row}");
    assert_eq!(row["out_msgs"], 3, "{row}");
    let varz = tokio::task::spawn_blocking(move || get_json(http_port, "/varz")).await.unwrap();
    assert_eq!((varz["in_msgs"].as_u64(), varz["out_msgs"].as_u64()), (Some(3), Some(3)), "{varz}");
    assert_eq!(varz["out_bytes"], 11 + header_message, "{varz}");
    assert_eq!(varz["slow_consumer_stats"]["clients"], 0, "{varz}");

    let (_, metrics) = tokio::task::spawn_blocking(move || get(http_port, "/metrics")).await.unwrap();
    let server_id = varz["server_id"].as_str().unwrap();
    assert_eq!(series(&metrics, &format!("gnatsd_varz_out_msgs{{server_id=\"{server_id}\"}}")), 3.0);
    assert_eq!(series(&metrics, &format!("gnatsd_varz_in_msgs{{server_id=\"{server_id}\"}}")), 3.0);
    assert_eq!(series(&metrics, &format!("gnatsd_connz_total{{server_id=\"{server_id}\"}}")), 1.0);
}

/// `/connz`'s `rtt`, as nats-server 2.15.1 keeps it: estimated at CONNECT from the time
/// since the accept, for every client (a library's and a raw one, which nats-server showed
/// as `1.521219ms` and `260µs` on its first `/connz`), then refreshed by the server's
/// PINGs. A raw client is not sent a PING for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connz_rtt_is_estimated_at_connect_for_every_client() {
    let http = free_port();
    let server = TestServer::start(&["-m", &http.to_string(), "--shards", "1"]);
    let client = async_nats::connect(server.url()).await.unwrap();
    client.flush().await.unwrap();
    let (mut raw, _info) = common::RawClient::connect(&server.address());
    raw.send(b"CONNECT {\"verbose\":false}\r\nPING\r\n");
    assert_eq!(raw.line(), "PONG\r\n");

    let rtt_of = |lang: Option<&str>| {
        let connz = get_json(http, "/connz");
        let connections = connz["connections"].as_array().unwrap().clone();
        let connection = connections.iter().find(|c| c["lang"].as_str() == lang).expect("the connection").clone();
        connection["rtt"].as_str().expect("rtt is always present").to_string()
    };
    for lang in [Some("rust"), None] {
        let rtt = rtt_of(lang);
        assert_ne!(rtt, "0s", "{lang:?}: estimated at CONNECT");
        assert!(["ns", "µs", "ms"].iter().any(|unit| rtt.ends_with(unit)), "{lang:?}: {rtt}");
    }
    // The raw client was not sent a PING: its next line is the answer to its own.
    raw.send(b"PING\r\n");
    assert_eq!(raw.line_as_sent(), "PONG\r\n");
}
