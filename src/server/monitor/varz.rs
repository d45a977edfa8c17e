//! `/varz`: the server's settings and totals, with nats-server 2.15's field names, order
//! and counting rules. Totals are summed over the shards' snapshots: messages clients
//! published and were delivered, with header and payload bytes (protocol lines not
//! counted), echoes, API replies and JetStream deliveries included. What jetcore does not
//! have (cluster, gateways, leaf nodes, MQTT, websocket, a system account) is there with
//! nats-server's empty value.

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use serde_json::json;

use super::snapshot::{ShardSnapshot, SnapshotQuery};
use super::Monitor;
use crate::server::info::NATS_COMPATIBLE_VERSION;

/// How long `/varz` waits for the shards' counters before answering without them.
const COUNTERS_WAIT: Duration = Duration::from_secs(1);

pub fn render(monitor: &Monitor) -> String {
    value(monitor).to_string()
}

/// `/varz` as JSON (also read by `/metrics` for its `gnatsd_varz_*` series).
pub fn value(monitor: &Monitor) -> serde_json::Value {
    let (identity, options) = (&monitor.identity, &monitor.options);
    let now = SystemTime::now();
    let uptime = now.duration_since(monitor.started).unwrap_or_default();
    // Counters and JetStream usage only: no connection, stream or consumer details.
    let gathered = monitor.gather_within(SnapshotQuery::default(), COUNTERS_WAIT);
    let counters_known = gathered.is_some();
    let snapshots = gathered.unwrap_or_default();
    let sum = |read: fn(&ShardSnapshot) -> u64| snapshots.iter().map(read).sum::<u64>();
    let (in_msgs, in_bytes) = (sum(|s| s.stats.client_publishes), sum(|s| s.stats.client_publish_bytes));
    let (out_msgs, out_bytes) = (sum(|s| s.stats.client_deliveries), sum(|s| s.stats.client_delivery_bytes));
    let (slow_consumers, stale_connections) = (sum(|s| s.stats.slow_consumers), sum(|s| s.stats.stale_connections));
    let mut varz = json!({
        "server_id": identity.server_id,
        "server_name": identity.server_name,
        "version": NATS_COMPATIBLE_VERSION,
        "proto": 1,
        "go": format!("jetcore {}", env!("CARGO_PKG_VERSION")),
        "host": options.host,
        "port": identity.port,
        "max_connections": options.max_connections,
        "ping_interval": options.ping_interval.as_nanos() as u64,
        "ping_max": options.ping_max_outstanding,
        "http_host": options.host,
        "http_port": options.http_port.unwrap_or(0),
        "http_base_path": "",
        "https_port": options.https_port.unwrap_or(0),
        "auth_timeout": options.auth_timeout().as_secs(),
        "max_control_line": options.max_control_line,
        "max_payload": options.max_payload,
        "max_pending": options.max_pending,
        "cluster": {},
        "gateway": {},
        "leaf": {},
        "mqtt": {},
        "websocket": {},
    });
    let Some(fields) = varz.as_object_mut() else { return varz };
    if options.jetstream {
        fields.insert("jetstream".into(), super::jsz::varz_block(monitor, &snapshots));
    }
    let tls_timeout = options.tls_context.as_ref().map_or(crate::limits::TLS_TIMEOUT_DEFAULT, |c| c.settings.timeout);
    let more = json!({
        "tls_timeout": tls_timeout.as_secs_f64(),
        "write_deadline": options.write_deadline.as_nanos() as u64,
        "lame_duck_duration": options.lame_duck_duration.as_nanos() as u64,
        "lame_duck_grace_period": options.lame_duck_grace_period.as_nanos() as u64,
        "start": super::rfc3339(monitor.started),
        "now": super::rfc3339(now),
        "uptime": super::human_duration(uptime),
        "mem": super::process::resident_bytes(),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        // Go's GOMAXPROCS: the threads that run the server's work; jetcore's are its shards.
        "gomaxprocs": monitor.control.shard_count(),
        "cpu": monitor.cpu.percent(),
        "connections": identity.connections.load(Ordering::Relaxed),
        "total_connections": sum(|s| s.stats.connections_accepted),
        "routes": 0,
        "remotes": 0,
        "leafnodes": 0,
        "in_msgs": in_msgs,
        "in_bytes": in_bytes,
        "in_client_msgs": in_msgs,
        "in_client_bytes": in_bytes,
        "out_msgs": out_msgs,
        "out_bytes": out_bytes,
        "out_client_msgs": out_msgs,
        "out_client_bytes": out_bytes,
        "slow_consumers": slow_consumers,
        "stale_connections": stale_connections,
        "stalled_clients": sum(|s| s.stats.stalled_clients),
        "connection_handoffs": sum(|s| s.stats.connection_handoffs),
        "subscriptions": sum(|s| s.subscription_count as u64),
        "http_req_stats": monitor.requests_by_path(),
        "config_load_time": super::rfc3339(monitor.started),
        "config_digest": "",
        "slow_consumer_stats": { "clients": slow_consumers, "routes": 0, "gateways": 0, "leafs": 0 },
        "stale_connection_stats": { "clients": stale_connections, "routes": 0, "gateways": 0, "leafs": 0 },
        "disk_io_wait_stats": { "waiters": 0, "waits": 0, "wait_time": 0, "max_wait_time": 0 },
        "start_unix_seconds": monitor.started.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        "shards": monitor.control.shard_count(),
    });
    if let serde_json::Value::Object(more) = more {
        fields.extend(more);
    }
    if !counters_known {
        // The shards did not answer in time: leave out what only they know rather than
        // report zeros.
        for key in SHARD_COUNTERS {
            fields.remove(key);
        }
    }
    varz
}

/// The `/varz` fields summed from the shards' snapshots.
const SHARD_COUNTERS: [&str; 16] = [
    "total_connections",
    "in_msgs",
    "in_bytes",
    "in_client_msgs",
    "in_client_bytes",
    "out_msgs",
    "out_bytes",
    "out_client_msgs",
    "out_client_bytes",
    "slow_consumers",
    "stale_connections",
    "stalled_clients",
    "connection_handoffs",
    "subscriptions",
    "slow_consumer_stats",
    "stale_connection_stats",
];
