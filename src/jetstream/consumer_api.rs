//! Request and reply bodies of the consumer endpoints: the create request and how its
//! subject form constrains it, names/list pages, and the pull request body of
//! `CONSUMER.MSG.NEXT`.

use super::consumer_config::ConsumerConfig;
use super::consumer_info::ConsumerInfo;
use super::errors::ApiError;
use super::policies::ConsumerAction;
use super::request::decode_request;
use super::responses::Paged;
use super::subjects::ApiRequest;
use crate::protocol::go_json;
use crate::protocol::go_syntax::{go_syntax_error, GoReader};
use serde::{Deserialize, Serialize};

/// Body of `CONSUMER.CREATE.*` and `CONSUMER.DURABLE.CREATE.*`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CreateConsumerRequest {
    pub stream_name: String,
    pub config: ConsumerConfig,
    /// Absent (nats-py never sends it) = create-or-update.
    pub action: ConsumerAction,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pedantic: bool,
}

/// The consumer a create request resolved to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedCreate {
    /// Config with `name` (and for durables `durable_name`) settled; defaults not yet
    /// applied (`ConsumerConfig::normalized` does that against the stream).
    pub config: ConsumerConfig,
    /// `None` for a legacy ephemeral without `config.name`: the server picks a name
    /// (nats-server: 8 random characters) and does *not* put it into `config.name`.
    pub name: Option<String>,
    pub action: ConsumerAction,
}

impl CreateConsumerRequest {
    /// Checks the body against the subject form, in nats-server's order: stream name
    /// (10056), legacy ephemeral with a durable (10020), durable name missing (10018) or
    /// different from the subject (10017), filter tokens vs. `filter_subject`
    /// (10137/10131). On the new-style subject the subject's name wins over `config.name`.
    pub fn resolve(self, subject: &ApiRequest<'_>) -> Result<ResolvedCreate, ApiError> {
        let (stream, consumer, filter, legacy_durable) = match *subject {
            ApiRequest::ConsumerCreate { stream, consumer, filter } => (stream, consumer, filter, false),
            ApiRequest::ConsumerDurableCreate { stream, consumer } => (stream, Some(consumer), None, true),
            _ => return Err(ApiError::bad_request()),
        };
        if self.stream_name != stream {
            return Err(ApiError::stream_mismatch());
        }
        let mut config = self.config;
        let name = match consumer {
            None if config.is_durable() => return Err(ApiError::consumer_ephemeral_with_durable_name()),
            None => (!config.name.is_empty()).then(|| config.name.clone()),
            Some(_) if legacy_durable && !config.is_durable() => return Err(ApiError::consumer_durable_name_not_set()),
            Some(consumer) if config.is_durable() && config.durable_name != consumer => {
                return Err(ApiError::consumer_durable_name_not_match_subject())
            }
            Some(consumer) => {
                config.name = consumer.to_string();
                Some(consumer.to_string())
            }
        };
        if let Some(filter) = filter {
            if !config.filter_subjects.is_empty() {
                return Err(ApiError::consumer_multiple_filters_not_allowed());
            }
            if config.filter_subject != filter {
                return Err(ApiError::consumer_create_filter_subject_mismatch());
            }
        }
        Ok(ResolvedCreate { config, name, action: self.action })
    }

    /// Decodes the body leniently (see `request`); a bad `action` is 10025 with Go's text.
    /// An array where Go expects an object is 10025 too (serde would take it as the
    /// struct's fields in order, `[]` as all defaults).
    pub fn decode(body: &[u8]) -> Result<CreateConsumerRequest, ApiError> {
        let trimmed = body.trim_ascii();
        if trimmed.starts_with(b"[") {
            return Err(ApiError::invalid_json(
                "json: cannot unmarshal array into Go value of type server.CreateConsumerRequest",
            ));
        }
        if let Ok(serde_json::Value::Object(fields)) = serde_json::from_slice::<serde_json::Value>(trimmed) {
            if fields.get("config").is_some_and(serde_json::Value::is_array) {
                return Err(ApiError::invalid_json(
                    "json: cannot unmarshal array into Go struct field CreateConsumerRequest.config of type server.ConsumerConfig",
                ));
            }
        }
        decode_request(body)
    }
}

/// `consumer_names_response` body; `consumers` is `[]` when empty (unlike stream names).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerNamesBody {
    #[serde(flatten)]
    pub paged: Paged,
    pub consumers: Vec<String>,
}

/// `consumer_list_response` body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerListBody {
    #[serde(flatten)]
    pub paged: Paged,
    pub consumers: Vec<ConsumerInfo>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

/// `CONSUMER.NAMES` / `CONSUMER.LIST` request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsumerNamesRequest {
    pub offset: i64,
}

/// Body of `CONSUMER.PAUSE.<s>.<c>`: pause until `pause_until`; none (or an empty body)
/// resumes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PauseRequest {
    pub pause_until: Option<super::Timestamp>,
}

/// `consumer_pause_response` body: `pause_remaining` only while paused; a resume answers
/// `pause_until` as Go's zero time (recorded from nats-server 2.15.1).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct PauseBody {
    pub paused: bool,
    pub pause_until: super::Timestamp,
    #[serde(default, skip_serializing_if = "super::stream_config::is_zero")]
    pub pause_remaining: i64,
}

/// Body of `CONSUMER.RESET.<s>.<c>`: restart at stream sequence `seq`, or (0, or no
/// body) at the ack floor. Unknown keys are ignored, as nats-server does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct ResetRequest {
    pub seq: u64,
}

/// `consumer_reset_response` body: the consumer's info after the reset, and the stream
/// sequence delivery restarts at.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResetBody {
    #[serde(flatten)]
    pub info: super::consumer_info::ConsumerInfo,
    pub reset_seq: u64,
}

/// Body of `CONSUMER.UNPIN.<s>.<c>`: the priority group whose pin to release.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnpinRequest {
    pub group: String,
}

impl UnpinRequest {
    /// Decodes as nats-server does (recorded from 2.15.1): the body is always JSON
    /// (`json.Unmarshal`; an empty body is `unexpected end of JSON input`), keys match
    /// without regard to case; then `group` must be given (10025 `consumer group not
    /// specified`) and a valid group name (10162). All of this comes before the stream
    /// and the consumer are looked up.
    pub fn decode(body: &[u8]) -> Result<UnpinRequest, ApiError> {
        if let Some(detail) = go_syntax_error(body, GoReader::Unmarshal) {
            return Err(ApiError::invalid_json(&detail));
        }
        if let Some(detail) = go_json::go_error(body, &super::go_shapes::UNPIN_REQUEST_SHAPE, None) {
            return Err(ApiError::invalid_json(&detail));
        }
        let value: serde_json::Value = serde_json::from_str(&String::from_utf8_lossy(body))
            .map_err(|error| ApiError::invalid_json(&error.to_string()))?;
        let group = match &value {
            serde_json::Value::Object(members) => members
                .get("group")
                .or_else(|| members.iter().find(|(key, _)| key.eq_ignore_ascii_case("group")).map(|(_, value)| value))
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default(),
            _ => "",
        };
        if group.is_empty() {
            return Err(ApiError::invalid_json("consumer group not specified"));
        }
        if !super::consumer_config::is_valid_group_name(group) {
            return Err(ApiError::consumer_invalid_group_name());
        }
        Ok(UnpinRequest { group: group.to_string() })
    }
}

/// The error for a consumer request about a stream that does not exist: `10059 stream
/// not found`, unless nats-server refuses the body before looking for the stream (an
/// unpin request that does not decode).
pub fn stream_missing_error(request: &ApiRequest<'_>, body: &[u8]) -> ApiError {
    match request {
        ApiRequest::ConsumerUnpin { .. } => UnpinRequest::decode(body).err().unwrap_or_else(ApiError::stream_not_found),
        _ => ApiError::stream_not_found(),
    }
}

pub use crate::consumer::pull_request::{BadPullRequest, PullRequest};

#[cfg(test)]
mod tests {
    use super::*;

    fn create(subject: &str, body: &str) -> Result<ResolvedCreate, ApiError> {
        CreateConsumerRequest::decode(body.as_bytes())?.resolve(&ApiRequest::parse(subject))
    }

    #[test]
    fn subject_forms_constrain_the_body() {
        let cases = [
            ("$JS.API.CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{"durable_name":"D"}}"#, 10020),
            ("$JS.API.CONSUMER.DURABLE.CREATE.S.D", r#"{"stream_name":"S","config":{}}"#, 10018),
            ("$JS.API.CONSUMER.DURABLE.CREATE.S.D", r#"{"stream_name":"S","config":{"durable_name":"B"}}"#, 10017),
            ("$JS.API.CONSUMER.CREATE.S.C", r#"{"stream_name":"S","config":{"durable_name":"X"}}"#, 10017),
            ("$JS.API.CONSUMER.CREATE.S.C", r#"{"stream_name":"OTHER"}"#, 10056),
            ("$JS.API.CONSUMER.CREATE.S.C", "", 10056),
            ("$JS.API.CONSUMER.CREATE.S.C.a.b", r#"{"stream_name":"S","config":{"filter_subject":"a.c"}}"#, 10131),
            ("$JS.API.CONSUMER.CREATE.S.C.a", r#"{"stream_name":"S","config":{"filter_subjects":["a","b"]}}"#, 10137),
            ("$JS.API.CONSUMER.CREATE.S.C", r#"{"stream_name":"S","action":"bogus"}"#, 10025),
        ];
        for (subject, body, code) in cases {
            assert_eq!(create(subject, body).unwrap_err().err_code, code, "{subject} {body}");
        }
    }

    #[test]
    fn new_style_subject_names_the_consumer() {
        let resolved = create("$JS.API.CONSUMER.CREATE.S.A", r#"{"stream_name":"S","config":{"name":"B"}}"#).unwrap();
        assert_eq!((resolved.name.as_deref(), resolved.config.name.as_str()), (Some("A"), "A"));
        let legacy = create("$JS.API.CONSUMER.CREATE.S", r#"{"stream_name":"S","config":{}}"#).unwrap();
        assert_eq!(legacy.name, None);
        assert!(legacy.config.name.is_empty());
    }

    #[test]
    fn pull_bodies_in_all_three_forms() {
        assert_eq!(PullRequest::decode(b"").unwrap().batch, 1);
        assert_eq!(PullRequest::decode(b"7").unwrap().batch, 7);
        assert_eq!(PullRequest::decode(b"abc").unwrap().batch, 1);
        let json = br#"{"batch":200,"no_wait":true,"max_bytes":0,"min_pending":null,"group":null,"x":1}"#;
        let request = PullRequest::decode(json).unwrap();
        assert!(request.no_wait && request.batch == 200);
    }

    #[test]
    fn bad_pull_requests_use_go_texts() {
        let error = PullRequest::decode(br#"{"batch":1,"idle_heartbeat":1000000000}"#).unwrap_err();
        assert_eq!(error.status_description(), "Bad Request - heartbeat value too large");
        let error = PullRequest::decode(br#"{"batch":"#).unwrap_err();
        assert_eq!(error.status_description(), "Bad Request - unexpected end of JSON input");
        assert!(PullRequest::decode(br#"{"expires":30000000000,"idle_heartbeat":15000000000}"#).is_ok());
    }

    /// Recorded from nats-server 2.15.1: `json.Unmarshal` wording, keys without regard to
    /// case, `null` as no group.
    #[test]
    fn unpin_bodies_decode_as_nats_server_reads_them() {
        let group = |body: &str| UnpinRequest::decode(body.as_bytes()).map(|request| request.group);
        assert_eq!(group(r#"{"group":"A","x":1}"#), Ok("A".to_string()));
        assert_eq!(group(r#"{"Group":"A"}"#), Ok("A".to_string()));
        assert_eq!(group(r#" {"group":"A"} "#), Ok("A".to_string()));
        let refusals = [
            ("null", "invalid JSON: consumer group not specified"),
            (r#"{"group":null}"#, "invalid JSON: consumer group not specified"),
            ("[]", "invalid JSON: json: cannot unmarshal array into Go value of type server.JSApiConsumerUnpinRequest"),
            ("", "invalid JSON: unexpected end of JSON input"),
        ];
        for (body, description) in refusals {
            let error = UnpinRequest::decode(body.as_bytes()).unwrap_err();
            assert_eq!((error.err_code, error.description.as_str()), (10025, description), "{body:?}");
        }
    }
}
