//! The body of a pull request (`CONSUMER.MSG.NEXT.<s>.<c>`, or the rest of a `+NXT` ack):
//! how many messages, until when, within how many bytes. Decoded here because a consumer
//! receives it inside acks too; the `$JS.API` layer re-exports it.

use serde::{Deserialize, Serialize};

use crate::protocol::go_json::{type_error_detail, GoRequest, GoStruct, GoType};
use crate::protocol::go_syntax::{go_syntax_error, GoReader};

/// Body of a pull request to `CONSUMER.MSG.NEXT.<s>.<c>`. Durations are nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct PullRequest {
    /// Messages wanted; 0 and negatives mean 1.
    pub batch: i64,
    /// Relative expiry; 0 = never, negative = already expired (answered 408 at once).
    pub expires: i64,
    pub no_wait: bool,
    /// Byte budget across the batch; 0 = unlimited.
    pub max_bytes: i64,
    pub idle_heartbeat: i64,
    /// Priority-group fields (2.11+); clients send them as `null` when unused.
    pub min_pending: i64,
    pub min_ack_pending: i64,
    pub group: String,
    pub id: String,
    pub priority: i64,
    /// The body was a JSON object: nats-server then checks the priority-group fields
    /// (a bare batch size or an empty body names no group and passes unchecked).
    #[serde(skip)]
    pub json: bool,
}

/// A pull request nats-server answers with `400 Bad Request - <detail>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadPullRequest {
    pub detail: String,
}

impl BadPullRequest {
    /// The status description, e.g. `Bad Request - heartbeat value too large`.
    pub fn status_description(&self) -> String {
        format!("Bad Request - {}", self.detail)
    }
}

impl PullRequest {
    /// Decodes the three body forms: empty (batch 1, wait forever), a bare integer
    /// (that batch; unparsable text also means batch 1, as in nats-server), or JSON.
    /// Unknown JSON fields are ignored (nats-server too); a heartbeat with `2 *
    /// idle_heartbeat > expires` (including no expiry) is refused. The doubling wraps as
    /// Go's `time.Duration` arithmetic does, so a heartbeat of 2^62 ns or more passes the
    /// check as it does in nats-server (consumer.go `nextReqFromMsg`).
    pub fn decode(body: &[u8]) -> Result<PullRequest, BadPullRequest> {
        let trimmed = body.trim_ascii();
        let mut request = if trimmed.first() == Some(&b'{') {
            let value = parse_object(trimmed).ok_or_else(|| BadPullRequest { detail: json_detail(trimmed) })?;
            let request = PullRequest::deserialize(value)
                .map_err(|error| BadPullRequest { detail: type_error_detail(&error, trimmed, &PULL_REQUEST_SHAPE) })?;
            PullRequest { json: true, ..request }
        } else {
            let batch = std::str::from_utf8(trimmed).ok().and_then(|text| text.parse().ok()).unwrap_or(1);
            PullRequest { batch, ..PullRequest::default() }
        };
        if request.idle_heartbeat > 0 && request.idle_heartbeat.wrapping_mul(2) > request.expires {
            return Err(BadPullRequest { detail: "heartbeat value too large".to_string() });
        }
        request.batch = request.batch.max(1);
        Ok(request)
    }
}

/// Go `json.Unmarshal`'s wording: truncated input is `unexpected end of JSON input`.
fn json_detail(body: &[u8]) -> String {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Err(error) => go_syntax_error(body, GoReader::Unmarshal).unwrap_or_else(|| error.to_string()),
        Ok(_) => "invalid request".to_string(),
    }
}

/// The Go struct nats-server decodes a pull request into, for wording type errors as Go
/// does. It decodes through a local type, so its errors name no struct (`name` is empty).
static PULL_REQUEST_SHAPE: GoRequest = GoRequest { name: "", body: &PULL_REQUEST };

static PULL_REQUEST: GoStruct = GoStruct {
    go_name: "server.JSApiConsumerGetNextRequest",
    fields: &[
        ("expires", GoType::Int("time.Duration", 64)),
        ("batch", GoType::Int("int", 64)),
        ("max_bytes", GoType::Int("int", 64)),
        ("no_wait", GoType::Bool),
        ("idle_heartbeat", GoType::Int("time.Duration", 64)),
        ("id", GoType::String),
        ("group", GoType::String),
        ("min_pending", GoType::Int("int64", 64)),
        ("min_ack_pending", GoType::Int("int64", 64)),
        ("priority", GoType::Int("int", 64)),
    ],
};

/// The JSON object of a request body, `null` members removed (Go leaves those fields
/// unset). Invalid UTF-8 becomes U+FFFD, as Go's decoder does.
fn parse_object(body: &[u8]) -> Option<serde_json::Value> {
    let mut value: serde_json::Value = serde_json::from_str(&String::from_utf8_lossy(body)).ok()?;
    if let serde_json::Value::Object(members) = &mut value {
        members.retain(|_, member| !member.is_null());
    }
    Some(value)
}
