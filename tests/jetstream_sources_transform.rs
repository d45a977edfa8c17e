//! Subject transforms on a mirror and on a source map the copies' subjects as
//! nats-server 2.15.1 does: the first transform whose source matches applies, an empty
//! destination copies unchanged, and the source header names the transforms.

mod common;

use std::time::{Duration, Instant};

use async_nats::jetstream::Context;
use common::jetstream::{api, connect, publish, stream_config};
use common::TestServer;

async fn wait_last_seq(client: &async_nats::Client, stream: &str, last_seq: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = api(client, &format!("STREAM.INFO.{stream}"), "").await;
        if info["state"]["last_seq"] == last_seq {
            return;
        }
        assert!(Instant::now() < deadline, "{stream} never reached {last_seq}: {info}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn subject_and_source(js: &Context, stream: &str, seq: u64) -> (String, Option<String>) {
    let message = js.get_stream(stream).await.unwrap().get_raw_message(seq).await.unwrap();
    let header = message.headers.get("Nats-Stream-Source").map(|value| value.as_str().to_string());
    (message.subject.to_string(), header)
}

#[tokio::test]
async fn mirrors_and_sources_map_subjects_through_their_transforms() {
    let server = TestServer::start(&["--shards", "2"]);
    let (client, js) = connect(&server).await;
    js.create_stream(stream_config("ORIGIN", &["o.>"])).await.unwrap();
    for (subject, payload) in [("o.a", "1"), ("o.b.c", "2"), ("o.d", "3")] {
        publish(&js, subject, payload).await;
    }
    let mirror = r#"{"name":"MAPPED","mirror":{"name":"ORIGIN","subject_transforms":[{"src":"o.*","dest":"m.{{wildcard(1)}}"}]}}"#;
    let created = api(&client, "STREAM.CREATE.MAPPED", mirror).await;
    assert!(created["error"].is_null(), "{created}");
    let source = r#"{"name":"JOINED","sources":[{"name":"ORIGIN","subject_transforms":[{"src":"o.*","dest":"s.{{wildcard(1)}}"},{"src":"o.b.>","dest":""}]}]}"#;
    let created = api(&client, "STREAM.CREATE.JOINED", source).await;
    assert!(created["error"].is_null(), "{created}");

    wait_last_seq(&client, "MAPPED", 3).await;
    assert_eq!(subject_and_source(&js, "MAPPED", 1).await, ("m.a".to_string(), None));
    assert_eq!(subject_and_source(&js, "MAPPED", 3).await.0, "m.d");
    let info = api(&client, "STREAM.INFO.MAPPED", "").await;
    assert_eq!(info["state"]["messages"], 2, "the mirror copies only what its transforms take: {info}");

    wait_last_seq(&client, "JOINED", 3).await;
    let expected = [(1, "s.a", "o.a"), (2, "o.b.c", "o.b.c"), (3, "s.d", "o.d")];
    for (seq, subject, original) in expected {
        let (stored, header) = subject_and_source(&js, "JOINED", seq).await;
        assert_eq!(stored, subject);
        let header = header.expect("a source header");
        let prefix = format!("ORIGIN {seq} o.*\u{c}o.b.> s.{{{{wildcard(1)}}}}\u{c}> {original} ");
        assert!(header.starts_with(&prefix), "{header:?} does not start with {prefix:?}");
    }
}
