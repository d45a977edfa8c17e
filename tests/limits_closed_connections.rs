//! A connect/close loop (a flapping client, a health check, an attacker that never logs
//! in) leaves nothing of its connections behind but the closed-connection list nats-server
//! also keeps: `/varz` counts them all and none open, and `/connz?state=closed` holds at
//! most nats-server's `max_closed_clients` (10 000) for the whole server, however many
//! shards share it (issue 33: each shard kept 10 000, twice nats-server's list and
//! ~12 MiB of RSS on two shards that never came back).

mod common;

use std::time::Duration;

use common::hub::monitor_json;
use common::{RawClient, TestServer};

/// nats-server's `max_closed_clients` default.
const CLOSED_CONNECTIONS_KEPT: u64 = 10_000;
/// Enough that the busier of two shards closes more than its share (half of the above).
const ROUNDS: u64 = 25_000;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn connect_close_loop_keeps_nats_servers_closed_list_across_shards() {
    let monitor_port = free_port();
    let server = TestServer::start(&["--shards", "2", "-m", &monitor_port.to_string()]);
    for _ in 0..ROUNDS {
        // INFO read: the server has served the connection before it sees the close.
        let (client, _info) = RawClient::connect(&server.address());
        drop(client);
    }
    // Wait for the server to notice the last closes (bounded by the attempts, not timed).
    let mut varz = monitor_json(monitor_port, "/varz");
    for _ in 0..600 {
        if varz["connections"] == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        varz = monitor_json(monitor_port, "/varz");
    }
    assert_eq!(varz["connections"], 0, "connections still open after the loop: {varz}");
    assert_eq!(varz["total_connections"], ROUNDS, "{varz}");

    let closed = monitor_json(monitor_port, "/connz?state=closed&limit=1");
    let total = closed["total"].as_u64().expect("total");
    assert!(
        total <= CLOSED_CONNECTIONS_KEPT,
        "{total} closed connections kept, nats-server keeps {CLOSED_CONNECTIONS_KEPT}"
    );
    // The busier shard closed at least half the rounds, more than its share: its share is full.
    assert!(total >= CLOSED_CONNECTIONS_KEPT / 2, "only {total} closed connections kept");
    assert_eq!(closed["connections"][0]["reason"], "Client Closed", "{closed}");
}
