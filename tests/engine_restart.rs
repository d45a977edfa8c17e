//! Close-and-reopen on real O_DIRECT files: state, messages, placement and sequence floor
//! survive a clean stop and an unclean one (no checkpoint).

#[path = "store_support.rs"]
mod support;

use jetcore::engine::{Engine, StartPosition};
use jetcore::stream::{PurgeRequest, ShardId};
use support::{payload_for, run, small_config};

#[test]
fn clean_restart_keeps_every_message_and_the_placement() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        engine.create_stream(small_config("ORDERS", &["orders.>"]), ShardId(3)).await.expect("create");
        for seq in 1..=300u64 {
            let ack = engine
                .publish("ORDERS", &format!("orders.{}", seq % 5), b"", &payload_for(seq, 600))
                .await
                .expect("publish");
            assert_eq!(ack.seq, seq);
        }
        let before = engine.state("ORDERS").expect("state");
        engine.close().await.expect("close");

        let engine = Engine::open(&path).await.expect("reopen");
        assert_eq!(engine.state("ORDERS").expect("state"), before);
        assert_eq!(engine.stream("ORDERS").expect("stream").placement(), ShardId(3));
        let mut cursor = engine.cursor("ORDERS", StartPosition::Sequence(1), None).expect("cursor");
        for seq in 1..=300u64 {
            let message = cursor.next().await.expect("message").expect("read");
            assert_eq!((message.seq, &message.payload[..]), (seq, &payload_for(seq, 600)[..]));
        }
        assert!(cursor.next().await.is_none());
        let ack = engine.publish("ORDERS", "orders.x", b"", b"after").await.expect("publish");
        assert_eq!(ack.seq, 301);
        engine.close().await.expect("close");
    });
}

#[test]
fn unclean_restart_scans_segments_and_continues_sequences() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        engine.create_stream(small_config("LOGS", &["logs.*"]), ShardId(0)).await.expect("create");
        for seq in 1..=200u64 {
            engine.publish("LOGS", "logs.a", b"", &payload_for(seq, 900)).await.expect("publish");
        }
        drop(engine); // no close: no checkpoint, as after kill -9

        let engine = Engine::open(&path).await.expect("reopen");
        let state = engine.state("LOGS").expect("state");
        assert_eq!((state.messages, state.first_seq, state.last_seq), (200, 1, 200));
        assert!(state.lost.is_empty(), "{:?}", state.lost);
        let message = engine.get("LOGS", 150).await.expect("get");
        assert_eq!(&message.payload[..], &payload_for(150, 900)[..]);
        assert_eq!(engine.publish("LOGS", "logs.b", b"", b"x").await.expect("publish").seq, 201);
        // What the recovery scanned counts toward the next checkpoint: otherwise a stream
        // killed before it appended a checkpoint interval would rescan its whole log at
        // every restart.
        let stream = engine.stream("LOGS").expect("stream");
        assert!(stream.bytes_since_checkpoint() >= 200 * 900, "{}", stream.bytes_since_checkpoint());
        drop(stream);
        engine.close().await.expect("close");

        let engine = Engine::open(&path).await.expect("reopen after a clean stop");
        let stream = engine.stream("LOGS").expect("stream");
        assert_eq!(stream.bytes_since_checkpoint(), 0);
        drop(stream);
        engine.close().await.expect("close");
    });
}

#[test]
fn sequences_do_not_go_backwards_after_purge_all_and_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    run(move || async move {
        let engine = Engine::open(&path).await.expect("open");
        engine.create_stream(small_config("P", &["p"]), ShardId(0)).await.expect("create");
        for seq in 1..=150u64 {
            engine.publish("P", "p", b"", &payload_for(seq, 1000)).await.expect("publish");
        }
        assert_eq!(engine.purge("P", PurgeRequest::default()).await.expect("purge"), 150);
        drop(engine);

        let engine = Engine::open(&path).await.expect("reopen");
        let state = engine.state("P").unwrap_or_else(|e| panic!("{e:?} {:?}", engine.failed_to_open()));
        assert_eq!((state.messages, state.last_seq, state.first_seq), (0, 150, 151));
        assert_eq!(engine.publish("P", "p", b"", b"x").await.expect("publish").seq, 151);
    });
}
