//! Whole client sessions, recorded against nats-server 2.15 and against jetcore, compared
//! reply by reply (issue 26's target: every `$JS.API` request of a recorded session of each
//! official client answers with the same fields and values as nats-server).
//!
//! The same session runs twice through a recording proxy (`common::session_recorder`):
//! once with nats-server behind it, once with jetcore (default shards). Each request made
//! with a reply subject (API requests, JetStream publishes, acks that want an answer) is
//! paired with its replies, and the two runs are compared in order: the request subjects,
//! each reply's status and headers, and JSON replies field by field. Push deliveries to
//! inboxes are compared the same way. What differs by nature is left out: times, server
//! ids, inbox and NUID tokens, names the server generates, ack subjects' timestamps.
//!
//! Sessions: async-nats 0.51 (below, in process), nats-py (`tests/sessions/nats_py.py`,
//! run with the Python of the venv that holds nats-server) and nats.js 3.4
//! (`tests/sessions/nats_js.mjs`, installed by `tools/test` with `npm ci`).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, kv, object_store, stream};
use common::hub::JetStreamServer;
use common::session_recorder::{status_code, Exchange, Log, Message, Recorder};
use common::TestServer;
use futures::StreamExt;
use serde_json::Value;

/// Fields that differ between any two runs of the same server.
const VOLATILE_FIELDS: &[&str] = &[
    "created",
    "ts",
    "time",
    "server_id",
    "server_name",
    "cluster",
    "first_ts",
    "last_ts",
    "last_active",
    "delivered_ts",
    "ack_floor_ts",
    "leader",
    "mtime",
    "nuid",
];

/// Metadata whose values are the server's own version and API level (jetcore reports what it
/// has built: `src/jetstream/api_level.rs`); their presence is still compared.
const SERVER_METADATA: &[&str] = &["_nats.ver", "_nats.level"];

/// A watcher's consumer (one the server named) is asked for its info while the server
/// feeds it, so how far it got is timing; its config and identity are still compared.
const WATCHER_PROGRESS: &[&str] =
    &["delivered", "ack_floor", "num_pending", "num_ack_pending", "num_redelivered", "num_waiting", "push_bound"];

/// Headers whose values are times.
const VOLATILE_HEADERS: &[&str] = &["Nats-Time-Stamp"];

#[test]
fn async_nats_session_answers_as_nats_server_does() {
    let differences = compare_session(|url| {
        tokio::runtime::Runtime::new().unwrap().block_on(async_nats_session(url));
    });
    assert!(differences.is_empty(), "async-nats session, nats-server vs jetcore:\n{}", differences.join("\n"));
}

#[test]
fn nats_py_session_answers_as_nats_server_does() {
    let differences = compare_session(|url| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sessions/nats_py.py");
        let status = std::process::Command::new(python()).arg(script).arg(url).status().expect("run python");
        assert!(status.success(), "the nats-py session failed against {url}");
    });
    assert!(differences.is_empty(), "nats-py session, nats-server vs jetcore:\n{}", differences.join("\n"));
}

#[test]
fn nats_js_session_answers_as_nats_server_does() {
    if std::env::var_os("JETCORE_SKIP_NATS_JS").is_some() {
        eprintln!("skipped: tools/test found no npm to install nats.js with");
        return;
    }
    let sessions = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sessions");
    let installed = std::path::Path::new(sessions).join("node_modules/@nats-io/jetstream").exists();
    assert!(installed, "nats.js is not installed: run `npm ci --prefix tests/sessions` (tools/test does)");
    let differences = compare_session(|url| {
        let script = format!("{sessions}/nats_js.mjs");
        let status = std::process::Command::new("node").arg(script).arg(url).status().expect("run node");
        assert!(status.success(), "the nats.js session failed against {url}");
    });
    assert!(differences.is_empty(), "nats.js session, nats-server vs jetcore:\n{}", differences.join("\n"));
}

/// The Python beside the nats-server the tests use: that venv holds nats-py too
/// (`tools/test` installs both into `.venv`).
fn python() -> PathBuf {
    let server = common::hub::binary();
    let beside = server.parent().map(|dir| dir.join("python")).filter(|path| path.exists());
    beside.unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python")))
}

/// Runs `session` twice against nats-server, then against jetcore, each behind a
/// recorder; returns the differences between nats-server and jetcore, one line each, less
/// those where nats-server's two runs differ from each other (timing: a consumer's info
/// taken while a watcher is being fed, a time a client wrote into a payload).
fn compare_session(session: impl Fn(&str)) -> Vec<String> {
    let reference = record_against_nats(&session);
    let noise = compare(&reference, &record_against_nats(&session));
    let unstable = noise.iter().find(|d| d.starts_with("request count") || d.contains("requests diverge"));
    assert!(unstable.is_none(), "the session is not the same twice against nats-server: {unstable:?}");
    let noise: Vec<String> = noise.iter().map(|d| place(d)).collect();
    let jetcore = TestServer::start(&["-js"]);
    let ours = record_through(jetcore.port, &session);
    if std::env::var_os("SESSION_DUMP").is_some() {
        eprintln!("nats-server against itself:\n{}", noise.join("\n"));
    }
    let differences = compare(&reference, &ours);
    differences.into_iter().filter(|d| !noise.contains(&place(d))).collect()
}

fn record_against_nats(session: &impl Fn(&str)) -> Log {
    let nats = JetStreamServer::start();
    record_through(nats.port, session)
}

/// Runs `session` through a recorder in front of the server on `port`; what it recorded.
fn record_through(port: u16, session: &impl Fn(&str)) -> Log {
    let recorder = Recorder::start(port);
    session(&recorder.url());
    settle(&recorder)
}

/// Where a difference is (its text before the first `: `).
fn place(difference: &str) -> String {
    difference.split(": ").next().unwrap_or_default().to_string()
}

/// The log once the last replies have crossed the proxy.
fn settle(recorder: &Recorder) -> Log {
    std::thread::sleep(Duration::from_millis(300));
    recorder.take()
}

fn compare(reference: &Log, ours: &Log) -> Vec<String> {
    if std::env::var_os("SESSION_DUMP").is_some() {
        for (index, exchange) in reference.exchanges.iter().enumerate() {
            eprintln!(
                "#{index} {} reply-to {:?} ({} replies)",
                exchange.request.subject,
                exchange.request.reply,
                exchange.replies.len()
            );
        }
        for message in &reference.pushed {
            eprintln!("pushed {} reply {:?} status {:?}", message.subject, message.reply, status_code(message));
        }
    }
    let (names_a, names_b) = (Names::learn(reference), Names::learn(ours));
    let mut out = Vec::new();
    if reference.exchanges.len() != ours.exchanges.len() {
        out.push(format!(
            "request count: nats-server {} / jetcore {}",
            reference.exchanges.len(),
            ours.exchanges.len()
        ));
    }
    for (index, (a, b)) in reference.exchanges.iter().zip(&ours.exchanges).enumerate() {
        let subject = names_a.subject(&a.request.subject);
        if subject != names_b.subject(&b.request.subject) {
            out.push(format!("#{index}: requests diverge: nats-server {subject} / jetcore {}", b.request.subject));
            break;
        }
        compare_exchange(&format!("#{index} {subject}"), a, b, &names_a, &names_b, &mut out);
    }
    if reference.pushed.len() != ours.pushed.len() {
        out.push(format!("push deliveries: nats-server {} / jetcore {}", reference.pushed.len(), ours.pushed.len()));
    }
    for (index, (a, b)) in reference.pushed.iter().zip(&ours.pushed).enumerate() {
        compare_message(&format!("push #{index}"), a, b, &names_a, &names_b, &mut out);
    }
    out
}

fn compare_exchange(at: &str, a: &Exchange, b: &Exchange, na: &Names, nb: &Names, out: &mut Vec<String>) {
    if a.replies.len() != b.replies.len() {
        out.push(format!("{at}: replies nats-server {} / jetcore {}", a.replies.len(), b.replies.len()));
    }
    let watcher_info = at.contains("$JS.API.CONSUMER.INFO.") && at.contains("<generated ");
    for (index, (ra, rb)) in a.replies.iter().zip(&b.replies).enumerate() {
        let (ra, rb) =
            if watcher_info { (without_progress(ra), without_progress(rb)) } else { (ra.clone(), rb.clone()) };
        compare_message(&format!("{at} reply {index}"), &ra, &rb, na, nb, out);
    }
}

fn without_progress(reply: &Message) -> Message {
    let mut reply = reply.clone();
    if let Ok(Value::Object(mut info)) = serde_json::from_slice::<Value>(&reply.payload) {
        info.retain(|key, _| !WATCHER_PROGRESS.contains(&key.as_str()));
        reply.payload = serde_json::to_vec(&info).unwrap();
    }
    reply
}

fn compare_message(at: &str, a: &Message, b: &Message, na: &Names, nb: &Names, out: &mut Vec<String>) {
    let (reply_a, reply_b) = (a.reply.as_deref().map(|r| na.subject(r)), b.reply.as_deref().map(|r| nb.subject(r)));
    if reply_a != reply_b {
        out.push(format!("{at}: reply subject nats-server {reply_a:?} / jetcore {reply_b:?}"));
    }
    if status_code(a) != status_code(b) {
        out.push(format!("{at}: status nats-server {:?} / jetcore {:?}", a.headers, b.headers));
    }
    let (ha, hb) = (headers(a, na), headers(b, nb));
    if ha != hb {
        out.push(format!("{at}: headers nats-server {ha:?} / jetcore {hb:?}"));
    }
    match (serde_json::from_slice::<Value>(&a.payload), serde_json::from_slice::<Value>(&b.payload)) {
        (Ok(ja), Ok(jb)) => diff_json(at, &na.json(ja), &nb.json(jb), out),
        _ if a.payload != b.payload => out.push(format!(
            "{at}: payload nats-server {:?} / jetcore {:?}",
            String::from_utf8_lossy(&a.payload[..a.payload.len().min(80)]),
            String::from_utf8_lossy(&b.payload[..b.payload.len().min(80)])
        )),
        _ => {}
    }
}

/// Header name → values, times left out, random tokens named.
fn headers(message: &Message, names: &Names) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let Some(block) = message.headers.as_deref() else { return map };
    for line in block.lines().skip(1) {
        let Some((name, value)) = line.split_once(':') else { continue };
        if VOLATILE_HEADERS.iter().any(|volatile| volatile.eq_ignore_ascii_case(name)) {
            continue;
        }
        map.entry(name.to_string()).or_default().push(names.text(value.trim()));
    }
    map
}

fn diff_json(at: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                match (a.get(key), b.get(key)) {
                    (Some(x), None) => out.push(format!("{at}.{key}: only nats-server has it ({})", short(x))),
                    (None, Some(y)) => out.push(format!("{at}.{key}: only jetcore has it ({})", short(y))),
                    (Some(x), Some(y)) => diff_json(&format!("{at}.{key}"), x, y, out),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (index, (x, y)) in x.iter().zip(y).enumerate() {
                diff_json(&format!("{at}[{index}]"), x, y, out);
            }
        }
        _ if a != b => out.push(format!("{at}: nats-server {} / jetcore {}", short(a), short(b))),
        _ => {}
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    text.chars().take(120).collect()
}

/// What is random in one run and how to name it so that two runs compare: inbox tokens,
/// NUIDs, consumer names the server made up, ack subjects' timestamps.
struct Names {
    generated: HashMap<String, String>,
}

impl Names {
    /// Consumer names the server generated (a create request without a name).
    fn learn(log: &Log) -> Names {
        let mut generated = HashMap::new();
        for exchange in &log.exchanges {
            let tokens: Vec<&str> = exchange.request.subject.split('.').collect();
            let unnamed = tokens.len() == 5 && tokens[..4] == ["$JS", "API", "CONSUMER", "CREATE"];
            let reply = exchange.replies.first().and_then(|r| serde_json::from_slice::<Value>(&r.payload).ok());
            if let (true, Some(name)) = (unnamed, reply.as_ref().and_then(|r| r["name"].as_str())) {
                let label = format!("<generated {}>", generated.len());
                generated.insert(name.to_string(), label);
            }
        }
        Names { generated }
    }

    fn subject(&self, subject: &str) -> String {
        let mut tokens: Vec<String> = subject.split('.').map(|token| self.token(token)).collect();
        if subject.starts_with("_INBOX.") {
            tokens.truncate(1);
            tokens.push("<inbox>".into());
        }
        // $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>
        if tokens.len() >= 9 && tokens[0] == "$JS" && tokens[1] == "ACK" {
            let time = tokens.len() - 2;
            tokens[time] = "<time>".into();
        }
        tokens.join(".")
    }

    /// A subject token or a name: server-generated names labelled, and any run of 22
    /// alphanumerics (a NUID, as in nats.js's `oc_<nuid>_1` consumer names) replaced.
    fn token(&self, token: &str) -> String {
        if let Some(label) = self.generated.get(token) {
            return label.clone();
        }
        let mut out = String::new();
        let mut run = String::new();
        for c in token.chars().chain(std::iter::once(' ')) {
            if c.is_ascii_alphanumeric() {
                run.push(c);
                continue;
            }
            out.push_str(if run.len() == 22 { "<nuid>" } else { &run });
            run.clear();
            out.push(c);
        }
        out.pop();
        out
    }

    /// A string value: subjects and names in it normalized.
    fn text(&self, text: &str) -> String {
        if text.contains('.') && !text.contains(' ') {
            self.subject(text)
        } else {
            self.token(text)
        }
    }

    /// A JSON reply with its volatile fields removed and its strings normalized.
    fn json(&self, value: Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .filter(|(key, _)| !VOLATILE_FIELDS.contains(&key.as_str()))
                    .map(|(key, value)| match (key.as_str(), value) {
                        (name, _) if SERVER_METADATA.contains(&name) => (key, Value::from("<server's>")),
                        ("api", Value::Object(mut api)) if api.contains_key("level") => {
                            api.insert("level".into(), Value::from("<server's>"));
                            (key, self.json(Value::Object(api)))
                        }
                        ("data", Value::String(text)) => (key, self.embedded(text)),
                        (_, value) => (key, self.json(value)),
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.into_iter().map(|item| self.json(item)).collect()),
            Value::String(text) => Value::String(self.text(&text)),
            other => other,
        }
    }

    /// A message's base64 `data`: compared as JSON when it holds JSON (object store
    /// metadata carries a NUID), else as it is.
    fn embedded(&self, text: String) -> Value {
        if !text.bytes().all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b)) {
            return Value::String(text);
        }
        match serde_json::from_slice::<Value>(&common::jetstream::decode_base64(&text)) {
            Ok(json @ Value::Object(_)) => self.json(json),
            _ => Value::String(text),
        }
    }
}

/// An async-nats session as applications run one, in the same steps as the nats-py one.
/// Nothing here checks a reply: the comparison does. A step that fails panics.
async fn async_nats_session(url: &str) {
    let client = async_nats::connect(url).await.unwrap();
    let js = jetstream::new(client.clone());

    js.query_account().await.unwrap();
    let config = stream::Config {
        name: "ORDERS".into(),
        subjects: vec!["orders.>".into()],
        max_messages_per_subject: 10,
        ..Default::default()
    };
    let mut orders = js.create_stream(config.clone()).await.unwrap();
    orders.info().await.unwrap();
    for i in 0..6 {
        js.publish(format!("orders.{}", i % 3), format!("order {i}").into()).await.unwrap().await.unwrap();
    }
    for _ in 0..2 {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", "m-1");
        js.publish_with_headers("orders.1", headers, "once".into()).await.unwrap().await.unwrap();
    }
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Expected-Last-Sequence", "1");
    let _ = js.publish_with_headers("orders.2", headers, "wrong".into()).await.unwrap().await;
    js.update_stream(stream::Config { description: Some("orders of the day".into()), ..config }).await.unwrap();
    orders.get_raw_message(2).await.unwrap();
    orders.get_last_raw_message_by_subject("orders.1").await.unwrap();
    orders.delete_message(3).await.unwrap();
    orders.purge().filter("orders.0").await.unwrap();

    // A durable pull consumer: fetch, double acks, naks, info.
    let worker = orders
        .create_consumer(consumer::pull::Config {
            durable_name: Some("WORKER".into()),
            ack_policy: consumer::AckPolicy::Explicit,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut batch = worker.fetch().max_messages(3).messages().await.unwrap();
    while let Some(message) = batch.next().await {
        message.unwrap().double_ack().await.unwrap();
    }
    let mut batch = worker.fetch().max_messages(2).messages().await.unwrap();
    while let Some(message) = batch.next().await {
        message.unwrap().double_ack_with(jetstream::AckKind::Nak(None)).await.unwrap();
    }
    orders.consumer_info("WORKER").await.unwrap();

    // An ordered push consumer reads the stream from the start.
    let ordered = orders
        .create_consumer(consumer::push::OrderedConfig {
            deliver_subject: client.new_inbox(),
            filter_subject: "orders.1".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut messages = ordered.messages().await.unwrap();
    // All three on orders.1 (2, 5, 7), so none is left in flight when it is dropped.
    for _ in 0..3 {
        tokio::time::timeout(Duration::from_secs(5), messages.next()).await.unwrap().unwrap().unwrap();
    }
    drop(messages);
    orders.delete_consumer("WORKER").await.unwrap();

    // KV.
    let profile =
        js.create_key_value(kv::Config { bucket: "PROFILE".into(), history: 3, ..Default::default() }).await.unwrap();
    profile.put("alice", "1".into()).await.unwrap();
    profile.put("alice", "2".into()).await.unwrap();
    let revision = profile.put("bob", "1".into()).await.unwrap();
    profile.update("bob", "2".into(), revision).await.unwrap();
    let _ = profile.update("bob", "3".into(), revision).await;
    profile.get("alice").await.unwrap();
    profile.create("carol", "x".into()).await.unwrap();
    profile.delete("carol").await.unwrap();
    profile.history("alice").await.unwrap().count().await;
    profile.keys().await.unwrap().count().await;
    profile.purge("bob").await.unwrap();
    profile.status().await.unwrap();

    // Object store.
    let files =
        js.create_object_store(object_store::Config { bucket: "FILES".into(), ..Default::default() }).await.unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
    files.put("report.csv", &mut data.as_slice()).await.unwrap();
    files.info("report.csv").await.unwrap();
    let mut object = files.get("report.csv").await.unwrap();
    let mut read = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut object, &mut read).await.unwrap();
    files.list().await.unwrap().count().await;
    files.delete("report.csv").await.unwrap();
    // Deleted here, not with the others: its metadata holds the client's `mtime`, whose
    // length varies (trailing zeros trimmed), so its byte count would differ run to run.
    js.delete_stream("OBJ_FILES").await.unwrap();

    // Counters and schedules, through the API as raw requests.
    let create = |name: &str, body: Value| {
        let (client, subject) = (client.clone(), format!("$JS.API.STREAM.CREATE.{name}"));
        async move { client.request(subject, body.to_string().into()).await.unwrap() }
    };
    create("HITS", serde_json::json!({"name": "HITS", "subjects": ["hits.>"], "allow_msg_counter": true})).await;
    for increment in ["1", "41", "-2"] {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Incr", increment);
        js.publish_with_headers("hits.page", headers, "".into()).await.unwrap().await.unwrap();
    }
    let hits = js.get_stream("HITS").await.unwrap();
    hits.get_last_raw_message_by_subject("hits.page").await.unwrap();
    let schedules = serde_json::json!({"name": "LATER", "subjects": ["later.>"], "allow_msg_schedules": true});
    create("LATER", schedules).await;
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Schedule", "@every 1h");
    headers.insert("Nats-Schedule-Target", "later.ticks");
    js.publish_with_headers("later.every", headers, "tick".into()).await.unwrap().await.unwrap();

    // A snapshot; the chunks' bytes depend on the compressor and are not compared.
    let mut chunks = client.subscribe("snapshot.orders").await.unwrap();
    let request = serde_json::json!({"deliver_subject": "snapshot.orders", "chunk_size": 1024});
    client.request("$JS.API.STREAM.SNAPSHOT.ORDERS", request.to_string().into()).await.unwrap();
    while let Ok(Some(chunk)) = tokio::time::timeout(Duration::from_secs(5), chunks.next()).await {
        if chunk.payload.is_empty() {
            break;
        }
        if let Some(reply) = chunk.reply {
            client.publish(reply, "".into()).await.unwrap();
        }
    }

    js.stream_names().count().await;
    js.streams().count().await;
    for name in ["LATER", "HITS", "ORDERS", "KV_PROFILE"] {
        js.delete_stream(name).await.unwrap();
    }
    client.flush().await.unwrap();
}
