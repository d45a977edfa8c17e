//! `/jsz`: JetStream totals, with nats-server's field names. `accounts=1` (or `streams=1`,
//! `consumers=1`, which imply it) adds `account_details` for jetcore's one account (`$G`)
//! with `stream_detail` and `consumer_detail`, as nats-server nests them.

use std::time::SystemTime;

use serde_json::json;

use super::http::Request;
use super::snapshot::{ShardSnapshot, SnapshotQuery};
use super::Monitor;
use crate::jetstream::service::{Usage, API_LEVEL};
use crate::server::options::Options;

/// The `config` block (also under `/varz`'s `jetstream`). `sync_always` is omitted when
/// false, as nats-server omits it.
pub fn config(options: &Options) -> serde_json::Value {
    let mut config = json!({
        "max_memory": options.max_memory_store.unwrap_or(0),
        "max_storage": options.max_file_store.unwrap_or(0),
        "store_dir": options.store_dir.join("jetstream").display().to_string(),
        "sync_interval": options.sync_interval.map_or(0, |interval| interval.as_nanos() as u64),
    });
    if let (None, Some(fields)) = (options.sync_interval, config.as_object_mut()) {
        fields.insert("sync_always".into(), true.into());
    }
    config
}

/// The server-wide JetStream limits nats-server reports (`max_request_batch`,
/// `max_ack_pending`, `max_ha_assets`, `duplicate_window_max`, `default_max_consumers`…,
/// each omitted when unset). jetcore sets none of them.
fn limits() -> serde_json::Value {
    json!({})
}

/// The usage figures nats-server writes at the top of `/jsz` and under `/varz`'s
/// `jetstream.stats`.
fn stats(usage: &Usage) -> serde_json::Value {
    json!({
        "memory": usage.memory_bytes,
        "storage": usage.storage_bytes,
        "reserved_memory": usage.reserved_memory_bytes,
        "reserved_storage": usage.reserved_storage_bytes,
        "accounts": 1,
        "ha_assets": 0,
        "api": { "level": API_LEVEL, "total": usage.api_requests, "errors": usage.api_errors },
    })
}

/// `/varz`'s `jetstream` block: config, stats and limits (stats left out when the shards
/// did not answer: `snapshots` is empty).
pub fn varz_block(monitor: &Monitor, snapshots: &[ShardSnapshot]) -> serde_json::Value {
    let mut block = json!({ "config": config(&monitor.options), "limits": limits() });
    if let (false, Some(fields)) = (snapshots.is_empty(), block.as_object_mut()) {
        fields.insert("stats".into(), stats(&total_usage(snapshots)));
    }
    block
}

pub fn render(monitor: &Monitor, request: &Request) -> Option<String> {
    let consumers = request.flag("consumers");
    let streams = consumers || request.flag("streams");
    let accounts = streams || request.flag("accounts");
    let query = SnapshotQuery { jetstream: true, consumers: accounts, ..SnapshotQuery::default() };
    let snapshots = monitor.gather(query)?;
    let usage = total_usage(&snapshots);
    let messages: u64 = snapshots.iter().flat_map(|s| &s.streams).map(|info| info.state.messages).sum();
    let bytes: u64 = snapshots.iter().flat_map(|s| &s.streams).map(|info| info.state.bytes).sum();
    let mut jsz = stats(&usage);
    let more = json!({
        "server_id": monitor.identity.server_id,
        "now": super::rfc3339(SystemTime::now()),
        "config": config(&monitor.options),
        "limits": limits(),
        "streams": usage.streams,
        "consumers": usage.consumers,
        "messages": messages,
        "bytes": bytes,
        "total": 1,
    });
    if let (Some(fields), serde_json::Value::Object(more)) = (jsz.as_object_mut(), more) {
        fields.extend(more);
    }
    if let (true, Some(fields)) = (accounts, jsz.as_object_mut()) {
        let leader = monitor.identity.server_name.as_str();
        let details = account_detail(&snapshots, &usage, leader, streams, consumers);
        fields.insert("account_details".into(), vec![details].into());
    }
    Some(jsz.to_string())
}

fn total_usage(snapshots: &[ShardSnapshot]) -> Usage {
    let mut total = Usage::default();
    for usage in snapshots.iter().map(|snapshot| snapshot.usage) {
        total += usage;
    }
    total
}

fn account_detail(
    snapshots: &[ShardSnapshot],
    usage: &Usage,
    leader: &str,
    streams: bool,
    consumers: bool,
) -> serde_json::Value {
    let mut detail = json!({
        "name": "$G",
        "id": "$G",
        "memory": usage.memory_bytes,
        "storage": usage.storage_bytes,
        "reserved_memory": usage.reserved_memory_bytes,
        "reserved_storage": usage.reserved_storage_bytes,
        "accounts": 0,
        "ha_assets": 0,
        "api": { "level": 0, "total": usage.api_requests, "errors": usage.api_errors },
    });
    if !streams {
        return detail;
    }
    let mut stream_details = Vec::new();
    for snapshot in snapshots {
        for info in &snapshot.streams {
            let mut stream = json!({
                "name": info.config.name,
                "created": info.created,
                "cluster": { "leader": leader },
                "state": info.state,
                "config": info.config,
            });
            if let (true, Some(fields)) = (consumers, stream.as_object_mut()) {
                let of_stream: Vec<&serde_json::Value> = snapshot
                    .consumers
                    .iter()
                    .filter(|c| c.get("stream_name").and_then(|n| n.as_str()) == Some(info.config.name.as_str()))
                    .collect();
                fields.insert("consumer_detail".into(), json!(of_stream));
            }
            stream_details.push(stream);
        }
    }
    stream_details.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    if let Some(fields) = detail.as_object_mut() {
        fields.insert("stream_detail".into(), stream_details.into());
    }
    detail
}
