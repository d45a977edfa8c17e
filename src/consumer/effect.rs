//! What a consumer asks the shard to do. The consumer decides; the shard carries out:
//! it loads and sends deliveries, encodes status replies with `protocol::headers`,
//! publishes advisories, persists state and deletes consumers.

use std::rc::Rc;

use bytes::BufMut;

use crate::protocol::headers::HeaderBlockBuilder;

use super::ack::AckNumbers;
use super::sequence::{ConsumerSeq, DeliveryCount, StreamSeq, Tick};
use super::stream_view::InterestView;
use super::stream_view::StreamView;
use super::timer_key::ShardTimers;

/// Header names the consumer's status replies carry (Appendix A of the wire notes).
pub const PENDING_MESSAGES_HEADER: &str = "Nats-Pending-Messages";
pub const PENDING_BYTES_HEADER: &str = "Nats-Pending-Bytes";
pub const LAST_CONSUMER_HEADER: &str = "Nats-Last-Consumer";
pub const LAST_STREAM_HEADER: &str = "Nats-Last-Stream";
pub const CONSUMER_STALLED_HEADER: &str = "Nats-Consumer-Stalled";

/// One message to send: `HMSG <stored subject> <sid> <ack_reply> ...` to `to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Deliver subject (push) or the pull request's reply subject.
    pub to: Rc<str>,
    pub stream_seq: StreamSeq,
    pub consumer_seq: ConsumerSeq,
    pub delivery_count: DeliveryCount,
    /// Matching messages not yet delivered after this one.
    pub pending: u64,
    pub timestamp_nanos: i64,
    /// `$JS.ACK.<stream>.<consumer>.`: the ack reply is this and the numbers above,
    /// written where the message is sent ([`Delivery::write_ack_reply`]).
    pub ack_prefix: Rc<str>,
    /// Send headers plus `Nats-Msg-Size: <payload length>` and no payload.
    pub headers_only: bool,
    /// `pinned_client` consumers: the `Nats-Pin-Id` header to add (empty when the request
    /// named no group and so holds no pin, as nats-server sends it).
    pub pin_id: Option<Rc<str>>,
}

impl Delivery {
    pub fn ack_numbers(&self) -> AckNumbers {
        AckNumbers {
            delivery_count: self.delivery_count,
            stream_seq: self.stream_seq,
            consumer_seq: self.consumer_seq,
            timestamp_nanos: self.timestamp_nanos,
            pending: self.pending,
        }
    }

    /// Appends the v1 `$JS.ACK...` subject, the message's reply, to `out`.
    pub fn write_ack_reply(&self, out: &mut Vec<u8>) {
        self.ack_numbers().write(&self.ack_prefix, out);
    }

    /// The v1 `$JS.ACK...` subject, the message's reply.
    pub fn ack_reply(&self) -> String {
        let mut reply = Vec::new();
        self.write_ack_reply(&mut reply);
        String::from_utf8(reply).expect("prefix and digits are UTF-8")
    }
}

/// A status-only message (`NATS/1.0 <code> <description>` and headers, empty body).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusReply {
    pub to: Rc<str>,
    /// Only flow control requests carry a reply subject (`$JS.FC...`).
    pub reply: Option<String>,
    pub code: u16,
    pub description: String,
    pub headers: Vec<(&'static str, String)>,
}

impl StatusReply {
    pub fn new(to: Rc<str>, code: u16, description: impl Into<String>) -> StatusReply {
        StatusReply { to, reply: None, code, description: description.into(), headers: Vec::new() }
    }

    /// Adds `Nats-Pending-Messages` and `Nats-Pending-Bytes`.
    pub fn with_pending(mut self, messages: u64, bytes: u64) -> StatusReply {
        self.headers.push((PENDING_MESSAGES_HEADER, messages.to_string()));
        self.headers.push((PENDING_BYTES_HEADER, bytes.to_string()));
        self
    }

    /// Writes the header block, e.g. `NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages:
    /// 5\r\nNats-Pending-Bytes: 0\r\n\r\n`; returns its length.
    pub fn encode_headers<B: BufMut>(&self, out: &mut B) -> usize {
        let mut builder = HeaderBlockBuilder::with_status(out, self.code, &self.description);
        for (name, value) in &self.headers {
            builder.header(name.as_bytes(), value.as_bytes());
        }
        builder.finish()
    }
}

/// Advisories the consumer raises; the shard adds id, time and domain and publishes JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Advisory {
    /// `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>`
    MaxDeliveries { stream_seq: StreamSeq, deliveries: DeliveryCount },
    /// `$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.<stream>.<consumer>`
    Terminated { stream_seq: StreamSeq, consumer_seq: ConsumerSeq, deliveries: DeliveryCount, reason: Option<String> },
    /// `$JS.EVENT.ADVISORY.CONSUMER.PINNED.<stream>.<consumer>`: `group` pinned a client.
    Pinned { group: Rc<str>, pin_id: Rc<str> },
    /// `$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.<stream>.<consumer>`: `group` lost its pin.
    Unpinned { group: Rc<str>, reason: UnpinReason },
    /// `$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.<stream>.<consumer>`: a pending message was
    /// NAKed; `deliveries` is the count its ack subject carries.
    Naked { stream_seq: StreamSeq, consumer_seq: ConsumerSeq, deliveries: DeliveryCount },
    /// `$JS.EVENT.ADVISORY.CONSUMER.PAUSE.<stream>.<consumer>`: paused or resumed (the
    /// shard adds the configured `pause_until`).
    Pause { paused: bool },
    /// `$JS.EVENT.METRIC.CONSUMER.ACK.<stream>.<consumer>`: one sampled explicit ack
    /// (`sample_freq`), `ack_nanos` after the message's last delivery (timer ticks).
    AckSampled { stream_seq: StreamSeq, consumer_seq: ConsumerSeq, deliveries: DeliveryCount, ack_nanos: u64 },
}

/// Why a group lost its pin, as nats-server words it in the advisory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnpinReason {
    /// `CONSUMER.UNPIN` asked for it (`"admin"`).
    Admin,
    /// The pinned client did not pull for `priority_timeout` (`"timeout"`).
    Timeout,
}

impl UnpinReason {
    pub fn wire(self) -> &'static str {
        match self {
            UnpinReason::Admin => "admin",
            UnpinReason::Timeout => "timeout",
        }
    }
}

impl Advisory {
    pub fn subject(&self, stream: &str, consumer: &str) -> String {
        let event = match self {
            Advisory::MaxDeliveries { .. } => "MAX_DELIVERIES",
            Advisory::Terminated { .. } => "MSG_TERMINATED",
            Advisory::Pinned { .. } => "PINNED",
            Advisory::Unpinned { .. } => "UNPINNED",
            Advisory::Naked { .. } => "MSG_NAKED",
            Advisory::Pause { .. } => "PAUSE",
            Advisory::AckSampled { .. } => return format!("$JS.EVENT.METRIC.CONSUMER.ACK.{stream}.{consumer}"),
        };
        format!("$JS.EVENT.ADVISORY.CONSUMER.{event}.{stream}.{consumer}")
    }
}

/// Why the consumer asks to be deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteReason {
    /// No interest (push) or no requests and acks (pull) for `inactive_threshold`.
    InactiveThreshold,
}

/// One thing for the shard to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    Deliver(Delivery),
    Status(StatusReply),
    /// Answer a double ack (an ack with a reply subject): an empty message to `to`.
    AckReply {
        to: String,
    },
    Advisory(Advisory),
    /// For interest and workqueue retention: this consumer is done with the message.
    Acked {
        stream_seq: StreamSeq,
    },
    /// Delivered position, ack floor or pending set changed: persist `Consumer::state()`
    /// (at most once per call). The shard may coalesce these (e.g. once per loop turn);
    /// it must persist before answering a double ack.
    StateChanged,
    Delete(DeleteReason),
}

/// Everything a consumer call may read or change besides the consumer itself: the
/// current tick, the stream, subscription interest, the shard's timer wheel, and where
/// effects go. Built by the shard for each call.
pub struct Context<'a> {
    pub now: Tick,
    pub stream: &'a dyn StreamView,
    pub interest: &'a dyn InterestView,
    pub timers: &'a mut ShardTimers,
    pub effects: &'a mut Vec<Effect>,
}

impl Context<'_> {
    pub fn emit(&mut self, effect: Effect) {
        self.effects.push(effect);
    }

    pub fn status(&mut self, reply: StatusReply) {
        self.effects.push(Effect::Status(reply));
    }
}
