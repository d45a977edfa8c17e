//! Request and reply bodies of the stream endpoints other than create/update/info:
//! `STREAM.NAMES`, `STREAM.LIST`, `STREAM.DELETE`, `STREAM.PURGE`, `STREAM.MSG.GET`,
//! `STREAM.MSG.DELETE`, plus the `STREAM.INFO` request options.

use super::base64;
use super::errors::ApiError;
use super::request::{decode_request, parse_body};
use super::responses::Paged;
use super::stream_config::is_false;
use super::stream_info::StreamInfo;
use super::time::Timestamp;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

/// Options of `STREAM.INFO`: `state.subjects` for `subjects_filter` (paged by `offset`),
/// `state.deleted` for `deleted_details`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamInfoRequest {
    pub deleted_details: bool,
    pub subjects_filter: String,
    pub offset: i64,
}

/// `STREAM.NAMES` / `STREAM.LIST`: `subject` keeps streams whose subjects collide with it.
/// A negative `offset` counts as 0 (recorded).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamNamesRequest {
    pub offset: i64,
    pub subject: String,
}

impl StreamNamesRequest {
    pub fn offset(&self) -> u64 {
        self.offset.max(0) as u64
    }
}

/// `stream_names_response` body. Go writes an empty page as `"streams":null`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamNamesBody {
    #[serde(flatten)]
    pub paged: Paged,
    #[serde(serialize_with = "empty_as_null", deserialize_with = "null_as_empty")]
    pub streams: Vec<String>,
}

/// `stream_list_response` body; `streams` is always a list (`[]` when empty).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamListBody {
    #[serde(flatten)]
    pub paged: Paged,
    pub streams: Vec<StreamInfo>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

/// Body of the delete replies (stream, consumer, message): `{"success":true}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuccessBody {
    #[serde(default, skip_serializing_if = "is_false")]
    pub success: bool,
}

impl SuccessBody {
    pub const SUCCESS: SuccessBody = SuccessBody { success: true };
}

/// `STREAM.PURGE` options (ADR-10). No body purges everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PurgeRequest {
    /// Only messages on subjects matching this (wildcards allowed).
    pub filter: String,
    /// Purge messages below this sequence (exclusive).
    pub seq: u64,
    /// Keep this many newest messages (per filter when given).
    pub keep: u64,
}

impl PurgeRequest {
    /// Decodes the body; `seq` together with `keep` is 10003 bad request.
    pub fn decode(body: &[u8]) -> Result<PurgeRequest, ApiError> {
        let request: PurgeRequest = decode_request(body)?;
        if request.seq > 0 && request.keep > 0 {
            return Err(ApiError::bad_request());
        }
        Ok(request)
    }
}

/// `stream_purge_response` body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeBody {
    #[serde(default, skip_serializing_if = "is_false")]
    pub success: bool,
    pub purged: u64,
}

/// `STREAM.MSG.GET` (and JSON `DIRECT.GET`) request. Decoded leniently: nats-server's
/// field list here grew with direct-get batching and is not fully known to us.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct MsgGetRequest {
    pub seq: u64,
    pub last_by_subj: String,
    pub next_by_subj: String,
    pub start_time: Option<Timestamp>,
    /// Direct-get batching (2.11); refused by `STREAM.MSG.GET`.
    pub batch: i64,
    pub max_bytes: i64,
    pub multi_last: Vec<String>,
    pub up_to_seq: u64,
    pub up_to_time: Option<Timestamp>,
}

/// Which message a `MsgGetRequest` asks for, once the option combination is valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageSelector<'a> {
    Sequence(u64),
    LastBySubject(&'a str),
    /// First message at or after `from_seq` on `subject` (wildcards allowed).
    NextBySubject {
        subject: &'a str,
        from_seq: u64,
    },
    /// First message stored at or after `time`, optionally on `subject`.
    FirstAtOrAfter {
        time: Timestamp,
        subject: Option<&'a str>,
    },
}

impl MsgGetRequest {
    /// Decodes a `STREAM.MSG.GET` body: a body is required, batching is refused, and the
    /// option combination must be one nats-server accepts; otherwise 10003 bad request.
    pub fn decode(body: &[u8]) -> Result<MsgGetRequest, ApiError> {
        if parse_body(body)?.is_none() {
            return Err(ApiError::bad_request());
        }
        let request: MsgGetRequest = decode_request(body)?;
        if request.batch > 0 || request.max_bytes > 0 {
            return Err(ApiError::bad_request());
        }
        request.selector()?;
        Ok(request)
    }

    /// `seq`, `last_by_subj` and `start_time` exclude each other; `next_by_subj` may pair
    /// with `seq` or `start_time` (nats-server `jsMsgGetRequest`).
    pub fn selector(&self) -> Result<MessageSelector<'_>, ApiError> {
        let last = (!self.last_by_subj.is_empty()).then_some(self.last_by_subj.as_str());
        let next = (!self.next_by_subj.is_empty()).then_some(self.next_by_subj.as_str());
        match (self.seq, last, next, self.start_time) {
            (0, Some(subject), None, None) => Ok(MessageSelector::LastBySubject(subject)),
            (seq, None, Some(subject), None) => Ok(MessageSelector::NextBySubject { subject, from_seq: seq }),
            (0, None, subject, Some(time)) => Ok(MessageSelector::FirstAtOrAfter { time, subject }),
            (seq, None, None, None) if seq > 0 => Ok(MessageSelector::Sequence(seq)),
            _ => Err(ApiError::bad_request()),
        }
    }
}

/// A stored message as `STREAM.MSG.GET` returns it. `hdrs` (the full header block,
/// `NATS/1.0\r\n...\r\n\r\n`) and `data` travel base64-encoded and are omitted when empty.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMessage {
    pub subject: String,
    pub seq: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "base64_bytes")]
    pub hdrs: Vec<u8>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "base64_bytes")]
    pub data: Vec<u8>,
    pub time: Timestamp,
}

/// `stream_msg_get_response` body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MsgGetBody {
    pub message: StoredMessage,
}

/// `STREAM.MSG.DELETE` request; a body is required (10003 without one).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MsgDeleteRequest {
    pub seq: u64,
    /// `true`: only mark deleted; `false`: overwrite the stored bytes.
    pub no_erase: bool,
}

impl MsgDeleteRequest {
    pub fn decode(body: &[u8]) -> Result<MsgDeleteRequest, ApiError> {
        if parse_body(body)?.is_none() {
            return Err(ApiError::bad_request());
        }
        decode_request(body)
    }
}

fn empty_as_null<S: Serializer>(items: &[String], serializer: S) -> Result<S::Ok, S::Error> {
    if items.is_empty() {
        serializer.serialize_none()
    } else {
        items.serialize(serializer)
    }
}

fn null_as_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(deserializer)?.unwrap_or_default())
}

mod base64_bytes {
    use super::*;

    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&base64::encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(deserializer)?;
        base64::decode(&text).ok_or_else(|| de::Error::custom("illegal base64 data"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msg_get_combinations_follow_nats_server() {
        let get = |json: &str| MsgGetRequest::decode(json.as_bytes());
        assert_eq!(get(r#"{"seq":1}"#).unwrap().selector(), Ok(MessageSelector::Sequence(1)));
        let next = get(r#"{"seq":2,"next_by_subj":"a.*"}"#).unwrap();
        assert_eq!(next.selector(), Ok(MessageSelector::NextBySubject { subject: "a.*", from_seq: 2 }));
        for bad in [
            "",
            "{}",
            r#"{"seq":0}"#,
            r#"{"seq":1,"last_by_subj":"a"}"#,
            r#"{"seq":1,"batch":2}"#,
            r#"{"last_by_subj":"a","next_by_subj":"b"}"#,
        ] {
            assert_eq!(get(bad), Err(ApiError::bad_request()), "{bad}");
        }
    }

    #[test]
    fn purge_refuses_seq_with_keep() {
        assert_eq!(PurgeRequest::decode(br#"{"seq":2,"keep":1}"#), Err(ApiError::bad_request()));
        assert_eq!(PurgeRequest::decode(b"null"), Ok(PurgeRequest::default()));
    }

    #[test]
    fn empty_names_page_is_null_but_list_page_is_empty() {
        let names = serde_json::to_string(&StreamNamesBody::default()).unwrap();
        assert!(names.ends_with(r#""streams":null}"#), "{names}");
        let list = StreamListBody { paged: Paged::default(), streams: vec![], missing: vec![] };
        assert!(serde_json::to_string(&list).unwrap().ends_with(r#""streams":[]}"#));
    }

    #[test]
    fn msg_delete_needs_a_body() {
        assert_eq!(MsgDeleteRequest::decode(b""), Err(ApiError::bad_request()));
        assert_eq!(MsgDeleteRequest::decode(br#"{"seq":3,"no_erase":true}"#).unwrap().seq, 3);
    }
}
