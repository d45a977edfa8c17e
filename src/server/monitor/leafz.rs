//! `/leafz` as nats-server serves it: one entry per leaf link, all on shard 0 (which owns
//! them). jetcore is always the spoke, so `is_spoke` is always true; it does not compress.

use std::time::SystemTime;

use serde_json::{json, Value};

use super::http::Request;
use super::snapshot::SnapshotQuery;
use super::Monitor;
use crate::server::leaf::link::LinkState;

/// One link as `/leafz` shows it; `subscriptions_list` with `?subs=1`.
pub fn link_entry(link: &LinkState) -> Value {
    let (out_msgs, out_bytes) = link.outbound.messages_out();
    let subjects: Vec<String> =
        link.subscriptions.borrow().keys().map(|(subject, _)| String::from_utf8_lossy(subject).into_owned()).collect();
    let rtt = link.rtt.get();
    json!({
        "id": link.conn,
        "name": link.hub.server_name,
        "is_spoke": true,
        "account": link.account,
        "ip": link.url.host,
        "port": link.url.port,
        "rtt": if rtt.is_zero() { Value::Null } else { Value::String(super::human_duration(rtt)) },
        "in_msgs": link.in_msgs.get(),
        "out_msgs": out_msgs,
        "in_bytes": link.in_bytes.get(),
        "out_bytes": out_bytes,
        "subscriptions": subjects.len(),
        "subscriptions_list": subjects,
        "compression": "off",
    })
}

/// `/leafz`; None when the shards did not answer in time.
pub fn render(monitor: &Monitor, request: &Request) -> Option<String> {
    let snapshots = monitor.gather(SnapshotQuery::default())?;
    let with_subscriptions = request.flag("subs");
    let mut leafs: Vec<Value> = snapshots.into_iter().flat_map(|snapshot| snapshot.leafs).collect();
    for leaf in &mut leafs {
        if let Some(fields) = leaf.as_object_mut() {
            if fields.get("rtt").is_some_and(Value::is_null) {
                fields.remove("rtt");
            }
            if !with_subscriptions {
                fields.remove("subscriptions_list");
            }
        }
    }
    Some(
        json!({
            "server_id": monitor.identity.server_id,
            "now": super::rfc3339(SystemTime::now()),
            "leafnodes": leafs.len(),
            "leafs": leafs,
        })
        .to_string(),
    )
}
