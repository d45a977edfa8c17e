//! The advisories a consumer raises and the API audit, side by side with nats-server
//! 2.15.1 (a real process, `common::hub`): the same requests against both servers, in
//! the same JetStream domain, give the same advisories on the same subjects with the same
//! fields: `MSG_NAKED`, the sampled ack metric (`sample_freq`), `PAUSE` (on the request,
//! at the pause's end, on resume, and for a consumer created paused) and
//! `$JS.EVENT.ADVISORY.API` for every audited request.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::hub::HubNode;
use common::TestServer;
use futures::StreamExt;
use serde_json::Value;

const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// One advisory reduced to what both servers must agree on: its subject and the fields
/// that do not name times, ids or the server.
fn normalized(subject: &str, body: &Value, pause_until: &str) -> String {
    let mut fields = BTreeMap::new();
    for (key, value) in body.as_object().expect("an object") {
        let shown = match key.as_str() {
            "id" | "timestamp" | "server" | "client" => continue,
            "ack_time" => Value::from(value.as_u64().is_some()),
            "pause_until" if value == pause_until => Value::from("<requested>"),
            "request" => Value::from("<present>"),
            // The response's type (and error code, if any) stands for the response.
            "response" => {
                let response: Value = serde_json::from_str(value.as_str().unwrap()).unwrap();
                Value::from(format!("{} {}", response["type"], response["error"]["err_code"]))
            }
            _ => value.clone(),
        };
        fields.insert(key.clone(), shown);
    }
    format!("{subject} {}", serde_json::to_string(&fields).unwrap())
}

/// Runs the scenario against the server at `url`; returns every advisory it published.
async fn scenario(url: &str) -> Vec<String> {
    let client = async_nats::connect(url).await.expect("connect");
    let mut events = client.subscribe("$JS.EVENT.>").await.expect("subscribe");
    let inbox = client.new_inbox();
    let mut pulls = client.subscribe(inbox.clone()).await.expect("subscribe");
    client.flush().await.expect("flush");
    let request = |subject: &'static str, body: String| {
        let client = client.clone();
        async move {
            let reply = client.request(format!("$JS.API.{subject}"), body.into()).await.expect("reply");
            serde_json::from_slice::<Value>(&reply.payload).expect("json")
        }
    };
    request("STREAM.CREATE.S", r#"{"name":"S","subjects":["s.>"]}"#.into()).await;
    for _ in 0..3 {
        client.request("s.a", "x".into()).await.expect("stored");
    }
    let create = r#"{"stream_name":"S","config":{"durable_name":"C","ack_policy":"explicit","sample_freq":"100%"}}"#;
    request("CONSUMER.CREATE.S.C", create.into()).await;
    request("STREAM.INFO.S", String::new()).await;
    request("STREAM.MSG.GET.S", r#"{"seq":1}"#.into()).await;

    let next = || {
        let (client, inbox) = (client.clone(), inbox.clone());
        async move {
            client.publish_with_reply("$JS.API.CONSUMER.MSG.NEXT.S.C", inbox, "1".into()).await.unwrap();
        }
    };
    next().await;
    let first = tokio::time::timeout(Duration::from_secs(5), pulls.next()).await.unwrap().unwrap();
    client.publish(first.reply.clone().unwrap(), "-NAK".into()).await.unwrap();
    client.flush().await.unwrap();
    // nats-server applies acks from a queue of their own: let the NAK land first, so
    // the next pull is its redelivery on both servers.
    tokio::time::sleep(Duration::from_millis(200)).await;
    next().await;
    let again = tokio::time::timeout(Duration::from_secs(5), pulls.next()).await.unwrap().unwrap();
    let delivery_count =
        |reply: &Option<async_nats::Subject>| reply.as_ref().unwrap().split('.').nth(4).unwrap().to_string();
    assert_eq!((delivery_count(&first.reply), delivery_count(&again.reply)), ("1".into(), "2".into()), "a redelivery");
    client.publish(again.reply.clone().unwrap(), "+ACK".into()).await.unwrap();
    client.flush().await.unwrap();

    let until = time_from_now(Duration::from_millis(700));
    request("CONSUMER.PAUSE.S.C", format!(r#"{{"pause_until":"{until}"}}"#)).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    request("CONSUMER.PAUSE.S.C", String::new()).await;
    let later = time_from_now(Duration::from_secs(60));
    let paused = format!(r#"{{"stream_name":"S","config":{{"durable_name":"D","pause_until":"{later}"}}}}"#);
    request("CONSUMER.CREATE.S.D", paused).await;

    let mut seen = Vec::new();
    while let Ok(Some(message)) = tokio::time::timeout(Duration::from_millis(500), events.next()).await {
        let body: Value = serde_json::from_slice(&message.payload).expect("advisory json");
        let requested = if body["consumer"] == "D" { later.as_str() } else { until.as_str() };
        seen.push(normalized(message.subject.as_str(), &body, requested));
    }
    seen.sort();
    seen
}

/// RFC 3339 with microseconds, UTC, `after` from now.
fn time_from_now(after: Duration) -> String {
    let at = std::time::SystemTime::now() + after;
    let nanos = at.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64;
    let micros = nanos / 1_000 * 1_000;
    jetcore::jetstream::Timestamp::from_unix_nanos(micros).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_advisories_and_api_audits_match_nats_server() {
    let reference = HubNode::start("reference", None, "");
    let expected = scenario(&reference.url()).await;

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("jetcore.conf");
    std::fs::write(&config, "jetstream { domain: hub }\n").unwrap();
    let server = TestServer::start(&["--shards", "2", "-c", config.to_str().unwrap()]);
    let actual = scenario(&server.url()).await;

    for subject in ["MSG_NAKED", "METRIC.CONSUMER.ACK", "PAUSE.S.C", "PAUSE.S.D", "ADVISORY.API"] {
        assert!(expected.iter().any(|line| line.contains(subject)), "nats-server sent no {subject}: {expected:#?}");
    }
    assert_eq!(actual, expected, "jetcore's advisories (left) differ from nats-server's (right)");
}

/// Atomic batches dropped by a gap, by size and by idleness: the advisories both servers
/// send, in the order sent.
async fn abandoned_batches(url: &str) -> Vec<String> {
    let client = async_nats::connect(url).await.expect("connect");
    let mut events = client.subscribe("$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.>").await.expect("subscribe");
    client.flush().await.expect("flush");
    let create = r#"{"name":"B","subjects":["b.>"],"allow_atomic":true}"#;
    client.request("$JS.API.STREAM.CREATE.B", create.into()).await.expect("created");
    let stage = |batch: &'static str, seq: usize| {
        let client = client.clone();
        async move {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert("Nats-Batch-Id", batch);
            headers.insert("Nats-Batch-Sequence", seq.to_string().as_str());
            let reply = client.request_with_headers("b.x", headers, "x".into()).await.expect("answered");
            String::from_utf8_lossy(&reply.payload).into_owned()
        }
    };
    stage("idle", 1).await;
    stage("gap", 1).await;
    assert!(stage("gap", 3).await.contains("10176"), "a gap is refused");
    for seq in 1..=1000 {
        stage("large", seq).await;
    }
    assert!(stage("large", 1001).await.contains("10199"), "the 1001st message is refused");
    let mut seen = Vec::new();
    let wait = Duration::from_secs(15);
    while let Ok(Some(message)) = tokio::time::timeout(wait, events.next()).await {
        let body: Value = serde_json::from_slice(&message.payload).expect("advisory json");
        seen.push(normalized(message.subject.as_str(), &body, ZERO_TIME));
        if body["batch"] == "idle" {
            break;
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_atomic_batches_are_advised_as_nats_server_does() {
    let reference = HubNode::start("reference", None, "");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("jetcore.conf");
    std::fs::write(&config, "jetstream { domain: hub }\n").unwrap();
    let server = TestServer::start(&["-c", config.to_str().unwrap()]);
    // Both at once: each waits out the 10 s idle timeout.
    let (reference_url, url) = (reference.url(), server.url());
    let (expected, actual) = tokio::join!(abandoned_batches(&reference_url), abandoned_batches(&url));
    assert_eq!(expected.len(), 3, "gap, size and idleness: {expected:#?}");
    assert_eq!(actual, expected, "jetcore's advisories (left) differ from nats-server's (right)");
}
