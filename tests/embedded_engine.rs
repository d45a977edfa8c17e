//! The engine in-process: `examples/embedded_log.rs`'s own code on a shard, and
//! `EngineHandle` from a tokio program and from plain threads.

#[path = "../examples/embedded_log.rs"]
#[allow(dead_code)]
mod example;

use jetcore::engine::{EngineHandle, StartPosition};
use jetcore::stream::{Error, StreamConfig};

#[test]
fn the_example_appends_tails_and_reads_back_after_reopening() {
    let dir = tempfile::tempdir().expect("temp dir");
    let summary = example::run(dir.path(), 1000).expect("example run");
    let expected = example::Summary { appended: 1000, tailed: 1000, stored: 1000, read_from_middle: 500 };
    assert_eq!(summary, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokio_program_publishes_a_window_tails_and_reads() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = EngineHandle::open(dir.path()).expect("open");
    engine.create_stream(StreamConfig::new("ORDERS", &["orders.>"])).await.expect("create");
    // Waits for sequence 301, which the window below does not reach: the publish after it does.
    let tail = engine.tail("ORDERS", 301);
    let window: Vec<_> = (0..300).map(|i| engine.publish("ORDERS", "orders.eu", format!("{i}").as_bytes())).collect();
    let mut sequences: Vec<u64> = Vec::new();
    for ack in futures::future::join_all(window).await {
        sequences.push(ack.expect("durable ack").seq);
    }
    sequences.sort_unstable();
    assert_eq!(sequences, (1..=300).collect::<Vec<u64>>());
    engine.publish("ORDERS", "orders.us", b"last").await.expect("ack");
    let tailed = tail.await.expect("tail");
    assert_eq!((tailed.seq, &tailed.payload[..]), (301, &b"last"[..]));

    let read = engine.read("ORDERS", StartPosition::Sequence(299), 10).await.expect("read");
    let sequences: Vec<u64> = read.iter().map(|message| message.seq).collect();
    assert_eq!(sequences, vec![299, 300, 301]);
    assert!(matches!(engine.state("MISSING").await, Err(Error::StreamNotFound { .. })));
    tokio::task::spawn_blocking(move || engine.close()).await.expect("join").expect("close");
}

#[test]
fn plain_threads_share_a_handle_and_the_data_survives_close() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = EngineHandle::open(dir.path()).expect("open");
    engine.create_stream(StreamConfig::new("LOG", &["log.>"])).wait().expect("create");
    std::thread::scope(|scope| {
        for thread in 0..4 {
            let engine = &engine;
            scope.spawn(move || {
                for i in 0..50 {
                    engine.publish("LOG", &format!("log.{thread}"), format!("{i}").as_bytes()).wait().expect("ack");
                }
            });
        }
    });
    engine.close().expect("close");

    let engine = EngineHandle::open(dir.path()).expect("reopen");
    let state = engine.state("LOG").wait().expect("state");
    assert_eq!((state.messages, state.last_seq), (200, 200));
    assert_eq!(&engine.get("LOG", 200).wait().expect("get").subject[..4], "log.");
}

#[test]
fn closing_answers_a_tail_still_waiting_instead_of_waiting_for_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = EngineHandle::open(dir.path()).expect("open");
    engine.create_stream(StreamConfig::new("LOG", &["log.>"])).wait().expect("create");
    let tail = engine.tail("LOG", 1);
    // The tail is running on the shard once a later request has been answered.
    engine.state("LOG").wait().expect("state");
    engine.close().expect("close returns although the tail has nothing to read");
    assert!(tail.wait().is_err(), "the tail is told the engine closed");
}
