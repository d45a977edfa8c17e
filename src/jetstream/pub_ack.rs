//! The reply to a publish into a stream (no `type` key), encoded byte-for-byte like
//! nats-server 2.15.1, which builds it from a template rather than `encoding/json`:
//! - stored:    `{"stream":"S","seq":42}` (`"domain":"D"` after `stream` when set);
//! - counter:   `{"stream":"S","seq":42,"val":"7"}` (the subject's new total);
//! - duplicate: `{"stream":"S","seq":41,"duplicate": true}` (note the space, recorded);
//! - refused:   `{"error":{...},"stream":"S","seq":0}`.
//!
//! This is a hot path: encoding writes into a caller's buffer, no serde.

use super::errors::ApiError;
use super::responses::encode_go_json;
use serde::{Deserialize, Serialize};

/// A successful publish acknowledgement.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PubAck {
    pub stream: String,
    /// The stored sequence, or the original one for a duplicate.
    pub seq: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub duplicate: bool,
    /// The commit of an atomic batch: its id and how many messages it stored.
    #[serde(skip)]
    pub batch: Option<(String, u64)>,
    /// A counter stream's new total of the subject (ADR-49).
    #[serde(default, rename = "val", skip_serializing_if = "Option::is_none")]
    pub counter_total: Option<String>,
}

impl PubAck {
    /// Appends the acknowledgement's bytes to `buffer`.
    pub fn encode_into(&self, buffer: &mut Vec<u8>) {
        buffer.extend_from_slice(b"{\"stream\":");
        push_json_string(buffer, &self.stream);
        if !self.domain.is_empty() {
            buffer.extend_from_slice(b",\"domain\":");
            push_json_string(buffer, &self.domain);
        }
        buffer.extend_from_slice(b",\"seq\":");
        crate::protocol::push_decimal(buffer, self.seq as usize);
        if let Some(total) = &self.counter_total {
            buffer.extend_from_slice(b",\"val\":");
            push_json_string(buffer, total);
        }
        if self.duplicate {
            buffer.extend_from_slice(b",\"duplicate\": true");
        }
        if let Some((id, count)) = &self.batch {
            buffer.extend_from_slice(b",\"batch\":");
            push_json_string(buffer, id);
            buffer.extend_from_slice(b",\"count\":");
            crate::protocol::push_decimal(buffer, *count as usize);
        }
        buffer.push(b'}');
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut buffer = Vec::with_capacity(48 + self.stream.len());
        self.encode_into(&mut buffer);
        buffer
    }
}

/// A refused publish: the error, then `stream` and `seq:0`.
pub fn encode_pub_ack_error(stream: &str, error: &ApiError) -> Vec<u8> {
    let mut buffer = b"{\"error\":".to_vec();
    buffer.extend_from_slice(&encode_go_json(error));
    buffer.extend_from_slice(b",\"stream\":");
    push_json_string(&mut buffer, stream);
    buffer.extend_from_slice(b",\"seq\":0}");
    buffer
}

/// A JSON string as Go writes it. Stream names are printable ASCII with nothing to
/// escape: those are written as they are, without `encode_go_json`'s two buffers (one
/// pub ack per publish, perf/shards.md).
fn push_json_string(buffer: &mut Vec<u8>, text: &str) {
    let plain = text.bytes().all(|byte| (b' '..=b'~').contains(&byte) && !b"\"\\<>&".contains(&byte));
    if plain {
        buffer.push(b'"');
        buffer.extend_from_slice(text.as_bytes());
        buffer.push(b'"');
    } else {
        buffer.extend_from_slice(&encode_go_json(text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(stream: &str, seq: u64, duplicate: bool) -> String {
        let ack = PubAck { stream: stream.into(), seq, duplicate, ..PubAck::default() };
        String::from_utf8(ack.encode()).unwrap()
    }

    #[test]
    fn acks_match_recorded_bytes() {
        assert_eq!(ack("ORDERS", 1, false), r#"{"stream":"ORDERS","seq":1}"#);
        assert_eq!(ack("ORDERS", 3, true), r#"{"stream":"ORDERS","seq":3,"duplicate": true}"#);
        let error = encode_pub_ack_error("ORDERS", &ApiError::wrong_last_sequence(3));
        assert_eq!(
            String::from_utf8(error).unwrap(),
            r#"{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"},"stream":"ORDERS","seq":0}"#
        );
    }

    #[test]
    fn names_to_escape_are_written_as_go_writes_them() {
        for (name, written) in [
            ("a<b>&c", r#""a\u003cb\u003e\u0026c""#),
            ("q\"uote", r#""q\"uote""#),
            ("back\\slash", r#""back\\slash""#),
            ("tab\tname", r#""tab\tname""#),
            ("caf\u{e9}", "\"caf\u{e9}\""),
            ("line\u{2028}sep", r#""line\u2028sep""#),
        ] {
            let ack = PubAck { stream: name.into(), seq: 1, ..PubAck::default() };
            assert_eq!(
                String::from_utf8(ack.encode()).unwrap(),
                format!(r#"{{"stream":{written},"seq":1}}"#),
                "{name:?}"
            );
        }
    }

    #[test]
    fn counter_ack_matches_recorded_bytes() {
        let ack = PubAck { stream: "C".into(), seq: 3, counter_total: Some("-4".into()), ..PubAck::default() };
        assert_eq!(String::from_utf8(ack.encode()).unwrap(), r#"{"stream":"C","seq":3,"val":"-4"}"#);
    }

    #[test]
    fn batch_commit_ack_matches_recorded_bytes() {
        let ack = PubAck { stream: "A".into(), seq: 3, batch: Some(("b2".into(), 3)), ..PubAck::default() };
        assert_eq!(String::from_utf8(ack.encode()).unwrap(), r#"{"stream":"A","seq":3,"batch":"b2","count":3}"#);
    }

    #[test]
    fn domain_sits_between_stream_and_seq() {
        let ack = PubAck { stream: "S".into(), seq: 42, domain: "hub".into(), ..PubAck::default() };
        assert_eq!(String::from_utf8(ack.encode()).unwrap(), r#"{"stream":"S","domain":"hub","seq":42}"#);
    }

    #[test]
    fn decodes_its_own_and_nats_server_bytes() {
        let parsed: PubAck = serde_json::from_str(r#"{"stream":"ORDERS","seq":3,"duplicate": true}"#).unwrap();
        assert_eq!(parsed, PubAck { stream: "ORDERS".into(), seq: 3, duplicate: true, ..PubAck::default() });
    }
}
