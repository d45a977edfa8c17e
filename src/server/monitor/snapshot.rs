//! Each shard's part of a monitoring answer. The monitor thread posts one `Gather` to
//! shard 0, which asks every shard (itself included) over the mesh with
//! `ShardCall::Snapshot` (server/calls.rs) and hands the snapshots back. A shard builds
//! its snapshot on its own thread from its own state: no locks around shard state.

use std::rc::Rc;
use std::time::SystemTime;

use hdrhistogram::Histogram;

use crate::jetstream::policies::StorageType;
use crate::jetstream::service::{FlushCounts, StreamHealth, Usage};
use crate::jetstream::stream_info::StreamInfo;
use crate::jetstream::ApiRequest;
use crate::server::account::AccountId;
use crate::server::envelope::{ShardCall, ShardReturn};
use crate::server::node::Node;
use crate::server::outbound::CloseReason;
use crate::server::shard_ops::ConnectionView;
use crate::shard::ShardId;

/// What to include; connections, subscriptions and JetStream details cost more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SnapshotQuery {
    pub connections: bool,
    pub subscriptions: bool,
    pub jetstream: bool,
    pub consumers: bool,
    /// The closed connections the shard remembers (`/connz?state=closed`).
    pub closed: bool,
    /// Each stream's condition and consumer names (`/healthz`).
    pub health: bool,
}

#[derive(Clone, Debug)]
pub struct ConnectionSnapshot {
    pub id: u64,
    pub ip: String,
    pub port: u16,
    pub started: SystemTime,
    pub last_activity: SystemTime,
    pub pending_bytes: usize,
    pub in_msgs: u64,
    pub in_bytes: u64,
    pub out_msgs: u64,
    pub out_bytes: u64,
    pub subscription_count: usize,
    /// Filled when the query asks for subscriptions.
    pub subscriptions: Vec<SubscriptionSnapshot>,
    pub name: String,
    pub lang: String,
    pub version: String,
    pub user: String,
    /// The connection's account, by name.
    pub account: String,
    pub rtt: std::time::Duration,
    pub tls: Option<crate::server::shard_ops::TlsFacts>,
}

#[cfg(test)]
impl ConnectionSnapshot {
    /// A connection `id` of the global account with nothing on it, for tests.
    pub(crate) fn blank(id: u64) -> ConnectionSnapshot {
        ConnectionSnapshot {
            id,
            ip: "127.0.0.1".to_string(),
            port: 0,
            started: SystemTime::UNIX_EPOCH,
            last_activity: SystemTime::UNIX_EPOCH,
            pending_bytes: 0,
            in_msgs: 0,
            in_bytes: 0,
            out_msgs: 0,
            out_bytes: 0,
            subscription_count: 0,
            subscriptions: Vec::new(),
            name: String::new(),
            lang: String::new(),
            version: String::new(),
            user: String::new(),
            account: crate::server::account::GLOBAL_ACCOUNT_NAME.to_string(),
            rtt: std::time::Duration::ZERO,
            tls: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct SubscriptionSnapshot {
    pub connection: u64,
    pub subject: String,
    pub queue: Option<String>,
    pub sid: String,
    pub msgs: u64,
    /// `UNSUB sid max`'s limit, if any.
    pub max: Option<u64>,
}

/// A closed connection: its figures at the close, when and why it closed.
#[derive(Clone, Debug)]
pub struct ClosedSnapshot {
    pub connection: ConnectionSnapshot,
    pub stopped: SystemTime,
    pub reason: CloseReason,
}

/// The shard's counters at the moment of the snapshot.
#[derive(Debug)]
pub struct StatsSnapshot {
    pub client_publishes: u64,
    pub client_publish_bytes: u64,
    /// Messages (and header and payload bytes) delivered to clients, open or closed.
    pub client_deliveries: u64,
    pub client_delivery_bytes: u64,
    pub slow_consumers: u64,
    pub stale_connections: u64,
    pub stalled_clients: u64,
    pub connection_handoffs: u64,
    pub blocking_reads: u64,
    pub jetstream_deliveries: u64,
    pub stores_ok: u64,
    pub stores_failed: u64,
    pub connections_accepted: u64,
    pub store_latency_micros: Histogram<u64>,
    /// Group commit of the shard's file streams: write and fdatasync times, group sizes.
    pub flush_file: FlushCounts,
    /// The same for memory streams (their "disk" is memory: the times are copies).
    pub flush_memory: FlushCounts,
}

#[derive(Debug)]
pub struct ShardSnapshot {
    pub shard: u16,
    pub connection_count: usize,
    pub subscription_count: usize,
    /// Filled when the query asks for connections or subscriptions.
    pub connections: Vec<ConnectionSnapshot>,
    /// Filled when the query asks for closed connections; oldest first.
    pub closed: Vec<ClosedSnapshot>,
    pub stats: StatsSnapshot,
    /// Envelopes queued for each peer beyond its ring.
    pub mesh_overflow: Vec<usize>,
    /// Envelopes in the ring to each peer (0 for this shard).
    pub mesh_ring_depths: Vec<usize>,
    pub mesh_ring_capacity: usize,
    /// The sum of the accounts' usage.
    pub usage: Usage,
    /// One entry per account with JetStream, in the order of the shard's services.
    pub accounts: Vec<AccountSnapshot>,
    /// This shard's leaf links as `/leafz` lists them (shard 0 owns them all).
    pub leafs: Vec<serde_json::Value>,
}

/// One account's JetStream on one shard.
#[derive(Debug)]
pub struct AccountSnapshot {
    pub account: AccountId,
    pub usage: Usage,
    /// Filled when the query asks for JetStream.
    pub streams: Vec<StreamInfo>,
    /// Consumer infos as the `$JS.API` returns them (`CONSUMER.LIST` entries); filled
    /// when the query asks for consumers.
    pub consumers: Vec<serde_json::Value>,
    /// Filled when the query asks for health.
    pub health: Vec<StreamHealth>,
}

/// On the shard that got the `Gather`: every shard's snapshot, in shard order.
pub async fn gather_all(node: &Rc<Node>, query: SnapshotQuery) -> Vec<ShardSnapshot> {
    let mut snapshots = Vec::new();
    for shard in 0..node.shard_count() {
        if let ShardReturn::Snapshot(snapshot) = node.call(ShardId(shard), ShardCall::Snapshot(query)).await {
            snapshots.push(*snapshot);
        }
    }
    show_once(snapshots.iter_mut().map(|snapshot| &mut snapshot.connections));
    snapshots
}

/// A connection moving between shards (`server/handoff.rs`) is listed by both the shard it
/// leaves and the one it joins when their snapshots, taken one after the other, straddle
/// the move. It is one connection (one id): the copy active last stays, the other goes.
fn show_once<'a>(lists: impl Iterator<Item = &'a mut Vec<ConnectionSnapshot>>) {
    let mut lists: Vec<&mut Vec<ConnectionSnapshot>> = lists.collect();
    let mut latest: std::collections::HashMap<u64, (usize, SystemTime)> = std::collections::HashMap::new();
    for (list, connections) in lists.iter().enumerate() {
        for connection in connections.iter() {
            let newer = latest.get(&connection.id).is_none_or(|(_, active)| connection.last_activity >= *active);
            if newer {
                latest.insert(connection.id, (list, connection.last_activity));
            }
        }
    }
    for (list, connections) in lists.iter_mut().enumerate() {
        connections.retain(|connection| latest.get(&connection.id).is_some_and(|(kept, _)| *kept == list));
    }
}

/// Answers the calls that operating the server adds (barriers, snapshots); hands any
/// other call back.
pub async fn execute_ops_call(node: &Rc<Node>, call: ShardCall) -> Result<ShardReturn, ShardCall> {
    match call {
        ShardCall::Barrier => Ok(ShardReturn::Done),
        ShardCall::Snapshot(query) => Ok(ShardReturn::Snapshot(Box::new(snapshot_here(node, query).await))),
        other => Err(other),
    }
}

async fn snapshot_here(node: &Rc<Node>, query: SnapshotQuery) -> ShardSnapshot {
    if query.health && crate::failpoint::fails("health_snapshot_stall") {
        // A shard that never answers, as `/healthz` must see one (tests/monitor_health.rs).
        glommio::timer::sleep(std::time::Duration::from_secs(3600)).await;
    }
    let views = node.ops.connections();
    let subscription_count = views.iter().map(|view| view.subscriptions.borrow().len()).sum();
    let connections = match query.connections || query.subscriptions {
        true => views.iter().map(|view| connection_snapshot(view, query.subscriptions)).collect(),
        false => Vec::new(),
    };
    // After the figures are taken, so the PING is not in this read's pending bytes (as
    // nats-server reads them).
    if query.connections {
        views.iter().for_each(|view| view.measure_rtt_if_unknown());
    }
    let mut closed = Vec::new();
    if query.closed {
        node.ops.for_each_closed(|entry| closed.push(entry));
    }
    let (open_deliveries, open_delivery_bytes) = views
        .iter()
        .map(|view| view.outbound.messages_out())
        .fold((0, 0), |(messages, bytes), (more_messages, more_bytes)| (messages + more_messages, bytes + more_bytes));
    let stats = &node.ops.stats;
    let stats = StatsSnapshot {
        client_publishes: stats.client_publishes.get(),
        client_publish_bytes: stats.client_publish_bytes.get(),
        client_deliveries: stats.closed_out_msgs.get() + open_deliveries,
        client_delivery_bytes: stats.closed_out_bytes.get() + open_delivery_bytes,
        slow_consumers: stats.slow_consumers.get(),
        stale_connections: stats.stale_connections.get(),
        stalled_clients: stats.stalled_clients.get(),
        connection_handoffs: stats.connection_handoffs.get(),
        blocking_reads: stats.blocking_reads.get(),
        jetstream_deliveries: stats.jetstream_deliveries.get(),
        stores_ok: stats.stores_ok.get(),
        stores_failed: stats.stores_failed.get(),
        connections_accepted: stats.connections_accepted.get(),
        store_latency_micros: stats.store_latency_micros.borrow().clone(),
        flush_file: FlushCounts::default(),
        flush_memory: FlushCounts::default(),
    };
    let (mesh_ring_depths, mesh_ring_capacity) = node.ring_depths();
    let mut snapshot = ShardSnapshot {
        shard: node.shard.0,
        connection_count: views.len(),
        subscription_count,
        connections,
        closed,
        stats,
        mesh_overflow: node.overflow_depths(),
        mesh_ring_depths,
        mesh_ring_capacity,
        usage: Usage::default(),
        accounts: Vec::new(),
        leafs: node
            .leaf
            .get()
            .map_or_else(Vec::new, |spoke| spoke.links().iter().map(|link| super::leafz::link_entry(link)).collect()),
    };
    // One service per account with JetStream: the shard's figures are their sums.
    for (account, service) in node.jetstream.iter() {
        let usage = service.usage();
        snapshot.usage += usage;
        add_flush_counts(&mut snapshot.stats.flush_file, service.flush_counts(StorageType::File));
        add_flush_counts(&mut snapshot.stats.flush_memory, service.flush_counts(StorageType::Memory));
        let mut entry =
            AccountSnapshot { account, usage, streams: Vec::new(), consumers: Vec::new(), health: Vec::new() };
        if query.jetstream {
            let names: Vec<String> = service.summaries().into_iter().map(|summary| summary.name).collect();
            entry.streams.extend(names.iter().filter_map(|name| service.info(name, false).ok()));
            if query.consumers {
                for name in &names {
                    let reply = service.consumer_reply(ApiRequest::ConsumerList { stream: name }, b"{}").await;
                    entry.consumers.extend(consumer_infos(&reply));
                }
            }
        }
        if query.health {
            entry.health = service.health(None);
        }
        snapshot.accounts.push(entry);
    }
    snapshot
}

/// Adds another service's group-commit histograms to `total` (same buckets).
fn add_flush_counts(total: &mut FlushCounts, more: FlushCounts) {
    total.blocking_writes += more.blocking_writes;
    for (total, more) in [
        (&mut total.write_nanos, more.write_nanos),
        (&mut total.sync_nanos, more.sync_nanos),
        (&mut total.group_records, more.group_records),
        (&mut total.group_bytes, more.group_bytes),
    ] {
        if total.buckets.is_empty() {
            *total = more;
            continue;
        }
        for (bucket, count) in total.buckets.iter_mut().zip(more.buckets) {
            *bucket += count;
        }
        total.overflow += more.overflow;
        total.sum += more.sum;
    }
}

/// The connection's subscriptions, as `/connz` and `/subsz` list them.
pub fn subscription_snapshots(view: &ConnectionView) -> Vec<SubscriptionSnapshot> {
    view.subscriptions
        .borrow()
        .values()
        .map(|subscription| SubscriptionSnapshot {
            connection: view.id,
            subject: String::from_utf8_lossy(&subscription.subject).into_owned(),
            queue: subscription.queue.as_ref().map(|q| String::from_utf8_lossy(q).into_owned()),
            sid: String::from_utf8_lossy(&subscription.sid).into_owned(),
            msgs: subscription.delivered.get(),
            max: subscription.max.get(),
        })
        .collect()
}

pub fn connection_snapshot(view: &ConnectionView, with_subscriptions: bool) -> ConnectionSnapshot {
    let subscriptions = match with_subscriptions {
        true => subscription_snapshots(view),
        false => Vec::new(),
    };
    ConnectionSnapshot {
        id: view.id,
        ip: view.ip.clone(),
        port: view.port,
        started: view.started,
        last_activity: view.last_activity.get(),
        pending_bytes: view.outbound.pending_bytes(),
        in_msgs: view.in_msgs.get(),
        in_bytes: view.in_bytes.get(),
        out_msgs: view.out_msgs(),
        out_bytes: view.out_bytes(),
        subscription_count: view.subscriptions.borrow().len(),
        subscriptions,
        name: view.name.borrow().clone(),
        lang: view.lang.borrow().clone(),
        version: view.version.borrow().clone(),
        user: view.user.borrow().clone(),
        account: view.account.borrow().clone(),
        rtt: view.rtt.get(),
        tls: view.tls.borrow().clone(),
    }
}

/// The `consumers` array of a `CONSUMER.LIST` reply (empty if it is an error).
fn consumer_infos(reply: &[u8]) -> Vec<serde_json::Value> {
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(reply) else { return Vec::new() };
    match value.get_mut("consumers").map(serde_json::Value::take) {
        Some(serde_json::Value::Array(consumers)) => consumers,
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(id: u64, last_activity: SystemTime) -> ConnectionSnapshot {
        ConnectionSnapshot { last_activity, ..ConnectionSnapshot::blank(id) }
    }

    #[test]
    fn a_connection_listed_by_two_shards_is_shown_once_as_last_active() {
        let (earlier, later) = (SystemTime::UNIX_EPOCH, SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1));
        let mut leaving = vec![connection(3, later), connection(4, earlier)];
        let mut joining = vec![connection(3, earlier), connection(5, earlier)];
        show_once([&mut leaving, &mut joining].into_iter());
        let ids = |list: &[ConnectionSnapshot]| list.iter().map(|c| c.id).collect::<Vec<_>>();
        assert_eq!((ids(&leaving), ids(&joining)), (vec![3, 4], vec![5]));
        let mut first = vec![connection(7, earlier)];
        let mut second = vec![connection(7, later)];
        show_once([&mut first, &mut second].into_iter());
        assert_eq!((ids(&first), ids(&second)), (vec![], vec![7]));
    }
}
