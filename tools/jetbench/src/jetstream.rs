//! The few `$JS.API` calls a benchmark needs (stream and consumer setup), and the cheap
//! check of publish acks on the hot path.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::cli::{AckPolicy, Storage};
use crate::connection::{timeout, Connection, Flow, ServerAddress, Wait};
use crate::error::{BenchError, Result};
use crate::limits::API_REQUEST_TIMEOUT;
use crate::protocol::parse_decimal;

/// err_code of "stream not found", which deleting a stream that is not there answers.
const STREAM_NOT_FOUND_ERR_CODE: u32 = 10059;
/// Status of a no-responders reply.
const NO_RESPONDERS_STATUS: u16 = 503;
/// How often consumer info is asked for while waiting for acks to be applied.
const ACK_SETTLE_POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Subscription id of a connection's reply inbox.
pub const INBOX_SID: u64 = 1;

/// A unique inbox prefix per connection of this process.
pub fn new_inbox() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("_INBOX.jb{}x{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A control connection that makes request-reply calls to the JetStream API.
pub struct ApiClient {
    connection: Connection,
    inbox: String,
    next_token: u64,
}

/// What to create a stream with.
pub struct StreamSpec<'a> {
    pub name: &'a str,
    pub subjects: Vec<String>,
    pub storage: Storage,
    /// Consumers the stream may have. nats-server 2.15 caps streams that do not say at a
    /// default of 1000 (and treats -1 as "use the default"), so more needs an explicit value.
    pub max_consumers: Option<u64>,
}

/// What to create a durable consumer with.
pub struct ConsumerSpec<'a> {
    pub stream: &'a str,
    pub durable: &'a str,
    pub ack: AckPolicy,
    pub max_ack_pending: i64,
    /// `Some` for a push consumer.
    pub deliver_subject: Option<String>,
    pub deliver_group: Option<String>,
}

impl ApiClient {
    pub fn connect(server: &ServerAddress) -> Result<Self> {
        let mut connection = Connection::connect(server, "jetbench-api")?;
        let inbox = new_inbox();
        connection.writer.subscribe(format!("{inbox}.*").as_bytes(), None, INBOX_SID);
        connection.flush_round_trip(API_REQUEST_TIMEOUT)?;
        Ok(Self { connection, inbox, next_token: 0 })
    }

    /// Sends `body` to `subject` and returns the JSON reply; API errors become `JetStreamApi`.
    pub fn request(&mut self, subject: &str, body: &Value) -> Result<Value> {
        self.next_token += 1;
        let reply = format!("{}.{}", self.inbox, self.next_token);
        let payload = body.to_string();
        self.connection.writer.publish(subject.as_bytes(), Some(reply.as_bytes()), payload.as_bytes());
        self.connection.writer.flush()?;
        let deadline = Instant::now() + API_REQUEST_TIMEOUT;
        let mut answer: Option<std::result::Result<Vec<u8>, u16>> = None;
        while answer.is_none() {
            if Instant::now() >= deadline {
                return Err(timeout(&format!("a reply to {subject}"), API_REQUEST_TIMEOUT));
            }
            self.connection.poll(Wait::Until(deadline), |_, message| {
                if message.subject == reply.as_bytes() {
                    answer = Some(match message.status() {
                        Some(status) if message.payload.is_empty() => Err(status),
                        _ => Ok(message.payload.to_vec()),
                    });
                    return Ok(Flow::Stop);
                }
                Ok(Flow::Continue)
            })?;
        }
        match answer {
            Some(Ok(bytes)) => decode_api_reply(subject, &bytes),
            Some(Err(NO_RESPONDERS_STATUS)) => Err(BenchError::NoResponders { subject: subject.into() }),
            Some(Err(status)) => Err(BenchError::JetStreamApi {
                subject: subject.into(),
                code: status,
                err_code: 0,
                description: "status reply without a body".into(),
            }),
            None => unreachable!("loop exits only with an answer"),
        }
    }

    /// Deletes the stream if it exists.
    pub fn delete_stream(&mut self, name: &str) -> Result<()> {
        match self.request(&format!("$JS.API.STREAM.DELETE.{name}"), &json!({})) {
            Ok(_) => Ok(()),
            Err(BenchError::JetStreamApi { err_code: STREAM_NOT_FOUND_ERR_CODE, .. }) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Creates a fresh stream (deleting one of the same name first).
    pub fn recreate_stream(&mut self, spec: &StreamSpec<'_>) -> Result<()> {
        self.delete_stream(spec.name)?;
        let mut body = json!({
            "name": spec.name,
            "subjects": spec.subjects,
            "storage": spec.storage,
            "retention": "limits",
            "discard": "old",
            "max_msgs": -1,
            "max_bytes": -1,
            "max_age": 0,
            "num_replicas": 1,
        });
        if let Some(max_consumers) = spec.max_consumers {
            body["max_consumers"] = json!(max_consumers);
        }
        self.request(&format!("$JS.API.STREAM.CREATE.{}", spec.name), &body)?;
        Ok(())
    }

    /// The number of messages a stream holds.
    pub fn stream_message_count(&mut self, name: &str) -> Result<u64> {
        let info = self.request(&format!("$JS.API.STREAM.INFO.{name}"), &json!({}))?;
        Ok(info["state"]["messages"].as_u64().unwrap_or(0))
    }

    /// Waits up to `patience` for a consumer's acks to be processed; returns how many
    /// deliveries are still unacknowledged then (0 when all acks were applied).
    pub fn await_acks_settled(&mut self, stream: &str, consumer: &str, patience: Duration) -> Result<u64> {
        let deadline = Instant::now() + patience;
        let subject = format!("$JS.API.CONSUMER.INFO.{stream}.{consumer}");
        loop {
            let info = self.request(&subject, &json!({}))?;
            let pending = info["num_ack_pending"].as_u64().unwrap_or(0);
            if pending == 0 || Instant::now() >= deadline {
                return Ok(pending);
            }
            std::thread::sleep(ACK_SETTLE_POLL_INTERVAL);
        }
    }

    /// Creates a durable consumer delivering everything from the start.
    pub fn create_consumer(&mut self, spec: &ConsumerSpec<'_>) -> Result<()> {
        let mut config = json!({
            "durable_name": spec.durable,
            "deliver_policy": "all",
            "ack_policy": spec.ack,
            "replay_policy": "instant",
        });
        if spec.ack != AckPolicy::None {
            config["max_ack_pending"] = json!(spec.max_ack_pending);
        }
        if let Some(deliver_subject) = &spec.deliver_subject {
            config["deliver_subject"] = json!(deliver_subject);
        }
        if let Some(group) = &spec.deliver_group {
            config["deliver_group"] = json!(group);
        }
        let body = json!({ "stream_name": spec.stream, "config": config });
        let subject = format!("$JS.API.CONSUMER.CREATE.{}.{}", spec.stream, spec.durable);
        self.request(&subject, &body)?;
        Ok(())
    }
}

fn decode_api_reply(subject: &str, bytes: &[u8]) -> Result<Value> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|source| BenchError::Json { what: subject.into(), source })?;
    if let Some(error) = value.get("error") {
        return Err(BenchError::JetStreamApi {
            subject: subject.into(),
            code: error["code"].as_u64().unwrap_or(0) as u16,
            err_code: error["err_code"].as_u64().unwrap_or(0) as u32,
            description: error["description"].as_str().unwrap_or("").into(),
        });
    }
    Ok(value)
}

/// A publish ack, checked without a full JSON parse.
#[derive(Debug, PartialEq, Eq)]
pub enum PubAck {
    Stored { seq: u64 },
    Failed { description: String },
}

/// Reads `{"stream":..,"seq":N}` or an `{"error":..}` reply to a publish.
pub fn check_pub_ack(payload: &[u8]) -> PubAck {
    if memchr::memmem::find(payload, b"\"error\"").is_some() {
        let description = serde_json::from_slice::<Value>(payload)
            .ok()
            .and_then(|value| value["error"]["description"].as_str().map(String::from))
            .unwrap_or_else(|| String::from_utf8_lossy(payload).into_owned());
        return PubAck::Failed { description };
    }
    let seq = memchr::memmem::find(payload, b"\"seq\":").and_then(|at| {
        let digits = &payload[at + 6..];
        let digits = digits.trim_ascii_start();
        let end = digits.iter().position(|byte| !byte.is_ascii_digit()).unwrap_or(digits.len());
        parse_decimal(&digits[..end])
    });
    match seq {
        Some(seq) if seq > 0 && memchr::memmem::find(payload, b"\"stream\"").is_some() => PubAck::Stored { seq },
        _ => PubAck::Failed { description: format!("unexpected ack {:?}", String::from_utf8_lossy(payload)) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pub_acks_are_checked_for_stream_seq_and_errors() {
        assert_eq!(check_pub_ack(br#"{"stream":"S","seq":42}"#), PubAck::Stored { seq: 42 });
        assert_eq!(check_pub_ack(br#"{"stream":"S", "seq": 7,"duplicate":true}"#), PubAck::Stored { seq: 7 });
        let failed = check_pub_ack(
            concat!(
                r#"{"error":{"code":503,"err_code":10077,"#,
                r#""description":"maximum messages exceeded"},"stream":"S","seq":0}"#
            )
            .as_bytes(),
        );
        assert_eq!(failed, PubAck::Failed { description: "maximum messages exceeded".into() });
        assert!(matches!(check_pub_ack(b"{}"), PubAck::Failed { .. }));
    }
}
