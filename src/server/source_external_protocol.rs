//! The wire of following a stream through another JetStream's API (`external.api`, the
//! hub's `$JS.<domain>.API` across a leaf link): the consumer-create request nats-server
//! 2.15 sends as the follower (`setupMirrorConsumer` / `setSourceConsumer`; its bytes are
//! checked against a capture in `tests/leaf_external_mirror.rs`), and reading what that
//! push consumer delivers: the sequences in a delivery's ack reply, idle heartbeats and
//! flow-control requests. Pure functions over strings and byte slices.

use crate::protocol::headers::parse_header_block;

/// The consumer's idle heartbeat and how long the origin keeps it without interest.
pub const HEARTBEAT_NS: u64 = 1_000_000_000;
const INACTIVE_THRESHOLD_NS: u64 = 10_000_000_000;
/// nats-server's ack wait for these consumers (22 hours; nothing is acknowledged).
const ACK_WAIT_NS: u64 = 79_200_000_000_000;

/// Where the origin's consumer starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Start {
    /// From this origin sequence (1: everything).
    Seq(u64),
    /// From this time (RFC 3339, as the config gave it).
    Time(String),
}

/// One consumer-create request.
pub struct CreateRequest<'a> {
    pub mirror: bool,
    /// `external.api`, e.g. `$JS.hub.API`.
    pub api: &'a str,
    pub origin: &'a str,
    /// The following stream, its account name and JetStream domain (metadata).
    pub follower: &'a str,
    pub account: &'a str,
    pub domain: Option<&'a str>,
    pub consumer_name: &'a str,
    pub deliver_subject: &'a str,
    pub start: Start,
    /// The origin subjects wanted (empty: all).
    pub filters: &'a [String],
}

impl CreateRequest<'_> {
    /// `<api>.CONSUMER.CREATE.<origin>`, or with one filter the extended form that
    /// names the consumer and the filter.
    pub fn subject(&self) -> String {
        match self.filters {
            [filter] => format!("{}.CONSUMER.CREATE.{}.{}.{filter}", self.api, self.origin, self.consumer_name),
            _ => format!("{}.CONSUMER.CREATE.{}", self.api, self.origin),
        }
    }

    /// The header block: the API level the request needs (a source also names the
    /// origin incarnation it knows, none yet).
    pub fn headers(&self) -> Vec<u8> {
        if self.mirror {
            b"NATS/1.0\r\nNats-Required-Api-Level: 4\r\n\r\n".to_vec()
        } else {
            b"NATS/1.0\r\nNats-Required-Api-Level: 5\r\nNats-Stream-Identity: \r\n\r\n".to_vec()
        }
    }

    /// The JSON body, in nats-server's field order.
    pub fn body(&self) -> String {
        let quote = |text: &str| serde_json::to_string(text).unwrap_or_default();
        let mut config = format!("{{\"name\":{}", quote(self.consumer_name));
        match &self.start {
            Start::Seq(seq) if *seq <= 1 => config.push_str(",\"deliver_policy\":\"all\""),
            Start::Seq(seq) => {
                config.push_str(&format!(",\"deliver_policy\":\"by_start_sequence\",\"opt_start_seq\":{seq}"))
            }
            Start::Time(time) => {
                config.push_str(&format!(",\"deliver_policy\":\"by_start_time\",\"opt_start_time\":{}", quote(time)))
            }
        }
        config.push_str(&format!(",\"ack_policy\":\"none\",\"ack_wait\":{ACK_WAIT_NS},\"max_deliver\":1"));
        match self.filters {
            [] => {}
            [filter] => config.push_str(&format!(",\"filter_subject\":{}", quote(filter))),
            filters => config.push_str(&format!(",\"filter_subjects\":{}", serde_json::json!(filters))),
        }
        config.push_str(&format!(
            ",\"replay_policy\":\"instant\",\"flow_control\":true,\"deliver_subject\":{},\
             \"idle_heartbeat\":{HEARTBEAT_NS},\"inactive_threshold\":{INACTIVE_THRESHOLD_NS},\
             \"num_replicas\":0,\"direct\":true,\"sourcing\":true",
            quote(self.deliver_subject)
        ));
        let kind = if self.mirror { "mirror" } else { "src" };
        config.push_str(&format!(",\"metadata\":{{\"_nats.{kind}.acc\":{}", quote(self.account)));
        if let Some(domain) = self.domain {
            config.push_str(&format!(",\"_nats.{kind}.domain\":{}", quote(domain)));
        }
        config.push_str(&format!(",\"_nats.{kind}.stream\":{}}}}}", quote(self.follower)));
        format!("{{\"stream_name\":{},\"config\":{config},\"action\":\"\"}}", quote(self.origin))
    }
}

/// What a delivery's ack reply says: `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.
/// <dseq>.<ts>.<pending>`, or the longer form with a domain and account hash in front.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivered {
    pub stream_seq: u64,
    pub consumer_seq: u64,
    pub timestamp_ns: i64,
    pub pending: u64,
}

pub fn parse_ack_reply(reply: &[u8]) -> Option<Delivered> {
    let text = std::str::from_utf8(reply).ok()?.strip_prefix("$JS.ACK.")?;
    let tokens: Vec<&str> = text.split('.').collect();
    let first = match tokens.len() {
        7 => 2,
        9 | 10 => 4,
        _ => return None,
    };
    Some(Delivered {
        stream_seq: tokens[first + 1].parse().ok()?,
        consumer_seq: tokens[first + 2].parse().ok()?,
        timestamp_ns: tokens[first + 3].parse().ok()?,
        pending: tokens[first + 4].parse().ok()?,
    })
}

/// A status message of the push consumer (status 100).
#[derive(Debug, PartialEq, Eq)]
pub enum Control {
    /// Flow control: answer `reply` (empty) to let the origin go on.
    FlowControl,
    /// Idle heartbeat with the last consumer sequence sent, and a flow-control reply
    /// subject when the origin is stalled waiting for one.
    Heartbeat { last_consumer_seq: u64, stalled_reply: Option<String> },
}

/// `Some` when `headers` is a status-100 block the follower must act on.
pub fn parse_control(headers: &[u8]) -> Option<Control> {
    let block = parse_header_block(headers).ok()?;
    if block.status() != Some(100) {
        return None;
    }
    let description = block.description().unwrap_or_default();
    if description.starts_with(b"FlowControl") {
        return Some(Control::FlowControl);
    }
    let number = |name: &[u8]| {
        block.get_ignore_case(name).and_then(|v| std::str::from_utf8(v).ok()).and_then(|v| v.trim().parse().ok())
    };
    let stalled_reply = block
        .get_ignore_case(b"Nats-Consumer-Stalled")
        .and_then(|v| std::str::from_utf8(v).ok())
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty());
    Some(Control::Heartbeat { last_consumer_seq: number(b"Nats-Last-Consumer").unwrap_or(0), stalled_reply })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_reply_gives_its_sequences_in_both_forms() {
        let short = parse_ack_reply(b"$JS.ACK.ORDERS.C-1.1.2.3.1796384194227306402.7").unwrap();
        assert_eq!((short.stream_seq, short.consumer_seq, short.pending), (2, 3, 7));
        let long = parse_ack_reply(b"$JS.ACK.hub.ACCHASH.ORDERS.C.1.5.4.1796384194227306402.0.tok").unwrap();
        assert_eq!((long.stream_seq, long.consumer_seq, long.pending), (5, 4, 0));
        assert_eq!(parse_ack_reply(b"$JS.ACK.ORDERS.C.1.x.3.4.5"), None);
        assert_eq!(parse_ack_reply(b"$JS.ACK.ORDERS.C.1.2.3"), None);
    }

    #[test]
    fn heartbeats_and_flow_control_are_told_apart() {
        let heartbeat = b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 3\r\nNats-Last-Stream: 3\r\n\r\n";
        assert_eq!(parse_control(heartbeat), Some(Control::Heartbeat { last_consumer_seq: 3, stalled_reply: None }));
        assert_eq!(parse_control(b"NATS/1.0 100 FlowControl Request\r\n\r\n"), Some(Control::FlowControl));
        assert_eq!(parse_control(b"NATS/1.0\r\nX: y\r\n\r\n"), None);
    }
}
