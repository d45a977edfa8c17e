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
                context
                    .send(peer, envelope)
                    .await
                    .expect("peer alive until it has everything");
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
