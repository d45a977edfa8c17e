//! `/connz`: client connections, with nats-server's field names and query options:
//! `state=open|closed|all`, `cid=N`, `subs=1` (subjects) or `subs=detail`, `auth=1`,
//! `acc=NAME`, `mqtt_client=ID`, `offset`, `limit`, and `sort` by `cid` (default), `start`,
//! `subs`, `pending`, `msgs_to`, `msgs_from`, `bytes_to`, `bytes_from`, `last`, `idle`,
//! `uptime`, and for closed connections `stop` and `reason`. Counters follow nats-server:
//! `in_msgs`/`in_bytes` are what the client published, `out_msgs`/`out_bytes` what it was
//! delivered (every subscription, echoes included), bytes being headers and payload.

use std::time::SystemTime;

use serde_json::json;

use super::http::Request;
use super::snapshot::{ConnectionSnapshot, SnapshotQuery};
use super::Monitor;
use crate::server::outbound::CloseReason;

/// One row: an open connection, or a closed one with when and why it closed.
struct Row {
    connection: ConnectionSnapshot,
    closed: Option<(SystemTime, CloseReason)>,
}

pub fn render(monitor: &Monitor, request: &Request) -> Option<String> {
    let detail = request.query.get("subs").is_some_and(|v| v == "detail");
    let subscriptions = detail || request.flag("subs");
    let state = request.query.get("state").map(String::as_str).unwrap_or("open");
    let (open, closed) = match state {
        "closed" => (false, true),
        "any" | "all" => (true, true),
        _ => (true, false),
    };
    let query = SnapshotQuery { connections: open, subscriptions: open && subscriptions, closed, ..Default::default() };
    let snapshots = monitor.gather(query)?;
    let mut rows = Vec::new();
    for snapshot in snapshots {
        rows.extend(snapshot.connections.into_iter().map(|connection| Row { connection, closed: None }));
        rows.extend(
            snapshot
                .closed
                .into_iter()
                .map(|entry| Row { connection: entry.connection, closed: Some((entry.stopped, entry.reason)) }),
        );
    }
    if let Some(asked) = request.query.get("acc").cloned() {
        rows.retain(|row| row.connection.account == asked);
    }
    // jetcore has no MQTT clients: asking for one matches none.
    if request.query.contains_key("mqtt_client") {
        rows.clear();
    }
    if let Some(cid) = request.query.get("cid").and_then(|cid| cid.parse::<u64>().ok()) {
        rows.retain(|row| row.connection.id == cid);
    }
    let now = SystemTime::now();
    sort(&mut rows, request.query.get("sort").map(String::as_str).unwrap_or("cid"), now);
    let total = rows.len();
    let (page, offset, limit) = super::page(rows, request);
    let shown = Shown { subscriptions, detail, auth: request.flag("auth") };
    let connections: Vec<serde_json::Value> = page.iter().map(|row| connection_json(row, now, shown)).collect();
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

fn sort(rows: &mut [Row], by: &str, now: SystemTime) {
    use std::cmp::Reverse;
    let stopped = |row: &Row| row.closed.as_ref().map_or(now, |(stop, _)| *stop);
    match by {
        "start" => rows.sort_by_key(|r| r.connection.started),
        "msgs_to" | "out_msgs" => rows.sort_by_key(|r| Reverse(r.connection.out_msgs)),
        "msgs_from" | "in_msgs" => rows.sort_by_key(|r| Reverse(r.connection.in_msgs)),
        "bytes_to" | "out_bytes" => rows.sort_by_key(|r| Reverse(r.connection.out_bytes)),
        "bytes_from" | "in_bytes" => rows.sort_by_key(|r| Reverse(r.connection.in_bytes)),
        "subs" => rows.sort_by_key(|r| Reverse(r.connection.subscription_count)),
        "pending" => rows.sort_by_key(|r| Reverse(r.connection.pending_bytes)),
        "last" => rows.sort_by_key(|r| Reverse(r.connection.last_activity)),
        "idle" => rows.sort_by_key(|r| Reverse(stopped(r).duration_since(r.connection.last_activity).ok())),
        "uptime" => rows.sort_by_key(|r| Reverse(stopped(r).duration_since(r.connection.started).ok())),
        "stop" => rows.sort_by_key(|r| Reverse(r.closed.as_ref().map(|(stop, _)| *stop))),
        "reason" => rows.sort_by_key(|r| r.closed.as_ref().map(|(_, reason)| reason_text(reason))),
        _ => rows.sort_by_key(|r| r.connection.id),
    }
}

/// nats-server's `ClosedState` text for a close reason.
pub fn reason_text(reason: &CloseReason) -> &'static str {
    match reason {
        CloseReason::ClientClosed => "Client Closed",
        CloseReason::SlowConsumer => "Slow Consumer (Pending Bytes)",
        CloseReason::ProtocolError => "Protocol Violation",
        CloseReason::StaleConnection => "Stale Connection",
        CloseReason::ServerShutdown => "Server Shutdown",
        CloseReason::WriteError => "Write Error",
    }
}

/// nats-server's `rtt`: Go's duration text, truncated to microseconds below a
/// millisecond (`314µs`), `0s` when not measured yet.
fn rtt_text(rtt: std::time::Duration) -> String {
    let nanos = rtt.as_nanos() as i64;
    let nanos = if (1_000..1_000_000).contains(&nanos) { nanos - nanos % 1_000 } else { nanos };
    crate::protocol::go_duration::format_go_duration(nanos)
}

#[derive(Clone, Copy)]
struct Shown {
    subscriptions: bool,
    detail: bool,
    auth: bool,
}

fn connection_json(row: &Row, now: SystemTime, shown: Shown) -> serde_json::Value {
    let connection = &row.connection;
    let until = row.closed.as_ref().map_or(now, |(stop, _)| *stop);
    let uptime = until.duration_since(connection.started).unwrap_or_default();
    let idle = until.duration_since(connection.last_activity).unwrap_or_default();
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
    });
    let Some(fields) = value.as_object_mut() else { return value };
    // nats-server omits empty strings here.
    for (key, text) in [("name", &connection.name), ("lang", &connection.lang), ("version", &connection.version)] {
        if !text.is_empty() {
            fields.insert(key.into(), text.clone().into());
        }
    }
    if let Some((stop, reason)) = &row.closed {
        fields.insert("stop".into(), super::rfc3339(*stop));
        fields.insert("reason".into(), reason_text(reason).into());
    }
    fields.insert("rtt".into(), rtt_text(connection.rtt).into());
    if let Some(tls) = &connection.tls {
        fields.insert("tls_version".into(), tls.version.into());
        fields.insert("tls_cipher_suite".into(), tls.cipher_suite.clone().into());
        if tls.first {
            fields.insert("tls_first".into(), true.into());
        }
    }
    if shown.auth {
        if !connection.user.is_empty() {
            fields.insert("authorized_user".into(), connection.user.clone().into());
        }
        // nats-server names the account (and its tag, the name without a JWT) only when
        // accounts are configured; the global account shows its tag alone.
        if connection.account != crate::server::account::GLOBAL_ACCOUNT_NAME {
            fields.insert("account".into(), connection.account.clone().into());
        }
        fields.insert("name_tag".into(), connection.account.clone().into());
    }
    if shown.subscriptions && !connection.subscriptions.is_empty() {
        if shown.detail {
            let detail: Vec<serde_json::Value> =
                connection.subscriptions.iter().map(super::subsz::subscription_detail).collect();
            fields.insert("subscriptions_list_detail".into(), detail.into());
        } else {
            let subjects: Vec<&str> = connection.subscriptions.iter().map(|s| s.subject.as_str()).collect();
            fields.insert("subscriptions_list".into(), subjects.into());
        }
    }
    value
}
