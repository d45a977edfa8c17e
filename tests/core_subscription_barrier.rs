//! The subscription barrier across shards: once a connection's SUB is answered by the
//! PONG of a PING sent after it, every message another connection publishes afterwards
//! reaches it, whichever shards the two connections are on. A connection's shard is its
//! INFO `client_id` modulo the shard count, so each iteration opens connections until it
//! has the placement it wants: subscriber and publisher on different shards, both ways
//! round, and on the same shard.
//!
//! (Without the PING, neither jetcore nor nats-server promises anything: a SUB still
//! unread on one connection races a publish read on another. async-nats' `flush()` and
//! nats-py's `subscribe()` + `flush()` do not make that barrier, measured against
//! nats-server 2.15.1 too; see perf/mesh.md.)

mod common;

use common::{RawClient, TestServer};

const SHARDS: u64 = 2;
const ITERATIONS: usize = 1000;
const MESSAGES: usize = 20;

fn client_on_shard(server: &TestServer, shard: u64) -> RawClient {
    loop {
        let (mut client, info) = RawClient::connect(&server.address());
        let info: serde_json::Value = serde_json::from_str(info.trim_start_matches("INFO ").trim()).expect("INFO JSON");
        if info["client_id"].as_u64().expect("client_id") % SHARDS == shard {
            client.send(b"CONNECT {\"verbose\":false,\"pedantic\":false}\r\n");
            return client;
        }
    }
}

/// Reads up to the next PONG; the number of MSGs before it.
fn messages_until_pong(client: &mut RawClient) -> usize {
    let mut messages = 0;
    loop {
        let line = client.line();
        assert!(!line.is_empty(), "connection closed");
        if line == "PONG\r\n" {
            return messages;
        }
        if line.starts_with("MSG ") {
            messages += 1;
            client.line();
        }
    }
}

#[test]
fn a_subscription_answered_by_pong_receives_every_later_publish() {
    let server = TestServer::start(&["--shards", "2"]);
    let placements = [(0, 1), (1, 0), (0, 0), (1, 1)];
    let mut lost = Vec::new();
    for iteration in 0..ITERATIONS {
        let (subscriber_shard, publisher_shard) = placements[iteration % placements.len()];
        let mut subscriber = client_on_shard(&server, subscriber_shard);
        let mut publisher = client_on_shard(&server, publisher_shard);
        let subject = format!("barrier.{iteration}");
        subscriber.send(format!("SUB {subject} 1\r\nPING\r\n").as_bytes());
        assert_eq!(messages_until_pong(&mut subscriber), 0);
        let mut burst = String::new();
        for index in 0..MESSAGES {
            burst.push_str(&format!("PUB {subject} {}\r\n{index}\r\n", index.to_string().len()));
        }
        burst.push_str("PING\r\n");
        publisher.send(burst.as_bytes());
        messages_until_pong(&mut publisher);
        subscriber.send(b"PING\r\n");
        let received = messages_until_pong(&mut subscriber);
        if received != MESSAGES {
            lost.push((iteration, subscriber_shard, publisher_shard, received));
        }
    }
    assert!(lost.is_empty(), "(iteration, subscriber shard, publisher shard, received of {MESSAGES}): {lost:?}");
}
