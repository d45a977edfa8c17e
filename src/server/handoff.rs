//! Handing a client connection to another shard (issue 20, perf/shards.md): a connection
//! whose publishes are stored by the streams of one other shard moves there, with its
//! socket, subscriptions, unread input and queued output, so that its publishes and
//! their acks stop crossing the mesh. `connection.rs` decides when (`HANDOFF_AFTER`) and
//! runs the connection's side; this file is the protocol between the shards.
//!
//! The move of connection C from shard X to shard Y; Z is any other shard:
//! 1. X stops reading C at an op boundary, lets its writer finish the write in progress,
//!    suspends C's output (deliveries keep queuing there), sends every Z
//!    [`Step::Departing`] (behind C's last publishes to Z) and Y [`Step::Arrive`].
//! 2. Y installs C (its subscriptions in Y's table, first ones announced as any SUB's;
//!    output held) and, in the same step, sends every peer [`Step::Installed`].
//! 3. Each Z, once it has both `Departing` and `Installed`, sends [`Step::Cut`] to X and
//!    to Y. X, on `Installed`, cuts its own local deliveries and sends `Cut` to Y. Y reads
//!    C's input once every peer's cut is in: each has then applied C's publishes made on
//!    X, so those made on Y come after them.
//! 4. A shard's cut splits its messages for C, in each FIFO ring between shards: what it
//!    sent before its cut is delivered by X's copy of C, what it sent after, by Y's (the
//!    [`Gate`] on each copy's output). Y's own cut is the install; at X, `Installed` is
//!    Y's cut.
//! 5. Once X has every cut, its copy receives nothing more: it drops the copy's
//!    subscriptions (announcing last ones as any UNSUB's) and sends Y [`Step::Drained`]
//!    with the output it queued. Y writes that ahead of its own and starts writing.
//!
//! So every message reaches C once, and each shard's messages for C in the order it sent
//! them. Not moved: TLS connections (their session lives in the reader), connections with
//! queue subscriptions (a queue member is picked per shard), leaf links.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::{Duration, SystemTime};

use bytes::Bytes;

use super::account::AccountId;
use super::auth::Credentials;
use super::envelope::Envelope;
use super::interest::ConnId;
use super::node::Node;
use super::outbound::{CloseReason, Outbound};
use crate::protocol::ConnectOptions;
use crate::shard::ShardId;

/// Publishes in a row that the streams of one other shard store before a connection moves
/// there: `JETCORE_HANDOFF_AFTER` (0: never move), else `HANDOFF_AFTER_DEFAULT`.
pub fn publishes_before_move() -> u32 {
    static AFTER: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *AFTER.get_or_init(|| {
        std::env::var("JETCORE_HANDOFF_AFTER")
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(crate::limits::HANDOFF_AFTER_DEFAULT)
    })
}

/// Deliveries in a row from one other shard, counted on a connection's output. A
/// connection that only receives (a subscriber, a push consumer's deliver subject) never
/// publishes a store, so this is what moves it to the shard its messages come from. Its
/// reader sits in a socket read, where it cannot move: when the streak reaches the mark
/// the router asks the client for a PONG (a server PING), and the reader, having parsed
/// it, is at an op boundary with no read in flight (`Client::move_due`). The mark doubles
/// after each PING, so a connection that cannot move (TLS, a queue member) is asked ever
/// more rarely. A client reading a burst answers the PING after the burst: such a
/// connection moves when the burst is over.
///
/// Every delivery counts, a core subscriber's as a push consumer's, not JetStream's
/// alone: a subscriber fed by one other shard only pays a mesh hop on every message just
/// as a consumer's deliver subject does, while one fed by several shards never builds a
/// streak (each change of source restarts it), so it neither moves nor ping-pongs and
/// fan-out from publishers on several shards stays spread. The price: the subscribers of
/// a single publisher gather on its shard, which then writes to all of them.
#[derive(Debug, Default)]
pub struct DeliveryStreak {
    streak: Cell<Option<(ShardId, u32)>>,
    /// The count that sends the next PING; 0: moves off (also for outputs that are not a
    /// client's: leaf links, inboxes).
    ping_at: Cell<u32>,
}

impl DeliveryStreak {
    /// Turns counting on: the first PING after `after` deliveries in a row.
    pub fn arm(&self, after: u32) {
        self.ping_at.set(after);
    }

    /// Counts a delivery from `from` (`None`: this shard, which ends the streak). True
    /// when the streak reaches the mark: the caller then queues a PING.
    pub fn note(&self, from: Option<ShardId>) -> bool {
        let at = self.ping_at.get();
        let Some(from) = from.filter(|_| at > 0) else {
            self.streak.set(None);
            return false;
        };
        let count = match self.streak.get() {
            Some((shard, count)) if shard == from => count.saturating_add(1),
            _ => 1,
        };
        self.streak.set(Some((from, count)));
        let reached = count == at;
        if reached {
            self.ping_at.set(at.saturating_mul(2));
        }
        reached
    }

    /// Ends the streak: the connection worked with a stream of its own shard.
    pub fn reset(&self) {
        self.streak.set(None);
    }

    /// The shard to move to, once `after` deliveries in a row came from it (the streak
    /// ends).
    pub fn due(&self, after: u32) -> Option<ShardId> {
        let (shard, count) = self.streak.get()?;
        (after > 0 && count >= after).then(|| {
            self.streak.set(None);
            shard
        })
    }
}

/// The protocol's messages between shards (see the module's doc).
#[derive(Debug)]
pub enum Step {
    Departing { conn: ConnId, to: ShardId },
    Arrive(Box<Arrival>),
    Installed { conn: ConnId, old: ShardId },
    Cut { conn: ConnId },
    Drained { conn: ConnId, output: Vec<Vec<u8>>, closed: Option<CloseReason> },
}

/// What a connection's new shard needs to serve it.
pub struct Arrival {
    pub conn: ConnId,
    pub socket: OwnedFd,
    /// Input read from the socket and not yet parsed.
    pub unread: Vec<u8>,
    pub options: ConnectOptions,
    pub account: AccountId,
    pub credentials: Option<Credentials>,
    pub subscriptions: Vec<MovedSubscription>,
    pub facts: Facts,
}

impl std::fmt::Debug for Arrival {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Arrival {{ conn: {}, subscriptions: {} }}", self.conn, self.subscriptions.len())
    }
}

/// A subscription as it moves (no queue group: those connections stay).
pub struct MovedSubscription {
    pub sid: Bytes,
    pub subject: Bytes,
    pub key: Bytes,
    pub delivered: u64,
    pub max: Option<u64>,
}

/// What monitoring shows of the connection, carried so `/connz` goes on as before.
pub struct Facts {
    pub ip: String,
    pub port: u16,
    pub started: SystemTime,
    pub name: String,
    pub lang: String,
    pub version: String,
    pub user: String,
    pub account_name: String,
    pub in_msgs: u64,
    pub in_bytes: u64,
    pub rtt: Duration,
    pub messages_out: (u64, u64),
    /// Moves so far, this one included.
    pub moves: u32,
}

/// Which shards' deliveries a copy of a moving connection takes, by each shard's cut.
pub struct Gate {
    me: ShardId,
    departing: bool,
    cut: Vec<bool>,
}

impl Gate {
    fn new(me: ShardId, shards: u16, departing: bool) -> Gate {
        Gate { me, departing, cut: vec![false; usize::from(shards)] }
    }

    /// `from`: the shard that routed the delivery (`None`: this one).
    pub fn admits(&self, from: Option<ShardId>) -> bool {
        let from = from.unwrap_or(self.me);
        match self.departing {
            true => !self.cut[usize::from(from.0)],
            false => from == self.me || self.cut[usize::from(from.0)],
        }
    }

    fn cut(&mut self, shard: ShardId) {
        self.cut[usize::from(shard.0)] = true;
    }

    /// Every shard that matters has cut: the old copy's own and its peers', or the new
    /// copy's peers'.
    fn complete(&self) -> bool {
        self.cut.iter().enumerate().all(|(index, cut)| *cut || (!self.departing && index == usize::from(self.me.0)))
    }
}

/// This shard's side of the moves in progress, by connection.
#[derive(Default)]
pub struct Moves {
    moving: RefCell<HashMap<ConnId, Moving>>,
    /// On the other shards: moves of which one of `Departing` and `Installed` came.
    half_seen: RefCell<HashSet<ConnId>>,
}

struct Moving {
    outbound: Rc<Outbound>,
    /// On the new shard: the old shard's queued output, once `Drained` brought it.
    drained: Option<(Vec<Vec<u8>>, Option<CloseReason>)>,
    /// Whether the writer took the drained output (the new shard's entry ends once it did
    /// and every cut is in).
    taken: bool,
    /// Tasks waiting for a cut or the drained output (the reader and the writer).
    wakers: Vec<Waker>,
}

impl Moves {
    fn wake(moving: &mut Moving) {
        for waker in moving.wakers.drain(..) {
            waker.wake();
        }
    }
}

impl Node {
    /// X's step 1: the connection's output is suspended and its writer done; send it.
    pub fn hand_off(self: &Rc<Self>, target: ShardId, outbound: &Rc<Outbound>, arrival: Arrival) {
        let conn = arrival.conn;
        self.track_move(conn, outbound, true);
        for peer in self.peers().filter(|peer| *peer != target).collect::<Vec<_>>() {
            self.send(peer, Envelope::Handoff(Step::Departing { conn, to: target }));
        }
        self.send(target, Envelope::Handoff(Step::Arrive(Box::new(arrival))));
    }

    /// Waits until every shard that matters has cut: on the old shard (step 5), so its copy
    /// receives nothing more; on the new one (before reading), so that C's publishes made
    /// there follow those it made on the old shard everywhere.
    pub async fn cuts_complete(&self, conn: ConnId) {
        std::future::poll_fn(|cx| {
            let mut moves = self.moves.moving.borrow_mut();
            let Some(moving) = moves.get_mut(&conn) else { return Poll::Ready(()) };
            if moving.outbound.gate().as_ref().is_none_or(Gate::complete) {
                return Poll::Ready(());
            }
            moving.wakers.push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Gates `outbound` as the old (`departing`) or new copy and follows its move.
    fn track_move(&self, conn: ConnId, outbound: &Rc<Outbound>, departing: bool) {
        *outbound.gate() = Some(Gate::new(self.shard, self.shard_count(), departing));
        let moving = Moving { outbound: outbound.clone(), drained: None, taken: false, wakers: Vec::new() };
        self.moves.moving.borrow_mut().insert(conn, moving);
    }

    /// X's step 5, after the copy's subscriptions are gone: its output goes to `target`.
    pub fn departed(self: &Rc<Self>, conn: ConnId, target: ShardId, outbound: &Outbound) {
        self.moves.moving.borrow_mut().remove(&conn);
        let output = outbound.take_queued();
        let closed = outbound.closed();
        self.send(target, Envelope::Handoff(Step::Drained { conn, output, closed }));
    }

    /// Y's step 2, after the connection's subscriptions are in this shard's table: the
    /// install is this shard's cut; tell every peer.
    pub fn arrived(self: &Rc<Self>, conn: ConnId, old: ShardId, outbound: &Rc<Outbound>) {
        self.track_move(conn, outbound, false);
        for peer in self.peers().collect::<Vec<_>>() {
            self.send(peer, Envelope::Handoff(Step::Installed { conn, old }));
        }
    }

    /// Y: waits for the old shard's output (`None` if the connection closed here first).
    pub async fn arrival_drained(&self, conn: ConnId) -> Option<(Vec<Vec<u8>>, Option<CloseReason>)> {
        let drained = std::future::poll_fn(|cx| {
            let mut moves = self.moves.moving.borrow_mut();
            let Some(moving) = moves.get_mut(&conn) else { return Poll::Ready(None) };
            if let Some(drained) = moving.drained.take() {
                moving.taken = true;
                return Poll::Ready(Some(drained));
            }
            moving.wakers.push(cx.waker().clone());
            Poll::Pending
        })
        .await;
        self.end_arrival_if_complete(conn);
        if drained.is_some() {
            let stats = &self.ops.stats;
            stats.connection_handoffs.set(stats.connection_handoffs.get() + 1);
        }
        drained
    }

    /// Y: the connection closed before its move completed; deliveries still due here are
    /// nobody's.
    pub fn arrival_closed(&self, conn: ConnId) {
        if let Some(mut moving) = self.moves.moving.borrow_mut().remove(&conn) {
            Moves::wake(&mut moving);
        }
    }

    fn end_arrival_if_complete(&self, conn: ConnId) {
        let mut moves = self.moves.moving.borrow_mut();
        let Some(moving) = moves.get(&conn) else { return };
        let mut gate = moving.outbound.gate();
        if moving.taken && gate.as_ref().is_none_or(Gate::complete) {
            *gate = None;
            drop(gate);
            moves.remove(&conn);
        }
    }

    pub(super) fn handle_handoff(self: &Rc<Self>, from: ShardId, step: Step) {
        match step {
            Step::Arrive(arrival) => {
                let node = self.clone();
                glommio::spawn_local(super::connection::serve_arrival(node, from, *arrival)).detach();
            }
            Step::Installed { conn, old } if old == self.shard => {
                // `Installed` is the new shard's cut; this shard cuts its own deliveries now.
                self.cut(conn, from);
                self.cut(conn, self.shard);
                self.send(from, Envelope::Handoff(Step::Cut { conn }));
            }
            Step::Installed { conn, old } => self.seen_half(conn, old, from),
            Step::Departing { conn, to } => self.seen_half(conn, from, to),
            Step::Cut { conn } => {
                self.cut(conn, from);
                self.end_arrival_if_complete(conn);
            }
            Step::Drained { conn, output, closed } => {
                let mut moves = self.moves.moving.borrow_mut();
                if let Some(moving) = moves.get_mut(&conn) {
                    moving.drained = Some((output, closed));
                    Moves::wake(moving);
                }
            }
        }
    }

    /// On a shard neither side of the move: cut once both `Departing` (behind the old
    /// shard's messages) and `Installed` (behind the new one's) are here.
    fn seen_half(self: &Rc<Self>, conn: ConnId, old: ShardId, new: ShardId) {
        let mut half_seen = self.moves.half_seen.borrow_mut();
        if !half_seen.remove(&conn) {
            half_seen.insert(conn);
            return;
        }
        drop(half_seen);
        self.send(old, Envelope::Handoff(Step::Cut { conn }));
        self.send(new, Envelope::Handoff(Step::Cut { conn }));
    }

    fn cut(&self, conn: ConnId, shard: ShardId) {
        let mut moves = self.moves.moving.borrow_mut();
        let Some(moving) = moves.get_mut(&conn) else { return };
        if let Some(gate) = moving.outbound.gate().as_mut() {
            gate.cut(shard);
        }
        Moves::wake(moving);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_old_copy_takes_each_shard_until_its_cut_and_the_new_one_after() {
        let (x, y, z) = (ShardId(0), ShardId(1), ShardId(2));
        let mut old = Gate::new(x, 3, true);
        let mut new = Gate::new(y, 3, false);
        assert!(old.admits(None) && old.admits(Some(y)) && old.admits(Some(z)));
        assert!(new.admits(None) && !new.admits(Some(x)) && !new.admits(Some(z)));
        old.cut(z);
        new.cut(z);
        assert!(!old.admits(Some(z)) && new.admits(Some(z)));
        assert!(!old.complete() && !new.complete());
        old.cut(y);
        old.cut(x);
        new.cut(x);
        assert!(!old.admits(None) && !old.admits(Some(y)));
        assert!(new.admits(Some(x)));
        assert!(old.complete() && new.complete());
    }
}
