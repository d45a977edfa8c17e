//! Durable consumers on the embedded engine, on a real directory (O_DIRECT files) with a
//! clock the test moves: acks survive closing and reopening the engine, unacked messages
//! come back after the ack wait with their delivery count, NAKs and terms, filters, and
//! bad input answered with a named error; and `examples/embedded_consumer.rs`'s own
//! code, through `EngineHandle` from a plain thread.

#[path = "../examples/embedded_consumer.rs"]
#[allow(dead_code)]
mod example;

use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use jetcore::engine::{AckPolicy, ConsumedMessage, ConsumerConfig, DeliverPolicy, Engine, Settle};
use jetcore::store::{Disk, DmaDisk};
use jetcore::stream::{Error, ManualClock, ShardId, StreamConfig};

const ACK_WAIT: Duration = Duration::from_secs(2);
/// Any fixed start: the clock only moves when a test moves it.
const CLOCK_START_NS: i64 = 1_700_000_000_000_000_000;

fn run<F, Fut>(make: F)
where
    F: FnOnce(&Path) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let limit = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: plain FFI call with a valid pointer; failure only means glommio falls back.
    unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &limit) };
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().to_path_buf();
    glommio::LocalExecutorBuilder::default()
        .spawn(move || async move { make(&path).await })
        .expect("executor")
        .join()
        .expect("join");
}

async fn open(dir: &Path, clock: &Rc<ManualClock>) -> Engine {
    let disk: Rc<dyn Disk> = Rc::new(DmaDisk);
    Engine::open_with(disk, dir, clock.clone()).await.expect("open engine")
}

/// An engine with stream `ORDERS` (`orders.>`) holding `count` messages on `orders.eu`,
/// payloads "1", "2", ...
async fn engine_with_orders(dir: &Path, clock: &Rc<ManualClock>, count: u64) -> Engine {
    let engine = open(dir, clock).await;
    engine.create_stream(StreamConfig::new("ORDERS", &["orders.>"]), ShardId(0)).await.expect("create stream");
    for i in 1..=count {
        engine.publish("ORDERS", "orders.eu", b"", i.to_string().as_bytes()).await.expect("publish");
    }
    engine
}

fn worker(ack_wait: Duration) -> ConsumerConfig {
    ConsumerConfig { ack_wait, ..ConsumerConfig::new("worker") }
}

/// (stream sequence, delivery count) of each message.
fn seqs(batch: &[ConsumedMessage]) -> Vec<(u64, u64)> {
    batch.iter().map(|m| (m.delivery.stream_seq.get(), m.delivery.delivery_count)).collect()
}

fn nanos(duration: Duration) -> i64 {
    duration.as_nanos() as i64
}

#[test]
fn a_reopened_engine_resumes_after_the_last_acked_message() {
    run(|dir| {
        let dir = dir.to_path_buf();
        async move {
            let clock = Rc::new(ManualClock::new(CLOCK_START_NS));
            let engine = engine_with_orders(&dir, &clock, 10).await;
            let consumer = engine.create_consumer("ORDERS", worker(ACK_WAIT)).await.expect("create");
            let batch = consumer.fetch(5).await.expect("fetch");
            assert_eq!(seqs(&batch), vec![(1, 1), (2, 1), (3, 1), (4, 1), (5, 1)]);
            assert_eq!(&batch[0].message.payload[..], b"1");
            for message in batch.iter().filter(|m| m.delivery.stream_seq.get() != 4) {
                consumer.ack(&message.delivery).await.expect("ack");
            }
            drop(consumer);
            engine.close().await.expect("close");

            let engine = open(&dir, &clock).await;
            let consumer = engine.consumer("ORDERS", "worker").await.expect("reopen consumer");
            let info = consumer.info();
            assert_eq!((info.ack_floor.stream.get(), info.delivered.stream.get()), (3, 5));
            assert_eq!(info.num_ack_pending, 1, "4 is still unacknowledged");
            let batch = consumer.fetch(10).await.expect("fetch after reopen");
            assert_eq!(seqs(&batch), vec![(6, 1), (7, 1), (8, 1), (9, 1), (10, 1)], "nothing acked comes back");
            for message in &batch {
                consumer.ack(&message.delivery).await.expect("ack");
            }
            clock.advance(nanos(ACK_WAIT));
            let batch = consumer.fetch(10).await.expect("fetch after the ack wait");
            assert_eq!(seqs(&batch), vec![(4, 2)], "the unacked message, delivered a second time");
            consumer.ack(&batch[0].delivery).await.expect("ack");
            drop(consumer);
            engine.close().await.expect("close");

            let engine = open(&dir, &clock).await;
            // Opening with the same config resumes it too.
            let consumer = engine.create_consumer("ORDERS", worker(ACK_WAIT)).await.expect("open again");
            let info = consumer.info();
            assert_eq!((info.ack_floor.stream.get(), info.num_ack_pending), (10, 0));
            clock.advance(nanos(ACK_WAIT) * 10);
            assert!(consumer.fetch(10).await.expect("fetch").is_empty(), "everything was acked");
            engine.publish("ORDERS", "orders.us", b"", b"11").await.expect("publish");
            assert_eq!(seqs(&consumer.fetch(10).await.expect("fetch")), vec![(11, 1)]);
            drop(consumer);
            engine.close().await.expect("close");
        }
    });
}

#[test]
fn an_unacked_message_is_redelivered_after_ack_wait_until_max_deliver() {
    run(|dir| {
        let dir = dir.to_path_buf();
        async move {
            let clock = Rc::new(ManualClock::new(CLOCK_START_NS));
            let engine = engine_with_orders(&dir, &clock, 1).await;
            let config = ConsumerConfig { max_deliver: Some(3), ..worker(ACK_WAIT) };
            let consumer = engine.create_consumer("ORDERS", config).await.expect("create");
            let first = consumer.fetch(1).await.expect("fetch");
            assert_eq!(seqs(&first), vec![(1, 1)]);
            assert_eq!(first[0].delivery.consumer_seq.get(), 1);
            clock.advance(nanos(ACK_WAIT) / 2);
            assert!(consumer.fetch(1).await.expect("fetch").is_empty(), "not before the ack wait is over");
            clock.advance(nanos(ACK_WAIT) / 2);
            let second = consumer.fetch(1).await.expect("fetch");
            assert_eq!(seqs(&second), vec![(1, 2)]);
            assert_eq!(second[0].delivery.consumer_seq.get(), 2, "a redelivery takes a new consumer sequence");
            assert_eq!(consumer.info().num_redelivered, 1);
            clock.advance(nanos(ACK_WAIT));
            assert_eq!(seqs(&consumer.fetch(1).await.expect("fetch")), vec![(1, 3)]);
            clock.advance(nanos(ACK_WAIT));
            assert!(consumer.fetch(1).await.expect("fetch").is_empty(), "max_deliver 3 reached");
            assert_eq!(consumer.info().num_ack_pending, 0);
            drop(consumer);
            engine.close().await.expect("close");
        }
    });
}

#[test]
fn nak_redelivers_now_or_after_its_delay_and_term_never() {
    run(|dir| {
        let dir = dir.to_path_buf();
        async move {
            let clock = Rc::new(ManualClock::new(CLOCK_START_NS));
            let engine = engine_with_orders(&dir, &clock, 3).await;
            let consumer = engine.create_consumer("ORDERS", worker(ACK_WAIT)).await.expect("create");
            let batch = consumer.fetch(2).await.expect("fetch");
            consumer.nak(&batch[0].delivery).await.expect("nak");
            assert_eq!(seqs(&consumer.fetch(1).await.expect("fetch")), vec![(1, 2)], "NAKed: first in line again");
            let delay = Settle::NakWithDelay(Duration::from_secs(5));
            consumer.settle(&batch[1].delivery, delay).await.expect("nak with delay");
            assert_eq!(seqs(&consumer.fetch(5).await.expect("fetch")), vec![(3, 1)], "2 waits out its delay");
            clock.advance(nanos(Duration::from_secs(5)));
            let batch = consumer.fetch(5).await.expect("fetch");
            // 1 and 3 passed their ack wait too (2 s): all three come back, in order.
            assert_eq!(seqs(&batch), vec![(1, 3), (2, 2), (3, 2)]);
            for message in &batch {
                consumer.term(&message.delivery).await.expect("term");
            }
            clock.advance(nanos(ACK_WAIT) * 5);
            assert!(consumer.fetch(5).await.expect("fetch").is_empty(), "terminated messages never come back");
            assert_eq!(consumer.info().ack_floor.stream.get(), 3);
            drop(consumer);
            engine.close().await.expect("close");
        }
    });
}

#[test]
fn ack_all_settles_everything_before_and_ack_none_never_redelivers() {
    run(|dir| {
        let dir = dir.to_path_buf();
        async move {
            let clock = Rc::new(ManualClock::new(CLOCK_START_NS));
            let engine = engine_with_orders(&dir, &clock, 4).await;
            let all = ConsumerConfig { ack_policy: AckPolicy::All, ..ConsumerConfig::new("all") };
            let all = engine.create_consumer("ORDERS", all).await.expect("create");
            let batch = all.fetch(4).await.expect("fetch");
            all.ack(&batch[2].delivery).await.expect("ack 3");
            assert_eq!((all.info().ack_floor.stream.get(), all.info().num_ack_pending), (3, 1));
            let none = ConsumerConfig { ack_policy: AckPolicy::None, ..ConsumerConfig::new("none") };
            let none = engine.create_consumer("ORDERS", none).await.expect("create");
            assert_eq!(none.fetch(10).await.expect("fetch").len(), 4);
            clock.advance(nanos(Duration::from_secs(60)));
            assert!(none.fetch(10).await.expect("fetch").is_empty());
            assert_eq!(seqs(&all.fetch(10).await.expect("fetch")), vec![(4, 2)]);
            drop((all, none));
            engine.close().await.expect("close");
        }
    });
}

#[test]
fn filter_subjects_select_and_deliver_policies_start_where_asked() {
    run(|dir| {
        let dir = dir.to_path_buf();
        async move {
            let clock = Rc::new(ManualClock::new(CLOCK_START_NS));
            let engine = open(&dir, &clock).await;
            engine.create_stream(StreamConfig::new("ORDERS", &["orders.>"]), ShardId(0)).await.expect("stream");
            for subject in ["orders.eu", "orders.us", "orders.eu.paris", "orders.asia", "orders.us", "orders.eu"] {
                engine.publish("ORDERS", subject, b"", subject.as_bytes()).await.expect("publish");
            }
            let filters = vec!["orders.eu.>".to_string(), "orders.us".to_string()];
            let config = ConsumerConfig { filter_subjects: filters, ..ConsumerConfig::new("west") };
            let west = engine.create_consumer("ORDERS", config).await.expect("create");
            assert_eq!(west.info().num_pending, 3);
            let subjects: Vec<String> =
                west.fetch(10).await.expect("fetch").into_iter().map(|m| m.message.subject).collect();
            assert_eq!(subjects, vec!["orders.us", "orders.eu.paris", "orders.us"]);

            let config = ConsumerConfig {
                filter_subjects: vec!["orders.*".to_string()],
                deliver_policy: DeliverPolicy::LastPerSubject,
                ..ConsumerConfig::new("last")
            };
            let last = engine.create_consumer("ORDERS", config).await.expect("create");
            assert_eq!(seqs(&last.fetch(10).await.expect("fetch")), vec![(4, 1), (5, 1), (6, 1)]);

            let config = ConsumerConfig { deliver_policy: DeliverPolicy::New, ..ConsumerConfig::new("new") };
            let new = engine.create_consumer("ORDERS", config).await.expect("create");
            let config =
                ConsumerConfig { deliver_policy: DeliverPolicy::ByStartSequence(5), ..ConsumerConfig::new("from5") };
            let from_5 = engine.create_consumer("ORDERS", config).await.expect("create");
            engine.publish("ORDERS", "orders.eu", b"", b"7").await.expect("publish");
            assert_eq!(seqs(&new.fetch(10).await.expect("fetch")), vec![(7, 1)]);
            assert_eq!(seqs(&from_5.fetch(10).await.expect("fetch")), vec![(5, 1), (6, 1), (7, 1)]);
            assert_eq!(seqs(&west.fetch(10).await.expect("fetch")), Vec::<(u64, u64)>::new());
            drop((west, last, new, from_5));
            engine.close().await.expect("close");
        }
    });
}

#[test]
fn bad_input_gets_an_error_that_names_it() {
    run(|dir| {
        let dir = dir.to_path_buf();
        async move {
            let clock = Rc::new(ManualClock::new(CLOCK_START_NS));
            let engine = engine_with_orders(&dir, &clock, 1).await;
            let refused = |result: Result<_, Error>| match result {
                Err(Error::ConsumerConfigInvalid { field, reason }) => (field, reason),
                Err(other) => panic!("expected a config error, got {other}"),
                Ok(_) => panic!("expected a config error, got a consumer"),
            };
            let missing = engine.create_consumer("NOPE", ConsumerConfig::new("worker")).await;
            assert!(matches!(missing, Err(Error::StreamNotFound { .. })));
            let (field, _) = refused(engine.create_consumer("ORDERS", ConsumerConfig::new("a.b")).await);
            assert_eq!(field, "name");
            let outside = ConsumerConfig { filter_subjects: vec!["trades.>".into()], ..ConsumerConfig::new("w") };
            let (field, reason) = refused(engine.create_consumer("ORDERS", outside).await);
            assert_eq!(field, "filter_subjects");
            assert!(reason.contains("trades.>"), "{reason}");
            let overlapping = vec!["orders.*".to_string(), "orders.eu".to_string()];
            let overlapping = ConsumerConfig { filter_subjects: overlapping, ..ConsumerConfig::new("w") };
            assert_eq!(refused(engine.create_consumer("ORDERS", overlapping).await).0, "filter_subjects");
            let bad_filter = ConsumerConfig { filter_subjects: vec!["orders..eu".into()], ..ConsumerConfig::new("w") };
            assert_eq!(refused(engine.create_consumer("ORDERS", bad_filter).await).0, "filter_subjects");
            let no_wait = ConsumerConfig { ack_wait: Duration::ZERO, ..ConsumerConfig::new("w") };
            assert_eq!(refused(engine.create_consumer("ORDERS", no_wait).await).0, "ack_wait");
            let never = ConsumerConfig { max_deliver: Some(0), ..ConsumerConfig::new("w") };
            assert_eq!(refused(engine.create_consumer("ORDERS", never).await).0, "max_deliver");
            let zero_start =
                ConsumerConfig { deliver_policy: DeliverPolicy::ByStartSequence(0), ..ConsumerConfig::new("w") };
            assert_eq!(refused(engine.create_consumer("ORDERS", zero_start).await).0, "deliver_policy");

            let consumer = engine.create_consumer("ORDERS", worker(ACK_WAIT)).await.expect("create");
            let changed = engine.create_consumer("ORDERS", worker(ACK_WAIT * 2)).await;
            let Err(error) = changed else { panic!("a different config for an existing name is refused") };
            assert!(matches!(error, Error::ConsumerNameInUse { .. }));
            assert_eq!(error.to_string(), "consumer ORDERS > worker exists with a different configuration");
            assert!(matches!(engine.consumer("ORDERS", "nobody").await, Err(Error::ConsumerNotFound { .. })));
            engine.delete_consumer("ORDERS", "worker").await.expect("delete");
            assert!(matches!(consumer.fetch(1).await, Err(Error::ConsumerNotFound { .. })));
            assert!(matches!(engine.consumer("ORDERS", "worker").await, Err(Error::ConsumerNotFound { .. })));
            drop(consumer);
            engine.close().await.expect("close");

            let engine = open(&dir, &clock).await;
            assert!(
                matches!(engine.consumer("ORDERS", "worker").await, Err(Error::ConsumerNotFound { .. })),
                "a deleted consumer stays deleted after reopening"
            );
            engine.close().await.expect("close");
        }
    });
}

#[test]
fn the_example_works_a_queue_across_a_restart_without_acking_a_job_twice() {
    let dir = tempfile::tempdir().expect("temp dir");
    let summary = example::run(dir.path(), 700).expect("example run");
    // The first half stops at a whole batch: at least half the jobs, not all.
    assert!((350..700).contains(&summary.done_before_restart), "{summary:?}");
    assert_eq!((summary.published, summary.done, summary.acked_twice), (700, 700, 0), "{summary:?}");
    // Jobs 7, 14, ..., 700 fail once each and come back; a slow worker may see more
    // redeliveries (an ack wait passed), never fewer.
    assert_eq!(summary.naked, 100, "{summary:?}");
    assert!(summary.redelivered >= 100, "{summary:?}");
}
