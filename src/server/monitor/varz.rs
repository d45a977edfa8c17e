//! `/varz`: the server's settings and totals, with nats-server's field names.

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use serde_json::json;

use super::snapshot::SnapshotQuery;
use super::Monitor;
use crate::server::info::NATS_COMPATIBLE_VERSION;

/// How long `/varz` waits for the shards' counters before answering without them.
const COUNTERS_WAIT: Duration = Duration::from_secs(1);

pub fn render(monitor: &Monitor) -> String {
    let (identity, options) = (&monitor.identity, &monitor.options);
    let now = SystemTime::now();
    let uptime = now.duration_since(monitor.started).unwrap_or_default();
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
        "auth_timeout": options.auth_timeout().as_secs(),
        "max_control_line": options.max_control_line,
        "max_payload": options.max_payload,
        "max_pending": options.max_pending,
        "write_deadline": options.write_deadline.as_nanos() as u64,
        "lame_duck_duration": options.lame_duck_duration.as_nanos() as u64,
        "lame_duck_grace_period": options.lame_duck_grace_period.as_nanos() as u64,
        "jetstream": { "config": super::jsz::config(options) },
        "start": super::rfc3339(monitor.started),
        "now": super::rfc3339(now),
        "uptime": super::human_duration(uptime),
        "start_unix_seconds": monitor.started.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        "mem": resident_bytes(),
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "connections": identity.connections.load(Ordering::Relaxed),
        "shards": monitor.control.shard_count(),
    });
    let query = SnapshotQuery::default();
    if let (Some(snapshots), Some(fields)) = (monitor.gather_within(query, COUNTERS_WAIT), varz.as_object_mut()) {
        let sum = |f: fn(&super::snapshot::ShardSnapshot) -> u64| snapshots.iter().map(f).sum::<u64>();
        fields.insert("total_connections".into(), sum(|s| s.stats.connections_accepted).into());
        fields.insert("in_msgs".into(), sum(|s| s.stats.client_publishes).into());
        fields.insert("in_bytes".into(), sum(|s| s.stats.client_publish_bytes).into());
        fields.insert("subscriptions".into(), sum(|s| s.subscription_count as u64).into());
    }
    varz.to_string()
}

/// The process's resident memory (Linux `/proc/self/statm`), 0 when unknown.
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64;
    pages * page_size
}
