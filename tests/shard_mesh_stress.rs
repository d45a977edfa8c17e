//! Two shards exchange a million envelopes each way through tiny rings, so senders hit
//! backpressure and both sides park and wake constantly. Every envelope must arrive exactly
//! once and in order per sender.

use std::rc::Rc;

use bytes::Bytes;
use jetcore::shard::{Runtime, ShardContext, ShardId};

const ENVELOPES_PER_DIRECTION: u64 = 1_000_000;
/// Small enough that the sender outruns the receiver and waits for room all the time.
const STRESS_RING_CAPACITY: usize = 16;

async fn exchange(context: ShardContext<Bytes>) -> u64 {
    let context = Rc::new(context);
    let peer = ShardId(1 - context.id().0);
    let sender = {
        let context = context.clone();
        glommio::spawn_local(async move {
            for sequence in 0..ENVELOPES_PER_DIRECTION {
                let envelope = Bytes::copy_from_slice(&sequence.to_le_bytes());
                context.send(peer, envelope).await.expect("peer alive until it has everything");
            }
        })
    };
    let mut expected = 0u64;
    while expected < ENVELOPES_PER_DIRECTION {
        let (from, envelope) = context.recv().await;
        assert_eq!(from, peer);
        let sequence = u64::from_le_bytes(envelope[..].try_into().expect("8-byte envelope"));
        assert_eq!(sequence, expected, "lost, duplicated or reordered envelope");
        expected += 1;
    }
    sender.await;
    assert!(context.try_recv().is_none(), "nothing beyond what was sent");
    expected
}

#[test]
fn million_envelopes_each_way_arrive_once_in_order() {
    let received = Runtime::builder()
        .shards(2)
        .mesh_ring_capacity(STRESS_RING_CAPACITY)
        .start(exchange)
        .expect("runtime starts")
        .join()
        .expect("shards finish");
    assert_eq!(received, vec![ENVELOPES_PER_DIRECTION; 2]);
}

const SHARDS_ALL_TO_ALL: u16 = 4;
const ENVELOPES_PER_PAIR: u64 = 50_000;

/// Every shard sends to every other: several senders race to wake one parked receiver.
async fn all_to_all(context: ShardContext<(u16, u64)>) -> u64 {
    let context = Rc::new(context);
    let me = context.id();
    let sender = {
        let context = context.clone();
        glommio::spawn_local(async move {
            for sequence in 0..ENVELOPES_PER_PAIR {
                for peer in (0..SHARDS_ALL_TO_ALL).map(ShardId).filter(|&peer| peer != me) {
                    context.send(peer, (me.0, sequence)).await.expect("peer alive");
                }
            }
        })
    };
    let mut next_from = vec![0u64; usize::from(SHARDS_ALL_TO_ALL)];
    let expected_total = ENVELOPES_PER_PAIR * u64::from(SHARDS_ALL_TO_ALL - 1);
    for _ in 0..expected_total {
        let (from, (sender_id, sequence)) = context.recv().await;
        assert_eq!(from.0, sender_id);
        assert_eq!(sequence, next_from[usize::from(from.0)], "per-sender order from {from}");
        next_from[usize::from(from.0)] += 1;
    }
    sender.await;
    expected_total
}

#[test]
fn four_shards_all_to_all_deliver_everything_in_order_per_sender() {
    let received = Runtime::builder()
        .shards(SHARDS_ALL_TO_ALL)
        .mesh_ring_capacity(STRESS_RING_CAPACITY)
        .start(all_to_all)
        .expect("runtime starts")
        .join()
        .expect("shards finish");
    let per_shard = ENVELOPES_PER_PAIR * u64::from(SHARDS_ALL_TO_ALL - 1);
    assert_eq!(received, vec![per_shard; usize::from(SHARDS_ALL_TO_ALL)]);
}
