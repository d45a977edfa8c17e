//! The nested objects of `StreamConfig` and `StreamInfo`: `placement`, `mirror`/`sources`
//! (followed by `service::sourcing`), `subject_transform`, `republish`, and the
//! mirror/source progress in stream info. Typed (rather than opaque JSON) so they come
//! out in Go's field order with Go's omit-empty rules, whatever order a client used.

use super::errors::ApiError;
use super::stream_config::{is_false, is_zero_u64};
use super::time::Timestamp;
use serde::{Deserialize, Serialize};

/// `placement`: where a clustered server would put the stream.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Placement {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub preferred: String,
}

/// One entry of `sources`, or the `mirror`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamSource {
    pub name: String,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub opt_start_seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_start_time: Option<Timestamp>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub filter_subject: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subject_transforms: Vec<SubjectTransform>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalStream>,
    /// A pre-created durable consumer on the origin to source through (2.14, ADR-60).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumer: Option<SourceConsumer>,
}

/// `consumer` of a source: the durable push consumer nats-server binds to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SourceConsumer {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub deliver_subject: String,
}

impl StreamSource {
    /// nats-server's index name: the stream (with `:<hash of the API prefix>` when
    /// external, so a hub's stream and a local one of the same name differ), the filter
    /// (or `>`) and the transform destination (or `>`); several transforms join with form
    /// feeds. Two sources with the same index name are the same source.
    pub fn index_name(&self) -> String {
        let stream = match &self.external {
            Some(external) => format!("{}:{}", self.name, go_hash(&external.api)),
            None => self.name.clone(),
        };
        let (source, destination) = if self.subject_transforms.is_empty() {
            let filter = if self.filter_subject.is_empty() { ">" } else { &self.filter_subject };
            (filter.to_string(), ">".to_string())
        } else {
            let or_all = |s: &str| if s.is_empty() { ">".to_string() } else { s.to_string() };
            let sources: Vec<String> = self.subject_transforms.iter().map(|t| or_all(&t.src)).collect();
            let destinations: Vec<String> = self.subject_transforms.iter().map(|t| or_all(&t.dest)).collect();
            (sources.join("\u{c}"), destinations.join("\u{c}"))
        };
        format!("{stream} {source} {destination}")
    }
}

/// nats-server's `getHash`: the first eight bytes of the SHA-256 of `name`, each as one
/// of 62 digits.
fn go_hash(name: &str) -> String {
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let digest = ring::digest::digest(&ring::digest::SHA256, name.as_bytes());
    digest.as_ref()[..8].iter().map(|byte| DIGITS[(*byte % 62) as usize] as char).collect()
}

/// A stream in another account or domain, reached through API/deliver prefixes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExternalStream {
    pub api: String,
    pub deliver: String,
}

/// `subject_transform` and entries of `subject_transforms`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubjectTransform {
    pub src: String,
    pub dest: String,
}

/// `republish`: copy stored messages to another subject.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RePublish {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub src: String,
    pub dest: String,
    #[serde(skip_serializing_if = "is_false")]
    pub headers_only: bool,
}

/// Progress of the mirror or of one source, in stream info. `active` is nanoseconds
/// since the last contact, `-1` when never.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamSourceInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalStream>,
    pub lag: u64,
    /// Sources only: the last origin sequence copied (omitted while none).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub seq: u64,
    pub active: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub filter_subject: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subject_transforms: Vec<SubjectTransform>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_key_order_does_not_leak_into_the_echo() {
        let source: StreamSource = serde_json::from_str(r#"{"filter_subject":"orders.paid","name":"ORDERS"}"#).unwrap();
        assert_eq!(serde_json::to_string(&source).unwrap(), r#"{"name":"ORDERS","filter_subject":"orders.paid"}"#);
    }

    #[test]
    fn an_external_source_is_indexed_by_its_api_prefix_hash() {
        let source: StreamSource =
            serde_json::from_str(r#"{"name":"ORDERS","filter_subject":"orders.1","external":{"api":"$JS.hub.API"}}"#)
                .unwrap();
        // Recorded from nats-server 2.15.1: `Nats-Stream-Source: ORDERS:bTMUkJQk 2 orders.1 > ...`.
        assert_eq!(source.index_name(), "ORDERS:bTMUkJQk orders.1 >");
    }

    #[test]
    fn unknown_keys_are_refused_like_go() {
        assert!(serde_json::from_str::<Placement>(r#"{"cluster":"x","bogus":1}"#).is_err());
    }
}
