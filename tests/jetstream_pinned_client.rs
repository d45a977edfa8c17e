//! The `pinned_client` priority policy (ADR-42) over the wire, as nats-server 2.15.1
//! answers the same requests (recorded): the first grouped pull is pinned and its
//! messages carry `Nats-Pin-Id`; another id is refused with `423 Nats-Pin-Id mismatch`,
//! a request without one waits; after `priority_timeout` without a pull from the pinned
//! client the pin moves to the next waiting request; `CONSUMER.UNPIN`, the
//! `PINNED`/`UNPINNED` advisories and consumer info's `priority_groups`.

mod common;

use std::time::Duration;

use async_nats::jetstream::consumer::{pull, PriorityPolicy};
use async_nats::{Client, Message};
use common::jetstream::{api, assert_error, connect, stream_with_messages, REPLY_TIMEOUT};
use common::TestServer;
use futures::StreamExt;
use serde_json::Value;

const GO_ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// A durable `pinned_client` consumer `P` of group `A` on stream `S`.
async fn create_pinned(client: &Client, timeout_nanos: u64) {
    let config = format!(
        r#"{{"stream_name":"S","config":{{"durable_name":"P","ack_policy":"explicit","priority_policy":"pinned_client","priority_groups":["A"],"priority_timeout":{timeout_nanos}}}}}"#
    );
    let reply = api(client, "CONSUMER.CREATE.S.P", &config).await;
    assert!(reply.get("error").is_none(), "{reply}");
}

/// Sends a pull request and gathers what comes back until `quiet` passes with nothing.
async fn pull(client: &Client, body: &str, quiet: Duration) -> Vec<Message> {
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.unwrap();
    client.publish_with_reply("$JS.API.CONSUMER.MSG.NEXT.S.P", inbox, body.to_string().into()).await.unwrap();
    let mut received = Vec::new();
    while let Ok(Some(message)) = tokio::time::timeout(quiet, replies.next()).await {
        received.push(message);
    }
    received
}

fn header<'a>(message: &'a Message, name: &str) -> Option<&'a str> {
    message.headers.as_ref()?.get(name).map(|value| value.as_str())
}

fn pin_of(message: &Message) -> String {
    assert_eq!(message.status, None, "a message, not a status: {message:?}");
    header(message, "Nats-Pin-Id").expect("a pinned delivery carries Nats-Pin-Id").to_string()
}

#[track_caller]
fn assert_status(message: &Message, code: u16, description: &str, pending: Option<&str>) {
    assert_eq!(message.status.map(|status| status.as_u16()), Some(code), "{message:?}");
    assert_eq!(message.description.as_deref(), Some(description), "{message:?}");
    assert_eq!(header(message, "Nats-Pending-Messages"), pending, "{message:?}");
}

async fn next_json(subscriber: &mut async_nats::Subscriber) -> Value {
    let message = tokio::time::timeout(REPLY_TIMEOUT, subscriber.next()).await.expect("an advisory").unwrap();
    serde_json::from_slice(&message.payload).unwrap()
}

async fn priority_group(client: &Client) -> Value {
    let info = api(client, "CONSUMER.INFO.S.P", "").await;
    let groups = info["priority_groups"].as_array().unwrap_or_else(|| panic!("priority_groups in {info}"));
    assert_eq!(groups.len(), 1, "{info}");
    groups[0].clone()
}

#[tokio::test]
async fn the_first_grouped_pull_is_pinned_and_info_and_the_advisory_name_the_pin() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 3).await;
    create_pinned(&client, 5_000_000_000).await;
    assert_eq!(priority_group(&client).await, serde_json::json!({"group": "A", "pinned_ts": GO_ZERO_TIME}));
    let mut advisories = client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.PINNED.S.P").await.unwrap();
    client.flush().await.unwrap();
    let served = pull(&client, r#"{"batch":2,"expires":2000000000,"group":"A"}"#, Duration::from_millis(300)).await;
    assert_eq!(served.len(), 2, "{served:?}");
    let pin = pin_of(&served[0]);
    assert_eq!(pin.len(), 22, "a NUID-like pin id: {pin}");
    assert_eq!(pin_of(&served[1]), pin, "the whole batch carries the pin");
    let advisory = next_json(&mut advisories).await;
    assert_eq!(advisory["type"], "io.nats.jetstream.advisory.v1.consumer_group_pinned", "{advisory}");
    let expected = [("account", "$G"), ("stream", "S"), ("consumer", "P"), ("group", "A"), ("pinned_id", &pin)];
    for (key, value) in expected {
        assert_eq!(advisory[key], value, "{key} in {advisory}");
    }
    let state = priority_group(&client).await;
    assert_eq!(state["pinned_client_id"], pin.as_str(), "{state}");
    assert_ne!(state["pinned_ts"], GO_ZERO_TIME, "{state}");
    // The pinned client is served again by id.
    let again = pull(&client, &format!(r#"{{"batch":1,"group":"A","id":"{pin}"}}"#), Duration::from_millis(300)).await;
    assert_eq!(again.iter().map(pin_of).collect::<Vec<_>>(), vec![pin]);
}

#[tokio::test]
async fn another_id_is_refused_and_a_request_without_one_waits_while_the_pin_is_held() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 5).await;
    create_pinned(&client, 10_000_000_000).await;
    let first = pull(&client, r#"{"batch":1,"group":"A"}"#, Duration::from_millis(300)).await;
    let pin = pin_of(&first[0]);
    let refused = pull(&client, r#"{"batch":1,"group":"A","id":"other"}"#, Duration::from_millis(300)).await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_status(&refused[0], 423, "Nats-Pin-Id mismatch", None);
    let waiting = pull(&client, r#"{"batch":1,"expires":500000000,"group":"A"}"#, Duration::from_millis(800)).await;
    assert_eq!(waiting.len(), 1, "a timeout, no message: {waiting:?}");
    assert_status(&waiting[0], 408, "Request Timeout", Some("1"));
    let nowait =
        pull(&client, r#"{"batch":1,"no_wait":true,"group":"A","id":"other"}"#, Duration::from_millis(300)).await;
    assert_status(&nowait[0], 423, "Nats-Pin-Id mismatch", None);
    let pinned = pull(&client, &format!(r#"{{"batch":1,"group":"A","id":"{pin}"}}"#), Duration::from_millis(300)).await;
    assert_eq!(pinned.iter().map(pin_of).collect::<Vec<_>>(), vec![pin]);
}

#[tokio::test]
async fn the_pin_moves_to_a_waiting_request_after_priority_timeout() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 4).await;
    create_pinned(&client, 1_000_000_000).await;
    let mut unpinned = client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.S.P").await.unwrap();
    client.flush().await.unwrap();
    let first = pull(&client, r#"{"batch":1,"group":"A"}"#, Duration::from_millis(200)).await;
    let old_pin = pin_of(&first[0]);
    // A standby waits with no id; once the pinned client has not pulled for 1 s, it is
    // pinned with a new id and served.
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.unwrap();
    let standby = r#"{"batch":1,"expires":4000000000,"group":"A"}"#;
    client.publish_with_reply("$JS.API.CONSUMER.MSG.NEXT.S.P", inbox, standby.into()).await.unwrap();
    let served = tokio::time::timeout(REPLY_TIMEOUT, replies.next()).await.expect("the standby is served").unwrap();
    let new_pin = pin_of(&served);
    assert_ne!(new_pin, old_pin);
    let advisory = next_json(&mut unpinned).await;
    assert_eq!(advisory["type"], "io.nats.jetstream.advisory.v1.consumer_group_unpinned", "{advisory}");
    assert_eq!((&advisory["group"], &advisory["reason"]), (&"A".into(), &"timeout".into()), "{advisory}");
    assert_eq!(priority_group(&client).await["pinned_client_id"], new_pin.as_str());
    // The old pin, offered a message while another is held, is told so with its counts.
    let old = format!(r#"{{"batch":3,"expires":1000000000,"group":"A","id":"{old_pin}"}}"#);
    let stale = pull(&client, &old, Duration::from_millis(300)).await;
    assert_status(&stale[0], 423, "Nats-Pin-Id mismatch", None);
}

#[tokio::test]
async fn a_request_holding_a_lost_pin_is_told_when_a_message_comes() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 3).await;
    create_pinned(&client, 1_000_000_000).await;
    let first = pull(&client, r#"{"batch":1,"group":"A"}"#, Duration::from_millis(200)).await;
    let pin = pin_of(&first[0]);
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(priority_group(&client).await, serde_json::json!({"group": "A", "pinned_ts": GO_ZERO_TIME}));
    let stale = format!(r#"{{"batch":2,"expires":1000000000,"group":"A","id":"{pin}"}}"#);
    let told = pull(&client, &stale, Duration::from_millis(300)).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_status(&told[0], 423, "Nats-Wrong-Pin-Id", Some("2"));
    assert_eq!(header(&told[0], "Nats-Pending-Bytes"), Some("0"));
}

#[tokio::test]
async fn unpin_releases_the_pin_with_nats_server_replies_and_advisory() {
    let server = TestServer::start(&[]);
    let (client, context) = connect(&server).await;
    stream_with_messages(&client, 3).await;
    create_pinned(&client, 30_000_000_000).await;
    let plain = api(&client, "CONSUMER.CREATE.S.N", r#"{"stream_name":"S","config":{"durable_name":"N"}}"#).await;
    assert!(plain.get("error").is_none(), "{plain}");
    let first = pull(&client, r#"{"batch":1,"group":"A"}"#, Duration::from_millis(200)).await;
    let pin = pin_of(&first[0]);
    let mut unpinned = client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.S.P").await.unwrap();
    client.flush().await.unwrap();
    let invalid = "invalid JSON: consumer group not specified";
    let refusals = [
        ("CONSUMER.UNPIN.NOPE.P", "", 400, 10025, "invalid JSON: unexpected end of JSON input"),
        ("CONSUMER.UNPIN.NOPE.P", "{}", 400, 10025, invalid),
        ("CONSUMER.UNPIN.S.P", r#"{"group":""}"#, 400, 10025, invalid),
        ("CONSUMER.UNPIN.S.P", "xx", 400, 10025, "invalid JSON: invalid character 'x' looking for beginning of value"),
        (
            "CONSUMER.UNPIN.S.P",
            r#"{"group":1}"#,
            400,
            10025,
            "invalid JSON: json: cannot unmarshal number into Go struct field JSApiConsumerUnpinRequest.group of type string",
        ),
        (
            "CONSUMER.UNPIN.S.NOPE",
            r#"{"group":"a.b"}"#,
            400,
            10162,
            "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters",
        ),
        ("CONSUMER.UNPIN.NOPE.P", r#"{"group":"A"}"#, 404, 10059, "stream not found"),
        ("CONSUMER.UNPIN.S.NOPE", r#"{"group":"A"}"#, 404, 10014, "consumer not found"),
        ("CONSUMER.UNPIN.S.P", r#"{"group":"B"}"#, 400, 10160, "Provided priority group does not exist for this consumer"),
        ("CONSUMER.UNPIN.S.N", r#"{"group":"A"}"#, 400, 10160, "Provided priority group does not exist for this consumer"),
    ];
    for (subject, body, code, err_code, description) in refusals {
        let reply = api(&client, subject, body).await;
        assert_eq!(reply["type"], "io.nats.jetstream.api.v1.consumer_unpin_response", "{reply}");
        assert_error(&reply, code, err_code, description);
    }
    assert_eq!(priority_group(&client).await["pinned_client_id"], pin.as_str(), "refusals keep the pin");
    let reply = api(&client, "CONSUMER.UNPIN.S.P", r#"{"group":"A"}"#).await;
    assert_eq!(reply, serde_json::json!({"type": "io.nats.jetstream.api.v1.consumer_unpin_response"}));
    let advisory = next_json(&mut unpinned).await;
    assert_eq!((&advisory["group"], &advisory["reason"]), (&"A".into(), &"admin".into()), "{advisory}");
    assert_eq!(advisory["account"], "$G", "{advisory}");
    assert_eq!(priority_group(&client).await, serde_json::json!({"group": "A", "pinned_ts": GO_ZERO_TIME}));
    // async-nats's own call, on a group with nothing pinned: still answered, still advised.
    context.get_stream("S").await.unwrap().unpin_consumer("P", "A").await.expect("unpin");
    assert_eq!(next_json(&mut unpinned).await["reason"], "admin");
    let next = pull(&client, r#"{"batch":1,"group":"A"}"#, Duration::from_millis(200)).await;
    assert_ne!(pin_of(&next[0]), pin, "the next request gets a new pin");
}

#[tokio::test]
async fn json_pull_requests_get_nats_server_priority_group_checks() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 1).await;
    create_pinned(&client, 5_000_000_000).await;
    let checks = [
        (r#"{"batch":1}"#, "Bad Request - Priority Group missing"),
        (r#"{"batch":1,"group":"B"}"#, "Bad Request - Invalid Priority Group"),
        (r#"{"batch":1,"group":"A","min_pending":2}"#, "Bad Request - Not a Overflow Priority consumer"),
        (r#"{"batch":1,"group":"A","priority":10}"#, "Bad Request - Priority must be between 0 and 9"),
    ];
    for (body, description) in checks {
        let replies = pull(&client, body, Duration::from_millis(200)).await;
        assert_eq!(replies.len(), 1, "{body}: {replies:?}");
        assert_status(&replies[0], 400, description, None);
    }
    let plain = api(&client, "CONSUMER.CREATE.S.N", r#"{"stream_name":"S","config":{"durable_name":"N"}}"#).await;
    assert!(plain.get("error").is_none(), "{plain}");
    let inbox = client.new_inbox();
    let mut replies = client.subscribe(inbox.clone()).await.unwrap();
    let body = r#"{"batch":1,"group":"A","id":"x"}"#;
    client.publish_with_reply("$JS.API.CONSUMER.MSG.NEXT.S.N", inbox, body.into()).await.unwrap();
    let reply = tokio::time::timeout(REPLY_TIMEOUT, replies.next()).await.expect("a status").unwrap();
    assert_status(&reply, 400, "Bad Request - Not a Pinned Client Priority consumer", None);
}

#[tokio::test]
async fn the_pin_does_not_survive_a_restart() {
    let mut server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    stream_with_messages(&client, 3).await;
    create_pinned(&client, 60_000_000_000).await;
    let first = pull(&client, r#"{"batch":1,"group":"A"}"#, Duration::from_millis(200)).await;
    let pin = pin_of(&first[0]);
    drop(client);
    server.restart();
    let (client, _) = connect(&server).await;
    assert_eq!(priority_group(&client).await, serde_json::json!({"group": "A", "pinned_ts": GO_ZERO_TIME}));
    let stale = format!(r#"{{"batch":1,"expires":1000000000,"group":"A","id":"{pin}"}}"#);
    let told = pull(&client, &stale, Duration::from_millis(300)).await;
    assert_status(&told[0], 423, "Nats-Wrong-Pin-Id", Some("1"));
    let next = pull(&client, r#"{"batch":1,"group":"A"}"#, Duration::from_millis(300)).await;
    assert_ne!(pin_of(&next[0]), pin);
}

#[tokio::test]
async fn an_async_nats_consumer_follows_its_pin() {
    let server = TestServer::start(&[]);
    let (client, context) = connect(&server).await;
    stream_with_messages(&client, 0).await;
    let stream = context.get_stream("S").await.unwrap();
    let consumer = stream
        .create_consumer(pull::Config {
            durable_name: Some("P".to_string()),
            priority_policy: PriorityPolicy::PinnedClient,
            priority_groups: vec!["A".to_string()],
            priority_timeout: Duration::from_secs(1),
            ..Default::default()
        })
        .await
        .expect("pinned_client consumers are created");
    assert_eq!(consumer.cached_info().config.priority_timeout, Duration::from_secs(1));
    let mut messages = consumer.stream().group("A").expires(Duration::from_secs(2)).messages().await.unwrap();
    for index in 0..5 {
        client.publish(format!("FOO.{index}"), "x".into()).await.unwrap();
    }
    let mut pins = Vec::new();
    for _ in 0..5 {
        let message = tokio::time::timeout(REPLY_TIMEOUT, messages.next()).await.expect("a message").unwrap().unwrap();
        pins.push(header(&message, "Nats-Pin-Id").map(String::from));
        message.ack().await.unwrap();
    }
    assert!(pins[0].is_some(), "{pins:?}");
    assert!(pins.iter().all(|pin| *pin == pins[0]), "one pin for one client: {pins:?}");
}
