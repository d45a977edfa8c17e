//! Message schedules (`allow_msg_schedules`, `Nats-Schedule`, ADR-51) as nats-server
//! 2.15.1 answers them: the config and its refusals, the schedule headers refused with
//! nats-server's codes in its order, an `@at` schedule firing once on its target (and
//! purged), an `@every` schedule repeating until cancelled, and schedules that survive a
//! restart. Every expectation was recorded from nats-server 2.15.1 answering the same
//! requests (codes, texts, the fired message's headers, the `Nats-Schedule-Next` times).

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::consumer::pull;
use common::jetstream::{api, assert_error, connect, decode_base64, publish_raw};
use common::TestServer;
use futures::StreamExt;
use serde_json::Value;

async fn create(client: &async_nats::Client, name: &str, config: &str) -> Value {
    api(client, &format!("STREAM.CREATE.{name}"), config).await
}

/// The last message on `subject` (the get reply; `message` absent when there is none).
async fn last_on(client: &async_nats::Client, stream: &str, subject: &str) -> Value {
    api(client, &format!("STREAM.MSG.GET.{stream}"), &format!(r#"{{"last_by_subj":"{subject}"}}"#)).await
}

/// The header lines of a stored message, in order, as (name, value).
fn headers_of(reply: &Value) -> Vec<(String, String)> {
    let encoded = reply["message"]["hdrs"].as_str().unwrap_or_else(|| panic!("no headers: {reply}"));
    let text = String::from_utf8(decode_base64(encoded)).expect("utf-8 headers");
    let lines = text.split("\r\n").skip(1).filter(|line| !line.is_empty());
    lines
        .map(|line| {
            let (name, value) = line.split_once(':').expect("a header line");
            (name.trim().to_string(), value.trim().to_string())
        })
        .collect()
}

fn data_of(reply: &Value) -> String {
    let encoded = reply["message"]["data"].as_str().unwrap_or("");
    String::from_utf8(decode_base64(encoded)).expect("utf-8 body")
}

/// Now plus `seconds`, as RFC 3339 in UTC, whole seconds.
fn utc_in(seconds: u64) -> String {
    let unix = SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs() + seconds;
    let (days, of_day) = ((unix / 86_400) as i64, unix % 86_400);
    let (year, month, day) = jetcore::calendar::civil_from_days(days);
    let (hour, minute, second) = (of_day / 3600, of_day % 3600 / 60, of_day % 60);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

/// Waits up to `within` for a message on `subject`.
async fn wait_for(client: &async_nats::Client, stream: &str, subject: &str, within: Duration) -> Value {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let reply = last_on(client, stream, subject).await;
        if reply["message"].is_object() || tokio::time::Instant::now() > deadline {
            return reply;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn subject_count(client: &async_nats::Client, stream: &str, subject: &str) -> u64 {
    let info = api(client, &format!("STREAM.INFO.{stream}"), &format!(r#"{{"subjects_filter":"{subject}"}}"#)).await;
    info["state"]["subjects"][subject].as_u64().unwrap_or(0)
}

#[tokio::test]
async fn schedule_config_is_accepted_and_refused_as_nats_server_does() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    let config = r#"{"name":"S","subjects":["s.>"],"allow_msg_schedules":true,"deny_purge":true}"#;
    let created = create(&client, "S", config).await;
    assert_eq!(created["config"]["allow_msg_schedules"], true, "{created}");
    // Schedules purge and roll up: both switched on, as nats-server does.
    assert_eq!(created["config"]["allow_rollup_hdrs"], true, "{created}");
    assert_eq!(created["config"]["deny_purge"], false, "{created}");
    assert_eq!(created["config"]["metadata"]["_nats.req.level"], "2", "{created}");
    let refused = [
        (r#"{"name":"N","subjects":["n.>"],"allow_msg_schedules":true,"discard":"new"}"#, 500, 10052),
        (r#"{"name":"N","mirror":{"name":"S"},"allow_msg_schedules":true}"#, 400, 10186),
        (r#"{"name":"N","subjects":["n.>"],"sources":[{"name":"S"}],"allow_msg_schedules":true}"#, 400, 10187),
        (r#"{"name":"N","subjects":["n.>"],"allow_msg_schedules":true,"allow_msg_counter":true}"#, 500, 10052),
    ];
    let texts = [
        "message scheduling cannot use discard new",
        "stream mirrors can not also schedule messages",
        "stream source can not also schedule messages",
        "counter stream cannot use message schedules",
    ];
    for ((config, code, err_code), text) in refused.into_iter().zip(texts) {
        assert_error(&create(&client, "N", config).await, code, err_code, text);
    }
    let disable = r#"{"name":"S","subjects":["s.>"],"allow_msg_schedules":false}"#;
    let disabled = api(&client, "STREAM.UPDATE.S", disable).await;
    assert_error(&disabled, 500, 10052, "message schedules can not be disabled");
    // Switching schedules on later is allowed, on a stream that holds messages too.
    create(&client, "P", r#"{"name":"P","subjects":["p.>"]}"#).await;
    publish_raw(&client, "p.a", &[], "x").await;
    let enabled =
        api(&client, "STREAM.UPDATE.P", r#"{"name":"P","subjects":["p.>"],"allow_msg_schedules":true}"#).await;
    assert_eq!(enabled["config"]["allow_msg_schedules"], true, "{enabled}");
    assert_eq!(enabled["config"]["allow_rollup_hdrs"], true, "{enabled}");
}

#[tokio::test]
async fn bad_schedule_headers_get_nats_server_codes_in_its_order() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    create(&client, "D", r#"{"name":"D","subjects":["d.>"]}"#).await;
    create(&client, "E", r#"{"name":"E","subjects":["e.>"],"allow_msg_schedules":true}"#).await;
    create(&client, "T", r#"{"name":"T","subjects":["t.>"],"allow_msg_schedules":true,"allow_msg_ttl":true}"#).await;
    let at = ("Nats-Schedule", "@at 2099-01-01T00:00:00Z");
    let every = ("Nats-Schedule", "@every 1s");
    let target = ("Nats-Schedule-Target", "e.b");
    let cases: Vec<(&str, Vec<(&str, &str)>, u64, &str)> = vec![
        ("d.a", vec![at, ("Nats-Schedule-Target", "d.b")], 10188, "message schedules is disabled"),
        (
            "d.a",
            vec![("Nats-Schedule-Next", "purge"), ("Nats-Scheduler", "d.h")],
            10188,
            "message schedules is disabled",
        ),
        ("d.a", vec![("Nats-Schedule-Next", "x")], 10212, "message schedules invalid scheduler"),
        ("d.a", vec![("Nats-Scheduler", "d.h")], 10212, "message schedules invalid scheduler"),
        (
            "e.a",
            vec![("Nats-Schedule-Next", "purge"), ("Nats-Scheduler", "e.a")],
            10212,
            "message schedules invalid scheduler",
        ),
        ("e.a", vec![("Nats-Schedule", "bogus"), target], 10189, "message schedules pattern is invalid"),
        ("e.a", vec![("Nats-Schedule", "*/5 * * * *"), target], 10189, "message schedules pattern is invalid"),
        ("e.a", vec![("Nats-Schedule", "@every 500ms"), target], 10189, "message schedules pattern is invalid"),
        ("e.a", vec![("Nats-Schedule", "@at tomorrow"), target], 10189, "message schedules pattern is invalid"),
        ("e.a", vec![("Nats-Schedule", "0 0 0 * * 7"), target], 10189, "message schedules pattern is invalid"),
        ("e.a", vec![every, target, ("Nats-Schedule-Time-Zone", "UTC")], 10189, "message schedules pattern is invalid"),
        (
            "e.a",
            vec![("Nats-Schedule", "@daily"), ("Nats-Schedule-Time-Zone", "+02:00")],
            10223,
            "message schedules time zone is invalid",
        ),
        ("e.a", vec![every, ("Nats-Schedule-TTL", "x")], 10191, "message schedules invalid per-message TTL"),
        ("e.a", vec![every, target, ("Nats-Schedule-TTL", "5m")], 10166, "per-message TTL is disabled"),
        (
            "t.a",
            vec![every, ("Nats-Schedule-Target", "t.b"), ("Nats-Schedule-TTL", "500ms")],
            10191,
            "message schedules invalid per-message TTL",
        ),
        ("e.a", vec![every, ("Nats-Schedule-Rollup", "all")], 10192, "message schedules invalid rollup"),
        ("e.a", vec![at, target, ("Nats-Rollup", "all")], 10192, "message schedules invalid rollup"),
        ("e.a", vec![every], 10190, "message schedules target is invalid"),
        ("e.a", vec![every, ("Nats-Schedule-Target", "e.a")], 10190, "message schedules target is invalid"),
        ("e.a", vec![every, ("Nats-Schedule-Target", "e.*")], 10190, "message schedules target is invalid"),
        ("e.a", vec![every, ("Nats-Schedule-Target", "elsewhere")], 10190, "message schedules target is invalid"),
        ("e.a", vec![every, target, ("Nats-Schedule-Source", "e.*")], 10203, "message schedules source is invalid"),
        ("e.a", vec![every, target, ("Nats-Schedule-Source", "e.b")], 10203, "message schedules source is invalid"),
        ("e.a", vec![every, target, ("Nats-Schedule-Source", "zz")], 10203, "message schedules source is invalid"),
    ];
    for (subject, headers, err_code, text) in cases {
        let reply = publish_raw(&client, subject, &headers, "x").await;
        assert_error(&reply, 400, err_code, text);
    }
    // Accepted, as nats-server accepts them: six-field cron, names, `?`, UTC zones.
    let accepted: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("e.c1", vec![("Nats-Schedule", "0 */5 * * * *"), target]),
        ("e.c2", vec![("Nats-Schedule", "0 0 12 * jan-mar mon,wed,FRI"), target]),
        ("e.c3", vec![("Nats-Schedule", "0 0 0 ? * *"), target, ("Nats-Schedule-Time-Zone", "UTC")]),
        ("e.c4", vec![("Nats-Schedule", "@at 2099-01-01T01:00:00+01:00"), target]),
        ("e.c5", vec![("Nats-Schedule", "@hourly"), target]),
        ("t.c6", vec![every, ("Nats-Schedule-Target", "t.b"), ("Nats-Schedule-TTL", "5m")]),
        ("d.c7", vec![("Nats-Schedule-Target", "d.b")]),
    ];
    for (subject, headers) in accepted {
        let reply = publish_raw(&client, subject, &headers, "x").await;
        assert!(reply["seq"].as_u64().is_some_and(|seq| seq > 0), "{subject}: {reply}");
    }
    // A schedule is stored with `Nats-Rollup: sub`: a new one on the subject replaces it.
    publish_raw(&client, "e.c5", &[("Nats-Schedule", "@hourly"), target], "v2").await;
    assert_eq!(subject_count(&client, "E", "e.c5").await, 1);
    let stored = last_on(&client, "E", "e.c5").await;
    assert!(headers_of(&stored).contains(&("Nats-Rollup".into(), "sub".into())), "{stored}");
    assert_eq!(data_of(&stored), "v2");
}

#[tokio::test]
async fn an_at_schedule_fires_once_on_its_target_and_is_purged() {
    let server = TestServer::start(&[]);
    let (client, context) = connect(&server).await;
    let config = r#"{"name":"F","subjects":["f.>"],"allow_msg_schedules":true,"allow_msg_ttl":true}"#;
    create(&client, "F", config).await;
    let stream = context.get_stream("F").await.expect("stream");
    let consumer = stream
        .create_consumer(pull::Config { filter_subject: "f.t".into(), ..Default::default() })
        .await
        .expect("consumer");
    let when = format!("@at {}", utc_in(2));
    let headers = [
        ("Nats-Schedule", when.as_str()),
        ("Nats-Schedule-Target", "f.t"),
        ("Nats-Schedule-TTL", "5m"),
        ("X-Custom", "kept"),
        ("Nats-Msg-Id", "m1"),
    ];
    let stored = publish_raw(&client, "f.at", &headers, "delayed").await;
    assert_eq!(stored["seq"], 1, "{stored}");
    assert!(last_on(&client, "F", "f.t").await["message"].is_null(), "fired early");
    let fired = wait_for(&client, "F", "f.t", Duration::from_secs(5)).await;
    assert_eq!(data_of(&fired), "delayed", "{fired}");
    let mut headers = headers_of(&fired);
    headers.sort();
    let expected =
        [("Nats-Schedule-Next", "purge"), ("Nats-Scheduler", "f.at"), ("Nats-TTL", "5m"), ("X-Custom", "kept")];
    let expected: Vec<(String, String)> = expected.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
    assert_eq!(headers, expected, "{fired}");
    // The one-shot schedule is purged; it never fires again.
    assert_error(&last_on(&client, "F", "f.at").await, 404, 10037, "no message found");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(subject_count(&client, "F", "f.t").await, 1);
    // A consumer hears of the fired message like of any publish.
    let mut messages =
        consumer.fetch().max_messages(1).expires(Duration::from_secs(3)).messages().await.expect("fetch");
    let delivered = messages.next().await.expect("one message").expect("delivered");
    assert_eq!(&delivered.payload[..], b"delayed");
    // A schedule in the past fires at once; a schedule's source fires its last message.
    publish_raw(&client, "f.src", &[("X", "src")], "sourced").await;
    let past = [
        ("Nats-Schedule", "@at 2009-01-01T00:00:00Z"),
        ("Nats-Schedule-Target", "f.p"),
        ("Nats-Schedule-Source", "f.src"),
        ("Nats-Schedule-Rollup", "sub"),
    ];
    publish_raw(&client, "f.past", &past, "own").await;
    let fired = wait_for(&client, "F", "f.p", Duration::from_secs(3)).await;
    assert_eq!(data_of(&fired), "sourced", "{fired}");
    let expected =
        [("X", "src"), ("Nats-Scheduler", "f.past"), ("Nats-Schedule-Next", "purge"), ("Nats-Rollup", "sub")];
    let expected: Vec<(String, String)> = expected.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
    assert_eq!(headers_of(&fired), expected, "{fired}");
}

#[tokio::test]
async fn an_every_schedule_repeats_until_cancelled() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    create(&client, "R", r#"{"name":"R","subjects":["r.>"],"allow_msg_schedules":true}"#).await;
    let headers = [("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "r.e")];
    publish_raw(&client, "r.every", &headers, "tick").await;
    tokio::time::sleep(Duration::from_millis(3600)).await;
    let fired = subject_count(&client, "R", "r.e").await;
    assert!((2..=4).contains(&fired), "fired {fired} times in 3.6s");
    let last = last_on(&client, "R", "r.e").await;
    let headers = headers_of(&last);
    assert_eq!(headers[0], ("Nats-Scheduler".to_string(), "r.every".to_string()), "{last}");
    assert_eq!(headers[1].0, "Nats-Schedule-Next", "{last}");
    assert!(headers[1].1.ends_with('Z') && headers[1].1.len() == 20, "next as RFC 3339: {last}");
    // The repeating schedule stays; a client's cancel purges it and the firing stops.
    assert!(last_on(&client, "R", "r.every").await["message"].is_object());
    let cancel =
        publish_raw(&client, "r.cancel", &[("Nats-Schedule-Next", "purge"), ("Nats-Scheduler", "r.every")], "").await;
    assert!(cancel["seq"].as_u64().is_some(), "{cancel}");
    assert_error(&last_on(&client, "R", "r.every").await, 404, 10037, "no message found");
    let stopped = subject_count(&client, "R", "r.e").await;
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(subject_count(&client, "R", "r.e").await, stopped, "fired after its cancel");
}

#[tokio::test]
async fn schedules_fire_after_a_restart_that_slept_through_them() {
    let mut server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    create(&client, "R", r#"{"name":"R","subjects":["r.>"],"allow_msg_schedules":true}"#).await;
    let soon = format!("@at {}", utc_in(2));
    let later = format!("@at {}", utc_in(6));
    publish_raw(&client, "r.soon", &[("Nats-Schedule", soon.as_str()), ("Nats-Schedule-Target", "r.s")], "s").await;
    publish_raw(&client, "r.later", &[("Nats-Schedule", later.as_str()), ("Nats-Schedule-Target", "r.l")], "l").await;
    let far = [("Nats-Schedule", "@at 2099-01-01T00:00:00Z"), ("Nats-Schedule-Target", "r.f")];
    publish_raw(&client, "r.far", &far, "f").await;
    publish_raw(&client, "r.every", &[("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "r.e")], "e").await;
    drop(client);
    server.kill();
    tokio::time::sleep(Duration::from_secs(3)).await;
    server.restart();
    let (client, _) = connect(&server).await;
    // Due while the server was down: fires once, at once.
    let fired = wait_for(&client, "R", "r.s", Duration::from_secs(2)).await;
    assert_eq!(data_of(&fired), "s", "{fired}");
    assert!(last_on(&client, "R", "r.l").await["message"].is_null(), "fired early");
    // Still pending: fires when due.
    let fired = wait_for(&client, "R", "r.l", Duration::from_secs(6)).await;
    assert_eq!(data_of(&fired), "l", "{fired}");
    assert_error(&last_on(&client, "R", "r.later").await, 404, 10037, "no message found");
    assert!(last_on(&client, "R", "r.f").await["message"].is_null());
    assert!(last_on(&client, "R", "r.far").await["message"].is_object());
    // The repeating schedule resumed.
    let before = subject_count(&client, "R", "r.e").await;
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert!(subject_count(&client, "R", "r.e").await > before, "the @every schedule stopped");
}

#[tokio::test]
async fn a_fired_message_is_republished_like_a_publish() {
    let server = TestServer::start(&[]);
    let (client, _) = connect(&server).await;
    let mut copies = client.subscribe("rep.>").await.expect("subscribe");
    client.flush().await.expect("flush");
    let config =
        r#"{"name":"P","subjects":["p.>"],"allow_msg_schedules":true,"republish":{"src":"p.t","dest":"rep.t"}}"#;
    create(&client, "P", config).await;
    let past = [("Nats-Schedule", "@at 2009-01-01T00:00:00Z"), ("Nats-Schedule-Target", "p.t")];
    assert_eq!(publish_raw(&client, "p.s", &past, "body").await["seq"], 1);
    let copy = tokio::time::timeout(Duration::from_secs(3), copies.next()).await.expect("a copy").expect("open");
    assert_eq!(copy.subject.as_str(), "rep.t");
    assert_eq!(&copy.payload[..], b"body");
    let headers = copy.headers.expect("headers");
    let expected =
        [("Nats-Scheduler", "p.s"), ("Nats-Schedule-Next", "purge"), ("Nats-Stream", "P"), ("Nats-Subject", "p.t")];
    for (name, value) in expected.into_iter().chain([("Nats-Sequence", "2"), ("Nats-Last-Sequence", "0")]) {
        assert_eq!(headers.get(name).map(|value| value.as_str()), Some(value), "{name} in {headers:?}");
    }
}
