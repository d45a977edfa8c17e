//! Slow subscribers and the publishers that feed them, on one shard or across shards.
//!
//! A publisher whose message reached a congested subscriber waits, at most
//! `STALL_DURATION_MAX` per publish, for it to drain (nats-server stalls producers the
//! same way); then the message is queued anyway, and a subscriber whose queue passes
//! `max_pending` is closed as a slow consumer.
//!
//! Across shards the subscriber's shard never waits: it queues every delivery a peer sends
//! as soon as it arrives, so everything on its way to a subscriber counts against its
//! `max_pending` at once, as on one shard. Were it to hold its mesh loop instead, the
//! publisher's shard would not feel it: the backlog would sit in the ring, uncounted, a
//! subscriber that began reading late would drain it all and never be cut off, and every
//! other envelope from that peer would wait behind one slow subscriber. Instead the
//! subscriber's shard tells the publisher's shard when subscribers it feeds are congested
//! (`Envelope::SubscribersCongested`) and again when they have all drained or closed;
//! publishes routed to a shard so flagged wait as for a local congested subscriber. The
//! flag is per peer, not per subscriber: a publish to another subscriber on that shard
//! waits too, bounded by the same `STALL_DURATION_MAX`.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::task::{Poll, Waker};

use super::outbound::Outbound;
use crate::shard::ShardId;

/// What a publish reached that is congested: the publisher waits for these.
#[derive(Default)]
pub struct Congestion {
    /// Subscribers on the publisher's shard past their stall threshold.
    pub local: Vec<Rc<Outbound>>,
    /// Peers that said subscribers fed from here are congested, and this publish was
    /// routed to them.
    pub peers: Vec<ShardId>,
}

impl Congestion {
    pub fn is_empty(&self) -> bool {
        self.local.is_empty() && self.peers.is_empty()
    }
}

/// One shard's view of congestion across the mesh, both ways.
pub struct MeshCongestion {
    /// For each peer: our subscribers congested by its deliveries, of which it was told.
    reported: Vec<RefCell<Vec<Rc<Outbound>>>>,
    /// For each peer: it said subscribers we feed there are congested.
    peer_congested: Vec<Cell<bool>>,
    peers_congested: Cell<usize>,
    /// Publishers waiting for a peer's subscribers to drain.
    waiters: RefCell<Vec<Waker>>,
}

impl MeshCongestion {
    pub fn new(shard_count: usize) -> MeshCongestion {
        MeshCongestion {
            reported: (0..shard_count).map(|_| RefCell::new(Vec::new())).collect(),
            peer_congested: (0..shard_count).map(|_| Cell::new(false)).collect(),
            peers_congested: Cell::new(0),
            waiters: RefCell::new(Vec::new()),
        }
    }

    /// Whether any peer has congested subscribers (checked per publish; usually false).
    pub fn any_peer_congested(&self) -> bool {
        self.peers_congested.get() > 0
    }

    pub fn peer_congested(&self, peer: ShardId) -> bool {
        self.peer_congested[peer.0 as usize].get()
    }

    /// Applies a peer's `SubscribersCongested`.
    pub fn set_peer_congested(&self, peer: ShardId, congested: bool) {
        let was = self.peer_congested[peer.0 as usize].replace(congested);
        match (was, congested) {
            (false, true) => self.peers_congested.set(self.peers_congested.get() + 1),
            (true, false) => {
                self.peers_congested.set(self.peers_congested.get() - 1);
                for waker in self.waiters.borrow_mut().drain(..) {
                    waker.wake();
                }
            }
            _ => {}
        }
    }

    /// Waits until `peer` says its subscribers fed from here have drained. Callers bound
    /// the wait with a timer.
    pub async fn peer_drained(&self, peer: ShardId) {
        poll_fn(|cx| {
            if !self.peer_congested(peer) {
                return Poll::Ready(());
            }
            let mut waiters = self.waiters.borrow_mut();
            if !waiters.iter().any(|waiter| waiter.will_wake(cx.waker())) {
                waiters.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    /// Records subscribers congested by `peer`'s deliveries. True when `peer` had none
    /// reported: it must be told, and a watcher started (`watch`).
    pub fn report(&self, peer: ShardId, congested: Vec<Rc<Outbound>>) -> bool {
        let mut reported = self.reported[peer.0 as usize].borrow_mut();
        let first = reported.is_empty();
        for outbound in congested {
            if !reported.iter().any(|known| Rc::ptr_eq(known, &outbound)) {
                reported.push(outbound);
            }
        }
        first
    }

    /// Waits until every subscriber reported to `peer` has drained or closed; each is
    /// re-checked at least every `STALL_DURATION_MAX`, so a queue whose writer is gone
    /// cannot keep the peer's publishers waiting.
    pub async fn watch(&self, peer: ShardId) {
        let index = peer.0 as usize;
        loop {
            let next = self.reported[index].borrow().first().cloned();
            let Some(outbound) = next else { return };
            futures_lite::future::or(outbound.drained(), glommio::timer::sleep(crate::limits::STALL_DURATION_MAX))
                .await;
            self.reported[index].borrow_mut().retain(|outbound| outbound.congested());
        }
    }
}
