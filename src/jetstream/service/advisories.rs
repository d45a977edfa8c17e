//! Stream and consumer action advisories on `$JS.EVENT.ADVISORY.>`, with nats-server's
//! subjects and JSON (`io.nats.jetstream.advisory.v1.stream_action` / `consumer_action`).
//! Published only when someone listens, as nats-server does.

use std::cell::Cell;

use super::{now_ns, StreamService};
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
pub(super) fn advisory_id() -> String {
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
        self.send_advisory(&subject, &body);
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
        self.send_advisory(&subject, &body);
    }

    /// Publishes `body` on `subject` if anyone listens.
    pub(super) fn send_advisory(&self, subject: &str, body: &serde_json::Value) {
        let Some(outlet) = self.consumers.outlet() else { return };
        if outlet.has_interest(subject) {
            let payload = serde_json::to_vec(body).expect("advisory serializes");
            outlet.publish(subject, subject, None, None, &payload);
        }
    }
}
