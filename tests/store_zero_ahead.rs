//! Zero-ahead writes (zeros written past the data so later fdatasyncs find written blocks)
//! stay off the acks: a group completes once its own bytes are durable, while the zeros
//! after it are still in flight. A later group whose bytes reach the zeroed range waits
//! for the zeros, so zeros never land on data; and closing waits for them too.

#[path = "store_support.rs"]
mod support;

use std::cell::Cell;
use std::rc::Rc;

use jetcore::engine::Engine;
use jetcore::store::{SimDisk, SimOp};
use jetcore::stream::{ManualClock, ShardId};
use support::{crash_and_read_back, payload_for, run, sim_engine, small_config};

/// Executor turns a publish gets before the test calls it stuck.
const TURNS: u32 = 10_000;

/// Polls `future` for at most [`TURNS`] executor turns; `None` if it did not finish.
async fn within_turns<T>(future: impl std::future::Future<Output = T>) -> Option<T> {
    let give_up = async {
        idle_turns().await;
        None
    };
    futures_lite::future::or(async { Some(future.await) }, give_up).await
}

/// Lets the executor run [`TURNS`] turns.
async fn idle_turns() {
    for _ in 0..TURNS {
        futures_lite::future::yield_now().await;
    }
}

/// An engine with stream `S` on a simulated disk whose files zero ahead and whose
/// zero-ahead writes stay in flight until released.
async fn engine_with_zeros_held() -> (Rc<ManualClock>, SimDisk, Engine) {
    let clock = Rc::new(ManualClock::new(1));
    let disk = SimDisk::new();
    disk.set_zero_ahead(true);
    let engine = sim_engine(&disk, &clock).await;
    engine.create_stream(small_config("S", &["s"]), ShardId(0)).await.expect("create");
    disk.hold_zero_ahead_writes(true);
    (clock, disk, engine)
}

#[test]
fn a_publish_is_acked_while_the_zeros_after_it_are_still_being_written() {
    run(|| async {
        let (clock, disk, engine) = engine_with_zeros_held().await;
        let engine = Rc::new(engine);

        let first = within_turns(engine.publish("S", "s", b"", &payload_for(1, 100))).await;
        let first = first.expect("the ack waited for the zero-ahead write").expect("publish");
        assert_eq!(first.seq, 1);
        assert_eq!(disk.op_count(SimOp::WriteAhead), 0, "the zeros are still held");

        // The first zero-ahead of a segment starts right after its data: the next group
        // would write into it, so it waits for the zeros.
        let second_acked = Rc::new(Cell::new(false));
        let second = glommio::spawn_local({
            let (engine, acked) = (engine.clone(), second_acked.clone());
            async move {
                let ack = engine.publish("S", "s", b"", &payload_for(2, 100)).await;
                acked.set(true);
                ack
            }
        });
        idle_turns().await;
        assert!(!second_acked.get(), "a group was written into a range whose zeros were in flight");

        disk.hold_zero_ahead_writes(false);
        assert_eq!(second.await.expect("publish").seq, 2);
        assert!(disk.op_count(SimOp::WriteAhead) >= 1, "the zeros were written");

        drop(engine);
        crash_and_read_back(&disk, &clock, "S", 1..=2, 100).await;
    });
}

#[test]
fn closing_waits_for_the_zeros_in_flight() {
    run(|| async {
        let (_clock, disk, engine) = engine_with_zeros_held().await;
        engine.publish("S", "s", b"", &payload_for(1, 100)).await.expect("publish");

        let closed = Rc::new(Cell::new(false));
        let closing = glommio::spawn_local({
            let closed = closed.clone();
            async move {
                let result = engine.close().await;
                closed.set(true);
                result
            }
        });
        idle_turns().await;
        assert!(!closed.get(), "closed with a zero-ahead write in flight");
        disk.hold_zero_ahead_writes(false);
        closing.await.expect("close");
        assert!(disk.op_count(SimOp::WriteAhead) >= 1);
    });
}
