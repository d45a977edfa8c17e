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

/// The `config` block (also under `/varz`'s `jetstream`).
pub fn config(options: &Options) -> serde_json::Value {
    json!({
        "max_memory": options.max_memory_store.unwrap_or(0),
        "max_storage": options.max_file_store.unwrap_or(0),
        "store_dir": options.store_dir.join("jetstream").display().to_string(),
        "sync_interval": options.sync_interval.map_or(0, |interval| interval.as_nanos() as u64),
        "sync_always": options.sync_interval.is_none(),
    })
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
    let mut jsz = json!({
        "server_id": monitor.identity.server_id,
        "now": super::rfc3339(SystemTime::now()),
        "config": config(&monitor.options),
        "memory": usage.memory_bytes,
        "storage": usage.storage_bytes,
        "reserved_memory": usage.reserved_memory_bytes,
        "reserved_storage": usage.reserved_storage_bytes,
        "accounts": 1,
        "ha_assets": 0,
        "api": { "level": API_LEVEL, "total": 0, "errors": 0 },
        "streams": usage.streams,
        "consumers": usage.consumers,
        "messages": messages,
        "bytes": bytes,
        "total": 1,
    });
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
        "api": { "level": 0, "total": 0, "errors": 0 },
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
