//! The response envelope: `{"type":"io.nats.jetstream.api.v1.<kind>", ...}` and its
//! error form, plus the byte encoding nats-server uses.
//!
//! Go embeds `ApiResponse{type, error}` first and then the body, so keys come out as
//! `type`, `error` (only on failure), then body fields. On failure the body's pointer
//! parts vanish but its value parts stay, so some error replies carry zero-valued
//! extras (recorded from nats-server 2.15.1): stream info adds `total/offset/limit`,
//! names and lists add paging plus an empty list (`streams:null` for names, `[]` for
//! the others), purge adds `purged:0`. `ErrorReply` reproduces exactly that.

use super::errors::ApiError;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

/// The `type` string of each API response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ResponseType {
    #[serde(rename = "io.nats.jetstream.api.v1.account_info_response")]
    AccountInfo,
    #[serde(rename = "io.nats.jetstream.api.v1.stream_create_response")]
    StreamCreate,
    #[serde(rename = "io.nats.jetstream.api.v1.stream_update_response")]
    StreamUpdate,
    #[serde(rename = "io.nats.jetstream.api.v1.stream_info_response")]
    StreamInfo,
    #[serde(rename = "io.nats.jetstream.api.v1.stream_names_response")]
    StreamNames,
    #[serde(rename = "io.nats.jetstream.api.v1.stream_list_response")]
    StreamList,
    #[serde(rename = "io.nats.jetstream.api.v1.stream_delete_response")]
    StreamDelete,
    #[serde(rename = "io.nats.jetstream.api.v1.stream_purge_response")]
    StreamPurge,
    #[serde(rename = "io.nats.jetstream.api.v1.stream_snapshot_response")]
    StreamSnapshot,
    #[serde(rename = "io.nats.jetstream.api.v1.stream_restore_response")]
    StreamRestore,
    #[serde(rename = "io.nats.jetstream.api.v1.stream_msg_get_response")]
    StreamMsgGet,
    #[serde(rename = "io.nats.jetstream.api.v1.stream_msg_delete_response")]
    StreamMsgDelete,
    #[serde(rename = "io.nats.jetstream.api.v1.consumer_create_response")]
    ConsumerCreate,
    #[serde(rename = "io.nats.jetstream.api.v1.consumer_info_response")]
    ConsumerInfo,
    #[serde(rename = "io.nats.jetstream.api.v1.consumer_names_response")]
    ConsumerNames,
    #[serde(rename = "io.nats.jetstream.api.v1.consumer_list_response")]
    ConsumerList,
    #[serde(rename = "io.nats.jetstream.api.v1.consumer_delete_response")]
    ConsumerDelete,
    #[serde(rename = "io.nats.jetstream.api.v1.consumer_pause_response")]
    ConsumerPause,
    #[serde(rename = "io.nats.jetstream.api.v1.consumer_reset_response")]
    ConsumerReset,
    #[serde(rename = "io.nats.jetstream.api.v1.consumer_unpin_response")]
    ConsumerUnpin,
    /// Generic answer for requests that match no endpoint (see `ApiRequest::Unknown`).
    #[serde(rename = "io.nats.jetstream.api.v1.system_response")]
    System,
}

/// Zero-valued fields Go still writes after `error` for a given response type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ErrorTail {
    Nothing,
    Paging,
    PagingAndNullList(&'static str),
    PagingAndEmptyList(&'static str),
    PurgedZero,
    /// `"paused":false,"pause_until":"0001-01-01T00:00:00Z"` (recorded from 2.15.1).
    NotPaused,
    /// `"reset_seq":0` (recorded from 2.15.1).
    ResetSeqZero,
    /// `"deliver_subject":""` (a restore's error, recorded from 2.15.1).
    EmptyDeliverSubject,
}

impl ResponseType {
    fn error_tail(self) -> ErrorTail {
        match self {
            ResponseType::StreamInfo => ErrorTail::Paging,
            ResponseType::StreamNames => ErrorTail::PagingAndNullList("streams"),
            ResponseType::StreamList => ErrorTail::PagingAndEmptyList("streams"),
            ResponseType::ConsumerNames | ResponseType::ConsumerList => ErrorTail::PagingAndEmptyList("consumers"),
            ResponseType::StreamPurge => ErrorTail::PurgedZero,
            ResponseType::ConsumerPause => ErrorTail::NotPaused,
            ResponseType::ConsumerReset => ErrorTail::ResetSeqZero,
            ResponseType::StreamRestore => ErrorTail::EmptyDeliverSubject,
            _ => ErrorTail::Nothing,
        }
    }
}

/// Paging fields of names/list/info responses (`ApiPaged` in Go).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Paged {
    pub total: u64,
    pub offset: u64,
    pub limit: u64,
}

/// A successful response: the `type` followed by the body's fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reply<T> {
    #[serde(rename = "type")]
    pub response_type: ResponseType,
    #[serde(flatten)]
    pub body: T,
}

/// A failed response: `type`, `error`, then the zero-valued fields Go writes for it.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorReply<'a> {
    pub response_type: ResponseType,
    pub error: &'a ApiError,
}

impl Serialize for ErrorReply<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", &self.response_type)?;
        map.serialize_entry("error", self.error)?;
        let tail = self.response_type.error_tail();
        if matches!(tail, ErrorTail::Paging | ErrorTail::PagingAndNullList(_) | ErrorTail::PagingAndEmptyList(_)) {
            map.serialize_entry("total", &0)?;
            map.serialize_entry("offset", &0)?;
            map.serialize_entry("limit", &0)?;
        }
        match tail {
            ErrorTail::PagingAndNullList(key) => map.serialize_entry(key, &())?,
            ErrorTail::PagingAndEmptyList(key) => map.serialize_entry(key, &[(); 0])?,
            ErrorTail::PurgedZero => map.serialize_entry("purged", &0)?,
            ErrorTail::NotPaused => {
                map.serialize_entry("paused", &false)?;
                map.serialize_entry("pause_until", &super::Timestamp::ZERO)?;
            }
            ErrorTail::ResetSeqZero => map.serialize_entry("reset_seq", &0)?,
            ErrorTail::EmptyDeliverSubject => map.serialize_entry("deliver_subject", "")?,
            ErrorTail::Nothing | ErrorTail::Paging => {}
        }
        map.end()
    }
}

/// Encodes a handler's outcome as the reply payload for `response_type`.
pub fn encode_reply<T: Serialize>(response_type: ResponseType, outcome: &Result<T, ApiError>) -> Vec<u8> {
    match outcome {
        Ok(body) => encode_go_json(&Reply { response_type, body }),
        Err(error) => encode_go_json(&ErrorReply { response_type, error }),
    }
}

/// True when `payload` is an error reply: [`encode_reply`] writes `error` right after
/// `type` (`{"type":"io.nats...","error":{...}`), and a type name holds no quote.
pub fn is_error_reply(payload: &[u8]) -> bool {
    const TYPE_KEY: &[u8] = br#"{"type":""#;
    let Some(rest) = payload.strip_prefix(TYPE_KEY) else { return false };
    let Some(type_end) = rest.iter().position(|&byte| byte == b'"') else { return false };
    rest[type_end + 1..].starts_with(br#","error":"#)
}

/// Serialises like Go's `encoding/json`: compact, with `<`, `>`, `&`, U+2028 and U+2029
/// escaped as `\u003c`, `\u003e`, `\u0026`, `\u2028`, `\u2029` (nats-server writes
/// `"subjects":["orders.\u003e"]`). These characters only occur inside JSON strings, so
/// the rewrite is safe on serde_json's output.
pub fn encode_go_json<T: Serialize + ?Sized>(value: &T) -> Vec<u8> {
    let plain = serde_json::to_vec(value).expect("API types serialise infallibly: string keys only");
    let mut escaped = Vec::with_capacity(plain.len() + 16);
    let mut rest = &plain[..];
    while let Some((&byte, tail)) = rest.split_first() {
        match byte {
            b'<' => escaped.extend_from_slice(b"\\u003c"),
            b'>' => escaped.extend_from_slice(b"\\u003e"),
            b'&' => escaped.extend_from_slice(b"\\u0026"),
            0xE2 if tail.len() >= 2 && tail[0] == 0x80 && (tail[1] == 0xA8 || tail[1] == 0xA9) => {
                escaped.extend_from_slice(if tail[1] == 0xA8 { b"\\u2028" } else { b"\\u2029" });
                rest = &tail[2..];
                continue;
            }
            _ => escaped.push(byte),
        }
        rest = tail;
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_text(response_type: ResponseType, error: ApiError) -> String {
        String::from_utf8(encode_reply::<()>(response_type, &Err(error))).unwrap()
    }

    #[test]
    fn error_replies_are_recognised() {
        assert!(is_error_reply(error_text(ResponseType::StreamInfo, ApiError::stream_not_found()).as_bytes()));
        let ok = encode_reply(ResponseType::StreamPurge, &Ok::<_, ApiError>(Paged::default()));
        assert!(!is_error_reply(&ok));
        assert!(!is_error_reply(b"{}"));
        assert!(!is_error_reply(br#"{"type":"x""#));
    }

    #[test]
    fn error_replies_carry_go_zero_tails() {
        assert_eq!(
            error_text(ResponseType::StreamInfo, ApiError::stream_not_found()),
            r#"{"type":"io.nats.jetstream.api.v1.stream_info_response","error":{"code":404,"err_code":10059,"description":"stream not found"},"total":0,"offset":0,"limit":0}"#
        );
        assert_eq!(
            error_text(ResponseType::StreamPurge, ApiError::bad_request()),
            r#"{"type":"io.nats.jetstream.api.v1.stream_purge_response","error":{"code":400,"err_code":10003,"description":"bad request"},"purged":0}"#
        );
        assert!(
            error_text(ResponseType::StreamNames, ApiError::bad_request()).ends_with(r#""limit":0,"streams":null}"#)
        );
        assert!(
            error_text(ResponseType::ConsumerList, ApiError::bad_request()).ends_with(r#""limit":0,"consumers":[]}"#)
        );
        assert!(error_text(ResponseType::StreamDelete, ApiError::bad_request()).ends_with(r#""bad request"}}"#));
    }

    #[test]
    fn go_escaping_of_html_characters() {
        let bytes = encode_go_json(&serde_json::json!({"s": "a>b<c&d\u{2028}e", "n": 1}));
        assert_eq!(String::from_utf8(bytes).unwrap(), r#"{"n":1,"s":"a\u003eb\u003cc\u0026d\u2028e"}"#);
    }
}
