//! Advisories on `$JS.EVENT.ADVISORY.>` and ack metrics on `$JS.EVENT.METRIC.>`, with
//! nats-server's subjects and JSON: stream and consumer actions, and what a consumer
//! raises (max deliveries, terminated, NAKed, paused, pinned, sampled acks). Published
//! only when someone listens, as nats-server does.

use std::cell::Cell;

use super::{now_ns, StreamService};
use crate::consumer::{Advisory, ConsumerId};
use crate::jetstream::Timestamp;

const STREAM_ACTION_TYPE: &str = "io.nats.jetstream.advisory.v1.stream_action";
const CONSUMER_ACTION_TYPE: &str = "io.nats.jetstream.advisory.v1.consumer_action";

/// What happened to the stream or consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Create,
    Modify,
    Delete,
}

impl Action {
    fn wire(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Modify => "modify",
            Action::Delete => "delete",
        }
    }

    /// The subject token: `CREATED`, `UPDATED`, `DELETED`.
    fn subject_token(self) -> &'static str {
        match self {
            Action::Create => "CREATED",
            Action::Modify => "UPDATED",
            Action::Delete => "DELETED",
        }
    }
}

thread_local! {
    static ADVISORIES_SENT: Cell<u64> = const { Cell::new(0) };
}

/// A unique advisory id (nats-server uses a NUID; clients treat it as opaque).
pub fn advisory_id() -> String {
    let count = ADVISORIES_SENT.with(|sent| {
        sent.set(sent.get() + 1);
        sent.get()
    });
    format!("{:x}{:06x}", now_ns(), count)
}

impl StreamService {
    /// `$JS.EVENT.ADVISORY.STREAM.<CREATED|UPDATED|DELETED>.<stream>`.
    pub(super) fn advise_stream(&self, stream: &str, action: Action) {
        let subject = format!("$JS.EVENT.ADVISORY.STREAM.{}.{stream}", action.subject_token());
        let body = serde_json::json!({
            "type": STREAM_ACTION_TYPE,
            "id": advisory_id(),
            "timestamp": Timestamp::from_unix_nanos(now_ns()),
            "stream": stream,
            "action": action.wire(),
        });
        self.send_advisory(&subject, &self.with_domain(body));
    }

    /// `$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.<stream>`: an atomic batch was dropped
    /// (`reason`: `incomplete`, `large` or `timeout`, as nats-server 2.15.1 words them).
    pub(super) fn advise_batch_abandoned(&self, stream: &str, batch: &str, reason: &str) {
        let subject = format!("$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.{stream}");
        let body = serde_json::json!({
            "type": "io.nats.jetstream.advisory.v1.stream_batch_abandoned",
            "id": advisory_id(),
            "timestamp": Timestamp::from_unix_nanos(now_ns()),
            "stream": stream,
            "batch": batch,
            "reason": reason,
        });
        self.send_advisory(&subject, &self.with_domain(body));
    }

    /// `$JS.EVENT.ADVISORY.CONSUMER.<CREATED|DELETED>.<stream>.<consumer>`.
    pub(super) fn advise_consumer(&self, stream: &str, consumer: &str, action: Action) {
        let subject = format!("$JS.EVENT.ADVISORY.CONSUMER.{}.{stream}.{consumer}", action.subject_token());
        let body = serde_json::json!({
            "type": CONSUMER_ACTION_TYPE,
            "id": advisory_id(),
            "timestamp": Timestamp::from_unix_nanos(now_ns()),
            "stream": stream,
            "consumer": consumer,
            "action": action.wire(),
        });
        self.send_advisory(&subject, &self.with_domain(body));
    }

    /// `$JS.EVENT.ADVISORY.SERVER.OUT_OF_STORAGE`: a write of `stream` found the disk full.
    /// Once per episode (until a write of the stream succeeds again, `stream/reopen.rs`),
    /// with nats-server's fields (`cluster` always present). nats-server sends it in the
    /// system account and then disables JetStream; jetcore refuses those writes, serves
    /// on, and sends it where the stream's other advisories go, its account.
    pub(super) fn advise_out_of_storage(&self, stream: &str) {
        let body = serde_json::json!({
            "type": "io.nats.jetstream.advisory.v1.server_out_of_space",
            "id": advisory_id(),
            "timestamp": Timestamp::from_unix_nanos(now_ns()),
            "server": self.server_name,
            "server_id": self.server_id,
            "stream": stream,
            "cluster": "",
        });
        self.send_advisory("$JS.EVENT.ADVISORY.SERVER.OUT_OF_STORAGE", &self.with_domain(body));
    }

    /// An advisory a consumer raised, as nats-server words it.
    pub(super) fn publish_advisory(&self, id: ConsumerId, stream: &str, advisory: &Advisory) {
        let Some(name) = self.consumer_name(id) else { return };
        let subject = advisory.subject(stream, &name);
        let Some(outlet) = self.consumers.outlet() else { return };
        if !outlet.has_interest(&subject) {
            return;
        }
        let id_text = advisory_id();
        let timestamp = Timestamp::from_unix_nanos(now_ns());
        let body = match advisory {
            Advisory::MaxDeliveries { stream_seq, deliveries } => serde_json::json!({
                "type": "io.nats.jetstream.advisory.v1.max_deliver",
                "id": id_text, "timestamp": timestamp, "stream": stream, "consumer": name,
                "stream_seq": stream_seq.get(), "deliveries": deliveries,
            }),
            Advisory::Terminated { stream_seq, consumer_seq, deliveries, reason } => serde_json::json!({
                "type": "io.nats.jetstream.advisory.v1.terminated",
                "id": id_text, "timestamp": timestamp, "stream": stream, "consumer": name,
                "consumer_seq": consumer_seq.get(), "stream_seq": stream_seq.get(),
                "deliveries": deliveries, "reason": reason.clone().unwrap_or_default(),
            }),
            Advisory::Naked { stream_seq, consumer_seq, deliveries } => serde_json::json!({
                "type": "io.nats.jetstream.advisory.v1.nak",
                "id": id_text, "timestamp": timestamp, "stream": stream, "consumer": name,
                "consumer_seq": consumer_seq.get(), "stream_seq": stream_seq.get(), "deliveries": deliveries,
            }),
            Advisory::AckSampled { stream_seq, consumer_seq, deliveries, ack_nanos } => serde_json::json!({
                "type": "io.nats.jetstream.metric.v1.consumer_ack",
                "id": id_text, "timestamp": timestamp, "stream": stream, "consumer": name,
                "consumer_seq": consumer_seq.get(), "stream_seq": stream_seq.get(),
                "ack_time": ack_nanos, "deliveries": deliveries,
            }),
            Advisory::Pause { paused } => {
                // The configured time, also after the pause ended; the zero time after a
                // resume request cleared it (as nats-server 2.15.1 sends them).
                let until =
                    self.consumers.registry.borrow().consumers.get(&id).and_then(|entry| entry.config.pause_until);
                serde_json::json!({
                    "type": "io.nats.jetstream.advisory.v1.consumer_pause",
                    "id": id_text, "timestamp": timestamp, "stream": stream, "consumer": name,
                    "paused": paused, "pause_until": until.unwrap_or(Timestamp::ZERO),
                })
            }
            Advisory::Pinned { group, pin_id } => serde_json::json!({
                "type": "io.nats.jetstream.advisory.v1.consumer_group_pinned",
                "id": id_text, "timestamp": timestamp, "account": self.account_name(), "stream": stream,
                "consumer": name, "group": &**group, "pinned_id": &**pin_id,
            }),
            Advisory::Unpinned { group, reason } => serde_json::json!({
                "type": "io.nats.jetstream.advisory.v1.consumer_group_unpinned",
                "id": id_text, "timestamp": timestamp, "account": self.account_name(), "stream": stream,
                "consumer": name, "group": &**group, "reason": reason.wire(),
            }),
        };
        let body = self.with_domain(body);
        let payload = serde_json::to_vec(&body).expect("advisory serializes");
        outlet.publish(&subject, subject.as_bytes(), None, None, &payload);
    }

    /// `body` with this server's JetStream domain, when it has one (`domain`, omitted
    /// when empty, as nats-server's advisories carry it).
    fn with_domain(&self, mut body: serde_json::Value) -> serde_json::Value {
        let domain = self.domain();
        if !domain.is_empty() {
            body["domain"] = serde_json::Value::String(domain);
        }
        body
    }

    /// Publishes `body` on `subject` if anyone listens.
    pub(super) fn send_advisory(&self, subject: &str, body: &serde_json::Value) {
        let Some(outlet) = self.consumers.outlet() else { return };
        if outlet.has_interest(subject) {
            let payload = serde_json::to_vec(body).expect("advisory serializes");
            outlet.publish(subject, subject.as_bytes(), None, None, &payload);
        }
    }
}
