//! `Nats-Msg-Id` deduplication inside a time window, and the last message id published
//! (for `Nats-Expected-Last-Msg-Id`). Rebuilt on recovery from the records' headers.

use std::collections::{HashMap, VecDeque};

#[derive(Debug, Default, Clone)]
pub struct DedupeWindow {
    by_id: HashMap<String, u64>,
    order: VecDeque<(i64, String)>,
    pub last_msg_id: Option<String>,
}

impl DedupeWindow {
    /// Forgets ids recorded before `now_ns - window_ns`.
    pub fn expire(&mut self, now_ns: i64, window_ns: i64) {
        while let Some((recorded, _)) = self.order.front() {
            if *recorded >= now_ns.saturating_sub(window_ns) {
                break;
            }
            let (_, id) = self.order.pop_front().expect("front");
            self.by_id.remove(&id);
        }
    }

    /// The sequence first published with `id`, if still in the window.
    pub fn lookup(&self, id: &str) -> Option<u64> {
        self.by_id.get(id).copied()
    }

    pub fn record(&mut self, id: &str, seq: u64, timestamp_ns: i64, window_ns: i64) {
        self.last_msg_id = Some(id.to_string());
        if window_ns > 0 && self.by_id.insert(id.to_string(), seq).is_none() {
            self.order.push_back((timestamp_ns, id.to_string()));
        }
    }

    /// (timestamp, id, seq) of every entry, oldest first.
    pub fn entries(&self) -> impl Iterator<Item = (i64, &str, u64)> {
        self.order.iter().filter_map(|(at, id)| Some((*at, id.as_str(), *self.by_id.get(id)?)))
    }
}
