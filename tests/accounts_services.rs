//! Service exports and imports between accounts (async-nats), each scenario run against
//! jetcore (two shards) and nats-server with the same configuration, asserting the same
//! outcome: request/reply across accounts with and without a `to` mapping and with the
//! `Nats-Request-Info` header, a private export refused to others, nothing else crossing,
//! responders on other shards and connections, `single` and `stream` response types,
//! and JetStream reached through an imported `$JS.API.>` under a prefix.
//! nats-server is `$NATS_SERVER` (see `common::hub`).

mod common;

use std::time::Duration;

use async_nats::Client;
use common::accounts::{config_file, server_with};
use common::hub::HubNode;
use common::start_refusal::start_expecting_refusal;
use futures::StreamExt;

const SERVICES: &str = "accounts {\n  \
    A { users: [{user: a, password: a}], jetstream: enabled,\n    \
        exports: [{service: \"req.>\"}, {service: \"priv.>\", accounts: [C]},\n                  \
                  {service: \"st.>\", response_type: stream}, {service: \"$JS.API.>\"}] }\n  \
    B { users: [{user: b, password: b}],\n    \
        imports: [{service: {account: A, subject: req.x}, to: local.x},\n                  \
                  {service: {account: A, subject: req.y}},\n                  \
                  {service: {account: A, subject: \"st.>\"}},\n                  \
                  {service: {account: A, subject: \"$JS.API.>\"}, to: \"JS.A.API.>\"}] }\n  \
    C { users: [{user: c, password: c}], imports: [{service: {account: A, subject: priv.x}}] }\n}\n";

/// One server under test; what keeps it running rides along.
struct Target {
    name: &'static str,
    url: String,
    _running: Box<dyn std::any::Any>,
}

/// jetcore (two shards) and nats-server, both started with `config`.
fn targets(config: &str) -> Vec<Target> {
    let (jetcore, file) = server_with(config);
    let reference = HubNode::start("reference", None, config);
    vec![
        Target { name: "jetcore", url: jetcore.url(), _running: Box::new((jetcore, file)) },
        Target { name: "nats-server", url: reference.url(), _running: Box::new(reference) },
    ]
}

/// `user` (password `user`) on `url`.
async fn login(url: &str, user: &str) -> Client {
    async_nats::ConnectOptions::with_user_and_password(user.into(), user.into())
        .request_timeout(Some(Duration::from_secs(2)))
        .connect(url)
        .await
        .unwrap_or_else(|error| panic!("{user} connects to {url}: {error}"))
}

/// Answers every request on `pattern` in `client`'s account with
/// `"<subject seen> <requesting account> <reply is a mapping>"`, `answers` times each.
async fn responder(client: &Client, pattern: &str, answers: usize) {
    let mut requests = client.subscribe(pattern.to_string()).await.unwrap();
    client.flush().await.unwrap();
    let client = client.clone();
    tokio::spawn(async move {
        while let Some(request) = requests.next().await {
            let info = request.headers.as_ref().and_then(|headers| headers.get("Nats-Request-Info"));
            let account = info
                .and_then(|value| serde_json::from_str::<serde_json::Value>(value.as_str()).ok())
                .and_then(|value| value["acc"].as_str().map(str::to_string))
                .unwrap_or_else(|| "-".into());
            let Some(reply) = request.reply.clone() else { continue };
            let mapped = reply.starts_with("_R_.");
            for answer in 0..answers {
                let body = format!("{} {account} {mapped} {answer}", request.subject);
                client.publish(reply.clone(), body.into()).await.unwrap();
            }
            client.flush().await.unwrap();
        }
    });
}

/// Waits until a request from `requester` on `subject` is answered: the responders'
/// subscriptions have reached the requester's side (async-nats' `flush()` makes no
/// round trip, and a server may learn a SUB after a later PUB from another connection;
/// jetcore's shards learn it over the mesh).
async fn await_answered(requester: &Client, subject: &str) {
    for _ in 0..500 {
        let ask = requester.request(subject.to_string(), "probe".into());
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_millis(500), ask).await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("requests on {subject} never got an answer");
}

/// The payloads `subscriber` receives within a short quiet period (probes left out).
async fn drain(subscriber: &mut async_nats::Subscriber) -> Vec<String> {
    let mut seen = Vec::new();
    while let Ok(Some(message)) = tokio::time::timeout(Duration::from_millis(400), subscriber.next()).await {
        if &message.payload[..] != b"probe" {
            seen.push(String::from_utf8_lossy(&message.payload).to_string());
        }
    }
    seen
}

/// A request's answer, or how it failed (`NoResponders`, `TimedOut`).
async fn request(client: &Client, subject: &str) -> String {
    match client.request(subject.to_string(), "ask".into()).await {
        Ok(message) => String::from_utf8_lossy(&message.payload).to_string(),
        Err(error) => format!("{:?}", error.kind()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_cross_into_the_exporter_and_answers_come_back() {
    let mut outcomes = Vec::new();
    for target in targets(SERVICES) {
        let (a, b) = (login(&target.url, "a").await, login(&target.url, "b").await);
        let unanswered = request(&b, "local.x").await;
        responder(&a, "req.>", 1).await;
        await_answered(&b, "local.x").await;
        let answers =
            vec![unanswered, request(&b, "local.x").await, request(&b, "req.y").await, request(&b, "req.x").await];
        outcomes.push((target.name, answers));
    }
    // Before A subscribes, the import has no responder: B hears so at once.
    let expected =
        vec!["NoResponders".to_string(), "req.x B true 0".into(), "req.y B true 0".into(), "NoResponders".into()];
    for (name, answers) in &outcomes {
        // `req.x` is imported under `local.x` only: on its own subject B has no responder.
        assert_eq!(answers, &expected, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_export_serves_only_the_accounts_it_names() {
    let config =
        "accounts {\n  A { users: [{user: a, password: a}], exports: [{service: \"priv.>\", accounts: [C]}] }\n  \
        B { users: [{user: b, password: b}], imports: [{service: {account: A, subject: priv.x}}] }\n  \
        C { users: [{user: c, password: c}] }\n}\n";
    let file = config_file(config);
    let path = file.path().to_str().unwrap();
    let message = "Error adding service import \"priv.x\": service import not authorized";
    let jetcore = start_expecting_refusal(&["-c", path], None);
    jetcore.assert_no_partial_start();
    assert!(jetcore.stderr.contains(message), "jetcore: {}", jetcore.stderr);
    let reference = std::process::Command::new(common::hub::binary()).args(["-c", path, "-t"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&reference.stderr);
    assert!(!reference.status.success() && stderr.contains(message), "nats-server: {stderr}");

    for target in targets(SERVICES) {
        let (a, b, c) = (login(&target.url, "a").await, login(&target.url, "b").await, login(&target.url, "c").await);
        responder(&a, "priv.>", 1).await;
        await_answered(&c, "priv.x").await;
        assert_eq!(request(&c, "priv.x").await, "priv.x C true 0", "{}", target.name);
        assert_eq!(request(&b, "priv.x").await, "NoResponders", "{}", target.name);
        assert_eq!(request(&c, "priv.y").await, "NoResponders", "{}: only priv.x is imported", target.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_but_imported_requests_and_their_answers_crosses() {
    for target in targets(SERVICES) {
        let (a, b) = (login(&target.url, "a").await, login(&target.url, "b").await);
        let mut a_sees = a.subscribe(">").await.unwrap();
        let mut b_sees = b.subscribe(">").await.unwrap();
        a.flush().await.unwrap();
        b.flush().await.unwrap();
        // A's `>` is visible where B publishes once an imported request reaches it.
        loop {
            b.publish("local.x", "probe".into()).await.unwrap();
            b.flush().await.unwrap();
            let probe = tokio::time::timeout(Duration::from_millis(20), a_sees.next()).await;
            if let Ok(Some(message)) = probe {
                assert_eq!(&message.payload[..], b"probe");
                break;
            }
        }
        for subject in ["local.x", "req.x", "req.y", "st.1", "_R_.abcdef.00000000", "JS.A.API.INFO"] {
            a.publish(subject, "from a".into()).await.unwrap();
        }
        for subject in ["req.z", "priv.x", "other"] {
            b.publish(subject, "from b".into()).await.unwrap();
        }
        b.publish("local.x", "imported".into()).await.unwrap();
        a.flush().await.unwrap();
        b.flush().await.unwrap();
        let mut a_got = drain(&mut a_sees).await;
        a_got.sort();
        let from_a = vec!["from a".to_string(); 6];
        assert_eq!(
            a_got,
            [from_a, vec!["imported".to_string()]].concat(),
            "{}: A sees its own and the import",
            target.name
        );
        let b_got = drain(&mut b_sees).await;
        assert_eq!(b_got, vec!["from b"; 3].into_iter().chain(["imported"]).collect::<Vec<_>>(), "{}", target.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responders_on_other_connections_and_shards_answer_every_request() {
    const CONNECTIONS: usize = 4;
    const REQUESTS: usize = 25;
    for target in targets(SERVICES) {
        let mut responders = Vec::new();
        for _ in 0..CONNECTIONS {
            let a = login(&target.url, "a").await;
            let mut requests = a.queue_subscribe("req.x", "workers".into()).await.unwrap();
            a.flush().await.unwrap();
            let client = a.clone();
            tokio::spawn(async move {
                while let Some(request) = requests.next().await {
                    let reply = request.reply.clone().unwrap();
                    client.publish(reply, request.payload.clone()).await.unwrap();
                    client.flush().await.unwrap();
                }
            });
            responders.push(a);
        }
        let mut tasks = Vec::new();
        for connection in 0..CONNECTIONS {
            let b = login(&target.url, "b").await;
            await_answered(&b, "local.x").await;
            tasks.push(tokio::spawn(async move {
                let mut answered = 0;
                for index in 0..REQUESTS {
                    let body = format!("{connection}-{index}");
                    let answer = b.request("local.x", body.clone().into()).await.unwrap();
                    answered += usize::from(answer.payload == body.as_bytes());
                }
                answered
            }));
        }
        let mut answered = 0;
        for task in tasks {
            answered += task.await.unwrap();
        }
        assert_eq!(answered, CONNECTIONS * REQUESTS, "{}", target.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_response_export_passes_one_answer_and_a_stream_export_all() {
    let mut outcomes = Vec::new();
    for target in targets(SERVICES) {
        let (a, a2, b) = (login(&target.url, "a").await, login(&target.url, "a").await, login(&target.url, "b").await);
        responder(&a, "req.y", 2).await;
        responder(&a, "st.>", 3).await;
        // A second responder, on its own connection (and likely shard), answers too.
        responder(&a2, "req.y", 1).await;
        await_answered(&b, "req.y").await;
        await_answered(&b, "st.1").await;
        let mut inbox = b.subscribe("reply.b").await.unwrap();
        b.flush().await.unwrap();
        b.publish_with_reply("req.y", "reply.b", "ask".into()).await.unwrap();
        b.flush().await.unwrap();
        let single = drain(&mut inbox).await;
        b.publish_with_reply("st.1", "reply.b", "ask".into()).await.unwrap();
        b.flush().await.unwrap();
        let stream = drain(&mut inbox).await;
        outcomes.push((target.name, single.len(), stream));
    }
    for (name, single, stream) in &outcomes {
        // nats-server ends a `single` mapping when the first answer is routed, but two
        // answers from different connections can race past it (seen in CI: 2 of 3). In
        // jetcore the mapping's shard sees the answers one at a time: exactly one passes.
        if *name == "nats-server" {
            assert!((1..=2).contains(single), "{name}: one answer (two when they race) of three passes: {single}");
        } else {
            assert_eq!(*single, 1, "{name}: one answer of three passes");
        }
        assert_eq!(stream, &["st.1 B true 0", "st.1 B true 1", "st.1 B true 2"], "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_is_reached_through_an_imported_api_under_a_prefix() {
    let mut outcomes = Vec::new();
    for target in targets(SERVICES) {
        let (a, b) = (login(&target.url, "a").await, login(&target.url, "b").await);
        let from_b = async_nats::jetstream::with_prefix(b, "JS.A.API");
        let config = async_nats::jetstream::stream::Config {
            name: "ORDERS".into(),
            subjects: vec!["orders.>".into()],
            ..Default::default()
        };
        from_b.create_stream(config).await.unwrap_or_else(|error| panic!("{}: create: {error}", target.name));
        let in_a = async_nats::jetstream::new(a);
        in_a.publish("orders.1", "first".into()).await.unwrap().await.unwrap();
        let mut stream = from_b.get_stream("ORDERS").await.unwrap();
        let messages = stream.info().await.unwrap().state.messages;
        let message = stream.get_raw_message(1).await.unwrap();
        let missing = from_b.get_stream("NOPE").await.map(|_| ()).map_err(|error| error.to_string());
        let names: Vec<String> = in_a.stream_names().map(Result::unwrap).collect().await;
        outcomes.push((target.name, messages, message.subject.to_string(), missing.is_err(), names));
    }
    for (name, messages, subject, missing, names) in &outcomes {
        assert_eq!((*messages, subject.as_str(), *missing), (1, "orders.1", true), "{name}");
        assert_eq!(names, &["ORDERS"], "{name}: the stream is A's");
    }
}

/// Answers every request on `pattern` with its `Nats-Request-Info` header (`-` if none).
async fn info_responder(client: &Client, pattern: &str) {
    let mut requests = client.subscribe(pattern.to_string()).await.unwrap();
    client.flush().await.unwrap();
    let client = client.clone();
    tokio::spawn(async move {
        while let Some(request) = requests.next().await {
            let info = request.headers.as_ref().and_then(|headers| headers.get("Nats-Request-Info"));
            let info = info.map_or("-".to_string(), |value| value.as_str().to_string());
            if let Some(reply) = request.reply.clone() {
                client.publish(reply, info.into()).await.unwrap();
                client.flush().await.unwrap();
            }
        }
    });
}

/// A `Nats-Request-Info` value's fields in order, with `rtt` shown as `rtt>0` when it is
/// a positive number of nanoseconds (its value differs run to run).
fn info_fields(info: &str) -> Vec<String> {
    let value: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(info).unwrap_or_else(|error| panic!("{info:?}: {error}"));
    // In the order the text has them (serde_json's map sorts its keys).
    let mut keys: Vec<&String> = value.keys().collect();
    keys.sort_by_key(|key| info.find(&format!("\"{key}\":")));
    keys.into_iter()
        .map(|key| match (key.as_str(), value[key].as_u64()) {
            ("rtt", Some(nanos)) if nanos > 0 => "rtt>0".to_string(),
            _ => format!("{key}={}", value[key]),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_info_names_the_requester_and_its_round_trip_as_nats_server_does() {
    let mut outcomes = Vec::new();
    for target in targets(SERVICES) {
        let (a, b) = (login(&target.url, "a").await, login(&target.url, "b").await);
        info_responder(&a, "req.>").await;
        await_answered(&b, "local.x").await;
        let info = request(&b, "local.x").await;
        outcomes.push((target.name, info_fields(&info)));
    }
    for (name, fields) in &outcomes {
        // nats-server 2.15.1 sent `{"acc":"B","rtt":296893}`: the account and the
        // requester's round trip, estimated at its CONNECT, in nanoseconds.
        assert_eq!(fields, &["acc=\"B\"", "rtt>0"], "{name}");
    }
}

/// A imports `svc.>` from B, which imports it from C, which imports it from D.
const CHAIN: &str = "accounts {\n  \
    A { users: [{user: a, password: a}], imports: [{service: {account: B, subject: \"svc.>\"}}] }\n  \
    B { users: [{user: b, password: b}], exports: [{service: \"svc.>\"}],\n        \
        imports: [{service: {account: C, subject: \"svc.>\"}}] }\n  \
    C { users: [{user: c, password: c}], exports: [{service: \"svc.>\"}],\n        \
        imports: [{service: {account: D, subject: \"svc.>\"}}] }\n  \
    D { users: [{user: d, password: d}], exports: [{service: \"svc.>\"}, {service: \"back.>\"}] }\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chained_imports_carry_a_request_to_the_last_exporter_and_its_answer_back() {
    let mut outcomes = Vec::new();
    for target in targets(CHAIN) {
        let (a, b, d) = (login(&target.url, "a").await, login(&target.url, "b").await, login(&target.url, "d").await);
        info_responder(&d, "svc.>").await;
        await_answered(&a, "svc.x").await;
        // B, on the way, sees the request too (with its own reply mapping).
        let mut b_sees = b.subscribe("svc.>").await.unwrap();
        b.flush().await.unwrap();
        await_answered(&b, "svc.probe").await;
        let from_a = request(&a, "svc.x").await;
        let from_b = request(&b, "svc.y").await;
        let mut seen_by_b = Vec::new();
        while let Ok(Some(message)) = tokio::time::timeout(Duration::from_millis(400), b_sees.next()).await {
            if message.subject.as_str() == "svc.x" {
                let info = message.headers.as_ref().and_then(|headers| headers.get("Nats-Request-Info"));
                seen_by_b.push(info_fields(info.map_or("{}", |value| value.as_str())));
            }
        }
        outcomes.push((target.name, info_fields(&from_a), info_fields(&from_b), seen_by_b));
    }
    for (name, from_a, from_b, seen_by_b) in &outcomes {
        // Recorded from nats-server 2.15.1 with this configuration: at D,
        // `{"acc":"A","svc":"C","rtt":291415}`; `svc` is the account passed through last.
        assert_eq!(from_a, &["acc=\"A\"", "svc=\"C\"", "rtt>0"], "{name}: A's request at D");
        assert_eq!(from_b, &["acc=\"B\"", "svc=\"C\"", "rtt>0"], "{name}: B's request at D");
        assert_eq!(seen_by_b, &[vec!["acc=\"A\"".to_string(), "rtt>0".into()]], "{name}: A's request at B");
    }
}

#[test]
fn an_import_chain_that_comes_back_is_refused_as_a_cycle() {
    let config = CHAIN.replace(
        "D { users: [{user: d, password: d}], exports: [{service: \"svc.>\"}, {service: \"back.>\"}] }",
        "D { users: [{user: d, password: d}], exports: [{service: \"svc.>\"}],\n    \
         imports: [{service: {account: B, subject: \"svc.x\"}}] }",
    );
    let file = config_file(&config);
    let path = file.path().to_str().unwrap();
    let message = "Error adding service import \"svc.x\": import forms a cycle";
    let jetcore = start_expecting_refusal(&["-c", path], None);
    jetcore.assert_no_partial_start();
    assert!(jetcore.stderr.contains(message), "jetcore: {}", jetcore.stderr);
    let reference = std::process::Command::new(common::hub::binary()).args(["-c", path, "-t"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&reference.stderr);
    // nats-server names whichever import of the cycle it checks first (`svc.x` or
    // `svc.>`: Go map order), so only the shape of its message is compared.
    let cycle = |import: &str| format!("Error adding service import \"{import}\": import forms a cycle");
    let named = stderr.contains(&cycle("svc.x")) || stderr.contains(&cycle("svc.>"));
    assert!(!reference.status.success() && named, "nats-server: {stderr}");
}

/// Requests `subject` from `client` until the answer is `expected` (a reload is
/// applied a moment after the signal); the last answer.
async fn await_answer(client: &Client, subject: &str, expected: &str) -> String {
    let mut answer = String::new();
    for _ in 0..100 {
        answer = request(client, subject).await;
        if answer == expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_adds_and_removes_a_service_import() {
    let without = "B { users: [{user: b, password: b}] }";
    let with = "B { users: [{user: b, password: b}], imports: [{service: {account: A, subject: req.x}}] }";
    let config =
        format!("accounts {{\n  A {{ users: [{{user: a, password: a}}], exports: [{{service: \"req.>\"}}] }}\n  {without}\n}}\n");
    let (jetcore, file) = server_with(&config);
    let reference = HubNode::start("reference", None, &config);
    let reload_jetcore = |old: &str, new: &str| {
        let text = std::fs::read_to_string(file.path()).unwrap();
        std::fs::write(file.path(), text.replace(old, new)).unwrap();
        jetcore.signal(libc::SIGHUP);
    };
    let mut outcomes = Vec::new();
    for (name, url) in [("jetcore", jetcore.url()), ("nats-server", reference.url())] {
        let (a, b) = (login(&url, "a").await, login(&url, "b").await);
        responder(&a, "req.>", 1).await;
        let before = request(&b, "req.x").await;
        match name {
            "jetcore" => reload_jetcore(without, with),
            _ => reference.reload_replacing(without, with),
        }
        let added = await_answer(&b, "req.x", "req.x B true 0").await;
        match name {
            "jetcore" => reload_jetcore(with, without),
            _ => reference.reload_replacing(with, without),
        }
        let removed = await_answer(&b, "req.x", "NoResponders").await;
        outcomes.push((name, [before, added, removed]));
    }
    for (name, answers) in &outcomes {
        assert_eq!(answers, &["NoResponders", "req.x B true 0", "NoResponders"], "{name}");
    }
}
