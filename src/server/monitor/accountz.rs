//! `/accountz` and `/accstatz`, with nats-server's field names. Without an `accounts`
//! block jetcore has one account, `$G`; with one, each configured account is listed and
//! counted from its open connections. No system account: that answers with
//! nats-server's empty values. (`/leafz`: `leafz.rs`.)

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use serde_json::json;

use super::http::Request;
use super::snapshot::{ShardSnapshot, SnapshotQuery};
use super::Monitor;

const GLOBAL_ACCOUNT: &str = "$G";

/// `/accountz`: the account names; `acc=NAME` adds that account's `account_detail`.
pub fn render(monitor: &Monitor, request: &Request) -> String {
    let names: Vec<&str> = monitor.options.accounts.iter().map(|(_, account)| account.name.as_str()).collect();
    let mut accountz = json!({
        "server_id": monitor.identity.server_id,
        "now": super::rfc3339(SystemTime::now()),
        "accounts": names,
    });
    let asked = request.query.get("acc").cloned();
    let accounts = &monitor.options.accounts;
    let asked_id = asked.as_deref().and_then(|name| accounts.id_of(name));
    if let (Some(id), Some(name), Some(fields)) = (asked_id, asked.as_deref(), accountz.as_object_mut()) {
        fields.remove("accounts");
        let query = SnapshotQuery { connections: true, ..SnapshotQuery::default() };
        let snapshots = monitor.gather(query).unwrap_or_default();
        let (connections, subscriptions) = match accounts.configured() {
            false => (
                monitor.identity.connections.load(Ordering::Relaxed),
                snapshots.iter().map(|s| s.subscription_count).sum::<usize>(),
            ),
            true => {
                let mine = snapshots.iter().flat_map(|s| s.connections.iter()).filter(|c| c.account == name);
                mine.fold((0, 0), |(count, subscriptions), c| (count + 1, subscriptions + c.subscription_count))
            }
        };
        let jetstream = monitor.options.jetstream && accounts.jetstream_enabled(id);
        let detail = json!({
            "account_name": name,
            "update_time": super::rfc3339(monitor.started),
            "is_system": false,
            "expired": false,
            "complete": true,
            "jetstream_enabled": jetstream,
            "leafnode_connections": 0,
            "client_connections": connections,
            "subscriptions": subscriptions,
        });
        fields.insert("account_detail".into(), detail);
    }
    accountz.to_string()
}

/// `/accstatz`: per-account traffic. As nats-server, an account without connections is
/// listed only with `unused=1`.
pub fn render_statz(monitor: &Monitor, request: &Request) -> Option<String> {
    let query = SnapshotQuery { connections: monitor.options.accounts.configured(), ..SnapshotQuery::default() };
    let snapshots = monitor.gather(query)?;
    let connections = monitor.identity.connections.load(Ordering::Relaxed);
    let mut statz = Vec::new();
    if monitor.options.accounts.configured() {
        for (_, account) in monitor.options.accounts.iter() {
            let stat = configured_account_stat(&snapshots, &account.name);
            if stat["conns"] != 0 || request.flag("unused") {
                statz.push(stat);
            }
        }
    } else if connections > 0 || request.flag("unused") {
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

/// One configured account's figures, summed over its open connections.
fn configured_account_stat(snapshots: &[ShardSnapshot], name: &str) -> serde_json::Value {
    let connections = || snapshots.iter().flat_map(|s| s.connections.iter()).filter(|c| c.account == name);
    let sum = |read: fn(&super::snapshot::ConnectionSnapshot) -> u64| connections().map(read).sum::<u64>();
    let none = json!({ "msgs": 0, "bytes": 0 });
    let count = connections().count();
    json!({
        "acc": name,
        "name": name,
        "conns": count,
        "leafnodes": 0,
        "total_conns": count,
        "num_subscriptions": sum(|c| c.subscription_count as u64),
        "sent": { "msgs": sum(|c| c.out_msgs), "bytes": sum(|c| c.out_bytes),
            "gateways": none, "routes": none, "leafs": none },
        "received": { "msgs": sum(|c| c.in_msgs), "bytes": sum(|c| c.in_bytes),
            "gateways": none, "routes": none, "leafs": none },
        "slow_consumers": 0,
    })
}
