//! Resource limits under hostile input (reliability matrix rows 16–18): each limit is
//! answered as nats-server 2.15 answers the same bytes (checked side by side with
//! `tools/jetbench/src/attack`, results in perf/limits.md), and the server keeps serving
//! other connections during and after. No timing is asserted: a check waits for its
//! answer, bounded by the client's read timeout.

mod common;

use std::io::Read;
use std::time::Duration;

use common::{RawClient, TestServer};

fn connected(server: &TestServer) -> RawClient {
    let (mut client, _info) = RawClient::connect(&server.address());
    client.send(b"CONNECT {\"verbose\":false,\"headers\":true,\"protocol\":1}\r\nPING\r\n");
    assert_eq!(client.line(), "PONG\r\n");
    client
}

fn answers_ping(client: &mut RawClient) {
    client.send(b"PING\r\n");
    loop {
        let line = client.line();
        assert!(!line.is_empty(), "connection closed instead of answering PING");
        if line == "PONG\r\n" {
            return;
        }
    }
}

/// Sends `input` on a new connection; returns every line until the server closes it.
fn lines_until_closed(server: &TestServer, input: &[u8]) -> Vec<String> {
    let mut client = connected(server);
    client.send(input);
    let mut lines = Vec::new();
    loop {
        let line = client.line();
        if line.is_empty() {
            return lines;
        }
        lines.push(line);
    }
}

#[test]
fn oversize_and_inconsistent_frames_get_nats_errors_and_close() {
    let server = TestServer::start(&[]);
    let mut bystander = connected(&server);
    let mut long_line = b"PUB ".to_vec();
    long_line.extend(std::iter::repeat_n(b'a', 4097));
    long_line.extend_from_slice(b" 1\r\nx\r\n");
    let cases: [(&[u8], &[&str]); 6] = [
        (&long_line, &["-ERR 'maximum control line exceeded'\r\n"]),
        (b"SUB aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &[]),
        (b"PUB foo 2097152\r\n", &["-ERR 'Maximum Payload Violation'\r\n"]),
        (b"HPUB foo 10 2097152\r\n", &["-ERR 'Maximum Payload Violation'\r\n"]),
        // Header size above the total: nats-server closes without a word.
        (b"HPUB foo 20 10\r\nNATS/1.0\r\n\r\n0123456789\r\n", &[]),
        (b"PUB foo 9223372036854775808\r\n", &[]),
    ];
    for (index, (input, expected)) in cases.iter().enumerate() {
        if index == 1 {
            // A control line that never ends: closed once it passes the limit.
            let mut endless = input.to_vec();
            endless.extend(std::iter::repeat_n(b'a', 8192));
            assert_eq!(lines_until_closed(&server, &endless), vec!["-ERR 'maximum control line exceeded'\r\n"]);
            continue;
        }
        assert_eq!(lines_until_closed(&server, input), expected.to_vec(), "case {index}");
        answers_ping(&mut bystander);
    }
}

#[test]
fn max_subs_refuses_further_subscriptions_and_keeps_the_connection() {
    let config = tempfile::Builder::new().suffix(".conf").tempfile().unwrap();
    std::fs::write(config.path(), "max_subs: 3\n").unwrap();
    let server = TestServer::start(&["-c", &config.path().display().to_string()]);
    let mut client = connected(&server);
    client.send(b"SUB a 1\r\nSUB b 2\r\nSUB c 3\r\nSUB d 4\r\nSUB e 5\r\nPUB d 1\r\nx\r\nPUB a 1\r\nx\r\nPING\r\n");
    let expected = [
        "-ERR 'maximum subscriptions exceeded'\r\n",
        "-ERR 'maximum subscriptions exceeded'\r\n",
        "MSG a 1 1\r\n",
        "x\r\n",
        "PONG\r\n",
    ];
    for line in expected {
        assert_eq!(client.line(), line);
    }
    client.send(b"UNSUB 3\r\nSUB d 4\r\nPUB d 1\r\ny\r\nPING\r\n");
    for line in ["MSG d 4 1\r\n", "y\r\n", "PONG\r\n"] {
        assert_eq!(client.line(), line, "room again after an UNSUB");
    }
}

/// Many subscriptions on one connection and across connections: every SUB is accepted
/// (nats-server has no default limit), a bystander's PINGs are answered meanwhile, and
/// closing the connections releases them.
#[test]
fn many_subscriptions_leave_the_server_responsive() {
    const PER_CONNECTION: usize = 200_000;
    let server = TestServer::start(&["--shards", "2"]);
    let mut bystander = connected(&server);
    let mut heavy: Vec<RawClient> = (0..2).map(|_| connected(&server)).collect();
    for (connection, client) in heavy.iter_mut().enumerate() {
        let mut chunk = Vec::new();
        for index in 0..PER_CONNECTION {
            chunk.extend_from_slice(format!("SUB s.{connection}.{index} {index}\r\n").as_bytes());
            if chunk.len() > 256 * 1024 {
                client.send(&chunk);
                chunk.clear();
                answers_ping(&mut bystander);
            }
        }
        client.send(&chunk);
    }
    for client in &mut heavy {
        answers_ping(client);
    }
    let mut publisher = connected(&server);
    publisher.send(b"PUB s.1.199999 2\r\nhi\r\n");
    assert_eq!(heavy[1].line(), "MSG s.1.199999 199999 2\r\n");
    drop(heavy);
    for _ in 0..20 {
        answers_ping(&mut bystander);
    }
}

/// A subscriber that never reads while 100 MiB is published to it is cut off once its
/// queue passes max_pending (64 MiB), without an -ERR (nats-server writes none either);
/// the publisher and others are served throughout and memory stays bounded.
#[test]
fn a_subscriber_that_never_reads_is_cut_off_as_a_slow_consumer() {
    let server = TestServer::start(&["--shards", "1"]);
    let resident_before = server.resident_bytes();
    let mut subscriber = connected(&server);
    subscriber.send(b"SUB slow 1\r\n");
    answers_ping(&mut subscriber);
    let mut publisher = connected(&server);
    let mut frame = b"PUB slow 1048576\r\n".to_vec();
    frame.extend(std::iter::repeat_n(b'x', 1 << 20));
    frame.extend_from_slice(b"\r\n");
    for _ in 0..100 {
        publisher.send(&frame);
    }
    answers_ping(&mut publisher);
    let resident_growth = server.resident_bytes().saturating_sub(resident_before);
    // Only now read the subscriber: some messages, then the close (no -ERR line).
    subscriber.stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut received = Vec::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        match subscriber.stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => received.extend_from_slice(&buffer[..read]),
            Err(error) => panic!("the slow consumer was not closed: {error}"),
        }
    }
    assert!(received.len() < 100 << 20, "it was cut off before receiving everything");
    assert!(!String::from_utf8_lossy(&received).contains("-ERR"), "no -ERR, as nats-server");
    assert!(resident_growth < 3 * (64 << 20), "RSS grew by {} MiB", resident_growth >> 20);
    answers_ping(&mut publisher);
}

/// Connections that open and close leave nothing behind: after a warm-up round, two more
/// rounds of 20 000 plain connect/close (read INFO, close) must not grow the server's
/// memory. (Each connection's pinger used to be cancelled while asleep on its two-minute
/// timer, and glommio never frees a task cancelled so: ~120 bytes per connection.)
#[test]
fn connect_close_rounds_leave_no_memory_behind() {
    let server = TestServer::start(&["--shards", "1"]);
    let round = || {
        for _ in 0..20_000 {
            let (client, _info) = RawClient::connect(&server.address());
            drop(client);
        }
        // Let the server notice the last closes.
        let mut bystander = connected(&server);
        answers_ping(&mut bystander);
    };
    round();
    let resident_before = server.resident_bytes();
    round();
    round();
    let growth = server.resident_bytes().saturating_sub(resident_before);
    assert!(growth < 1 << 20, "40 000 connections left {} KiB behind", growth >> 10);
}
