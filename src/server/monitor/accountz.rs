//! `/accountz` and `/accstatz`, with nats-server's field names. jetcore has one
//! account, `$G` (nats-server's global account when no accounts are configured), no
//! system account: those answer with nats-server's empty values. (`/leafz`: `leafz.rs`.)

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use serde_json::json;

use super::http::Request;
use super::snapshot::{ShardSnapshot, SnapshotQuery};
use super::Monitor;

const GLOBAL_ACCOUNT: &str = "$G";

/// `/accountz`: the account names; `acc=$G` adds `account_detail`.
pub fn render(monitor: &Monitor, request: &Request) -> String {
    let mut accountz = json!({
        "server_id": monitor.identity.server_id,
        "now": super::rfc3339(SystemTime::now()),
        "accounts": [GLOBAL_ACCOUNT],
    });
    let asked = request.query.get("acc").map(|name| percent_decoded(name));
    if let (Some(GLOBAL_ACCOUNT), Some(fields)) = (asked.as_deref(), accountz.as_object_mut()) {
        fields.remove("accounts");
        let snapshots = monitor.gather(SnapshotQuery::default()).unwrap_or_default();
        let subscriptions: usize = snapshots.iter().map(|s| s.subscription_count).sum();
        let detail = json!({
            "account_name": GLOBAL_ACCOUNT,
            "update_time": super::rfc3339(monitor.started),
            "is_system": false,
            "expired": false,
            "complete": true,
            "jetstream_enabled": monitor.options.jetstream,
            "leafnode_connections": 0,
            "client_connections": monitor.identity.connections.load(Ordering::Relaxed),
            "subscriptions": subscriptions,
        });
        fields.insert("account_detail".into(), detail);
    }
    accountz.to_string()
}

/// `/accstatz`: per-account traffic. As nats-server, an account without connections is
/// listed only with `unused=1`.
pub fn render_statz(monitor: &Monitor, request: &Request) -> Option<String> {
    let snapshots = monitor.gather(SnapshotQuery::default())?;
    let connections = monitor.identity.connections.load(Ordering::Relaxed);
    let mut statz = Vec::new();
    if connections > 0 || request.flag("unused") {
        statz.push(account_stat(&snapshots, connections));
    }
    let body = json!({
        "server_id": monitor.identity.server_id,
        "now": super::rfc3339(SystemTime::now()),
        "account_statz": statz,
    });
    Some(body.to_string())
}

fn account_stat(snapshots: &[ShardSnapshot], connections: usize) -> serde_json::Value {
    let sum = |read: fn(&ShardSnapshot) -> u64| snapshots.iter().map(read).sum::<u64>();
    let none = json!({ "msgs": 0, "bytes": 0 });
    json!({
        "acc": GLOBAL_ACCOUNT,
        "name": GLOBAL_ACCOUNT,
        "conns": connections,
        "leafnodes": 0,
        "total_conns": connections,
        "num_subscriptions": sum(|s| s.subscription_count as u64),
        "sent": {
            "msgs": sum(|s| s.stats.client_deliveries),
            "bytes": sum(|s| s.stats.client_delivery_bytes),
            "gateways": none, "routes": none, "leafs": none,
        },
        "received": {
            "msgs": sum(|s| s.stats.client_publishes),
            "bytes": sum(|s| s.stats.client_publish_bytes),
            "gateways": none, "routes": none, "leafs": none,
        },
        "slow_consumers": sum(|s| s.stats.slow_consumers),
    })
}

/// `%24G` as `$G`: account names in query strings come percent-encoded.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes.get(index + 1..index + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[index], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                index += 3;
            }
            (byte, _) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
