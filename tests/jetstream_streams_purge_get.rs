//! Reading and removing stream messages over the wire: the purge variants (all, filter,
//! sequence, keep), MSG.GET by sequence and last-by-subject, DIRECT.GET in both forms,
//! and MSG.DELETE, with nats-server's error answers for misses.

mod common;

use async_nats::jetstream::stream::{Config, Stream};
use async_nats::jetstream::Context;
use async_nats::HeaderMap;
use common::jetstream::{api, assert_error, connect, publish, stream_config};
use common::TestServer;

fn server() -> TestServer {
    TestServer::start(&["--shards", "2"])
}

/// A stream `name` capturing `<name>.*` holding `per_subject` messages on each of
/// `<name>.a`, `.b`, `.c`, published round-robin: a1 b1 c1 a2 b2 c2 ...
async fn filled(js: &Context, name: &str, per_subject: u64, allow_direct: bool) -> Stream {
    let prefix = name.to_lowercase();
    let config = Config { allow_direct, ..stream_config(name, &[&format!("{prefix}.*")]) };
    js.create_stream(config).await.expect("create");
    for round in 1..=per_subject {
        for subject in ["a", "b", "c"] {
            publish(js, &format!("{prefix}.{subject}"), &format!("{subject}{round}")).await;
        }
    }
    js.get_stream(name).await.expect("get")
}

async fn state(js: &Context, name: &str) -> (u64, u64, u64) {
    let state = js.get_stream(name).await.unwrap().cached_info().state.clone();
    (state.messages, state.first_sequence, state.last_sequence)
}

#[tokio::test]
async fn purge_all_empties_the_stream_and_keeps_the_sequence() {
    let server = server();
    let (_client, js) = connect(&server).await;
    let stream = filled(&js, "ALL", 4, false).await;
    let purged = stream.purge().await.expect("purge");
    assert!(purged.success);
    assert_eq!(purged.purged, 12);
    assert_eq!(state(&js, "ALL").await, (0, 13, 12));
    assert_eq!(publish(&js, "all.a", "after").await.sequence, 13);
    assert_eq!(state(&js, "ALL").await, (1, 13, 13));
}

#[tokio::test]
async fn purge_by_filter_removes_only_matching_subjects() {
    let server = server();
    let (_client, js) = connect(&server).await;
    let stream = filled(&js, "FILT", 4, false).await;
    let purged = stream.purge().filter("filt.b").await.expect("purge b");
    assert_eq!(purged.purged, 4);
    assert_eq!(state(&js, "FILT").await, (8, 1, 12));
    assert!(stream.get_last_raw_message_by_subject("filt.b").await.is_err());
    assert_eq!(&stream.get_last_raw_message_by_subject("filt.a").await.unwrap().payload[..], b"a4");
    let purged = stream.purge().filter("filt.*").await.expect("purge wildcard");
    assert_eq!(purged.purged, 8);
    assert_eq!(state(&js, "FILT").await.0, 0);
}

#[tokio::test]
async fn purge_up_to_a_sequence_is_exclusive() {
    let server = server();
    let (_client, js) = connect(&server).await;
    let stream = filled(&js, "SEQ", 4, false).await;
    let purged = stream.purge().sequence(5).await.expect("purge < 5");
    assert_eq!(purged.purged, 4);
    assert_eq!(state(&js, "SEQ").await, (8, 5, 12));
    // With a filter: only that subject's messages below the sequence.
    let purged = stream.purge().filter("seq.c").sequence(12).await.expect("purge c < 12");
    assert_eq!(purged.purged, 2, "c2 (6) and c3 (9)");
    assert_eq!(&stream.get_raw_message(12).await.unwrap().payload[..], b"c4");
    assert!(stream.get_raw_message(9).await.is_err());
    assert_eq!(state(&js, "SEQ").await.0, 6);
}

#[tokio::test]
async fn purge_keep_leaves_the_newest() {
    let server = server();
    let (client, js) = connect(&server).await;
    let stream = filled(&js, "KEEP", 4, false).await;
    let purged = stream.purge().filter("keep.a").keep(1).await.expect("keep newest a");
    assert_eq!(purged.purged, 3);
    assert_eq!(state(&js, "KEEP").await, (9, 2, 12));
    let purged = stream.purge().keep(5).await.expect("keep 5");
    assert_eq!(purged.purged, 4);
    assert_eq!(state(&js, "KEEP").await, (5, 8, 12));
    let reply = api(&client, "STREAM.PURGE.KEEP", r#"{"seq":3,"keep":1}"#).await;
    assert_error(&reply, 400, 10003, "bad request");
    assert_eq!(reply["type"], "io.nats.jetstream.api.v1.stream_purge_response");
}

#[tokio::test]
async fn msg_get_by_sequence_and_last_by_subject() {
    let server = server();
    let (client, js) = connect(&server).await;
    let stream = filled(&js, "GET", 3, false).await;
    let mut headers = HeaderMap::new();
    headers.insert("X-Trace", "t-1");
    let ack = js.publish_with_headers("get.h", headers, "with header".into()).await.unwrap().await.unwrap();
    assert_eq!(ack.sequence, 10);

    let message = stream.get_raw_message(5).await.expect("seq 5");
    assert_eq!((message.subject.as_str(), message.sequence, &message.payload[..]), ("get.b", 5, &b"b2"[..]));
    let last = stream.get_last_raw_message_by_subject("get.a").await.expect("last a");
    assert_eq!((last.sequence, &last.payload[..]), (7, &b"a3"[..]));
    let with_headers = stream.get_raw_message(10).await.expect("seq 10");
    assert_eq!(with_headers.headers.get("X-Trace").map(|v| v.as_str()), Some("t-1"));
    let next = stream.raw_message_builder().sequence(4).next_by_subject("get.c").send().await.expect("next c from 4");
    assert_eq!(next.sequence, 6);

    let reply = api(&client, "STREAM.MSG.GET.GET", r#"{"seq":99}"#).await;
    assert_error(&reply, 404, 10037, "no message found");
    let reply = api(&client, "STREAM.MSG.GET.GET", r#"{"last_by_subj":"get.zzz"}"#).await;
    assert_error(&reply, 404, 10037, "no message found");
    let reply = api(&client, "STREAM.MSG.GET.GET", r#"{"seq":1}"#).await;
    assert_eq!(reply["type"], "io.nats.jetstream.api.v1.stream_msg_get_response");
    assert_eq!(reply["message"]["data"], "YTE=", "base64 of a1: {reply}");
    assert!(reply["message"].get("hdrs").is_none(), "no hdrs when none stored: {reply}");
}

#[tokio::test]
async fn direct_get_by_sequence_and_last_by_subject() {
    let server = server();
    let (client, js) = connect(&server).await;
    let stream = filled(&js, "DIRECT", 3, true).await;
    assert!(stream.cached_info().config.allow_direct);

    let message = stream.direct_get(4).await.expect("direct get 4");
    assert_eq!((message.subject.as_str(), message.sequence, &message.payload[..]), ("direct.a", 4, &b"a2"[..]));
    let last = stream.direct_get_last_for_subject("direct.c").await.expect("direct last c");
    assert_eq!((last.sequence, &last.payload[..]), (9, &b"c3"[..]));
    assert!(stream.direct_get(99).await.is_err(), "missing sequence");

    // The wire: the subject form with an empty body, and the headers nats-server adds.
    let reply = client.request("$JS.API.DIRECT.GET.DIRECT.direct.b", "".into()).await.expect("direct");
    let headers = reply.headers.expect("headers");
    assert_eq!(headers.get("Nats-Stream").unwrap().as_str(), "DIRECT");
    assert_eq!(headers.get("Nats-Subject").unwrap().as_str(), "direct.b");
    assert_eq!(headers.get("Nats-Sequence").unwrap().as_str(), "8");
    assert!(headers.get("Nats-Time-Stamp").unwrap().as_str().ends_with('Z'));
    assert_eq!(&reply.payload[..], b"b3");
    let miss = client.request("$JS.API.DIRECT.GET.DIRECT", r#"{"seq":99}"#.into()).await.expect("reply");
    assert_eq!(miss.status.map(u16::from), Some(404));
    assert_eq!(miss.description.as_deref(), Some("Message Not Found"));
    let empty = client.request("$JS.API.DIRECT.GET.DIRECT", "".into()).await.expect("reply");
    assert_eq!(empty.status.map(u16::from), Some(408));

    // Without allow_direct nobody answers a direct get, as with nats-server.
    let plain = filled(&js, "PLAIN", 1, false).await;
    assert!(plain.direct_get(1).await.is_err());
    let error = client.request("$JS.API.DIRECT.GET.PLAIN", r#"{"seq":1}"#.into()).await.expect_err("503");
    assert_eq!(error.kind(), async_nats::RequestErrorKind::NoResponders);
}

#[tokio::test]
async fn msg_delete_leaves_a_gap() {
    let server = server();
    let (client, js) = connect(&server).await;
    let stream = filled(&js, "DEL", 2, false).await;
    assert!(stream.delete_message(3).await.expect("delete 3"));
    assert!(stream.get_raw_message(3).await.is_err());
    let info = js.get_stream("DEL").await.unwrap().cached_info().clone();
    assert_eq!((info.state.messages, info.state.first_sequence, info.state.last_sequence), (5, 1, 6));
    assert_eq!(info.state.deleted_count, Some(1));
    let reply = api(&client, "STREAM.MSG.DELETE.DEL", r#"{"seq":3}"#).await;
    assert_error(&reply, 400, 10043, "sequence 3 not found");
    assert!(stream.delete_message(1).await.expect("delete first"));
    assert_eq!(state(&js, "DEL").await, (4, 2, 6), "deleting the first message moves first_seq");
    // Outside first..=last, nats-server 2.15 answers 10057 with its store's words.
    let reply = api(&client, "STREAM.MSG.DELETE.DEL", r#"{"seq":1}"#).await;
    assert_error(&reply, 500, 10057, "no message found");
    let reply = api(&client, "STREAM.MSG.DELETE.DEL", r#"{"seq":0}"#).await;
    assert_error(&reply, 500, 10057, "no message found");
    let reply = api(&client, "STREAM.MSG.DELETE.DEL", r#"{"seq":7}"#).await;
    assert_error(&reply, 500, 10057, "stream store EOF");
    let reply = api(&client, "STREAM.MSG.DELETE.DEL", "{}").await;
    assert_error(&reply, 400, 10003, "bad request");
    assert_eq!(state(&js, "DEL").await, (4, 2, 6));
}
