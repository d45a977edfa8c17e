//! Accounts over real sockets (async-nats, two shards): two accounts on one server see
//! nothing of each other — plain and queue subscriptions, wildcards, JetStream streams,
//! the `$JS.API` and KV — while each works inside itself; the configuration of issue 24
//! starts and answers as nats-server 2.15 does (`$JS.API.INFO` limits, `no_auth_user`);
//! a randomized run of many accounts checks every delivery against its own account.

mod common;

use std::time::Duration;

use async_nats::Client;
use common::accounts::{login, server_with};
use common::jetstream::{api, assert_error};
use common::start_refusal::start_expecting_refusal;
use futures::StreamExt;

const TWO_ACCOUNTS: &str =
    "accounts {\n  A { users: [{user: a, password: a}, {user: a2, password: a2}], jetstream: enabled }\n  \
    B { users: [{user: b, password: b}, {user: b2, password: b2}] }\n}\n\
    authorization { users: [{user: g, password: g}] }\n";

/// Everything `subscriber` receives within a short quiet period, as (subject, payload).
async fn drain(subscriber: &mut async_nats::Subscriber) -> Vec<(String, String)> {
    let mut seen = Vec::new();
    while let Ok(Some(message)) = tokio::time::timeout(Duration::from_millis(300), subscriber.next()).await {
        if &message.payload[..] != b"probe" {
            seen.push((message.subject.to_string(), String::from_utf8_lossy(&message.payload).to_string()));
        }
    }
    seen
}

/// Waits until every client's subscriptions are visible to every other client of the
/// same account (`await_interest`; its probes are skipped by [`drain`]).
async fn await_interest_within_accounts(clients: &[(String, Client)], account_of: impl Fn(&str) -> String) {
    for (subscriber_name, subscriber) in clients {
        for (publisher_name, publisher) in clients {
            if account_of(subscriber_name) == account_of(publisher_name) {
                common::await_interest(subscriber, publisher).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_accounts_see_nothing_of_each_other_in_core_nats() {
    let (server, _config) = server_with(TWO_ACCOUNTS);
    let mut clients = Vec::new();
    for name in ["a", "a2", "b", "b2", "g"] {
        clients.push((name.to_string(), login(&server, name).await));
    }
    let mut wildcard = Vec::new();
    let mut queue = Vec::new();
    for (name, client) in &clients {
        wildcard.push((name.clone(), client.subscribe(">").await.unwrap()));
        queue.push((name.clone(), client.queue_subscribe("jobs", "workers".into()).await.unwrap()));
        client.flush().await.unwrap();
    }
    let account = |name: &str| name.chars().next().unwrap();
    await_interest_within_accounts(&clients, |name| account(name).to_string()).await;
    for (name, client) in &clients {
        client.publish("jobs", format!("from {name}").into()).await.unwrap();
        client.flush().await.unwrap();
    }
    for (name, subscriber) in &mut wildcard {
        let seen = drain(subscriber).await;
        let mut from: Vec<String> = seen.iter().map(|(_, payload)| payload.clone()).collect();
        from.sort();
        let expected: Vec<String> = clients
            .iter()
            .filter(|(other, _)| account(other) == account(name))
            .map(|(other, _)| format!("from {other}"))
            .collect();
        assert_eq!(from, expected, "{name}'s `>` sees exactly its own account's publishes");
    }
    // One queue member per account per message, never one of another account.
    let mut per_account = std::collections::BTreeMap::<char, Vec<String>>::new();
    for (name, subscriber) in &mut queue {
        for (_, payload) in drain(subscriber).await {
            let sender = payload.trim_start_matches("from ").to_string();
            assert_eq!(account(&sender), account(name), "{name} received {sender}'s queue message");
            per_account.entry(account(name)).or_default().push(sender);
        }
    }
    assert_eq!(per_account[&'a'].len(), 2);
    assert_eq!(per_account[&'b'].len(), 2);
    assert_eq!(per_account[&'g'].len(), 1);
    // Request/reply stays inside the account: B's request never reaches A's service;
    // a2's does, and its reply comes back.
    let mut service = clients[0].1.subscribe("svc").await.unwrap();
    clients[0].1.flush().await.unwrap();
    common::await_interest(&clients[0].1, &clients[1].1).await;
    let short = Duration::from_millis(500);
    let refused = tokio::time::timeout(short, clients[2].1.request("svc", "from b".into())).await;
    assert!(!matches!(refused, Ok(Ok(_))), "B got an answer from A's service");
    let answered = clients[1].1.clone();
    let responder = tokio::spawn(async move {
        let request = service.next().await.unwrap();
        answered.publish(request.reply.unwrap(), request.payload).await.unwrap();
        answered.flush().await.unwrap();
    });
    let reply = clients[1].1.request("svc", "from a2".into()).await.unwrap();
    assert_eq!(&reply.payload[..], b"from a2", "A's service saw A's request first, nothing of B's");
    responder.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_lives_in_its_account_and_is_refused_elsewhere() {
    let (server, _config) = server_with(TWO_ACCOUNTS);
    let (a, b, g) = (login(&server, "a").await, login(&server, "b").await, login(&server, "g").await);
    let created = api(&a, "STREAM.CREATE.ORDERS", r#"{"name":"ORDERS","subjects":["orders.>"]}"#).await;
    assert!(created.get("error").is_none(), "{created}");
    for (name, client) in [("b", &b), ("g", &g)] {
        for (request, body) in
            [("INFO", ""), ("STREAM.NAMES", ""), ("STREAM.INFO.ORDERS", ""), ("STREAM.CREATE.X", r#"{"name":"X"}"#)]
        {
            let reply = api(client, request, body).await;
            assert_error(&reply, 503, 10039, "JetStream not enabled for account");
            assert!(reply.get("streams").is_none() || reply["streams"].is_null(), "{name} {request}: {reply}");
        }
        // Another account's publishes on the captured subjects are not stored.
        client.publish("orders.eu", "not A's".into()).await.unwrap();
        client.flush().await.unwrap();
        let error = client.request("orders.eu", "not A's".into()).await.unwrap_err();
        assert_eq!(error.kind(), async_nats::RequestErrorKind::NoResponders, "{name}: no stream answers");
    }
    let context = async_nats::jetstream::new(a.clone());
    context.publish("orders.eu", "A's".into()).await.unwrap().await.unwrap();
    let info = api(&a, "STREAM.INFO.ORDERS", "").await;
    assert_eq!(info["state"]["messages"], 1, "only A's own publish was stored: {info}");
    // KV: A's bucket works; B cannot create one nor read A's.
    let bucket = context
        .create_key_value(async_nats::jetstream::kv::Config { bucket: "cfg".into(), ..Default::default() })
        .await
        .unwrap();
    bucket.put("k", "v".into()).await.unwrap();
    let b_context = async_nats::jetstream::new(b.clone());
    assert!(b_context.get_key_value("cfg").await.is_err(), "B sees no bucket of A");
    let error = b_context
        .create_key_value(async_nats::jetstream::kv::Config { bucket: "cfg".into(), ..Default::default() })
        .await
        .unwrap_err();
    assert!(error.to_string().contains("not enabled"), "{error}");
    // A subscriber in B on A's KV subjects sees nothing of A's puts.
    let mut spy = b.subscribe("$KV.>").await.unwrap();
    b.flush().await.unwrap();
    bucket.put("k", "v2".into()).await.unwrap();
    assert!(drain(&mut spy).await.is_empty());
}

const ISSUE_CONFIG: &str = "jetstream: { domain: \"test-domain\" }\nno_auth_user: \"foo\"\naccounts: {\n  A {\n    \
    users: [{ user: \"foo\" }]\n    jetstream: { max_mem: 64MB, max_file: 32MB, max_streams: 10, max_consumers: 20,\n\
    max_ack_pending: 100, memory_max_stream_bytes: 2048,\n store_max_stream_bytes: 4096, max_stream_bytes: true }\n  }\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_issue_configuration_starts_and_reports_the_account_limits() {
    let (server, _config) = server_with(ISSUE_CONFIG);
    // No credentials: `no_auth_user` puts the client in A, where JetStream is.
    let client = async_nats::connect(server.url()).await.unwrap();
    let info = api(&client, "INFO", "").await;
    let limits = &info["limits"];
    assert_eq!(limits["max_memory"], 64 << 20, "{info}");
    assert_eq!(limits["max_storage"], 32 << 20);
    assert_eq!(limits["max_streams"], 10);
    assert_eq!(limits["max_consumers"], 20);
    assert_eq!(limits["max_ack_pending"], 100);
    assert_eq!(limits["memory_max_stream_bytes"], 2048);
    assert_eq!(limits["storage_max_stream_bytes"], 4096);
    assert_eq!(limits["max_bytes_required"], true);
}

#[test]
fn configurations_nats_server_refuses_do_not_start() {
    for (config, words) in [
        ("accounts { A { imports: [{stream: {account: Z, subject: foo}}] } }\n", "\"Z\" account not defined"),
        ("accounts { A { users: [{user: a}] } }\nno_auth_user: zz\n", "no_auth_user: \"zz\" not present"),
        ("accounts { A { users: [{user: a}] }, B { users: [{user: a}] } }\n", "Duplicate user \"a\" detected"),
        ("operator: \"abc\"\n", "operator"),
        (
            "accounts { S { users: [{user: s}], jetstream: enabled } }\nsystem_account: S\n",
            "Not allowed to enable JetStream on the system account",
        ),
    ] {
        let file = tempfile::Builder::new().suffix(".conf").tempfile().unwrap();
        std::fs::write(file.path(), config).unwrap();
        let path = file.path().display().to_string();
        let refusal = start_expecting_refusal(&["-c", path.as_str(), "-p", "-1"], None);
        refusal.assert_no_partial_start();
        assert!(refusal.stderr.contains(words), "{config}: {}", refusal.stderr);
    }
}

/// A small xorshift so a failing run can be replayed from its printed seed.
struct Random(u64);

impl Random {
    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % bound as u64) as usize
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn randomized_publishes_and_subscriptions_never_cross_accounts() {
    let seed = std::env::var("ACCOUNTS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1
    });
    println!("ACCOUNTS_SEED={seed}");
    let mut random = Random(seed);
    const ACCOUNTS: usize = 6;
    let mut config = String::from("accounts {\n");
    for account in 0..ACCOUNTS {
        let js = if account == 0 { ", jetstream: enabled" } else { "" };
        config += &format!("  T{account} {{ users: [{{user: u{account}x, password: u{account}x}}, {{user: u{account}y, password: u{account}y}}]{js} }}\n");
    }
    config += "}\nauthorization { users: [{user: gx, password: gx}] }\n";
    let (server, _config) = server_with(&config);
    let mut names: Vec<String> = (0..ACCOUNTS).flat_map(|a| [format!("u{a}x"), format!("u{a}y")]).collect();
    names.push("gx".into());
    let account_of = |name: &str| name[..name.len() - 1].to_string();
    let mut clients = Vec::new();
    for name in &names {
        clients.push((name.clone(), login(&server, name).await));
    }
    let patterns = ["t.*", "t.>", ">", "t.1", "t.2.x", "*.*", "t.*.x"];
    let mut subscribers = Vec::new();
    for _ in 0..40 {
        let (name, client) = &clients[random.below(clients.len())];
        let pattern = patterns[random.below(patterns.len())];
        let subscriber = match random.below(3) {
            0 => client.queue_subscribe(pattern.to_string(), "q".into()).await.unwrap(),
            _ => client.subscribe(pattern.to_string()).await.unwrap(),
        };
        subscribers.push((name.clone(), subscriber));
    }
    for (_, client) in &clients {
        client.flush().await.unwrap();
    }
    await_interest_within_accounts(&clients, account_of).await;
    let subjects = ["t.1", "t.2", "t.2.x", "t.3.x", "u.1"];
    let mut sent_per_account = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..600 {
        let (name, client) = &clients[random.below(clients.len())];
        let subject = subjects[random.below(subjects.len())];
        client.publish(subject, account_of(name).into()).await.unwrap();
        *sent_per_account.entry(account_of(name)).or_default() += 1;
    }
    for (_, client) in &clients {
        client.flush().await.unwrap();
    }
    let (mut leaks, mut delivered) = (0, 0);
    for (name, subscriber) in &mut subscribers {
        for (subject, from) in drain(subscriber).await {
            delivered += 1;
            if from != account_of(name) {
                leaks += 1;
                eprintln!("leak: {name} ({}) received {subject} from account {from}", account_of(name));
            }
        }
    }
    assert!(delivered > 0, "seed {seed}: the run delivered something");
    assert_eq!(leaks, 0, "seed {seed}: cross-account deliveries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_import_receives_the_export_and_nothing_else_crosses() {
    let config =
        "accounts {\n  E { users: [{user: e, password: e}], exports: [{stream: \"prices.>\", accounts: [I]}] }\n  \
        I { users: [{user: i, password: i}], imports: [{stream: {account: E, subject: \"prices.>\"}, prefix: eu}] }\n  \
        J { users: [{user: j, password: j}] }\n}\n";
    let (server, _config) = server_with(config);
    let (e, i, j) = (login(&server, "e").await, login(&server, "i").await, login(&server, "j").await);
    let mut imported = i.subscribe("eu.prices.>").await.unwrap();
    let mut unprefixed = i.subscribe("prices.>").await.unwrap();
    let mut outsider = j.subscribe(">").await.unwrap();
    let mut exporter = e.subscribe(">").await.unwrap();
    for client in [&i, &j, &e] {
        client.flush().await.unwrap();
    }
    // The importer's subscription is on another connection: wait until E's publishes reach it.
    let probe_sink = i.subscribe("eu.prices.probe").await.unwrap();
    i.flush().await.unwrap();
    let mut probe_sink = probe_sink;
    loop {
        e.publish("prices.probe", "probe".into()).await.unwrap();
        e.flush().await.unwrap();
        if let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(20), probe_sink.next()).await {
            break;
        }
    }
    e.publish("prices.usd", "1.10".into()).await.unwrap();
    e.publish("other.usd", "private".into()).await.unwrap();
    i.publish("prices.usd", "from the importer".into()).await.unwrap();
    for client in [&i, &e] {
        client.flush().await.unwrap();
    }
    let seen = drain(&mut imported).await;
    assert!(seen.contains(&("eu.prices.usd".to_string(), "1.10".to_string())), "{seen:?}");
    assert!(seen.iter().all(|(subject, _)| subject.starts_with("eu.prices.")), "{seen:?}");
    assert_eq!(drain(&mut unprefixed).await, vec![("prices.usd".to_string(), "from the importer".to_string())]);
    assert!(drain(&mut outsider).await.is_empty(), "J imports nothing");
    let exporter_saw = drain(&mut exporter).await;
    assert!(exporter_saw.iter().all(|(_, payload)| payload != "from the importer"), "{exporter_saw:?}");
}
