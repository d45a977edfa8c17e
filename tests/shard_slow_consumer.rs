//! A slow consumer is cut off at `max_pending` wherever its publisher is. The subscriber
//! never reads while its publisher sends four times `max_pending`; only after the
//! publisher's PONG does it read. On one shard the publisher is held back while the
//! subscriber's queue is congested, so by that PONG the queue has passed `max_pending` and
//! the subscriber was closed (no `-ERR`: nats-server 2.15 closes a slow consumer without
//! one, `markConnAsClosed(SlowConsumerPendingBytes)`). Across shards the same must hold:
//! what is on its way to the subscriber counts against its limit, instead of waiting
//! uncounted in the mesh until the subscriber starts reading and drains it all.
//!
//! A connection's shard is its INFO `client_id` modulo the shard count, so each case opens
//! connections until it has the placement it wants. No timing is asserted: the reads are
//! bounded by the client's read timeout.

mod common;

use std::io::Read;
use std::time::Duration;

use common::{RawClient, TestServer};

const SHARDS: u64 = 2;
const PENDING_MAX: usize = 8 << 20;
const MESSAGE_BYTES: usize = 32 << 10;
const MESSAGES: usize = 4 * PENDING_MAX / MESSAGE_BYTES;

fn server() -> (TestServer, tempfile::NamedTempFile) {
    let file = tempfile::Builder::new().suffix(".conf").tempfile().unwrap();
    std::fs::write(file.path(), format!("max_pending: {PENDING_MAX}\n")).unwrap();
    let path = file.path().display().to_string();
    (TestServer::start(&["-c", path.as_str(), "--shards", "2"]), file)
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

/// Publishes `MESSAGES` to a subscriber that reads nothing until the publisher's PONG;
/// returns the bytes the subscriber then received before the server closed it.
fn received_by_slow_subscriber(subscriber_shard: u64, publisher_shard: u64) -> Vec<u8> {
    let (server, _config) = server();
    let mut subscriber = client_on_shard(&server, subscriber_shard);
    subscriber.send(b"SUB slow 1\r\n");
    answers_ping(&mut subscriber);
    let mut publisher = client_on_shard(&server, publisher_shard);
    let mut frame = format!("PUB slow {MESSAGE_BYTES}\r\n").into_bytes();
    frame.extend(std::iter::repeat_n(b'x', MESSAGE_BYTES));
    frame.extend_from_slice(b"\r\n");
    let mut burst = Vec::new();
    for _ in 0..MESSAGES {
        burst.extend_from_slice(&frame);
    }
    publisher.stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    publisher.send(&burst);
    answers_ping(&mut publisher);
    subscriber.stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut received = Vec::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        match subscriber.stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => received.extend_from_slice(&buffer[..read]),
            Err(error) => panic!(
                "shards {subscriber_shard}/{publisher_shard}: the slow consumer was not closed \
                 ({} of {} bytes received): {error}",
                received.len(),
                MESSAGES * MESSAGE_BYTES
            ),
        }
    }
    // The publisher is served throughout and after.
    answers_ping(&mut publisher);
    received
}

#[test]
fn a_slow_consumer_is_cut_off_at_max_pending_on_any_placement() {
    for (subscriber_shard, publisher_shard) in [(0, 1), (1, 0), (0, 0)] {
        let received = received_by_slow_subscriber(subscriber_shard, publisher_shard);
        assert!(
            received.len() < MESSAGES * MESSAGE_BYTES,
            "subscriber on shard {subscriber_shard}, publisher on shard {publisher_shard}: \
             received everything ({} bytes), never cut off",
            received.len()
        );
        assert!(!String::from_utf8_lossy(&received).contains("-ERR"), "no -ERR, as nats-server");
    }
}
