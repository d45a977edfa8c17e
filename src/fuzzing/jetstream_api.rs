//! Fuzz target `jetstream_api`: a `$JS.API` request as the server receives it, the
//! subject on the first line and the body after it, routed like the dispatcher routes it
//! and decoded and validated by the same functions (stream and consumer configs, pull
//! requests, purge, get, delete, names, pause).
//!
//! Contract checked: nothing panics; an accepted stream or consumer config, encoded as
//! JSON and sent again, is accepted as the same config (normalising is idempotent), and
//! converts to the engine's settings.

use crate::jetstream::consumer_api::{
    ConsumerNamesRequest, CreateConsumerRequest, PauseRequest, PullRequest, UnpinRequest,
};
use crate::jetstream::policies::RetentionPolicy;
use crate::jetstream::request::{decode_request, parse_body};
use crate::jetstream::service::convert::engine_config;
use crate::jetstream::stream_api::{MsgDeleteRequest, MsgGetRequest, PurgeRequest, StreamNamesRequest};
use crate::jetstream::stream_config::{ConfigPurpose, StreamConfig};
use crate::jetstream::{ApiRequest, Timestamp};
use crate::store::SyncPolicy;
use crate::subject;

/// The stream every fuzzed consumer is created on.
const CONSUMER_STREAM_CONFIG: &[u8] = br#"{"name":"S","subjects":["orders.>","telemetry.*"]}"#;

/// The target's whole check: `data` is `subject \n body`.
pub fn check(data: &[u8]) {
    let (subject, body) = match data.iter().position(|byte| *byte == b'\n') {
        Some(end) => (&data[..end], &data[end + 1..]),
        None => (data, &[][..]),
    };
    let subject = String::from_utf8_lossy(subject);
    let request = ApiRequest::parse(&subject);
    let _ = request.response_type();
    match request {
        ApiRequest::StreamCreate { stream } => check_stream(stream, body, ConfigPurpose::Create),
        ApiRequest::StreamUpdate { stream } => check_stream(stream, body, ConfigPurpose::Update),
        ApiRequest::ConsumerCreate { .. } | ApiRequest::ConsumerDurableCreate { .. } => check_consumer(&request, body),
        ApiRequest::ConsumerNext { .. } => check_pull(body),
        ApiRequest::StreamPurge { .. } => {
            let _ = PurgeRequest::decode(body);
        }
        ApiRequest::StreamMsgGet { .. } => {
            if let Ok(request) = MsgGetRequest::decode(body) {
                let _ = request.selector();
            }
        }
        ApiRequest::DirectGet { .. } => check_direct_get(body),
        ApiRequest::StreamMsgDelete { .. } => {
            let _ = MsgDeleteRequest::decode(body);
        }
        ApiRequest::StreamNames | ApiRequest::StreamList => {
            let _ = decode_request::<StreamNamesRequest>(body);
        }
        ApiRequest::ConsumerNames { .. } | ApiRequest::ConsumerList { .. } => {
            let _ = decode_request::<ConsumerNamesRequest>(body);
        }
        ApiRequest::ConsumerUnpin { .. } => {
            if let Ok(request) = UnpinRequest::decode(body) {
                assert!(!request.group.is_empty(), "a decoded unpin names its group");
            }
        }
        ApiRequest::ConsumerPause { .. } => {
            if let Ok(request) = decode_request::<PauseRequest>(body) {
                let _ = request.pause_until.map(Timestamp::unix_nanos);
            }
        }
        _ => {
            let _ = parse_body(body);
        }
    }
}

/// `STREAM.CREATE` / `STREAM.UPDATE`: decode and normalise, the server's subject checks,
/// the engine conversion; an accepted config sent again is the same config.
fn check_stream(stream: &str, body: &[u8], purpose: ConfigPurpose) {
    let Ok(config) = StreamConfig::from_request(stream, body, purpose) else {
        return;
    };
    for (index, pattern) in config.subjects.iter().enumerate() {
        if !subject::is_valid_subject(pattern.as_bytes()) {
            return;
        }
        for other in &config.subjects[index + 1..] {
            let _ = subject::collide(pattern.as_bytes(), other.as_bytes());
            let _ = subject::is_subset(pattern.as_bytes(), other.as_bytes());
        }
    }
    let _ = engine_config(&config, SyncPolicy::Always);
    let encoded = serde_json::to_vec(&config).expect("a config encodes");
    let again = StreamConfig::from_request(stream, &encoded, purpose);
    let encoded = String::from_utf8_lossy(&encoded);
    assert_eq!(again.as_ref(), Ok(&config), "re-sent config {encoded}");
}

/// `CONSUMER.CREATE` forms: decode, resolve against the subject, normalise against a
/// fixed stream, convert to the consumer's settings; the normalised config sent again
/// normalises to itself.
fn check_consumer(request: &ApiRequest<'_>, body: &[u8]) {
    let Ok(resolved) = CreateConsumerRequest::decode(body).and_then(|r| r.resolve(request)) else {
        return;
    };
    let stream = StreamConfig::from_request("S", CONSUMER_STREAM_CONFIG, ConfigPurpose::Create)
        .expect("the fixed stream config is valid");
    let Ok(config) = resolved.config.normalized(&stream) else {
        return;
    };
    use RetentionPolicy::{Interest, Limits, WorkQueue};
    for retention in [Limits, Interest, WorkQueue] {
        let settings = crate::jetstream::consumer_settings::settings(&config, retention);
        for delivery_count in [0, 1, 2, u64::MAX] {
            let _ = settings.ack_wait_for(delivery_count);
        }
    }
    let _ = config.opt_start_time.map(Timestamp::unix_nanos);
    let _ = config.pause_until.map(Timestamp::unix_nanos);
    let encoded = serde_json::to_vec(&config).expect("a config encodes");
    let decoded: Result<_, _> = serde_json::from_slice(&encoded);
    let decoded = decoded.unwrap_or_else(|error| {
        panic!("re-sent config {} does not decode: {error}", String::from_utf8_lossy(&encoded))
    });
    let again = crate::jetstream::consumer_config::ConsumerConfig::normalized(decoded, &stream);
    assert_eq!(again.as_ref(), Ok(&config), "re-sent config {}", String::from_utf8_lossy(&encoded));
}

/// `CONSUMER.MSG.NEXT`: the three body forms; an accepted request has a batch of one or more.
fn check_pull(body: &[u8]) {
    if let Ok(request) = PullRequest::decode(body) {
        assert!(request.batch >= 1);
    }
}

/// `DIRECT.GET`: the body as `direct_get` reads it (JSON or `null`), then its selector.
fn check_direct_get(body: &[u8]) {
    if let Ok(Some(request)) = serde_json::from_slice::<Option<MsgGetRequest>>(body) {
        let _ = request.selector();
        let _ = request.up_to_time.map(Timestamp::unix_nanos);
    }
}
