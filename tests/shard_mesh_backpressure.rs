//! Mesh semantics at the edges: a full ring hands the envelope back, receiving is round robin
//! across peers, a parked shard is woken, and a shut-down receiver fails sends instead of
//! hanging them.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use jetcore::shard::{Runtime, ShardContext, ShardId};

const SMALL_RING_CAPACITY: usize = 8;

#[test]
fn full_ring_returns_the_envelope_and_loses_nothing() {
    let ring_filled = Arc::new(Barrier::new(2));
    let outputs = Runtime::builder()
        .shards(2)
        .mesh_ring_capacity(SMALL_RING_CAPACITY)
        .start(move |context: ShardContext<u32>| {
            let ring_filled = ring_filled.clone();
            async move {
                let mut log = Vec::new();
                if context.id() == ShardId(0) {
                    let mut next = 0u32;
                    while context.try_send(ShardId(1), next).is_ok() {
                        next += 1;
                    }
                    assert_eq!(next as usize, SMALL_RING_CAPACITY, "ring holds exactly its capacity");
                    assert_eq!(context.try_send(ShardId(1), 777), Err(777), "full ring returns the envelope");
                    ring_filled.wait();
                } else {
                    ring_filled.wait(); // Receive nothing until the sender saw the ring full.
                    while log.len() < SMALL_RING_CAPACITY {
                        log.push(context.recv().await.1);
                    }
                    assert_eq!(context.try_recv(), None);
                }
                log
            }
        })
        .expect("runtime starts")
        .join()
        .expect("shards finish");
    assert_eq!(outputs[1], (0..SMALL_RING_CAPACITY as u32).collect::<Vec<_>>());
}

#[test]
fn receiving_alternates_between_peers_with_pending_envelopes() {
    let rings_filled = Arc::new(Barrier::new(3));
    let outputs = Runtime::builder()
        .shards(3)
        .mesh_ring_capacity(SMALL_RING_CAPACITY)
        .start(move |context: ShardContext<u16>| {
            let rings_filled = rings_filled.clone();
            async move {
                let mut senders = Vec::new();
                if context.id() != ShardId(0) {
                    while context.try_send(ShardId(0), context.id().0).is_ok() {}
                    rings_filled.wait();
                } else {
                    rings_filled.wait();
                    while let Some((from, body)) = context.try_recv() {
                        assert_eq!(from.0, body);
                        senders.push(from.0);
                    }
                }
                senders
            }
        })
        .expect("runtime starts")
        .join()
        .expect("shards finish");
    let senders = &outputs[0];
    assert_eq!(senders.len(), 2 * SMALL_RING_CAPACITY);
    for pair in senders.chunks(2) {
        assert_ne!(pair[0], pair[1], "one envelope per peer in turn: {senders:?}");
    }
}

#[test]
fn parked_shard_is_woken_by_a_send() {
    const SENDER_DELAY: Duration = Duration::from_millis(50);
    let outputs = Runtime::builder()
        .shards(2)
        .start(|context: ShardContext<Instant>| async move {
            if context.id() == ShardId(0) {
                // Let shard 1 find nothing and its executor fall asleep.
                glommio::timer::sleep(SENDER_DELAY).await;
                context.try_send(ShardId(1), Instant::now()).expect("empty ring has room");
                Duration::ZERO
            } else {
                let (from, sent_at) = context.recv().await;
                assert_eq!(from, ShardId(0));
                sent_at.elapsed()
            }
        })
        .expect("runtime starts")
        .join()
        .expect("shards finish");
    // Generous bound for a shared CI machine; the benchmark measures the real figure.
    assert!(outputs[1] < Duration::from_millis(500), "wake took {:?}", outputs[1]);
}

#[test]
fn sender_waiting_for_room_gets_its_envelope_back_when_receiver_shuts_down() {
    let ring_filled = Arc::new(Barrier::new(2));
    let outputs = Runtime::builder()
        .shards(2)
        .mesh_ring_capacity(SMALL_RING_CAPACITY)
        .start(move |context: ShardContext<u32>| {
            let ring_filled = ring_filled.clone();
            async move {
                if context.id() == ShardId(1) {
                    ring_filled.wait();
                    // Give shard 0 time to park in `send`, then drop our context unread.
                    glommio::timer::sleep(Duration::from_millis(20)).await;
                    drop(context);
                    return None;
                }
                while context.try_send(ShardId(1), 0).is_ok() {}
                ring_filled.wait();
                let returned = context.send(ShardId(1), 42).await;
                assert!(context.peer_closed(ShardId(1)));
                assert_eq!(context.try_send(ShardId(1), 43), Err(43));
                Some(returned)
            }
        })
        .expect("runtime starts")
        .join()
        .expect("shards finish");
    assert_eq!(outputs[0], Some(Err(42)));
}

#[test]
#[should_panic(expected = "handle it inline")]
fn sending_to_own_shard_is_a_bug() {
    let outputs = Runtime::builder()
        .shards(1)
        .start(|context: ShardContext<u8>| async move {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _ = context.try_send(context.id(), 1);
            }))
        })
        .expect("runtime starts")
        .join()
        .expect("shard finishes");
    if let Some(Err(panic)) = outputs.into_iter().next() {
        std::panic::resume_unwind(panic);
    }
}

/// `/metrics` reports each ring's fill level from the sender's side: it counts what the
/// sender pushed and the receiver has not taken, read without touching either end.
#[test]
fn ring_depths_are_the_fill_level_of_each_outgoing_ring() {
    let (filled, drained) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let outputs = Runtime::builder()
        .shards(2)
        .mesh_ring_capacity(SMALL_RING_CAPACITY)
        .start(move |context: ShardContext<u32>| {
            let (filled, drained) = (filled.clone(), drained.clone());
            async move {
                let mut depths = Vec::new();
                if context.id() == ShardId(0) {
                    assert_eq!(context.ring_capacity(), SMALL_RING_CAPACITY);
                    depths.push(context.ring_depths());
                    for value in 0..3 {
                        context.try_send(ShardId(1), value).expect("room");
                    }
                    depths.push(context.ring_depths());
                    while context.try_send(ShardId(1), 9).is_ok() {}
                    depths.push(context.ring_depths());
                    filled.wait();
                    drained.wait();
                    depths.push(context.ring_depths());
                } else {
                    filled.wait();
                    for _ in 0..SMALL_RING_CAPACITY {
                        context.recv().await;
                    }
                    depths.push(context.ring_depths());
                    drained.wait();
                }
                depths
            }
        })
        .expect("runtime starts")
        .join()
        .expect("shards finish");
    let full = SMALL_RING_CAPACITY;
    assert_eq!(outputs[0], vec![vec![0, 0], vec![0, 3], vec![0, full], vec![0, 0]]);
    assert_eq!(outputs[1], vec![vec![0, 0]], "shard 1 sent nothing");
}
