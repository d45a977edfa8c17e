//! jetcore's `$JS.API` wire types against replies recorded from nats-server 2.15.1
//! (`tests/data/jsapi/tour.json`, made by `tests/data/jsapi/record.py`).
//!
//! Two kinds of check:
//! - replies: every recorded JSON reply decodes into our typed body and re-encodes to the
//!   very same bytes (key order, omit-empty, escaping, timestamp format);
//! - inputs: the recorded request bodies, run through our decoding and normalisation,
//!   give the configs and errors nats-server answered with, byte for byte.
//!
//! Replies that depend on server state (stream exists, overlaps, counters) are the
//! engines' business and are named as such below instead of being skipped silently.

use jetcore::jetstream::account::{AccountInfo, ApiStats};
use jetcore::jetstream::consumer_api::{ConsumerListBody, ConsumerNamesBody, CreateConsumerRequest, PullRequest};
use jetcore::jetstream::consumer_info::ConsumerInfo;
use jetcore::jetstream::metadata;
use jetcore::jetstream::pub_ack::{encode_pub_ack_error, PubAck};
use jetcore::jetstream::responses::{encode_go_json, ErrorReply, Reply};
use jetcore::jetstream::stream_api::{MsgGetBody, PurgeBody, StreamListBody, StreamNamesBody, SuccessBody};
use jetcore::jetstream::stream_config::{ConfigPurpose, StreamConfig};
use jetcore::jetstream::stream_info::{StreamCreateBody, StreamInfo, StreamInfoBody};
use jetcore::jetstream::{encode_reply, ApiError, ApiRequest, ResponseType, Timestamp};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

#[derive(Deserialize)]
struct Tour {
    version: String,
    exchanges: Vec<Exchange>,
}

#[derive(Deserialize)]
struct Exchange {
    name: String,
    subject: String,
    request: String,
    #[serde(default)]
    reply: Option<String>,
    #[serde(default)]
    reply_headers: BTreeMap<String, String>,
}

/// The main tour, recorded against a default `nats-server -js`.
fn tour() -> Tour {
    load("tour.json")
}

fn load(file_name: &str) -> Tour {
    let path = format!("{}/tests/data/jsapi/{file_name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("recorded corpus");
    serde_json::from_str(&text).expect("corpus is JSON")
}

fn exchange<'a>(tour: &'a Tour, name: &str) -> &'a Exchange {
    tour.exchanges.iter().find(|e| e.name == name).unwrap_or_else(|| panic!("no exchange {name}"))
}

fn json_reply(exchange: &Exchange) -> Option<&str> {
    exchange.reply.as_deref().filter(|reply| reply.starts_with('{'))
}

fn recorded_error(reply: &str) -> Option<ApiError> {
    #[derive(Deserialize)]
    struct WithError {
        error: Option<ApiError>,
    }
    serde_json::from_str::<WithError>(reply).expect("reply is JSON").error
}

fn round_trip<T: DeserializeOwned + Serialize>(response_type: ResponseType, raw: &str) -> Result<Vec<u8>, String> {
    let reply: Reply<T> = serde_json::from_str(raw).map_err(|error| format!("decode: {error}"))?;
    assert_eq!(reply.response_type, response_type);
    Ok(encode_reply(response_type, &Ok(reply.body)))
}

/// Our bytes for a recorded reply, produced by decoding it into jetcore's type.
fn reencode(exchange: &Exchange, raw: &str) -> Result<Vec<u8>, String> {
    if !exchange.subject.starts_with("$JS.API.") {
        return match recorded_error(raw) {
            Some(error) => {
                let ack: serde_json::Value = serde_json::from_str(raw).unwrap();
                Ok(encode_pub_ack_error(ack["stream"].as_str().unwrap(), &error))
            }
            None => Ok(serde_json::from_str::<PubAck>(raw).map_err(|e| e.to_string())?.encode()),
        };
    }
    let request = ApiRequest::parse(&exchange.subject);
    let response_type = request.response_type().ok_or("no JSON reply expected for this subject")?;
    if let Some(error) = recorded_error(raw) {
        return Ok(encode_go_json(&ErrorReply { response_type, error: &error }));
    }
    match response_type {
        ResponseType::AccountInfo => round_trip::<AccountInfo>(response_type, raw),
        ResponseType::StreamCreate => round_trip::<StreamCreateBody>(response_type, raw),
        ResponseType::StreamUpdate => round_trip::<StreamInfo>(response_type, raw),
        ResponseType::StreamInfo => round_trip::<StreamInfoBody>(response_type, raw),
        ResponseType::StreamNames => round_trip::<StreamNamesBody>(response_type, raw),
        ResponseType::StreamList => round_trip::<StreamListBody>(response_type, raw),
        ResponseType::StreamPurge => round_trip::<PurgeBody>(response_type, raw),
        ResponseType::StreamMsgGet => round_trip::<MsgGetBody>(response_type, raw),
        ResponseType::StreamDelete | ResponseType::StreamMsgDelete | ResponseType::ConsumerDelete => {
            round_trip::<SuccessBody>(response_type, raw)
        }
        ResponseType::ConsumerCreate | ResponseType::ConsumerInfo => round_trip::<ConsumerInfo>(response_type, raw),
        ResponseType::ConsumerNames => round_trip::<ConsumerNamesBody>(response_type, raw),
        ResponseType::ConsumerList => round_trip::<ConsumerListBody>(response_type, raw),
        ResponseType::ConsumerPause => Err("the recorded tour has no consumer pause".into()),
        ResponseType::ConsumerReset => Err("the recorded tour has no consumer reset".into()),
        ResponseType::ConsumerUnpin => Err("the recorded tour has no consumer unpin".into()),
        ResponseType::StreamSnapshot | ResponseType::StreamRestore => {
            Err("the recorded tour has no backup (tests/jetstream_backup.rs compares live)".into())
        }
        ResponseType::System => Err("system responses carry no body".into()),
    }
}

#[test]
fn every_recorded_json_reply_reencodes_byte_for_byte() {
    // tour_domain.json: a server with `jetstream { domain: hub }` (domain in pub acks,
    // account info and stream info).
    let tours = [load("tour.json"), load("tour_domain.json")];
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for exchange in tours.iter().flat_map(|tour| &tour.exchanges) {
        let Some(raw) = json_reply(exchange) else {
            continue;
        };
        checked += 1;
        match reencode(exchange, raw) {
            Ok(ours) if ours == raw.as_bytes() => {}
            Ok(ours) => mismatches.push(format!(
                "{}:\n  nats-server {raw}\n  jetcore     {}",
                exchange.name,
                String::from_utf8_lossy(&ours)
            )),
            Err(error) => mismatches.push(format!("{}: {error}\n  {raw}", exchange.name)),
        }
    }
    assert!(checked > 100, "corpus too small: {checked}");
    assert!(mismatches.is_empty(), "{} of {checked} replies differ:\n{}", mismatches.len(), mismatches.join("\n"));
}

#[test]
fn recorded_errors_match_the_catalogue() {
    let tour = tour();
    let expected = [
        ("stream_create_different_config", ApiError::stream_name_exist()),
        ("stream_create_overlap", ApiError::stream_subject_overlap()),
        ("stream_create_name_mismatch", ApiError::stream_mismatch()),
        ("stream_create_replicas_3", ApiError::stream_replicas_not_supported()),
        ("stream_info_missing", ApiError::stream_not_found()),
        ("pub_wrong_expected_last_seq", ApiError::wrong_last_sequence(3)),
        ("pub_wrong_expected_stream", ApiError::stream_not_match()),
        ("pub_wrong_last_msg_id", ApiError::wrong_last_msg_id("m1")),
        ("pub_wrong_last_subject_seq", ApiError::wrong_last_sequence(2)),
        ("pub_full_too_big", ApiError::message_exceeds_maximum()),
        ("pub_sealed", ApiError::stream_sealed()),
        ("msg_get_missing", ApiError::no_message_found()),
        ("msg_get_empty_body", ApiError::bad_request()),
        ("msg_delete_again", ApiError::sequence_not_found(2)),
        ("msg_delete_denied", ApiError::message_delete_not_permitted()),
        ("msg_delete_sealed", ApiError::stream_sealed()),
        ("purge_deny_purge", ApiError::stream_purge_not_permitted()),
        ("purge_seq_and_keep", ApiError::bad_request()),
        ("consumer_create_action_create_differs", ApiError::consumer_already_exists()),
        ("consumer_create_action_update_missing", ApiError::consumer_does_not_exist()),
        ("consumer_create_workqueue_second", ApiError::consumer_workqueue_multiple_unfiltered()),
        ("consumer_info_missing", ApiError::consumer_not_found()),
        ("consumer_delete_missing", ApiError::consumer_not_found()),
        ("consumer_names_missing_stream", ApiError::stream_not_found()),
        ("stream_delete_missing", ApiError::stream_not_found()),
    ];
    for (name, error) in expected {
        let recorded = recorded_error(json_reply(exchange(&tour, name)).expect("JSON reply"));
        assert_eq!(recorded.as_ref(), Some(&error), "{name}");
    }
}

fn stream_configs(tour: &Tour) -> HashMap<String, StreamConfig> {
    let mut configs = HashMap::new();
    for exchange in &tour.exchanges {
        let Some(raw) = json_reply(exchange) else {
            continue;
        };
        if let Ok(reply) = serde_json::from_str::<Reply<StreamCreateBody>>(raw) {
            configs.insert(reply.body.info.config.name.clone(), reply.body.info.config);
        }
    }
    configs
}

/// The API level nats-server 2.15.1 reported in the recording (jetcore's own is
/// `jetstream::api_level::API_LEVEL`).
const RECORDED_API_LEVEL: u32 = 5;

fn with_server_info<F: FnOnce(&mut metadata::Metadata)>(
    version: &str,
    metadata: F,
) -> impl FnOnce(&mut metadata::Metadata) {
    let version = version.to_string();
    move |map| {
        metadata(map);
        metadata::add_server_info(map, RECORDED_API_LEVEL, &version);
    }
}

#[test]
fn stream_create_bodies_normalise_to_the_recorded_configs_and_errors() {
    let tour = tour();
    // Answers that need other streams or the existing one: the stream engine's tests.
    let needs_state = ["stream_create_different_config", "stream_create_overlap"];
    let mut compared = 0;
    for exchange in tour.exchanges.iter().filter(|e| e.name.starts_with("stream_create_")) {
        if needs_state.contains(&exchange.name.as_str()) {
            continue;
        }
        let ApiRequest::StreamCreate { stream } = ApiRequest::parse(&exchange.subject) else { panic!() };
        let raw = json_reply(exchange).expect("JSON reply");
        let ours = StreamConfig::from_request(stream, exchange.request.as_bytes(), ConfigPurpose::Create);
        match (recorded_error(raw), ours) {
            (Some(recorded), Err(error)) => assert_eq!(error, recorded, "{}", exchange.name),
            (Some(recorded), Ok(_)) => {
                panic!("{}: nats-server refused with {recorded}", exchange.name)
            }
            (None, Err(error)) => panic!("{}: we refused with {error}", exchange.name),
            (None, Ok(mut config)) => {
                with_server_info(&tour.version, |_| {})(&mut config.metadata);
                let recorded: Reply<StreamCreateBody> = serde_json::from_str(raw).unwrap();
                assert_eq!(
                    String::from_utf8(encode_go_json(&config)).unwrap(),
                    String::from_utf8(encode_go_json(&recorded.body.info.config)).unwrap(),
                    "{}",
                    exchange.name
                );
            }
        }
        compared += 1;
    }
    assert!(compared >= 20, "only {compared} stream creates compared");
}

#[test]
fn consumer_create_bodies_normalise_to_the_recorded_configs_and_errors() {
    let tour = tour();
    let streams = stream_configs(&tour);
    // Answers that need the stream or the consumer to exist (or not): engine tests.
    let needs_state = [
        "consumer_create_action_create_differs",
        "consumer_create_action_update_missing",
        "consumer_create_missing_stream",
        "consumer_create_workqueue_second",
    ];
    let mut compared = 0;
    for exchange in tour.exchanges.iter().filter(|e| e.name.starts_with("consumer_create_")) {
        if needs_state.contains(&exchange.name.as_str()) {
            continue;
        }
        let request = ApiRequest::parse(&exchange.subject);
        let (ApiRequest::ConsumerCreate { stream, .. } | ApiRequest::ConsumerDurableCreate { stream, .. }) = request
        else {
            panic!("{}", exchange.subject)
        };
        let raw = json_reply(exchange).expect("JSON reply");
        let ours = CreateConsumerRequest::decode(exchange.request.as_bytes())
            .and_then(|body| body.resolve(&request))
            .and_then(|resolved| resolved.config.normalized(&streams[stream]));
        match (recorded_error(raw), ours) {
            (Some(recorded), Err(error)) => assert_eq!(error, recorded, "{}", exchange.name),
            (Some(recorded), Ok(_)) => {
                panic!("{}: nats-server refused with {recorded}", exchange.name)
            }
            (None, Err(error)) => panic!("{}: we refused with {error}", exchange.name),
            (None, Ok(mut config)) => {
                with_server_info(&tour.version, |_| {})(&mut config.metadata);
                let recorded: Reply<ConsumerInfo> = serde_json::from_str(raw).unwrap();
                assert_eq!(
                    String::from_utf8(encode_go_json(&config)).unwrap(),
                    String::from_utf8(encode_go_json(&recorded.body.config)).unwrap(),
                    "{}",
                    exchange.name
                );
            }
        }
        compared += 1;
    }
    assert!(compared >= 25, "only {compared} consumer creates compared");
}

#[test]
fn fresh_account_info_matches_the_first_recorded_reply() {
    let tour = tour();
    let raw = json_reply(exchange(&tour, "info_empty_body")).unwrap();
    let fresh: Reply<AccountInfo> = serde_json::from_str(raw).unwrap();
    // Two API calls ran before this one in the tour; everything else is a fresh account.
    let api = ApiStats { level: RECORDED_API_LEVEL, total: 2, ..ApiStats::default() };
    let ours = AccountInfo { usage: Default::default(), domain: String::new(), api, tiers: BTreeMap::new() };
    assert_eq!(fresh.body, ours);
    assert_eq!(encode_reply(ResponseType::AccountInfo, &Ok(ours)), raw.as_bytes());
}

#[test]
fn direct_get_time_stamps_reformat_identically() {
    let tour = tour();
    let mut seen = 0;
    for exchange in tour.exchanges.iter().filter(|e| e.name.starts_with("direct_get")) {
        if let Some(stamp) = exchange.reply_headers.get("Nats-Time-Stamp") {
            let parsed = Timestamp::parse_rfc3339(stamp).expect("RFC 3339");
            assert_eq!(&parsed.to_string(), stamp);
            seen += 1;
        }
    }
    assert_eq!(seen, 2);
}

#[test]
fn recorded_pull_bodies_decode() {
    let tour = tour();
    for exchange in tour.exchanges.iter().filter(|e| e.name.starts_with("pull_")) {
        let request = PullRequest::decode(exchange.request.as_bytes()).expect(&exchange.name);
        assert_eq!(request.batch, 1, "{}", exchange.name);
        assert!(matches!(ApiRequest::parse(&exchange.subject), ApiRequest::ConsumerNext { .. }));
    }
}
