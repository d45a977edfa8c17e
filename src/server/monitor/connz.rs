//! `/connz`: the open client connections, with nats-server's field names. Supports
//! `subs=1` (each connection's subscriptions), `offset`, `limit` and `sort` by `cid`
//! (default), `start`, `msgs_to`, `msgs_from`, `bytes_to`, `bytes_from`, `subs`,
//! `pending`.

use std::time::SystemTime;

use serde_json::json;

use super::http::Request;
use super::snapshot::{ConnectionSnapshot, SnapshotQuery};
use super::Monitor;

pub fn render(monitor: &Monitor, request: &Request) -> Option<String> {
    let subscriptions = request.flag("subs");
    let query = SnapshotQuery { connections: true, subscriptions, ..SnapshotQuery::default() };
    let mut connections: Vec<ConnectionSnapshot> =
        monitor.gather(query)?.into_iter().flat_map(|snapshot| snapshot.connections).collect();
    sort(&mut connections, request.query.get("sort").map(String::as_str).unwrap_or("cid"));
    let total = connections.len();
    let (page, offset, limit) = super::page(connections, request);
    let now = SystemTime::now();
    let connections: Vec<serde_json::Value> =
        page.iter().map(|connection| connection_json(connection, now, subscriptions)).collect();
    Some(
        json!({
            "server_id": monitor.identity.server_id,
            "now": super::rfc3339(now),
            "num_connections": connections.len(),
            "total": total,
            "offset": offset,
            "limit": limit,
            "connections": connections,
        })
        .to_string(),
    )
}

fn sort(connections: &mut [ConnectionSnapshot], by: &str) {
    match by {
        "start" => connections.sort_by_key(|c| c.started),
        "msgs_to" | "out_msgs" => connections.sort_by_key(|c| std::cmp::Reverse(c.out_msgs)),
        "msgs_from" | "in_msgs" => connections.sort_by_key(|c| std::cmp::Reverse(c.in_msgs)),
        "bytes_to" | "out_bytes" => connections.sort_by_key(|c| std::cmp::Reverse(c.out_bytes)),
        "bytes_from" | "in_bytes" => connections.sort_by_key(|c| std::cmp::Reverse(c.in_bytes)),
        "subs" => connections.sort_by_key(|c| std::cmp::Reverse(c.subscription_count)),
        "pending" => connections.sort_by_key(|c| std::cmp::Reverse(c.pending_bytes)),
        _ => connections.sort_by_key(|c| c.id),
    }
}

fn connection_json(connection: &ConnectionSnapshot, now: SystemTime, with_subscriptions: bool) -> serde_json::Value {
    let uptime = now.duration_since(connection.started).unwrap_or_default();
    let idle = now.duration_since(connection.last_activity).unwrap_or_default();
    let mut value = json!({
        "cid": connection.id,
        "kind": "Client",
        "type": "nats",
        "ip": connection.ip,
        "port": connection.port,
        "start": super::rfc3339(connection.started),
        "last_activity": super::rfc3339(connection.last_activity),
        "uptime": super::human_duration(uptime),
        "idle": super::human_duration(idle),
        "pending_bytes": connection.pending_bytes,
        "in_msgs": connection.in_msgs,
        "out_msgs": connection.out_msgs,
        "in_bytes": connection.in_bytes,
        "out_bytes": connection.out_bytes,
        "subscriptions": connection.subscription_count,
        "name": connection.name,
        "lang": connection.lang,
        "version": connection.version,
    });
    if let Some(fields) = value.as_object_mut() {
        if !connection.user.is_empty() {
            fields.insert("authorized_user".into(), connection.user.clone().into());
        }
        if with_subscriptions {
            let subjects: Vec<&str> = connection.subscriptions.iter().map(|s| s.subject.as_str()).collect();
            fields.insert("subscriptions_list".into(), subjects.into());
        }
    }
    value
}
