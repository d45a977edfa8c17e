//! `/jsz`: JetStream totals and, per account, its streams and consumers, shaped as
//! nats-server 2.15.1 shapes them (field names and order, fields left out when empty).
//! Options: `acc=NAME` (that account's details alone; an unknown name is ignored),
//! `accounts=true` (every account with JetStream, by name, `offset`/`limit` applied),
//! `streams=true` (adds `stream_detail`, and the accounts when no `acc` is given),
//! `consumers=true` (adds `consumer_detail`; implies streams), `config=true` (adds the
//! stream and consumer configurations). Booleans and integers that do not parse get
//! nats-server's 400 answer.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::json;

use super::http::{go_json, Request, Response};
use super::snapshot::{ShardSnapshot, SnapshotQuery};
use super::Monitor;
use crate::jetstream::service::{Usage, API_LEVEL};
use crate::jetstream::stream_info::StreamInfo;
use crate::server::account::AccountId;
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

/// The usage figures nats-server writes at the top of `/jsz`, under `/varz`'s
/// `jetstream.stats` and (with `accounts: 0`, API level 0) for each account.
#[derive(Debug, Serialize)]
struct Stats {
    memory: u64,
    storage: u64,
    reserved_memory: u64,
    reserved_storage: u64,
    accounts: usize,
    ha_assets: u64,
    api: ApiStats,
}

#[derive(Debug, Serialize)]
struct ApiStats {
    level: u32,
    total: u64,
    errors: u64,
}

impl Stats {
    fn of(usage: &Usage, accounts: usize, level: u32) -> Stats {
        Stats {
            memory: usage.memory_bytes,
            storage: usage.storage_bytes,
            reserved_memory: usage.reserved_memory_bytes,
            reserved_storage: usage.reserved_storage_bytes,
            accounts,
            ha_assets: 0,
            api: ApiStats { level, total: usage.api_requests, errors: usage.api_errors },
        }
    }
}

#[derive(Debug, Serialize)]
struct Jsz {
    #[serde(flatten)]
    stats: Stats,
    server_id: String,
    now: serde_json::Value,
    config: serde_json::Value,
    limits: serde_json::Value,
    streams: u64,
    consumers: u64,
    messages: u64,
    bytes: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    account_details: Vec<AccountDetail>,
    total: usize,
}

#[derive(Debug, Serialize)]
struct AccountDetail {
    name: String,
    id: String,
    #[serde(flatten)]
    stats: Stats,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stream_detail: Vec<StreamDetail>,
}

#[derive(Debug, Serialize)]
struct StreamDetail {
    name: String,
    created: crate::jetstream::Timestamp,
    cluster: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<crate::jetstream::stream_config::StreamConfig>,
    state: crate::jetstream::stream_info::StreamState,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    consumer_detail: Vec<ConsumerDetail>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mirror: Option<crate::jetstream::stream_sources::StreamSourceInfo>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sources: Vec<crate::jetstream::stream_sources::StreamSourceInfo>,
}

/// A consumer's info as nats-server lists it here: its fields in nats-server's order,
/// without `cluster` (a single server's consumer infos have none), `config` only when
/// asked for; fields this list does not name follow, by name.
#[derive(Debug, Serialize)]
struct ConsumerDetail {
    stream_name: serde_json::Value,
    name: serde_json::Value,
    created: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<serde_json::Value>,
    delivered: serde_json::Value,
    ack_floor: serde_json::Value,
    num_ack_pending: serde_json::Value,
    num_redelivered: serde_json::Value,
    num_waiting: serde_json::Value,
    num_pending: serde_json::Value,
    #[serde(flatten)]
    rest: serde_json::Map<String, serde_json::Value>,
}

impl ConsumerDetail {
    fn from_info(mut info: serde_json::Map<String, serde_json::Value>, with_config: bool) -> ConsumerDetail {
        let mut take = |key: &str| info.remove(key).unwrap_or_default();
        let config = take("config");
        let mut detail = ConsumerDetail {
            stream_name: take("stream_name"),
            name: take("name"),
            created: take("created"),
            config: with_config.then(|| stored_metadata(config)),
            delivered: take("delivered"),
            ack_floor: take("ack_floor"),
            num_ack_pending: take("num_ack_pending"),
            num_redelivered: take("num_redelivered"),
            num_waiting: take("num_waiting"),
            num_pending: take("num_pending"),
            rest: serde_json::Map::new(),
        };
        info.remove("cluster");
        detail.rest = info;
        detail
    }
}

/// A configuration as stored: without the server's level and version, which the
/// `$JS.API` adds to its answers and nats-server leaves out of `/jsz`.
fn stored_metadata(mut config: serde_json::Value) -> serde_json::Value {
    if let Some(metadata) = config.get_mut("metadata").and_then(serde_json::Value::as_object_mut) {
        metadata.remove(crate::jetstream::metadata::SERVER_LEVEL_KEY);
        metadata.remove(crate::jetstream::metadata::SERVER_VERSION_KEY);
    }
    config
}

/// What was asked.
struct Asked {
    account: String,
    accounts: bool,
    streams: bool,
    consumers: bool,
    config: bool,
    offset: usize,
    limit: usize,
}

fn read_options(request: &Request) -> Result<Asked, Response> {
    let accounts = request.boolean("accounts")?;
    let streams = request.boolean("streams")?;
    let consumers = request.boolean("consumers")?;
    let config = request.boolean("config")?;
    let offset = request.integer("offset")?;
    let limit = request.integer("limit")?;
    request.boolean("leader-only")?;
    request.boolean("raft")?;
    request.boolean("stream-leader-only")?;
    let account = request.text("acc").to_string();
    let streams = streams || consumers;
    let accounts = accounts || (streams && account.is_empty());
    let limit = if limit <= 0 { crate::limits::MONITOR_PAGE_DEFAULT } else { limit as usize };
    Ok(Asked { account, accounts, streams, consumers, config, offset: offset.max(0) as usize, limit })
}

/// `/varz`'s `jetstream` block: config, stats and limits (stats left out when the shards
/// did not answer: `snapshots` is empty).
pub fn varz_block(monitor: &Monitor, snapshots: &[ShardSnapshot]) -> serde_json::Value {
    let mut block = json!({ "config": config(&monitor.options), "limits": limits() });
    if let (false, Some(fields)) = (snapshots.is_empty(), block.as_object_mut()) {
        let stats = Stats::of(&total_usage(snapshots), jetstream_accounts(monitor).len(), API_LEVEL);
        fields.insert("stats".into(), serde_json::to_value(stats).unwrap_or_default());
    }
    block
}

/// The answer: 200 with the JSON, 400 for an option that does not parse, `None` when
/// the shards did not answer in time.
pub fn render(monitor: &Monitor, request: &Request) -> Option<Response> {
    let asked = match read_options(request) {
        Ok(asked) => asked,
        Err(refusal) => return Some(refusal),
    };
    let query = SnapshotQuery { jetstream: true, consumers: asked.consumers, ..SnapshotQuery::default() };
    let snapshots = monitor.gather(query)?;
    let enabled = jetstream_accounts(monitor);
    let all_streams = || snapshots.iter().flat_map(|s| &s.accounts).flat_map(|a| &a.streams);
    let usage = total_usage(&snapshots);
    let mut jsz = Jsz {
        stats: Stats::of(&usage, enabled.len(), API_LEVEL),
        server_id: monitor.identity.server_id.clone(),
        now: super::rfc3339(SystemTime::now()),
        config: config(&monitor.options),
        limits: limits(),
        streams: usage.streams,
        consumers: usage.consumers,
        messages: all_streams().map(|info| info.state.messages).sum(),
        bytes: all_streams().map(|info| info.state.bytes).sum(),
        account_details: Vec::new(),
        total: enabled.len(),
    };
    let chosen: Vec<&(AccountId, String)> = match enabled.iter().find(|(_, name)| *name == asked.account) {
        Some(one) => vec![one],
        None if asked.accounts => enabled.iter().skip(asked.offset).take(asked.limit).collect(),
        None => Vec::new(),
    };
    for (account, name) in chosen {
        jsz.account_details.push(account_detail(monitor, &snapshots, *account, name, &asked));
    }
    let body = serde_json::to_string_pretty(&jsz).unwrap_or_default();
    Some(Response::json(200, go_json(body)))
}

/// The accounts with JetStream, by name.
fn jetstream_accounts(monitor: &Monitor) -> Vec<(AccountId, String)> {
    let accounts = &monitor.options.accounts;
    let mut enabled: Vec<(AccountId, String)> = match monitor.options.jetstream {
        true => accounts.jetstream_accounts().unwrap_or_default(),
        false => Vec::new(),
    }
    .into_iter()
    .map(|id| (id, accounts.name_of(id).to_string()))
    .collect();
    enabled.sort_by(|a, b| a.1.cmp(&b.1));
    enabled
}

fn total_usage(snapshots: &[ShardSnapshot]) -> Usage {
    let mut total = Usage::default();
    for usage in snapshots.iter().map(|snapshot| snapshot.usage) {
        total += usage;
    }
    total
}

fn account_detail(
    monitor: &Monitor,
    snapshots: &[ShardSnapshot],
    account: AccountId,
    name: &str,
    asked: &Asked,
) -> AccountDetail {
    let mine = || snapshots.iter().flat_map(|s| &s.accounts).filter(|entry| entry.account == account);
    let mut usage = Usage::default();
    mine().for_each(|entry| usage += entry.usage);
    let mut stats = Stats::of(&usage, 0, 0);
    // nats-server reports the account's own limits here (-1, unlimited, as a uint64).
    let limits = monitor.options.accounts.get(account).and_then(|config| config.jetstream.clone()).unwrap_or_default();
    (stats.reserved_memory, stats.reserved_storage) = (limits.max_memory as u64, limits.max_storage as u64);
    let stream_detail = match asked.streams {
        false => Vec::new(),
        true => {
            let mut consumers: BTreeMap<&str, Vec<ConsumerDetail>> = BTreeMap::new();
            for consumer in mine().flat_map(|entry| &entry.consumers) {
                let stream = consumer.get("stream_name").and_then(|n| n.as_str()).unwrap_or("");
                let Some(info) = consumer.as_object() else { continue };
                consumers.entry(stream).or_default().push(ConsumerDetail::from_info(info.clone(), asked.config));
            }
            let leader = monitor.identity.server_name.as_str();
            let mut details: Vec<StreamDetail> = mine()
                .flat_map(|entry| &entry.streams)
                .map(|info| stream_detail(info, leader, asked.config, consumers.remove(info.config.name.as_str())))
                .collect();
            details.sort_by(|a, b| a.name.cmp(&b.name));
            details
        }
    };
    AccountDetail { name: name.to_string(), id: name.to_string(), stats, stream_detail }
}

fn stream_detail(
    info: &StreamInfo,
    leader: &str,
    with_config: bool,
    consumers: Option<Vec<ConsumerDetail>>,
) -> StreamDetail {
    let mut consumer_detail = consumers.unwrap_or_default();
    consumer_detail.sort_by(|a, b| a.name.as_str().cmp(&b.name.as_str()));
    let config = with_config.then(|| {
        let mut config = info.config.clone();
        crate::jetstream::metadata::remove_server_info(&mut config.metadata);
        config
    });
    StreamDetail {
        name: info.config.name.clone(),
        created: info.created,
        cluster: json!({ "leader": leader }),
        config,
        state: info.state.clone(),
        consumer_detail,
        mirror: info.mirror.clone(),
        sources: info.sources.clone(),
    }
}
