//! `/subsz`: subscription totals, with nats-server's field names; `subs=1` lists them
//! (`offset`, `limit`, `test=SUBJECT` keeps those that match a subject). jetcore keeps no
//! match cache, so the cache fields are zero.

use std::time::SystemTime;

use serde_json::json;

use super::http::Request;
use super::snapshot::{SnapshotQuery, SubscriptionSnapshot};
use super::Monitor;

pub fn render(monitor: &Monitor, request: &Request) -> Option<String> {
    let listed = request.flag("subs");
    let query = SnapshotQuery { subscriptions: listed, ..SnapshotQuery::default() };
    let snapshots = monitor.gather(query)?;
    let count: usize = snapshots.iter().map(|snapshot| snapshot.subscription_count).sum();
    let mut subscriptions: Vec<SubscriptionSnapshot> = snapshots
        .into_iter()
        .flat_map(|snapshot| snapshot.connections)
        .flat_map(|connection| connection.subscriptions)
        .collect();
    if let Some(test) = request.query.get("test") {
        subscriptions.retain(|s| crate::subject::matches(s.subject.as_bytes(), test.as_bytes()));
    }
    subscriptions.sort_by(|a, b| (a.connection, &a.sid).cmp(&(b.connection, &b.sid)));
    let total = if listed { subscriptions.len() } else { count };
    let (page, offset, limit) = super::page(subscriptions, request);
    let mut subsz = json!({
        "server_id": monitor.identity.server_id,
        "now": super::rfc3339(SystemTime::now()),
        "num_subscriptions": count,
        "num_cache": 0,
        "num_inserts": 0,
        "num_removes": 0,
        "num_matches": 0,
        "cache_hit_rate": 0.0,
        "max_fanout": 0,
        "avg_fanout": 0.0,
        "total": total,
        "offset": offset,
        "limit": limit,
    });
    if let (true, Some(fields)) = (listed, subsz.as_object_mut()) {
        let list: Vec<serde_json::Value> = page.iter().map(subscription_json).collect();
        fields.insert("subscriptions_list".into(), list.into());
    }
    Some(subsz.to_string())
}

fn subscription_json(subscription: &SubscriptionSnapshot) -> serde_json::Value {
    let mut value = json!({ "account": "$G", "account_tag": "$G" });
    if let (Some(fields), serde_json::Value::Object(detail)) =
        (value.as_object_mut(), subscription_detail(subscription))
    {
        fields.extend(detail);
    }
    value
}

/// A subscription as nats-server's `SubDetail` (`/connz?subs=detail`): `qgroup` and
/// `max` only when set.
pub fn subscription_detail(subscription: &SubscriptionSnapshot) -> serde_json::Value {
    let mut value = json!({
        "subject": subscription.subject,
        "sid": subscription.sid,
        "msgs": subscription.msgs,
        "cid": subscription.connection,
    });
    if let Some(fields) = value.as_object_mut() {
        if let Some(queue) = &subscription.queue {
            fields.insert("qgroup".into(), queue.clone().into());
        }
        if let Some(max) = subscription.max {
            fields.insert("max".into(), max.into());
        }
    }
    value
}
