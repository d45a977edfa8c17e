//! Publishing into streams with async-nats: acks carry the stream and increasing
//! sequences (from every connection, whichever shard took it), `Nats-Msg-Id` dedupe,
//! the expected-* headers with nats-server's error codes and texts, and the
//! no-responders answer when no stream captures the subject.

mod common;

use std::collections::BTreeSet;

use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::message::PublishMessage;
use common::jetstream::{assert_error, connect, jetstream_error, publish, publish_raw, stream_config};
use common::{RawClient, TestServer};

fn server() -> TestServer {
    TestServer::start(&["--shards", "2"])
}

#[tokio::test]
async fn acks_carry_the_stream_and_increasing_sequences() {
    let server = server();
    let (_client, js) = connect(&server).await;
    js.create_stream(stream_config("ORDERS", &["orders.*"])).await.expect("create");
    for seq in 1..=50u64 {
        let ack = publish(&js, "orders.new", &format!("order {seq}")).await;
        assert_eq!((ack.stream.as_str(), ack.sequence, ack.duplicate), ("ORDERS", seq, false));
    }
    // Many in flight at once: every ack arrives, with distinct next sequences.
    let mut futures = Vec::new();
    for index in 0..200 {
        futures.push(js.publish("orders.bulk", format!("bulk {index}").into()).await.expect("send"));
    }
    let mut seqs = BTreeSet::new();
    for future in futures {
        seqs.insert(future.await.expect("ack").sequence);
    }
    assert_eq!(seqs, (51..=250).collect::<BTreeSet<u64>>());
    let info = js.get_stream("ORDERS").await.unwrap().cached_info().clone();
    assert_eq!((info.state.messages, info.state.first_sequence, info.state.last_sequence), (250, 1, 250));
    assert_eq!(info.state.subjects_count, 2);
}

#[tokio::test]
async fn every_connection_publishes_into_the_owning_shard() {
    let server = server();
    let (_client, js) = connect(&server).await;
    // Streams land on different shards by name; connections on either shard publish.
    for name in ["A", "B", "C", "D"] {
        js.create_stream(stream_config(name, &[&format!("{}.>", name.to_lowercase())])).await.expect("create");
    }
    let mut connections = Vec::new();
    for _ in 0..6 {
        connections.push(connect(&server).await.1);
    }
    let mut expected = 0;
    for round in 0..3 {
        expected += 1;
        for name in ["A", "B", "C", "D"] {
            let mut seqs = BTreeSet::new();
            for (index, js) in connections.iter().enumerate() {
                let subject = format!("{}.{round}.{index}", name.to_lowercase());
                let ack = publish(js, &subject, "x").await;
                assert_eq!(ack.stream, name);
                seqs.insert(ack.sequence);
            }
            let first = (expected - 1) * 6 + 1;
            assert_eq!(seqs, (first..first + 6).collect::<BTreeSet<u64>>(), "stream {name} round {round}");
        }
    }
}

#[tokio::test]
async fn duplicate_msg_id_returns_the_original_sequence() {
    let server = server();
    let (client, js) = connect(&server).await;
    js.create_stream(stream_config("DEDUPE", &["dedupe.>"])).await.expect("create");
    let send = |id: &'static str, payload: &'static str| {
        let js = js.clone();
        async move {
            let message = PublishMessage::build().payload(payload.into()).message_id(id);
            js.send_publish("dedupe.a", message).await.expect("send").await.expect("ack")
        }
    };
    let first = send("id-1", "one").await;
    let second = send("id-2", "two").await;
    assert_eq!((first.sequence, first.duplicate), (1, false));
    assert_eq!((second.sequence, second.duplicate), (2, false));
    let again = send("id-1", "one again").await;
    assert_eq!((again.stream.as_str(), again.sequence, again.duplicate), ("DEDUPE", 1, true));

    let raw = publish_raw(&client, "dedupe.b", &[("Nats-Msg-Id", "id-2")], "other subject").await;
    assert_eq!(raw, serde_json::json!({"stream":"DEDUPE","seq":2,"duplicate":true}));

    let info = js.get_stream("DEDUPE").await.unwrap().cached_info().clone();
    assert_eq!((info.state.messages, info.state.last_sequence), (2, 2), "duplicates store nothing");
    let stored = js.get_stream("DEDUPE").await.unwrap().get_raw_message(1).await.expect("get 1");
    assert_eq!(&stored.payload[..], b"one");
    assert_eq!(send("id-3", "three").await.sequence, 3);
}

#[tokio::test]
async fn expected_header_mismatches_are_refused_with_nats_codes() {
    let server = server();
    let (client, js) = connect(&server).await;
    js.create_stream(stream_config("EXP", &["exp.*"])).await.expect("create");
    let ok = publish_raw(&client, "exp.a", &[("Nats-Msg-Id", "m1")], "1").await;
    assert_eq!(ok, serde_json::json!({"stream":"EXP","seq":1}));
    publish_raw(&client, "exp.b", &[("Nats-Msg-Id", "m2")], "2").await;

    let reply = publish_raw(&client, "exp.a", &[("Nats-Expected-Stream", "OTHER")], "x").await;
    assert_error(&reply, 400, 10060, "expected stream does not match");
    let reply = publish_raw(&client, "exp.a", &[("Nats-Expected-Last-Sequence", "1")], "x").await;
    assert_error(&reply, 400, 10071, "wrong last sequence: 2");
    let reply = publish_raw(&client, "exp.a", &[("Nats-Expected-Last-Subject-Sequence", "2")], "x").await;
    assert_error(&reply, 400, 10071, "wrong last sequence: 1");
    let reply = publish_raw(&client, "exp.c", &[("Nats-Expected-Last-Subject-Sequence", "4")], "x").await;
    assert_error(&reply, 400, 10071, "wrong last sequence: 0");
    // Unparseable numbers never match (nats-server's parseInt64 gives -1); they are
    // not ignored.
    let reply = publish_raw(&client, "exp.a", &[("Nats-Expected-Last-Sequence", "two")], "x").await;
    assert_error(&reply, 400, 10071, "wrong last sequence: 2");
    let reply = publish_raw(&client, "exp.a", &[("Nats-Expected-Last-Sequence", "+2")], "x").await;
    assert_error(&reply, 400, 10071, "wrong last sequence: 2");
    let reply = publish_raw(&client, "exp.a", &[("Nats-Expected-Last-Subject-Sequence", "1x")], "x").await;
    assert_error(&reply, 400, 10071, "wrong last sequence: 1");
    let reply = publish_raw(&client, "exp.a", &[("Nats-Expected-Last-Msg-Id", "m1")], "x").await;
    assert_error(&reply, 400, 10070, "wrong last msg ID: m2");
    assert_eq!(reply["stream"], "EXP", "pub ack errors name the stream: {reply}");

    // The refusals stored nothing; matching expectations pass.
    let info = js.get_stream("EXP").await.unwrap().cached_info().clone();
    assert_eq!((info.state.messages, info.state.last_sequence), (2, 2));
    let passes: [&[(&str, &str)]; 4] = [
        &[("Nats-Expected-Stream", "EXP")],
        &[("Nats-Expected-Last-Sequence", "3")],
        &[("Nats-Expected-Last-Subject-Sequence", "4")],
        &[("Nats-Expected-Last-Subject-Sequence", "0")],
    ];
    let subjects = ["exp.a", "exp.a", "exp.a", "exp.new"];
    for (seq, (headers, subject)) in (3u64..).zip(passes.iter().zip(subjects)) {
        let reply = publish_raw(&client, subject, headers, "ok").await;
        assert_eq!(reply, serde_json::json!({"stream":"EXP","seq":seq}), "{headers:?}");
    }
    // async-nats maps the codes to its error kinds.
    let message = PublishMessage::build().payload("x".into()).expected_last_sequence(1);
    let error = js.send_publish("exp.a", message).await.unwrap().await.expect_err("wrong seq");
    assert_eq!(error.kind(), PublishErrorKind::WrongLastSequence);
    let message = PublishMessage::build().payload("x".into()).expected_last_message_id("nope");
    let error = js.send_publish("exp.a", message).await.unwrap().await.expect_err("wrong id");
    assert_eq!(error.kind(), PublishErrorKind::WrongLastMessageId);
    let message = PublishMessage::build().payload("x".into()).expected_stream("NOPE");
    let error = js.send_publish("exp.a", message).await.unwrap().await.expect_err("wrong stream");
    assert_eq!(jetstream_error(&error).map(|e| e.error_code().0), Some(10060));
}

#[tokio::test]
async fn publish_without_a_stream_gets_no_responders() {
    let server = server();
    let (client, js) = connect(&server).await;
    js.create_stream(stream_config("ONLY", &["only.*"])).await.expect("create");
    let error = js.publish("elsewhere.x", "x".into()).await.unwrap().await.expect_err("no stream");
    assert_eq!(error.kind(), PublishErrorKind::StreamNotFound);
    let error = client.request("only.a.b", "x".into()).await.expect_err("not captured");
    assert_eq!(error.kind(), async_nats::RequestErrorKind::NoResponders);
    // A plain publish with no reply to a stream subject is stored silently.
    client.publish("only.quiet", "q".into()).await.expect("publish");
    client.flush().await.expect("flush");
    let ack = publish(&js, "only.loud", "l").await;
    assert_eq!(ack.sequence, 2, "the reply-less publish was stored first");
}

/// nats-server checks `Nats-Expected-Stream`, `-Last-Subject-Sequence` and
/// `-Last-Sequence` before `Nats-Msg-Id` dedupe (recorded against nats-server 2.15.1):
/// a retried publish whose expectation no longer holds is an error, not a duplicate.
#[tokio::test]
async fn expectations_are_checked_before_dedupe() {
    let server = server();
    let (client, js) = connect(&server).await;
    js.create_stream(stream_config("ORDER", &["order.*"])).await.expect("create");
    publish_raw(&client, "order.a", &[("Nats-Msg-Id", "a")], "1").await;
    publish_raw(&client, "order.a", &[("Nats-Msg-Id", "b")], "2").await;
    let cases: [(&str, &str, u64, &str); 3] = [
        ("Nats-Expected-Last-Sequence", "1", 10071, "wrong last sequence: 2"),
        ("Nats-Expected-Stream", "X", 10060, "expected stream does not match"),
        ("Nats-Expected-Last-Subject-Sequence", "7", 10071, "wrong last sequence: 2"),
    ];
    for (header, value, err_code, description) in cases {
        let reply = publish_raw(&client, "order.a", &[("Nats-Msg-Id", "a"), (header, value)], "3").await;
        assert_error(&reply, 400, err_code, description);
    }
    // Nats-Expected-Last-Msg-Id comes after dedupe in nats-server too.
    let reply =
        publish_raw(&client, "order.a", &[("Nats-Msg-Id", "a"), ("Nats-Expected-Last-Msg-Id", "zz")], "3").await;
    assert_eq!(reply, serde_json::json!({"stream":"ORDER","seq":1,"duplicate":true}));
}

/// An empty `Nats-Expected-Last-Msg-Id` expects nothing in nats-server (the message is
/// stored); so does jetcore.
#[tokio::test]
async fn an_empty_expected_last_msg_id_expects_nothing() {
    let server = server();
    let (client, js) = connect(&server).await;
    js.create_stream(stream_config("EMPTY", &["empty"])).await.expect("create");
    publish_raw(&client, "empty", &[("Nats-Msg-Id", "m1")], "1").await;
    let reply = publish_raw(&client, "empty", &[("Nats-Expected-Last-Msg-Id", "")], "2").await;
    assert_eq!(reply, serde_json::json!({"stream":"EMPTY","seq":2}));
}

/// A connection's publishes are answered in the order they came, as nats-server answers
/// them: the ack of a duplicate never comes before its original's, which waits until the
/// original is durable (a duplicate acked first would tell the client the message is
/// stored while it could still be lost).
#[tokio::test]
async fn a_duplicate_is_acked_after_its_original() {
    let server = TestServer::start(&["--shards", "1"]);
    let (_client, js) = connect(&server).await;
    js.create_stream(stream_config("DUPS", &["dups.>"])).await.expect("create");
    let (mut raw, _info) = RawClient::connect(&server.address());
    raw.send(b"CONNECT {\"verbose\":false,\"headers\":true}\r\nSUB acks.* 1\r\n");
    let headers = "NATS/1.0\r\nNats-Msg-Id: same\r\n\r\n";
    // Both in one write: the server reads them together.
    let mut publishes = String::new();
    for reply in ["acks.original", "acks.duplicate"] {
        publishes += &format!("HPUB dups.a {reply} {} {}\r\n{headers}x\r\n", headers.len(), headers.len() + 1);
    }
    raw.send(publishes.as_bytes());
    let first = raw.line();
    assert!(first.starts_with("MSG acks.original "), "first ack: {first:?}");
    let _ack = raw.line();
    let second = raw.line();
    assert!(second.starts_with("MSG acks.duplicate "), "second ack: {second:?}");
}

/// The server's open files under its store whose path names `stream`'s directory.
fn open_files_of(server: &TestServer, stream: &str) -> Vec<String> {
    let store = server.store_dir.canonicalize().expect("store dir");
    let marker = format!("/{stream}/");
    let fds = std::fs::read_dir(format!("/proc/{}/fd", server.pid())).expect("/proc/PID/fd");
    let targets = fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok());
    let targets = targets.map(|target| target.to_string_lossy().into_owned());
    targets.filter(|target| target.starts_with(&*store.to_string_lossy()) && target.contains(&marker)).collect()
}

/// A stream's ack task outlives its empty queue (it parks between one-in-flight
/// publishes): deleting the stream while it is parked closes the stream's files, and a new
/// stream of the same name takes publishes from sequence 1 with a task of its own. (That
/// the parked task keeps no owner alive is `stream/owner.rs`'s unit test.)
#[tokio::test]
async fn a_stream_deleted_while_its_ack_task_is_parked_closes_and_starts_over() {
    let server = TestServer::start(&["--shards", "1"]);
    let (_client, js) = connect(&server).await;
    for round in 0..3 {
        js.create_stream(stream_config("GONE", &["gone.>"])).await.expect("create");
        for seq in 1..=20u64 {
            assert_eq!(publish(&js, "gone.one", "one in flight").await.sequence, seq, "round {round}");
        }
        assert!(!open_files_of(&server, "GONE").is_empty(), "the stream's segment is open while it lives");
        js.delete_stream("GONE").await.expect("delete");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !open_files_of(&server, "GONE").is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(open_files_of(&server, "GONE"), Vec::<String>::new(), "round {round}: files of the deleted stream");
    }
}
