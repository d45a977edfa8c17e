//! Behaviours async-nats 0.51's own integration tests rely on that jetcore got wrong
//! (found with tools/conformance/run), each checked here over raw `$JS.API` requests so the
//! exact answer is visible.

mod common;

use common::jetstream::{api, assert_error, connect, publish, publish_raw, REPLY_TIMEOUT};
use common::TestServer;
use futures::StreamExt;

fn server() -> TestServer {
    TestServer::start(&["--shards", "2"])
}

/// nats-server counts every answered `$JS.API` request in the account's `api.total` (an
/// account info does not see itself) and error answers in `api.errors`; direct gets and
/// pull requests are served outside the API and not counted, nor a message get that finds
/// its message.
#[tokio::test]
async fn api_statistics_count_answers_and_errors() {
    let server = server();
    let (client, _js) = connect(&server).await;
    let first = api(&client, "INFO", "").await;
    assert_eq!((first["api"]["total"].as_u64(), first["api"]["errors"].as_u64()), (Some(0), Some(0)), "{first}");
    assert_eq!(api(&client, "INFO", "").await["api"]["total"], 1);
    assert_error(&api(&client, "STREAM.INFO.NOPE", "").await, 404, 10059, "stream not found");
    let reply = api(&client, "STREAM.CREATE.S", r#"{"name":"S","subjects":["s.>"],"allow_direct":true}"#).await;
    assert!(reply.get("error").is_none(), "{reply}");
    let after = api(&client, "INFO", "").await;
    assert_eq!((after["api"]["total"].as_u64(), after["api"]["errors"].as_u64()), (Some(4), Some(1)), "{after}");
    let missing = client
        .request("$JS.API.DIRECT.GET.S", r#"{"last_by_subj":"s.none"}"#.into())
        .await
        .expect("direct get answers");
    assert_eq!(missing.status.map(|status| status.as_u16()), Some(404));
    let reply = api(&client, "STREAM.MSG.GET.S", r#"{"last_by_subj":"s.none"}"#).await;
    assert_eq!(reply["error"]["code"], 404, "{reply}");
    let last = api(&client, "INFO", "").await;
    assert_eq!((last["api"]["total"].as_u64(), last["api"]["errors"].as_u64()), (Some(6), Some(2)), "{last}");
    // A message get that finds its message is not counted (nats-server 2.15.1).
    publish_raw(&client, "s.one", &[], "x").await;
    let reply = api(&client, "STREAM.MSG.GET.S", r#"{"seq":1}"#).await;
    assert!(reply.get("message").is_some(), "{reply}");
    let found = api(&client, "INFO", "").await;
    assert_eq!((found["api"]["total"].as_u64(), found["api"]["errors"].as_u64()), (Some(7), Some(2)), "{found}");
}

/// `delivered.last_active` and `ack_floor.last_active` appear once the consumer delivered
/// and was acked (async-nats's pull tests assert the first).
#[tokio::test]
async fn consumer_info_reports_last_delivery_and_ack() {
    let server = server();
    let (client, js) = connect(&server).await;
    api(&client, "STREAM.CREATE.EV", r#"{"name":"EV","subjects":["ev"]}"#).await;
    let config = r#"{"stream_name":"EV","config":{"durable_name":"C","ack_policy":"explicit"}}"#;
    api(&client, "CONSUMER.CREATE.EV.C", config).await;
    let idle = api(&client, "CONSUMER.INFO.EV.C", "").await;
    assert!(idle["delivered"].get("last_active").is_none(), "{idle}");
    publish(&js, "ev", "one").await;
    // A pulled message keeps its own subject, so it comes to an inbox subscription, not
    // to a request's reply mux.
    let inbox = client.new_inbox();
    let mut messages = client.subscribe(inbox.clone()).await.expect("subscribe");
    client.publish_with_reply("$JS.API.CONSUMER.MSG.NEXT.EV.C", inbox, r#"{"batch":1}"#.into()).await.expect("pull");
    let message =
        tokio::time::timeout(REPLY_TIMEOUT, messages.next()).await.expect("a message in time").expect("a message");
    let delivered = api(&client, "CONSUMER.INFO.EV.C", "").await;
    assert!(delivered["delivered"]["last_active"].is_string(), "{delivered}");
    assert!(delivered["ack_floor"].get("last_active").is_none(), "{delivered}");
    let ack_subject = message.reply.expect("an ack subject").to_string();
    client.request(ack_subject, "+ACK".into()).await.expect("ack confirmed");
    let acked = api(&client, "CONSUMER.INFO.EV.C", "").await;
    assert!(acked["ack_floor"]["last_active"].is_string(), "{acked}");
}

/// `subjects_filter` answers are paged like nats-server's: `offset` skips that many
/// subjects (in sorted order), and the paging says the total and the page size.
#[tokio::test]
async fn stream_info_pages_subjects_from_the_offset() {
    let server = server();
    let (client, js) = connect(&server).await;
    api(&client, "STREAM.CREATE.P", r#"{"name":"P","subjects":["p.*"]}"#).await;
    for subject in ["p.a", "p.b", "p.c", "p.d", "p.e", "p.a"] {
        publish(&js, subject, "x").await;
    }
    let all = api(&client, "STREAM.INFO.P", r#"{"subjects_filter":"p.*"}"#).await;
    assert_eq!(all["state"]["subjects"], serde_json::json!({"p.a":2,"p.b":1,"p.c":1,"p.d":1,"p.e":1}), "{all}");
    assert_eq!(
        (all["total"].as_u64(), all["offset"].as_u64(), all["limit"].as_u64()),
        (Some(5), Some(0), Some(100_000))
    );
    let rest = api(&client, "STREAM.INFO.P", r#"{"subjects_filter":"p.*","offset":3}"#).await;
    assert_eq!(rest["state"]["subjects"], serde_json::json!({"p.d":1,"p.e":1}), "{rest}");
    assert_eq!((rest["total"].as_u64(), rest["offset"].as_u64()), (Some(5), Some(3)));
    let past = api(&client, "STREAM.INFO.P", r#"{"subjects_filter":"p.*","offset":5}"#).await;
    assert!(past["state"].get("subjects").is_none(), "{past}");
}

/// Tightening `consumer_limits` below what an existing consumer uses is refused with
/// nats-server's error; a limit that every consumer meets is accepted.
#[tokio::test]
async fn tightening_consumer_limits_is_refused_while_a_consumer_exceeds_them() {
    let server = server();
    let (client, _js) = connect(&server).await;
    api(&client, "STREAM.CREATE.L", r#"{"name":"L","subjects":["l"]}"#).await;
    let config = r#"{"stream_name":"L","config":{"durable_name":"name","ack_policy":"explicit"}}"#;
    let consumer = api(&client, "CONSUMER.CREATE.L.name", config).await;
    assert_eq!(consumer["config"]["max_ack_pending"], 1000, "{consumer}");
    let tight =
        r#"{"name":"L","subjects":["l"],"consumer_limits":{"inactive_threshold":2000000000,"max_ack_pending":10}}"#;
    let refused = api(&client, "STREAM.UPDATE.L", tight).await;
    assert_error(&refused, 500, 10069, "change to limits violates consumers: name");
    let loose = r#"{"name":"L","subjects":["l"],"consumer_limits":{"max_ack_pending":1000}}"#;
    let accepted = api(&client, "STREAM.UPDATE.L", loose).await;
    assert_eq!(accepted["config"]["consumer_limits"]["max_ack_pending"], 1000, "{accepted}");
}

/// Sealing turns roll-ups and the age limit off (nothing may leave a sealed stream), so a
/// stream that allowed roll-ups, like an object store's, can be sealed.
#[tokio::test]
async fn sealing_a_stream_that_allows_rollups_turns_them_off() {
    let server = server();
    let (client, _js) = connect(&server).await;
    let create = r#"{"name":"OBJ","subjects":["obj.>"],"allow_rollup_hdrs":true,"max_age":3600000000000}"#;
    api(&client, "STREAM.CREATE.OBJ", create).await;
    let seal = r#"{"name":"OBJ","subjects":["obj.>"],"allow_rollup_hdrs":true,"max_age":3600000000000,"sealed":true}"#;
    let sealed = api(&client, "STREAM.UPDATE.OBJ", seal).await;
    let config = &sealed["config"];
    assert_eq!(config["sealed"], true, "{sealed}");
    assert_eq!((config["deny_delete"].as_bool(), config["deny_purge"].as_bool()), (Some(true), Some(true)));
    assert_eq!((config["allow_rollup_hdrs"].as_bool(), config["max_age"].as_i64()), (Some(false), Some(0)));
    assert_eq!(config["discard"], "new");
}

/// `CONSUMER.PAUSE` answers like nats-server 2.15.1: paused with the time left, a resume
/// with Go's zero time, and consumer info shows the pause while it lasts.
#[tokio::test]
async fn consumer_pause_and_resume_over_the_api() {
    let server = server();
    let (client, _js) = connect(&server).await;
    api(&client, "STREAM.CREATE.PS", r#"{"name":"PS","subjects":["ps"]}"#).await;
    api(&client, "CONSUMER.CREATE.PS.C", r#"{"stream_name":"PS","config":{"durable_name":"C"}}"#).await;
    let paused = api(&client, "CONSUMER.PAUSE.PS.C", r#"{"pause_until":"2999-01-01T00:00:00Z"}"#).await;
    assert_eq!(paused["type"], "io.nats.jetstream.api.v1.consumer_pause_response");
    assert_eq!(
        (paused["paused"].as_bool(), paused["pause_until"].as_str()),
        (Some(true), Some("2999-01-01T00:00:00Z"))
    );
    assert!(paused["pause_remaining"].as_i64().is_some_and(|nanos| nanos > 0), "{paused}");
    let info = api(&client, "CONSUMER.INFO.PS.C", "").await;
    assert_eq!(
        (info["paused"].as_bool(), info["config"]["pause_until"].as_str()),
        (Some(true), Some("2999-01-01T00:00:00Z"))
    );
    let resumed = api(&client, "CONSUMER.PAUSE.PS.C", "").await;
    let expected = serde_json::json!({
        "type": "io.nats.jetstream.api.v1.consumer_pause_response",
        "paused": false,
        "pause_until": "0001-01-01T00:00:00Z",
    });
    assert_eq!(resumed, expected);
    assert!(api(&client, "CONSUMER.INFO.PS.C", "").await.get("paused").is_none());
    let missing = api(&client, "CONSUMER.PAUSE.PS.NOPE", "").await;
    assert_error(&missing, 404, 10014, "consumer not found");
    assert_eq!(missing["pause_until"], "0001-01-01T00:00:00Z");
}
