//! Two flushers may overlap (one in fdatasync while the next group is written and
//! synced). Whatever the interleaving: the acknowledged messages are always a prefix of
//! the stream, a crash loses only unacknowledged ones, and an fdatasync error fails its
//! group and every later one. (Acks of two groups completed in the same turn may reach
//! their publishers in either order; clients match acks by reply subject.)

#[path = "store_support.rs"]
mod support;

use std::cell::RefCell;
use std::rc::Rc;

use futures::future::join_all;
use jetcore::engine::Engine;
use jetcore::store::{CrashMode, SimDisk, SimOp};
use jetcore::stream::{ManualClock, ShardId};
use support::{payload_for, run, sim_engine, small_config};

/// Publishes `count` messages from concurrent tasks that arrive a few executor turns
/// apart, so groups form while earlier ones are still syncing. Returns (sequence,
/// payload number) of each acked publish, in the order the acks arrived.
async fn publish_staggered(engine: &Rc<Engine>, first: u64, count: u64) -> Vec<(u64, u64)> {
    let acked = Rc::new(RefCell::new(Vec::new()));
    let tasks: Vec<_> = (first..first + count)
        .map(|n| {
            let (acked, engine) = (acked.clone(), engine.clone());
            glommio::spawn_local(async move {
                // Arrivals spread over ~100 executor turns, a few per turn.
                for _ in 0..n / 4 {
                    futures_lite::future::yield_now().await;
                }
                if let Ok(ack) = engine.publish("S", "s", b"", &payload_for(n, 700)).await {
                    acked.borrow_mut().push((ack.seq, n));
                }
            })
        })
        .collect();
    join_all(tasks).await;
    let acked = acked.borrow().clone();
    acked
}

/// A stream on a simulated disk whose fdatasyncs stay in flight for 20 executor turns.
async fn slow_sync_stream() -> (Rc<ManualClock>, SimDisk, Rc<Engine>) {
    let clock = Rc::new(ManualClock::new(1));
    let disk = SimDisk::new();
    let engine = Rc::new(sim_engine(&disk, &clock).await);
    engine.create_stream(small_config("S", &["s"]), ShardId(0)).await.expect("create");
    disk.set_sync_delay_polls(20);
    (clock, disk, engine)
}

/// Sorts `acked` and checks it is exactly sequences 1..=N; returns N.
fn assert_prefix(acked: &mut [(u64, u64)]) -> u64 {
    acked.sort_unstable();
    let seqs: Vec<u64> = acked.iter().map(|(seq, _)| *seq).collect();
    let last = seqs.last().copied().unwrap_or(0);
    assert_eq!(seqs, (1..=last).collect::<Vec<_>>(), "the acked messages form a prefix");
    last
}

/// Loses what was not synced, reopens, and checks every acked message reads back.
async fn crash_and_check(disk: &SimDisk, clock: &Rc<ManualClock>, acked: &[(u64, u64)]) -> u64 {
    disk.crash(CrashMode::DropUnsynced);
    let engine = sim_engine(disk, clock).await;
    for (seq, n) in acked {
        let message = engine.get("S", *seq).await.expect("an acked message survives");
        assert_eq!(&message.payload[..], &payload_for(*n, 700)[..], "seq {seq}");
    }
    engine.state("S").expect("state").last_seq
}

#[test]
fn acked_messages_form_a_prefix_and_survive_a_crash() {
    run(|| async {
        let (clock, disk, engine) = slow_sync_stream().await;
        let mut acked = publish_staggered(&engine, 1, 400).await;
        assert_eq!(assert_prefix(&mut acked), 400, "every publish acked");
        drop(engine);
        assert_eq!(crash_and_check(&disk, &clock, &acked).await, 400);
    });
}

#[test]
fn an_fdatasync_error_fails_every_later_group_and_keeps_every_acked_message() {
    run(|| async {
        let (clock, disk, engine) = slow_sync_stream().await;
        disk.fail_nth(SimOp::Sync, 6, libc::EIO, false);
        let mut acked = publish_staggered(&engine, 1, 300).await;
        let last_acked = assert_prefix(&mut acked);
        assert!(last_acked > 0 && last_acked < 300, "some acked before the error, none after: {last_acked}");
        assert!(engine.publish("S", "s", b"", b"after").await.is_err(), "writes after an fsync error");
        drop(engine);
        let recovered = crash_and_check(&disk, &clock, &acked).await;
        assert!(recovered >= last_acked, "acked {last_acked}, recovered up to {recovered}");
    });
}

/// Only one waiting publish is woken to flush the next group. Publishes dropped while they
/// wait (a caller's timeout) must pass that wake on: here one in three gives up after a
/// varying number of executor turns, and every other publish must still be acknowledged.
#[test]
fn publishes_dropped_while_waiting_do_not_stall_the_rest() {
    run(|| async {
        let (_clock, _disk, engine) = slow_sync_stream().await;
        let kept = Rc::new(RefCell::new(Vec::new()));
        let tasks: Vec<_> = (0..600u64)
            .map(|n| {
                let (kept, engine) = (kept.clone(), engine.clone());
                glommio::spawn_local(async move {
                    for _ in 0..n / 4 {
                        futures_lite::future::yield_now().await;
                    }
                    let payload = payload_for(n, 700);
                    let publish = Box::pin(engine.publish("S", "s", b"", &payload));
                    if n % 3 == 0 {
                        let give_up = Box::pin(async {
                            for _ in 0..(n * 7) % 45 + 1 {
                                futures_lite::future::yield_now().await;
                            }
                        });
                        // The publish is dropped unless it finished first.
                        futures::future::select(publish, give_up).await;
                    } else {
                        let ack = publish.await.expect("publish");
                        kept.borrow_mut().push(ack.seq);
                    }
                })
            })
            .collect();
        let all = join_all(tasks);
        glommio::timer::timeout(std::time::Duration::from_secs(20), async { Ok(all.await) })
            .await
            .expect("every publish not given up is acknowledged (no stall)");
        let mut seqs = kept.borrow().clone();
        seqs.sort_unstable();
        seqs.dedup();
        assert_eq!(seqs.len(), 400, "400 distinct acks");
    });
}
