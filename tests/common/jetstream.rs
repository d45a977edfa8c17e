//! JetStream helpers for integration tests: an async-nats client and context on a test
//! server, and raw `$JS.API` / publish requests that return the reply JSON as sent, so a
//! test can check `code`, `err_code` and `description` exactly.
#![allow(dead_code)]

use std::time::Duration;

use async_nats::jetstream::{self, Context};
use async_nats::{Client, HeaderMap};
use serde_json::Value;

use super::TestServer;

/// How long a test waits for any single reply.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

pub async fn connect(server: &TestServer) -> (Client, Context) {
    let client = async_nats::ConnectOptions::new()
        .request_timeout(Some(REPLY_TIMEOUT))
        .connect(server.url())
        .await
        .expect("connect to jetcore");
    let context = jetstream::new(client.clone());
    (client, context)
}

/// Sends `body` to `$JS.API.<api>` and returns the decoded JSON reply.
pub async fn api(client: &Client, api: &str, body: &str) -> Value {
    let subject = format!("$JS.API.{api}");
    let reply = client
        .request(subject.clone(), body.to_string().into())
        .await
        .unwrap_or_else(|error| panic!("request {subject}: {error}"));
    serde_json::from_slice(&reply.payload)
        .unwrap_or_else(|error| panic!("{subject} reply is not JSON ({error}): {:?}", reply.payload))
}

/// Publishes with `headers` (name, value pairs) and a reply inbox; the pub ack JSON.
pub async fn publish_raw(client: &Client, subject: &str, headers: &[(&str, &str)], payload: &str) -> Value {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.insert(*name, *value);
    }
    let reply = client
        .request_with_headers(subject.to_string(), map, payload.to_string().into())
        .await
        .unwrap_or_else(|error| panic!("publish to {subject}: {error}"));
    serde_json::from_slice(&reply.payload)
        .unwrap_or_else(|error| panic!("pub ack is not JSON ({error}): {:?}", reply.payload))
}

/// Asserts `reply` is an error envelope with exactly these values.
#[track_caller]
pub fn assert_error(reply: &Value, code: u64, err_code: u64, description: &str) {
    let error = &reply["error"];
    assert!(error.is_object(), "expected an error, got {reply}");
    assert_eq!(error["code"], code, "code in {reply}");
    assert_eq!(error["err_code"], err_code, "err_code in {reply}");
    assert_eq!(error["description"], description, "description in {reply}");
}

/// The JetStream API error a client call failed with, if it carries one.
pub fn jetstream_error(error: &(dyn std::error::Error + 'static)) -> Option<jetstream::Error> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(found) = error.downcast_ref::<jetstream::Error>() {
            return Some(found.clone());
        }
        current = error.source();
    }
    None
}

/// A file-storage stream config capturing `subjects`.
pub fn stream_config(name: &str, subjects: &[&str]) -> jetstream::stream::Config {
    jetstream::stream::Config {
        name: name.to_string(),
        subjects: subjects.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

/// Publishes and waits for the ack; panics on any error.
pub async fn publish(context: &Context, subject: &str, payload: &str) -> jetstream::publish::PublishAck {
    context
        .publish(subject.to_string(), payload.to_string().into())
        .await
        .expect("publish sent")
        .await
        .unwrap_or_else(|error| panic!("publish to {subject} acked: {error}"))
}

/// Creates stream `S` on `FOO.>` and publishes `messages` messages to `FOO.A`.
pub async fn stream_with_messages(client: &Client, messages: usize) {
    let created = api(client, "STREAM.CREATE.S", r#"{"name":"S","subjects":["FOO.>"]}"#).await;
    assert!(created.get("error").is_none(), "{created}");
    for _ in 0..messages {
        let ack = publish_raw(client, "FOO.A", &[], "x").await;
        assert!(ack.get("error").is_none(), "{ack}");
    }
}

/// Standard base64 (as `$JS.API` carries `data` and `hdrs`) decoded; panics on other text.
pub fn decode_base64(text: &str) -> Vec<u8> {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let (mut bits, mut count, mut bytes) = (0u32, 0, Vec::new());
    for byte in text.bytes().filter(|byte| *byte != b'=') {
        let value = alphabet.iter().position(|letter| *letter == byte).expect("base64") as u32;
        bits = (bits << 6) | value;
        count += 6;
        if count >= 8 {
            count -= 8;
            bytes.push((bits >> count) as u8);
        }
    }
    bytes
}
