//! Replies that differed from nats-server 2.15.1 and that clients trip on (issue 26). Each
//! expected value was recorded from nats-server 2.15.1 with the same requests.

mod common;

use common::jetstream::{api, assert_error, connect, publish_raw, REPLY_TIMEOUT};
use common::TestServer;
use futures::StreamExt;

async fn create_stream(client: &async_nats::Client, name: &str, config: &str) -> serde_json::Value {
    api(client, &format!("STREAM.CREATE.{name}"), config).await
}

async fn stream_bytes(client: &async_nats::Client, name: &str) -> u64 {
    let info = api(client, &format!("STREAM.INFO.{name}"), "").await;
    info["state"]["bytes"].as_u64().unwrap_or_else(|| panic!("no state.bytes in {info}"))
}

#[tokio::test]
async fn a_heartbeat_whose_double_overflows_passes_as_in_go() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    assert!(create_stream(&client, "S", r#"{"name":"S","subjects":["f.>"]}"#).await.get("error").is_none());
    let ack = publish_raw(&client, "f.a", &[], "x").await;
    assert_eq!(ack["seq"], 1, "{ack}");
    let consumer = r#"{"stream_name":"S","config":{"durable_name":"C","ack_policy":"explicit"}}"#;
    assert!(api(&client, "CONSUMER.CREATE.S.C", consumer).await.get("error").is_none());
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.unwrap();
    // nats-server doubles the heartbeat as a Go time.Duration: 2^62 ns doubled wraps to
    // a negative value, below any expiry, so the request is served.
    let pull = r#"{"batch":1,"expires":2000000000,"idle_heartbeat":4611686018427387904}"#;
    client.publish_with_reply("$JS.API.CONSUMER.MSG.NEXT.S.C", inbox.clone(), pull.into()).await.unwrap();
    let reply = tokio::time::timeout(REPLY_TIMEOUT, replies.next()).await.expect("a reply").unwrap();
    assert_eq!(reply.status, None, "{reply:?}");
    assert_eq!(&reply.payload[..], b"x");
    // A heartbeat more than half the expiry is still refused.
    let pull = r#"{"batch":1,"expires":1500000000,"idle_heartbeat":1000000000}"#;
    client.publish_with_reply("$JS.API.CONSUMER.MSG.NEXT.S.C", inbox, pull.into()).await.unwrap();
    let reply = tokio::time::timeout(REPLY_TIMEOUT, replies.next()).await.expect("a reply").unwrap();
    assert_eq!(reply.status.map(|status| status.as_u16()), Some(400), "{reply:?}");
    assert_eq!(reply.description.as_deref(), Some("Bad Request - heartbeat value too large"));
}

#[tokio::test]
async fn stored_bytes_are_counted_as_nats_server_counts_them() {
    let mut server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    assert!(create_stream(&client, "F", r#"{"name":"F","subjects":["f.>"]}"#).await.get("error").is_none());
    let memory = r#"{"name":"M","subjects":["m.>"],"storage":"memory"}"#;
    assert!(create_stream(&client, "M", memory).await.get("error").is_none());
    publish_raw(&client, "f.a", &[], "hello").await;
    publish_raw(&client, "m.a", &[], "hello").await;
    assert_eq!(stream_bytes(&client, "F").await, 38, "file: 30 + subject + payload");
    assert_eq!(stream_bytes(&client, "M").await, 24, "memory: 16 + subject + payload");
    // The header block `NATS/1.0\r\nX: yy\r\n\r\n` is 19 bytes.
    publish_raw(&client, "f.a", &[("X", "yy")], "hello").await;
    publish_raw(&client, "m.a", &[("X", "yy")], "hello").await;
    assert_eq!(stream_bytes(&client, "F").await, 38 + 61, "file with headers: 34 + subject + headers + payload");
    assert_eq!(stream_bytes(&client, "M").await, 24 + 43);
    let account = api(&client, "INFO", "").await;
    assert_eq!((account["storage"].as_u64(), account["memory"].as_u64()), (Some(99), Some(67)), "{account}");
    drop(client);
    server.restart();
    let (client, _) = connect(&server).await;
    assert_eq!(stream_bytes(&client, "F").await, 99, "the same figure after a restart");
}

#[tokio::test]
async fn max_bytes_holds_what_nats_server_holds() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    // Two messages of 38 bytes fit in 76; nats-server refuses the third.
    let config = r#"{"name":"L","subjects":["l.>"],"max_bytes":76,"discard":"new"}"#;
    assert!(create_stream(&client, "L", config).await.get("error").is_none());
    for seq in 1..=2 {
        assert_eq!(publish_raw(&client, "l.a", &[], "hello").await["seq"], seq);
    }
    let refused = publish_raw(&client, "l.a", &[], "hello").await;
    assert_error(&refused, 503, 10077, "maximum bytes exceeded");
}

#[tokio::test]
async fn discard_new_per_subject_needs_discard_new_and_a_subject_limit() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    let no_limit = r#"{"name":"D","subjects":["d.>"],"discard":"new","discard_new_per_subject":true}"#;
    let reply = create_stream(&client, "D", no_limit).await;
    assert_error(&reply, 500, 10052, "discard new per subject requires max msgs per subject > 0");
    let discard_old = r#"{"name":"D","subjects":["d.>"],"discard_new_per_subject":true,"max_msgs_per_subject":2}"#;
    let reply = create_stream(&client, "D", discard_old).await;
    assert_error(&reply, 500, 10052, "discard new per subject requires discard new policy to be set");
    let valid =
        r#"{"name":"D","subjects":["d.>"],"discard":"new","discard_new_per_subject":true,"max_msgs_per_subject":1}"#;
    assert!(create_stream(&client, "D", valid).await.get("error").is_none());
}

#[tokio::test]
async fn a_publish_to_a_subject_with_wildcard_tokens_is_stored() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    assert!(create_stream(&client, "W", r#"{"name":"W","subjects":["w.>"]}"#).await.get("error").is_none());
    for (seq, subject) in [(1, "w.*"), (2, "w.>"), (3, "w.*.x"), (4, "w.a")] {
        let ack = publish_raw(&client, subject, &[], "v").await;
        assert_eq!(ack["seq"], seq, "{subject}: {ack}");
    }
    let info = api(&client, "STREAM.INFO.W", r#"{"subjects_filter":">"}"#).await;
    let subjects = &info["state"]["subjects"];
    assert_eq!(subjects, &serde_json::json!({"w.*": 1, "w.>": 1, "w.*.x": 1, "w.a": 1}), "{info}");
    let got = api(&client, "STREAM.MSG.GET.W", r#"{"seq":2}"#).await;
    assert_eq!(got["message"]["subject"], "w.>", "{got}");
}

#[tokio::test]
async fn counter_and_schedule_headers_get_nats_server_errors() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    assert!(create_stream(&client, "F", r#"{"name":"F","subjects":["f.>"]}"#).await.get("error").is_none());
    let incr = publish_raw(&client, "f.c", &[("Nats-Incr", "1")], "").await;
    assert_error(&incr, 400, 10168, "message counters is disabled");
    let bad_incr = publish_raw(&client, "f.c", &[("Nats-Incr", "x")], "").await;
    assert_error(&bad_incr, 400, 10171, "message counter increment is invalid");
    let schedule = [("Nats-Schedule", "@at 2030-01-01T00:00:00Z")];
    let scheduled = publish_raw(&client, "f.s", &schedule, "").await;
    assert_error(&scheduled, 400, 10188, "message schedules is disabled");
    // Empty values are no request at all: stored.
    assert_eq!(publish_raw(&client, "f.e", &[("Nats-Incr", "")], "").await["seq"], 1);
    assert_eq!(publish_raw(&client, "f.e", &[("Nats-Schedule", "")], "").await["seq"], 2);
    // A counter is refused before a duplicate is recognised; a schedule after the
    // expected last sequence is checked.
    publish_raw(&client, "f.d", &[("Nats-Msg-Id", "d")], "").await;
    let duplicate = publish_raw(&client, "f.d", &[("Nats-Msg-Id", "d"), ("Nats-Incr", "1")], "").await;
    assert_error(&duplicate, 400, 10168, "message counters is disabled");
    let expected = [("Nats-Schedule", "@at 2030-01-01T00:00:00Z"), ("Nats-Expected-Last-Sequence", "9")];
    let wrong_last = publish_raw(&client, "f.s", &expected, "").await;
    assert_error(&wrong_last, 400, 10071, "wrong last sequence: 3");
    let info = api(&client, "STREAM.INFO.F", "").await;
    assert_eq!(info["state"]["messages"], 3, "nothing refused was stored: {info}");
}

#[tokio::test]
async fn empty_control_headers_are_no_headers_as_in_nats_server() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    assert!(create_stream(&client, "E", r#"{"name":"E","subjects":["e.>"]}"#).await.get("error").is_none());
    let empty = ["Nats-Rollup", "Nats-Expected-Stream", "Nats-Expected-Last-Msg-Id", "Nats-TTL"];
    for (seq, name) in empty.into_iter().enumerate() {
        let ack = publish_raw(&client, "e.a", &[(name, "")], "x").await;
        assert_eq!(ack, serde_json::json!({"stream":"E","seq":seq + 1}), "{name}: \"\"");
    }
}

#[tokio::test]
async fn settings_jetcore_does_not_build_are_refused_by_name() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    let s2 = create_stream(&client, "C", r#"{"name":"C","subjects":["c.>"],"compression":"s2"}"#).await;
    assert_error(&s2, 500, 10052, "stream compression s2 is not supported by jetcore yet");
    // nats-server compresses file stores only: a memory stream echoes s2, as there.
    let memory = r#"{"name":"C","subjects":["c.>"],"compression":"s2","storage":"memory"}"#;
    let memory = create_stream(&client, "C", memory).await;
    assert_eq!(memory["config"]["compression"], "s2", "{memory}");
    let rate = r#"{"stream_name":"C","config":{"durable_name":"R","deliver_subject":"r","rate_limit_bps":1000}}"#;
    let reply = api(&client, "CONSUMER.CREATE.C.R", rate).await;
    assert_error(&reply, 500, 10012, "consumer rate limit (rate_limit_bps) is not supported by jetcore yet");
}

#[tokio::test]
async fn the_api_level_is_that_of_what_jetcore_builds_and_requests_above_it_are_refused() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    let account = api(&client, "INFO", "").await;
    assert_eq!(account["api"]["level"], 2, "{account}");
    let created = create_stream(&client, "F", r#"{"name":"F","subjects":["f.>"]}"#).await;
    assert_eq!(created["config"]["metadata"]["_nats.level"], "2", "{created}");
    let consumer = r#"{"stream_name":"F","config":{"durable_name":"C","ack_policy":"explicit"}}"#;
    assert!(api(&client, "CONSUMER.CREATE.F.C", consumer).await.get("error").is_none());
    let request = |level: &str| {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Required-Api-Level", level);
        headers
    };
    for level in ["", "0", "-1", "1", "2"] {
        let reply = client.request_with_headers("$JS.API.STREAM.NAMES", request(level), "".into()).await.unwrap();
        let names: serde_json::Value = serde_json::from_slice(&reply.payload).unwrap();
        assert_eq!(names["streams"], serde_json::json!(["F"]), "level {level:?}: {names}");
    }
    let refused = [("$JS.API.STREAM.INFO.F", "3"), ("$JS.API.INFO", "abc"), ("$JS.API.STREAM.CREATE.G", "9")];
    for (subject, level) in refused {
        let body = r#"{"name":"G","subjects":["g.>"]}"#;
        let reply = client.request_with_headers(subject, request(level), body.into()).await.unwrap();
        let refused: serde_json::Value = serde_json::from_slice(&reply.payload).unwrap();
        assert_error(&refused, 412, 10185, "JetStream minimum api level required");
    }
    let info = api(&client, "STREAM.INFO.G", "").await;
    assert_error(&info, 404, 10059, "stream not found");
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.unwrap();
    let pull = r#"{"batch":1,"no_wait":true}"#;
    let subject = "$JS.API.CONSUMER.MSG.NEXT.F.C";
    client.publish_with_reply_and_headers(subject, inbox, request("3"), pull.into()).await.unwrap();
    let reply = tokio::time::timeout(REPLY_TIMEOUT, replies.next()).await.expect("a status").unwrap();
    assert_eq!(reply.status.map(|status| status.as_u16()), Some(412), "{reply:?}");
    assert_eq!(reply.description.as_deref(), Some("Required Api Level"));
}
