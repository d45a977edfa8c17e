//! Connection handoff: a plain-TCP connection that publishes `JETCORE_HANDOFF_AFTER`
//! messages in a row stored by streams of one other shard is moved to that shard, with its
//! socket, subscriptions, unparsed bytes and queued output. What a client can check of that
//! promise is checked here with real clients: nothing it should receive is lost, duplicated
//! or reordered (per publisher), every pub ack arrives once, request-reply and the
//! SUB + PING/PONG barrier keep working after the move, and monitoring shows the
//! connection once, open and then closed. `/varz` `connection_handoffs` counts the moves.
//! A puller moves too: its pull requests and acks count as stores. So does a connection
//! that only receives: deliveries in a row from one other shard.
//!
//! A connection's shard is its INFO `client_id` modulo the shard count. Which shard owns a
//! stream is left to the server: the tests use each stream from both shards, or try streams
//! until the counter moves, so some publishers cross shards whatever the placement.
//!
//! The check that a handoff happened comes last in each test, so that without the feature
//! (counter absent, nothing moves) every other promise is still checked.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use common::{await_interest, RawClient, TestServer};
use futures::StreamExt;
use serde_json::Value;

const SHARDS: u64 = 2;
/// Connections opened to land one on a chosen shard (client ids are consecutive), with
/// `PLACEMENT_PAUSE` between them: whichever shard waits in `accept` takes a connection,
/// and with the other tests' servers busy one shard can miss dozens in a row.
const PLACEMENT_ATTEMPTS_MAX: usize = 256;
const PLACEMENT_PAUSE: Duration = Duration::from_millis(2);
/// The server's `JETCORE_HANDOFF_AFTER`: stores in a row to another shard's streams.
const HANDOFF_AFTER: u64 = 8;
/// Streams `HO<k>` capturing `ho<k>.>`.
const STREAMS: [&str; 4] = ["HO0", "HO1", "HO2", "HO3"];
const ITERATIONS: usize = 80;
const ITERATIONS_THREE_SHARDS: usize = 48;
const STORES_PER_ITERATION: u64 = 64;
/// Publishes a mover keeps unacknowledged, so some are unparsed or queued at the move.
const ACK_WINDOW: u64 = 8;
/// Enough stores in a row to be moved, when the stream is on the other shard.
const STORES_TO_MOVE: u64 = 2 * HANDOFF_AFTER;
/// Messages a feeder writes at once; between bursts it sleeps `FEED_PAUSE`, so a mover
/// reading on one thread keeps up.
const FEED_BURST: u64 = 20;
const FEED_PAUSE: Duration = Duration::from_micros(200);
const BARRIER_MESSAGES: u64 = 1000;
const REQUESTS_PER_REQUESTER: u64 = 200;
const ASYNC_STORES: u64 = 200;
const ASYNC_MESSAGES: u64 = 1000;
/// Messages a puller fetches, `PULL_BATCH` at a time, acking each.
const PULL_MESSAGES: u64 = 2000;
const PULL_BATCH: usize = 50;
/// Messages a receiving-only connection gets from another shard, `RECEIVED_ROUND` at a
/// time.
const RECEIVED_MESSAGES: u64 = 1000;
const RECEIVED_ROUND: u64 = 50;
const _: () = assert!(RECEIVED_MESSAGES % RECEIVED_ROUND == 0);
/// Turns of stores, stream after stream, by one connection.
const TURNS: usize = 12;
/// Hang guards, not timing assertions.
const WAIT: Duration = Duration::from_secs(10);
const HANDOFF_COUNT_WAIT: Duration = Duration::from_secs(2);

/// A server with two shards, JetStream and monitoring; its monitoring port.
fn start_server() -> (TestServer, u16) {
    start_server_with(SHARDS)
}

fn start_server_with(shards: u64) -> (TestServer, u16) {
    let monitor_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let monitor = monitor_port.to_string();
    let after = HANDOFF_AFTER.to_string();
    let env = [("JETCORE_HANDOFF_AFTER", after.as_str())];
    let shards = shards.to_string();
    (TestServer::start_with_env(&["--shards", &shards, "-js", "-m", &monitor], &env), monitor_port)
}

/// A raw-protocol connection with its `client_id` (its cid in `/connz`).
struct Client {
    raw: RawClient,
    cid: u64,
}

struct Message {
    subject: String,
    reply: Option<String>,
    payload: String,
}

enum Incoming {
    Message(Message),
    Pong,
}

/// Opens connections until one lands on `shard` of a two-shard server.
fn client_on_shard(server: &TestServer, shard: u64) -> Client {
    client_on_shard_of(server, SHARDS, shard)
}

/// Opens connections until one lands on `shard` of `shards`; the others are closed.
fn client_on_shard_of(server: &TestServer, shards: u64, shard: u64) -> Client {
    for _ in 0..PLACEMENT_ATTEMPTS_MAX {
        let (mut raw, info) = RawClient::connect(&server.address());
        let info: Value = serde_json::from_str(info.trim_start_matches("INFO ").trim()).expect("INFO JSON");
        let cid = info["client_id"].as_u64().expect("client_id");
        if cid % shards == shard {
            raw.send(b"CONNECT {\"verbose\":false,\"pedantic\":false}\r\n");
            return Client { raw, cid };
        }
        thread::sleep(PLACEMENT_PAUSE);
    }
    panic!("no connection landed on shard {shard} in {PLACEMENT_ATTEMPTS_MAX} attempts");
}

impl Client {
    /// The next MSG or PONG; answers the server's PINGs. Panics naming `waiting_for` when
    /// the connection closes or stays silent for RawClient's read timeout.
    fn next(&mut self, waiting_for: &str) -> Incoming {
        loop {
            let line = self.raw.line_as_sent();
            let silent = format!("cid {}: connection closed or silent while waiting for {waiting_for}", self.cid);
            assert!(line.ends_with("\r\n"), "{silent} (read {line:?})");
            match line.trim_end() {
                "PONG" => return Incoming::Pong,
                "PING" => self.raw.send(b"PONG\r\n"),
                "+OK" => {}
                other if other.starts_with("MSG ") => return Incoming::Message(self.message(other)),
                other => panic!("cid {}: unexpected {other:?} while waiting for {waiting_for}", self.cid),
            }
        }
    }

    /// Reads the payload of `MSG <subject> <sid> [reply] <size>`.
    fn message(&mut self, control: &str) -> Message {
        let fields: Vec<&str> = control.split(' ').collect();
        let size: usize = fields.last().and_then(|size| size.parse().ok()).expect("MSG size");
        let reply = (fields.len() == 5).then(|| fields[3].to_string());
        let bytes = self.raw.exact(size + 2);
        assert_eq!(&bytes[size..], b"\r\n", "MSG payload ends with CRLF");
        let payload = String::from_utf8(bytes[..size].to_vec()).expect("UTF-8 payload");
        Message { subject: fields[1].to_string(), reply, payload }
    }

    fn publish(&mut self, subject: &str, reply: Option<&str>, payload: &str) {
        let reply = reply.map(|reply| format!(" {reply}")).unwrap_or_default();
        self.raw.send(format!("PUB {subject}{reply} {}\r\n{payload}\r\n", payload.len()).as_bytes());
    }

    /// SUB + PING/PONG: once this returns, publishes from any connection reach the subscription.
    fn subscribe(&mut self, subject: &str, sid: u64, received: &mut Received) {
        self.raw.send(format!("SUB {subject} {sid}\r\n").as_bytes());
        self.ping(received);
    }

    /// PING, then hands every message before the PONG to `received`.
    fn ping(&mut self, received: &mut Received) {
        self.raw.send(b"PING\r\n");
        loop {
            match self.next("PONG") {
                Incoming::Pong => return,
                Incoming::Message(message) => received.take(message),
            }
        }
    }
}

/// What a connection received: numbered messages by publisher (payload `<name>:<n>`),
/// and pub acks (`rep.<tag>.<n>`) as `(n, ack)` in arrival order.
#[derive(Default)]
struct Received {
    numbered: HashMap<String, Vec<u64>>,
    acks: Vec<(u64, Value)>,
}

impl Received {
    fn take(&mut self, message: Message) {
        if message.subject.starts_with("rep.") {
            let n = message.subject.rsplit('.').next().and_then(|n| n.parse().ok()).expect("rep.<tag>.<n>");
            let ack = serde_json::from_str(&message.payload).expect("pub ack JSON");
            self.acks.push((n, ack));
        } else {
            let (name, n) = message.payload.split_once(':').expect("payload <name>:<n>");
            self.numbered.entry(name.to_string()).or_default().push(n.parse().expect("number"));
        }
    }

    /// `None` when `name`'s messages arrived exactly as 1..=last; otherwise what differed.
    fn sequence_problem(&self, name: &str, last: u64) -> Option<String> {
        let numbers = self.numbered.get(name).map(Vec::as_slice).unwrap_or_default();
        if numbers.iter().copied().eq(1..=last) {
            return None;
        }
        let at = (0..numbers.len()).find(|&i| numbers[i] != i as u64 + 1).unwrap_or(numbers.len());
        let around = &numbers[at.saturating_sub(2)..(at + 3).min(numbers.len())];
        Some(format!("{name}: {} messages of 1..={last}, first difference at index {at}: {around:?}", numbers.len()))
    }

    /// `None` when the acks are for 1..=count in order, from `stream`, with consecutive
    /// stream sequences; otherwise what differed. Clears the acks.
    fn ack_problem(&mut self, stream: &str, count: u64) -> Option<String> {
        let acks = std::mem::take(&mut self.acks);
        let numbers: Vec<u64> = acks.iter().map(|(n, _)| *n).collect();
        if !numbers.iter().copied().eq(1..=count) {
            return Some(format!("acks for {stream} arrived for {numbers:?}, not 1..={count}"));
        }
        let first = acks[0].1["seq"].as_u64().unwrap_or(0);
        let bad = acks.iter().zip(first..).find(|((_, ack), seq)| ack["stream"] != stream || ack["seq"] != *seq);
        bad.map(|((n, ack), seq)| format!("ack {n}: {ack}, expected stream {stream} seq {seq}"))
    }
}

/// Creates the streams `HO<k>` on `ho<k>.>`.
fn create_streams(server: &TestServer) {
    let mut client = client_on_shard(server, 0);
    let mut received = Received::default();
    client.subscribe("setup.*", 1, &mut received);
    for (index, name) in STREAMS.iter().enumerate() {
        let body = format!(r#"{{"name":"{name}","subjects":["ho{index}.>"]}}"#);
        client.publish(&format!("$JS.API.STREAM.CREATE.{name}"), Some(&format!("setup.{index}")), &body);
        let Incoming::Message(reply) = client.next("stream create reply") else { panic!("PONG, no reply") };
        assert!(!reply.payload.contains("\"error\""), "create {name}: {}", reply.payload);
    }
}

/// Publishes `count` messages to `subject` with replies `rep.<tag>.<n>`, at most
/// `ACK_WINDOW` unacknowledged, until every ack is in; other messages go to `received`.
/// With `watched`, each store is followed by `mover:<n>` published there.
fn publish_stored(
    mover: &mut Client,
    subject: &str,
    watched: Option<&str>,
    tag: &str,
    count: u64,
    received: &mut Received,
) {
    let acked_before = received.acks.len();
    let mut sent = 0;
    loop {
        let acked = (received.acks.len() - acked_before) as u64;
        if acked >= count {
            return;
        }
        if sent < count && sent - acked < ACK_WINDOW {
            sent += 1;
            mover.publish(subject, Some(&format!("rep.{tag}.{sent}")), &format!("stored {sent}"));
            if let Some(watched) = watched {
                mover.publish(watched, None, &format!("mover:{sent}"));
            }
            continue;
        }
        match mover.next(&format!("pub acks on {subject}: sent {sent}, acked {acked}")) {
            Incoming::Message(message) => received.take(message),
            Incoming::Pong => panic!("cid {}: PONG without a PING", mover.cid),
        }
    }
}

/// Publishes `<name>:<n>` to `subject` for n = 1, 2, ... in bursts until `stop` is set;
/// returns the connection and the last n.
fn feed(mut feeder: Client, subject: String, name: String, stop: Arc<AtomicBool>) -> (Client, u64) {
    let mut sent = 0;
    loop {
        let mut burst = String::new();
        for _ in 0..FEED_BURST {
            sent += 1;
            let payload = format!("{name}:{sent}");
            burst.push_str(&format!("PUB {subject} {}\r\n{payload}\r\n", payload.len()));
        }
        feeder.raw.send(burst.as_bytes());
        if stop.load(Ordering::Relaxed) {
            return (feeder, sent);
        }
        thread::sleep(FEED_PAUSE);
    }
}

/// Publishes `<name>:1..=count` to `subject`, then PING/PONG: every one was processed.
fn publish_numbered(publisher: &mut Client, subject: &str, name: &str, count: u64) {
    let mut burst = String::new();
    for n in 1..=count {
        let payload = format!("{name}:{n}");
        burst.push_str(&format!("PUB {subject} {}\r\n{payload}\r\n", payload.len()));
    }
    publisher.raw.send(burst.as_bytes());
    let mut received = Received::default();
    publisher.ping(&mut received);
    assert!(received.numbered.is_empty(), "{name} has no subscriptions");
}

/// Publishes `STORES_TO_MOVE` to each stream in turn until `/varz` counts one more handoff.
/// Whether it did, and how many messages the mover published.
fn move_to_another_shard(mover: &mut Client, monitor_port: u16, received: &mut Received) -> (bool, u64) {
    let before = handoffs(monitor_port).unwrap_or(0);
    let mut published = 0;
    for (index, stream) in STREAMS.iter().enumerate() {
        publish_stored(mover, &format!("ho{index}.moving"), None, &format!("m{index}"), STORES_TO_MOVE, received);
        published += STORES_TO_MOVE;
        mover.ping(received);
        if let Some(problem) = received.ack_problem(stream, STORES_TO_MOVE) {
            panic!("cid {}: {problem}", mover.cid);
        }
        let deadline = Instant::now() + HANDOFF_COUNT_WAIT;
        while Instant::now() < deadline {
            if handoffs(monitor_port).unwrap_or(0) > before {
                eprintln!("cid {} moved after publishing to {stream}", mover.cid);
                return (true, published);
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
    (false, published)
}

/// GET `path` from the monitoring port; the body of a 200 answer as JSON.
fn monitor_json(port: u16, path: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    let mut stream = loop {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(stream) => break stream,
            Err(error) if Instant::now() < deadline => {
                eprintln!("monitoring port not answering yet: {error}");
                thread::sleep(Duration::from_millis(50));
            }
            Err(error) => panic!("monitoring port {port}: {error}"),
        }
    };
    stream.set_read_timeout(Some(WAIT)).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("monitoring response");
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}\n{body}");
    serde_json::from_str(body).unwrap_or_else(|error| panic!("{path} is not JSON ({error}): {body}"))
}

/// `/varz` `connection_handoffs`; `None` when the field is absent. Asks again while the
/// shards' counters are missing (`/varz` leaves them out when a shard answers late).
fn handoffs(monitor_port: u16) -> Option<u64> {
    let deadline = Instant::now() + WAIT;
    loop {
        let varz = monitor_json(monitor_port, "/varz");
        if varz.get("in_msgs").is_some() || Instant::now() >= deadline {
            return varz.get("connection_handoffs").and_then(Value::as_u64);
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// `/varz` `connection_handoffs` once it exceeds `before`, else its value after
/// `HANDOFF_COUNT_WAIT`: a move its reader started may still be waiting for the cuts.
fn handoffs_above(monitor_port: u16, before: Option<u64>) -> Option<u64> {
    let deadline = Instant::now() + HANDOFF_COUNT_WAIT;
    loop {
        let count = handoffs(monitor_port);
        if count.unwrap_or(0) > before.unwrap_or(0) || Instant::now() >= deadline {
            return count;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

#[track_caller]
fn assert_handed_off(monitor_port: u16, scenario: &str) {
    let handoffs = handoffs_above(monitor_port, None);
    eprintln!("{scenario}: /varz connection_handoffs = {handoffs:?}");
    assert!(handoffs.is_some_and(|count| count > 0), "{scenario}: no handoff counted ({handoffs:?})");
}

/// `/connz` rows (open, closed or all, by `state`) whose cid is `cid`.
fn connz_rows(monitor_port: u16, state: &str, cid: u64) -> Vec<Value> {
    let connz = monitor_json(monitor_port, &format!("/connz?state={state}&limit=100000"));
    let rows = connz["connections"].as_array().expect("connections array");
    rows.iter().filter(|row| row["cid"] == cid).cloned().collect()
}

#[test]
fn a_handed_off_connection_loses_duplicates_and_reorders_nothing() {
    moves_lose_nothing(SHARDS, ITERATIONS);
}

/// With a third shard, the move's cuts come from a shard on neither side, and the mover's
/// own messages to it travel from the old shard before the move and the new one after.
#[test]
fn with_three_shards_a_handed_off_connection_loses_duplicates_and_reorders_nothing() {
    moves_lose_nothing(3, ITERATIONS_THREE_SHARDS);
}

/// Movers publish stores (and, numbered, to watchers on every shard) while feeders on
/// every shard publish to them; every message arrives once, in each publisher's order.
fn moves_lose_nothing(shards: u64, iterations: usize) {
    let (server, monitor_port) = start_server_with(shards);
    create_streams(&server);
    let mut problems = Vec::new();
    let (mut fed_total, mut fed_least) = (0, u64::MAX);
    for iteration in 0..iterations {
        // Every 8 iterations (12 with three shards) use each stream from each shard, so
        // movers cross shards whichever shard owns which stream.
        let mover_shard = iteration as u64 % shards;
        let stream_index = iteration / shards as usize % STREAMS.len();
        let feed_subject = format!("feed.{iteration}");
        let watched_subject = format!("watched.{iteration}");
        let mut watchers: Vec<(Client, Received)> = (0..shards)
            .map(|shard| {
                let mut watcher = client_on_shard_of(&server, shards, shard);
                let mut received = Received::default();
                watcher.subscribe(&watched_subject, 1, &mut received);
                (watcher, received)
            })
            .collect();
        let mut received = Received::default();
        let mut mover = client_on_shard_of(&server, shards, mover_shard);
        mover.raw.send(format!("SUB {feed_subject} 1\r\n").as_bytes());
        mover.subscribe(&format!("rep.{iteration}.*"), 2, &mut received);

        let stop = Arc::new(AtomicBool::new(false));
        let feeders: Vec<_> = (0..shards)
            .map(|shard| {
                let feeder = client_on_shard_of(&server, shards, shard);
                let (subject, stop) = (feed_subject.clone(), stop.clone());
                thread::spawn(move || feed(feeder, subject, format!("feeder{shard}"), stop))
            })
            .collect();
        let stream_subject = format!("ho{stream_index}.x");
        let watched = Some(watched_subject.as_str());
        publish_stored(
            &mut mover,
            &stream_subject,
            watched,
            &iteration.to_string(),
            STORES_PER_ITERATION,
            &mut received,
        );
        stop.store(true, Ordering::Relaxed);
        let mut fed = Vec::new();
        for (shard, feeder) in feeders.into_iter().enumerate() {
            let (mut feeder, last) = feeder.join().expect("feeder thread");
            feeder.ping(&mut Received::default());
            fed.push((format!("feeder{shard}"), last));
            (fed_total, fed_least) = (fed_total + last, fed_least.min(last));
        }
        mover.ping(&mut received);

        let context = format!("iteration {iteration} (mover cid {} from shard {mover_shard})", mover.cid);
        for (shard, (watcher, watched)) in watchers.iter_mut().enumerate() {
            watcher.ping(watched);
            if let Some(problem) = watched.sequence_problem("mover", STORES_PER_ITERATION) {
                problems.push(format!("{context}: watcher on shard {shard}: {problem}"));
            }
        }
        for (name, last) in &fed {
            if let Some(problem) = received.sequence_problem(name, *last) {
                problems.push(format!("{context}: {problem}"));
            }
        }
        if let Some(problem) = received.ack_problem(STREAMS[stream_index], STORES_PER_ITERATION) {
            problems.push(format!("{context}: {problem}"));
        }
    }
    eprintln!("{iterations} iterations: {fed_total} feed messages, at least {fed_least} per feeder and iteration");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_handed_off(monitor_port, &format!("{iterations} movers on {shards} shards"));
}

#[test]
fn the_barrier_and_request_reply_hold_after_a_handoff() {
    let (server, monitor_port) = start_server();
    create_streams(&server);
    let mut received = Received::default();
    let mut mover = client_on_shard(&server, 0);
    mover.subscribe("rep.>", 1, &mut received);
    let (moved, _) = move_to_another_shard(&mut mover, monitor_port, &mut received);

    // The barrier: a SUB answered by PONG receives what both shards publish afterwards.
    mover.subscribe("after.handoff", 2, &mut received);
    for shard in 0..SHARDS {
        let mut publisher = client_on_shard(&server, shard);
        publish_numbered(&mut publisher, "after.handoff", &format!("publisher{shard}"), BARRIER_MESSAGES);
    }
    mover.ping(&mut received);
    for shard in 0..SHARDS {
        let problem = received.sequence_problem(&format!("publisher{shard}"), BARRIER_MESSAGES);
        assert!(problem.is_none(), "after the handoff: {problem:?}");
    }

    // Request-reply: the mover answers requests from both shards, each exactly once.
    mover.subscribe("svc.handoff", 3, &mut received);
    let mut requesters: Vec<Client> = (0..SHARDS).map(|shard| client_on_shard(&server, shard)).collect();
    for (shard, requester) in requesters.iter_mut().enumerate() {
        requester.subscribe(&format!("inbox.{shard}.*"), 1, &mut Received::default());
        for n in 1..=REQUESTS_PER_REQUESTER {
            requester.publish("svc.handoff", Some(&format!("inbox.{shard}.{n}")), &format!("requester{shard}:{n}"));
        }
        requester.ping(&mut Received::default());
    }
    for answered in 0..SHARDS * REQUESTS_PER_REQUESTER {
        let Incoming::Message(request) = mover.next(&format!("request {}", answered + 1)) else {
            panic!("PONG without a PING")
        };
        assert_eq!(request.subject, "svc.handoff", "{}", request.payload);
        mover.publish(request.reply.as_deref().expect("request has a reply subject"), None, &request.payload);
    }
    mover.ping(&mut received);
    for (shard, requester) in requesters.iter_mut().enumerate() {
        let mut answers = Received::default();
        requester.ping(&mut answers);
        let problem = answers.sequence_problem(&format!("requester{shard}"), REQUESTS_PER_REQUESTER);
        assert!(problem.is_none(), "answers: {problem:?}");
    }
    assert!(moved, "/varz connection_handoffs did not grow while shard 0 published to each stream");
    assert_handed_off(monitor_port, "barrier and request-reply");
}

#[test]
fn monitoring_sees_a_handed_off_connection_once() {
    let (server, monitor_port) = start_server();
    create_streams(&server);
    let mut received = Received::default();
    let mut mover = client_on_shard(&server, 0);
    mover.raw.send(b"SUB watched.subject 1\r\n");
    mover.subscribe("rep.>", 2, &mut received);
    let (moved, published) = move_to_another_shard(&mut mover, monitor_port, &mut received);

    let rows = connz_rows(monitor_port, "open", mover.cid);
    assert_eq!(rows.len(), 1, "/connz lists cid {} once: {rows:?}", mover.cid);
    assert_eq!(rows[0]["subscriptions"], 2, "{}", rows[0]);
    assert!(rows[0]["in_msgs"].as_u64().is_some_and(|in_msgs| in_msgs >= published), "{published}: {}", rows[0]);

    let cid = mover.cid;
    mover.raw.stream.shutdown(std::net::Shutdown::Both).expect("close the mover");
    drop(mover);
    let deadline = Instant::now() + WAIT;
    while connz_rows(monitor_port, "closed", cid).is_empty() {
        assert!(Instant::now() < deadline, "cid {cid} never listed as closed");
        thread::sleep(Duration::from_millis(50));
    }
    // A second record, from the shard the connection left, would come at about the same time.
    thread::sleep(Duration::from_millis(200));
    let closed = connz_rows(monitor_port, "closed", cid);
    assert_eq!(closed.len(), 1, "closed connections list cid {cid} once: {closed:?}");
    assert!(connz_rows(monitor_port, "open", cid).is_empty(), "cid {cid} is closed");
    assert!(moved, "/varz connection_handoffs did not grow while shard 0 published to each stream");
    assert_handed_off(monitor_port, "monitoring");
}

/// Connects async-nats clients until one lands on `shard`.
async fn async_client_on_shard(server: &TestServer, shard: u64) -> async_nats::Client {
    for _ in 0..PLACEMENT_ATTEMPTS_MAX {
        let options = async_nats::ConnectOptions::new().request_timeout(Some(WAIT));
        let client = options.connect(server.url()).await.expect("connect to jetcore");
        if client.server_info().client_id % SHARDS == shard {
            return client;
        }
        tokio::time::sleep(PLACEMENT_PAUSE).await;
    }
    panic!("no async-nats connection landed on shard {shard} in {PLACEMENT_ATTEMPTS_MAX} attempts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_nats_client_keeps_its_acks_and_messages_across_a_handoff() {
    let (server, monitor_port) = start_server();
    let publisher = async_nats::connect(server.url()).await.expect("connect publisher");
    let config =
        jetstream::stream::Config { name: "ASYNC".into(), subjects: vec!["async.stored".into()], ..Default::default() };
    jetstream::new(publisher.clone()).create_stream(config).await.expect("create stream");
    // One of the two movers is on the shard that does not own the stream.
    for shard in 0..SHARDS {
        let mover = async_client_on_shard(&server, shard).await;
        let context = jetstream::new(mover.clone());
        let subject = format!("async.feed.{shard}");
        let mut subscription = mover.subscribe(subject.clone()).await.expect("subscribe");
        await_interest(&mover, &publisher).await;
        let feeder = publisher.clone();
        let feeding = tokio::spawn(async move {
            for n in 1..=ASYNC_MESSAGES {
                feeder.publish(subject.clone(), n.to_string().into()).await.expect("publish");
                if n % FEED_BURST == 0 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
            feeder.flush().await.expect("flush");
        });
        let mut last_sequence = None;
        for n in 1..=ASYNC_STORES {
            let stored = async { context.publish("async.stored", n.to_string().into()).await?.await };
            let ack = tokio::time::timeout(WAIT, stored).await.expect("pub ack in time").expect("pub ack");
            assert_eq!(ack.stream, "ASYNC");
            assert!(last_sequence.is_none_or(|last| ack.sequence == last + 1), "{last_sequence:?} then {ack:?}");
            last_sequence = Some(ack.sequence);
        }
        feeding.await.expect("feeder task");
        for n in 1..=ASYNC_MESSAGES {
            let message = tokio::time::timeout(WAIT, subscription.next()).await;
            let message = message.unwrap_or_else(|_| panic!("shard {shard}: message {n} did not arrive"));
            let payload = message.expect("subscription open").payload;
            assert_eq!(payload.as_ref(), n.to_string().as_bytes(), "shard {shard}: message {n}");
        }
    }
    let monitor = tokio::task::spawn_blocking(move || assert_handed_off(monitor_port, "async-nats")).await;
    monitor.expect("monitor check");
}

/// A puller whose stream is on the other shard moves there: its pull requests and acks
/// count as stores do. Across the move every message arrives once, in stream order, and
/// every ack is applied (the consumer ends with nothing pending or unacknowledged).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_nats_puller_moves_to_its_stream_and_loses_no_message_or_ack() {
    let (server, monitor_port) = start_server();
    let publisher = async_nats::connect(server.url()).await.expect("connect publisher");
    let context = jetstream::new(publisher.clone());
    let config =
        jetstream::stream::Config { name: "PULL".into(), subjects: vec!["pull.>".into()], ..Default::default() };
    let stream = context.create_stream(config).await.expect("create stream");
    let mut acks = Vec::new();
    for n in 1..=PULL_MESSAGES {
        acks.push(context.publish(format!("pull.{}", n % 4), n.to_string().into()).await.expect("publish"));
    }
    for ack in acks {
        tokio::time::timeout(WAIT, ack).await.expect("pub ack in time").expect("pub ack");
    }
    // The publisher may have moved while storing: only the pullers' moves count below.
    let before = tokio::task::spawn_blocking(move || handoffs(monitor_port)).await.expect("monitor");
    // One of the two pullers is on the shard that does not own the stream.
    for shard in 0..SHARDS {
        let name = format!("C{shard}");
        let consumer_config = jetstream::consumer::pull::Config {
            durable_name: Some(name.clone()),
            ack_policy: jetstream::consumer::AckPolicy::Explicit,
            ..Default::default()
        };
        stream.create_consumer(consumer_config).await.expect("create consumer");
        let puller = async_client_on_shard(&server, shard).await;
        let consumer: jetstream::consumer::PullConsumer = jetstream::new(puller.clone())
            .get_stream("PULL")
            .await
            .expect("stream")
            .get_consumer(&name)
            .await
            .expect("consumer");
        let mut next = 1;
        while next <= PULL_MESSAGES {
            let batch = consumer.fetch().max_messages(PULL_BATCH).expires(WAIT).messages().await.expect("fetch");
            let mut batch = std::pin::pin!(batch);
            while let Some(message) = tokio::time::timeout(WAIT, batch.next()).await.expect("message in time") {
                let message = message.expect("a message");
                let sequence = message.info().expect("ack subject").stream_sequence;
                assert_eq!(sequence, next, "shard {shard}: stream sequence {sequence} where {next} was due");
                assert_eq!(message.payload.as_ref(), next.to_string().as_bytes());
                message.ack().await.expect("ack");
                next += 1;
            }
        }
        puller.flush().await.expect("flush acks");
        let mut consumer = consumer;
        let settled = async {
            loop {
                let info = consumer.info().await.expect("consumer info").clone();
                if info.num_ack_pending == 0 {
                    return info;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        let info = tokio::time::timeout(WAIT, settled).await.expect("every ack applied in time");
        assert_eq!((info.num_pending, info.ack_floor.stream_sequence), (0, PULL_MESSAGES), "shard {shard}: {info:?}");
    }
    let after = tokio::task::spawn_blocking(move || handoffs(monitor_port)).await.expect("monitor");
    eprintln!("pullers: /varz connection_handoffs {before:?} -> {after:?}");
    assert!(
        after.unwrap_or(0) > before.unwrap_or(0),
        "no puller moved to its stream's shard ({before:?} -> {after:?})"
    );
}

/// A connection that only receives moves to the shard its messages come from: deliveries
/// in a row from one other shard count as stores do, and the server's PING gives its
/// reader the op boundary to move at. Every message arrives once, in order, across it.
#[test]
fn a_subscriber_moves_to_the_shard_its_messages_come_from() {
    let (server, monitor_port) = start_server();
    let mut subscriber = client_on_shard(&server, 1);
    let mut publisher = client_on_shard(&server, 0);
    let mut received = Received::default();
    subscriber.subscribe("fan.in", 1, &mut received);
    publish_numbered(&mut publisher, "fan.in", "p", RECEIVED_MESSAGES);
    while received.numbered.get("p").map_or(0, Vec::len) < RECEIVED_MESSAGES as usize {
        match subscriber.next("the publisher's messages") {
            Incoming::Message(message) => received.take(message),
            Incoming::Pong => {}
        }
    }
    // A move in progress ends with this barrier answered.
    subscriber.ping(&mut received);
    if let Some(problem) = received.sequence_problem("p", RECEIVED_MESSAGES) {
        panic!("cid {}: {problem}", subscriber.cid);
    }
    assert_handed_off(monitor_port, "subscriber");
}

/// A push consumer's connection (ack none: it sends nothing once subscribed) moves to its
/// stream's shard, and gets every message once, in stream order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_nats_push_consumer_moves_to_its_stream_and_loses_nothing() {
    let (server, monitor_port) = start_server();
    let publisher = async_nats::connect(server.url()).await.expect("connect publisher");
    let context = jetstream::new(publisher.clone());
    let config =
        jetstream::stream::Config { name: "PUSH".into(), subjects: vec!["push.>".into()], ..Default::default() };
    context.create_stream(config).await.expect("create stream");
    // The publisher settles first (it moves to the stream's shard if it is not there):
    // only the receivers' moves count below.
    let mut stored = 0;
    for n in 1..=STORES_TO_MOVE * 4 {
        let ack = async { context.publish("push.warmup", n.to_string().into()).await?.await };
        tokio::time::timeout(WAIT, ack).await.expect("pub ack in time").expect("pub ack");
        stored += 1;
    }
    let before = tokio::task::spawn_blocking(move || handoffs(monitor_port)).await.expect("monitor");
    // Open until the moves are counted: a receiver's move starts when its client answers
    // the server's PING, after reading what came before it, and is counted once the new
    // shard writes the old one's output; a client that closes first ends it uncounted.
    let mut receivers = Vec::new();
    // One of the two receivers is on the shard that does not own the stream.
    for shard in 0..SHARDS {
        let receiver = async_client_on_shard(&server, shard).await;
        let stream = jetstream::new(receiver.clone()).get_stream("PUSH").await.expect("stream");
        let consumer_config = jetstream::consumer::push::Config {
            deliver_subject: format!("deliver.{shard}"),
            deliver_policy: jetstream::consumer::DeliverPolicy::New,
            ack_policy: jetstream::consumer::AckPolicy::None,
            ..Default::default()
        };
        let consumer = stream.create_consumer(consumer_config).await.expect("create consumer");
        let mut messages = consumer.messages().await.expect("push subscription");
        await_interest(&receiver, &publisher).await;
        // In rounds, so that the receiver's PONG comes back while later rounds are still
        // being delivered: its move then happens with messages on both sides of it.
        for round in 0..RECEIVED_MESSAGES / RECEIVED_ROUND {
            let mut acks = Vec::new();
            for n in round * RECEIVED_ROUND + 1..=(round + 1) * RECEIVED_ROUND {
                acks.push(context.publish("push.tick", n.to_string().into()).await.expect("publish"));
            }
            for ack in acks {
                tokio::time::timeout(WAIT, ack).await.expect("pub ack in time").expect("pub ack");
            }
        }
        for n in 1..=RECEIVED_MESSAGES {
            let message = tokio::time::timeout(WAIT, messages.next()).await;
            let message = message.unwrap_or_else(|_| panic!("shard {shard}: message {n} did not arrive"));
            let message = message.expect("subscription open").expect("a message");
            let sequence = message.info().expect("delivery metadata").stream_sequence;
            assert_eq!(sequence, stored + n, "shard {shard}: message {n}");
            assert_eq!(message.payload.as_ref(), n.to_string().as_bytes(), "shard {shard}: message {n}");
        }
        stored += RECEIVED_MESSAGES;
        receivers.push((receiver, messages));
    }
    let after = tokio::task::spawn_blocking(move || handoffs_above(monitor_port, before)).await.expect("monitor");
    eprintln!("push consumers: /varz connection_handoffs {before:?} -> {after:?}");
    assert!(
        after.unwrap_or(0) > before.unwrap_or(0),
        "no push consumer's connection moved to its stream's shard ({before:?} -> {after:?})"
    );
}

/// A connection that stores to streams in turns, each turn long enough for a move, moves
/// at most three times: each move doubles the streak the next one needs (8, 16, 32, then
/// 64, more than the three turns in a row that can go to one shard when four streams
/// take turns). Without that, it would move at every turn that changes shard.
#[test]
fn a_connection_working_on_two_shards_in_turns_settles() {
    let (server, monitor_port) = start_server();
    create_streams(&server);
    let mut mover = client_on_shard(&server, 0);
    let mut received = Received::default();
    mover.subscribe("rep.>", 1, &mut received);
    let turn = 2 * HANDOFF_AFTER;
    for round in 0..TURNS {
        let index = round % STREAMS.len();
        publish_stored(&mut mover, &format!("ho{index}.turns"), None, &format!("t{round}"), turn, &mut received);
        mover.ping(&mut received);
        if let Some(problem) = received.ack_problem(STREAMS[index], turn) {
            panic!("turn {round}: {problem}");
        }
    }
    // The stores' owners saw every message (the acks above); the count settles.
    thread::sleep(HANDOFF_COUNT_WAIT);
    let moves = handoffs(monitor_port).unwrap_or(0);
    eprintln!("{TURNS} turns of {turn} stores: /varz connection_handoffs = {moves}");
    assert!(moves <= 3, "{moves} moves in {TURNS} turns: the connection moved back and forth");
}
