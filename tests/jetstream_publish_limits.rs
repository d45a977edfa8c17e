//! Stream limits seen from a publisher: `max_msgs` with discard old evicts the oldest,
//! discard new refuses (10077, nats-server's words), `max_msg_size` refuses (10054),
//! `max_msgs_per_subject` keeps the newest per subject, `max_bytes` with discard new.

mod common;

use async_nats::jetstream::stream::{Config, DiscardPolicy};
use common::jetstream::{api, assert_error, connect, publish, publish_raw, stream_config};
use common::TestServer;

fn server() -> TestServer {
    TestServer::start(&["--shards", "2"])
}

#[tokio::test]
async fn max_msgs_with_discard_old_evicts_the_oldest() {
    let server = server();
    let (_client, js) = connect(&server).await;
    js.create_stream(Config { max_messages: 5, ..stream_config("OLD", &["old.*"]) }).await.expect("create");
    for seq in 1..=12u64 {
        assert_eq!(publish(&js, "old.a", &format!("m{seq}")).await.sequence, seq);
    }
    let stream = js.get_stream("OLD").await.unwrap();
    let state = &stream.cached_info().state;
    assert_eq!((state.messages, state.first_sequence, state.last_sequence), (5, 8, 12));
    assert!(stream.get_raw_message(7).await.is_err(), "evicted");
    assert_eq!(&stream.get_raw_message(8).await.expect("kept").payload[..], b"m8");
}

#[tokio::test]
async fn discard_new_refuses_when_full() {
    let server = server();
    let (client, js) = connect(&server).await;
    let config = Config { max_messages: 3, discard: DiscardPolicy::New, ..stream_config("NEW", &["new.*"]) };
    js.create_stream(config).await.expect("create");
    for seq in 1..=3u64 {
        assert_eq!(publish(&js, "new.a", "x").await.sequence, seq);
    }
    let reply = publish_raw(&client, "new.a", &[], "one too many").await;
    assert_error(&reply, 503, 10077, "maximum messages exceeded");
    let error = js.publish("new.b", "x".into()).await.unwrap().await.expect_err("full");
    assert_eq!(error.kind(), async_nats::jetstream::context::PublishErrorKind::Other);
    let state = js.get_stream("NEW").await.unwrap().cached_info().state.clone();
    assert_eq!((state.messages, state.first_sequence, state.last_sequence), (3, 1, 3));
    // Room made by a purge is usable again, at the next sequence.
    api(&client, "STREAM.PURGE.NEW", r#"{"keep":2}"#).await;
    assert_eq!(publish(&js, "new.a", "fits").await.sequence, 4);
}

#[tokio::test]
async fn max_bytes_with_discard_new_refuses() {
    let server = server();
    let (client, js) = connect(&server).await;
    let config = Config { max_bytes: 400, discard: DiscardPolicy::New, ..stream_config("BYTES", &["bytes"]) };
    js.create_stream(config).await.expect("create");
    let payload = "p".repeat(100);
    let mut stored = 0;
    loop {
        let reply = publish_raw(&client, "bytes", &[], &payload).await;
        if reply.get("error").is_some() {
            assert_error(&reply, 503, 10077, "maximum bytes exceeded");
            break;
        }
        stored += 1;
        assert!(stored < 10, "max_bytes never enforced");
    }
    let state = js.get_stream("BYTES").await.unwrap().cached_info().state.clone();
    assert_eq!(state.messages, stored);
    assert!(state.bytes <= 400, "{state:?}");
}

#[tokio::test]
async fn max_msg_size_refuses_larger_messages() {
    let server = server();
    let (client, js) = connect(&server).await;
    js.create_stream(Config { max_message_size: 64, ..stream_config("SIZE", &["size"]) }).await.expect("create");
    assert_eq!(publish(&js, "size", &"s".repeat(60)).await.sequence, 1);
    let reply = publish_raw(&client, "size", &[], &"s".repeat(65)).await;
    assert_error(&reply, 400, 10054, "message size exceeds maximum allowed");
    // Headers count toward the size, as nats-server counts them.
    let reply = publish_raw(&client, "size", &[("X-Pad", &"h".repeat(40))], &"s".repeat(40)).await;
    assert_error(&reply, 400, 10054, "message size exceeds maximum allowed");
    let state = js.get_stream("SIZE").await.unwrap().cached_info().state.clone();
    assert_eq!((state.messages, state.last_sequence), (1, 1));
}

#[tokio::test]
async fn max_msgs_per_subject_keeps_the_newest_of_each_subject() {
    let server = server();
    let (_client, js) = connect(&server).await;
    let config = Config { max_messages_per_subject: 2, ..stream_config("PER", &["per.*"]) };
    js.create_stream(config).await.expect("create");
    for round in 1..=4 {
        for subject in ["per.a", "per.b", "per.c"] {
            publish(&js, subject, &format!("{subject}-{round}")).await;
        }
    }
    let stream = js.get_stream("PER").await.unwrap();
    let state = &stream.cached_info().state;
    assert_eq!((state.messages, state.last_sequence, state.subjects_count), (6, 12, 3));
    for subject in ["per.a", "per.b", "per.c"] {
        let last = stream.get_last_raw_message_by_subject(subject).await.expect("last");
        assert_eq!(last.payload, format!("{subject}-4").as_bytes());
    }
    // Rounds 1 and 2 are gone, rounds 3 and 4 remain.
    assert!(stream.get_raw_message(6).await.is_err());
    assert_eq!(&stream.get_raw_message(7).await.expect("round 3").payload[..], b"per.a-3");
}
