//! Idle shards sleep, and wake for work: an idle server's shard threads do not wake on
//! timers (no periodic maintenance, state writer, consumer pump or mailbox poll), and a
//! parked shard is woken by whatever needs it: a message from another shard over the
//! mesh (its doorbell), a request from a plain thread (monitoring), without a lost
//! wake-up when the message comes just as the receiver parks. Nothing else would rescue
//! a lost wake-up now: a delivery or answer that never comes fails the test (the client
//! reads time out after 5 s).

mod common;

use std::io::{Read, Write};
use std::time::Duration;

use common::{RawClient, TestServer};

const SHARDS: u64 = 2;
const ITERATIONS: usize = 400;

/// `(state, voluntary context switches)` of each shard, in shard order: its executor
/// thread and glommio's helper thread of the same name together (state `S` when both
/// sleep).
fn shard_threads(server: &TestServer) -> Vec<(char, u64)> {
    let mut shards = Vec::new();
    for shard in 0..SHARDS {
        let name = format!("jetcore-shard-{shard}");
        let (mut state, mut switches, mut threads) = ('S', 0, 0);
        let tasks = std::fs::read_dir(format!("/proc/{}/task", server.pid())).expect("task dir");
        for task in tasks.flatten() {
            let path = task.path();
            let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
            if comm.trim() != name {
                continue;
            }
            let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
            let field = |key: &str| status.lines().find_map(|line| line.strip_prefix(key)).map(str::trim).unwrap_or("");
            if !field("State:").starts_with('S') {
                state = 'R';
            }
            switches += field("voluntary_ctxt_switches:").parse::<u64>().unwrap_or(0);
            threads += 1;
        }
        assert!(threads > 0, "no thread named {name}");
        shards.push((state, switches));
    }
    shards
}

/// Waits until every shard thread sleeps (state S: parked in io_uring).
fn wait_until_parked(server: &TestServer) {
    while !shard_threads(server).iter().all(|(state, _)| *state == 'S') {
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn client_on_shard(server: &TestServer, shard: u64) -> RawClient {
    loop {
        let (mut client, info) = RawClient::connect(&server.address());
        let info: serde_json::Value = serde_json::from_str(info.trim_start_matches("INFO ").trim()).expect("INFO JSON");
        if info["client_id"].as_u64().expect("client_id") % SHARDS == shard {
            client.send(b"CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n");
            assert_eq!(client.line(), "PONG\r\n");
            return client;
        }
    }
}

#[test]
fn a_parked_shard_is_woken_by_every_message_from_another_shard() {
    // Moves off: each client receives only from the other shard, so it would move there
    // (after a server PING) and its messages would stop crossing the mesh.
    let server = TestServer::start_with_env(&["--shards", "2"], &[("JETCORE_HANDOFF_AFTER", "0")]);
    let mut clients = [client_on_shard(&server, 0), client_on_shard(&server, 1)];
    for (index, client) in clients.iter_mut().enumerate() {
        client.send(format!("SUB wake.{index} 1\r\nPING\r\n").as_bytes());
        assert_eq!(client.line(), "PONG\r\n");
    }
    // The subscriptions are known on the other shard once a probe crosses over.
    for (to, from) in [(0, 1), (1, 0)] {
        loop {
            clients[from].send(format!("PUB wake.{to} 5\r\nprobe\r\nPING\r\n").as_bytes());
            assert_eq!(clients[from].line(), "PONG\r\n");
            clients[to].send(b"PING\r\n");
            let line = clients[to].line();
            if line.starts_with("MSG ") {
                clients[to].line();
                assert_eq!(clients[to].line(), "PONG\r\n");
                break;
            }
            assert_eq!(line, "PONG\r\n");
        }
    }
    let mut lost = Vec::new();
    for iteration in 0..ITERATIONS {
        let (to, from) = if iteration % 2 == 0 { (0, 1) } else { (1, 0) };
        // Every other iteration waits until both shards sleep; the others send after a
        // short varying pause, to land anywhere in the receiver's way to sleep (its spin,
        // its last look at the rings, its park).
        if iteration % 4 < 2 {
            wait_until_parked(&server);
        } else {
            std::thread::sleep(Duration::from_micros(20 * (iteration as u64 % 13)));
        }
        let payload = iteration.to_string();
        clients[from].send(format!("PUB wake.{to} {}\r\n{payload}\r\n", payload.len()).as_bytes());
        // No PING to the receiver: only the mesh's wake-up can bring this message.
        let header = clients[to].line();
        if !header.starts_with("MSG ") {
            lost.push((iteration, from, to, header));
            break;
        }
        assert_eq!(clients[to].line(), format!("{payload}\r\n"));
    }
    assert!(lost.is_empty(), "(iteration, from shard, to shard, what came instead): {lost:?}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// GET `path` from the monitor; the status code.
fn get_status(port: u16, path: &str) -> u16 {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to monitor");
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.split_whitespace().nth(1).and_then(|status| status.parse().ok()).unwrap_or(0)
}

#[test]
fn parked_shards_answer_requests_from_plain_threads() {
    let monitor_port = free_port();
    let server = TestServer::start(&["--shards", "2", "-m", &monitor_port.to_string()]);
    for iteration in 0..100 {
        wait_until_parked(&server);
        // Gathered from every shard through their control mailboxes.
        let status = get_status(monitor_port, "/connz");
        assert_eq!(status, 200, "iteration {iteration}: no answer from parked shards");
    }
}

#[test]
fn an_idle_server_does_not_wake_its_shards() {
    let server = TestServer::start(&["--shards", "2"]);
    // Some state that used to keep timers armed: a stream with messages, a durable.
    let (mut client, _) = RawClient::connect(&server.address());
    client.send(b"CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true}\r\n");
    let requests: [(&str, &str); 2] = [
        ("$JS.API.STREAM.CREATE.IDLE", r#"{"name":"IDLE","subjects":["idle.>"]}"#),
        (
            "$JS.API.CONSUMER.CREATE.IDLE.D",
            r#"{"stream_name":"IDLE","config":{"durable_name":"D","ack_policy":"explicit"}}"#,
        ),
    ];
    client.send(b"SUB _INBOX.idle 1\r\n");
    for (subject, body) in requests.iter().chain([("idle.x", "hello")].iter()) {
        client.send(format!("PUB {subject} _INBOX.idle {}\r\n{body}\r\n", body.len()).as_bytes());
        let header = client.line();
        assert!(header.starts_with("MSG "), "{subject}: {header}");
        let reply = client.line();
        assert!(!reply.contains("\"error\""), "{subject}: {reply}");
    }
    drop(client);
    std::thread::sleep(Duration::from_millis(500)); // state writes and maintenance settle
    let before = shard_threads(&server);
    std::thread::sleep(Duration::from_secs(2));
    let after = shard_threads(&server);
    let woken: Vec<u64> = before.iter().zip(&after).map(|(before, after)| after.1 - before.1).collect();
    // A wake-up or two for stragglers; a periodic timer would be hundreds.
    assert!(woken.iter().all(|&wakes| wakes <= 10), "shard wake-ups over 2 s of idle: {woken:?}");
}
