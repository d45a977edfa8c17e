//! One shard's server state: its subscriptions, its replica of the other shards' interest,
//! and its side of the mesh. Owned by the shard's thread alone (DESIGN §2); tasks on the
//! shard share it through `Rc` and never hold a `RefCell` borrow across an `.await`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Poll, Waker};

use bytes::Bytes;

use super::account::{self, routing_key, AccountId};
use super::account_imports::StreamImports;
use super::account_jetstream::AccountServices;
use super::batch::{DeliveryBatch, OutgoingBatches, StoreTarget};
use super::calls::Calls;
use super::catalog::Catalog;
use super::congestion::{Congestion, MeshCongestion};
use super::envelope::{Envelope, ShardReturn};
use super::interest::{ConnId, Interest, Subscription};
use super::options::Options;
use super::outbound::Outbound;
use super::router::{self, Publish, Publisher, QueuePicker, Routed, Scope};
use super::service_imports::ServiceImports;
use super::service_responses::ResponseMappings;
use super::shard_ops::ShardOps;
use crate::limits;
use crate::shard::{ShardContext, ShardId};

/// Facts every shard shares, fixed at start.
pub struct ServerIdentity {
    pub server_id: String,
    pub server_name: String,
    pub port: u16,
    /// Connections open across all shards (checked against `max_connections` at accept).
    pub connections: Arc<AtomicUsize>,
    /// Every shard has opened its streams and listens for clients (`/healthz` answers
    /// 500 before, as nats-server does before it is ready for connections).
    pub ready: std::sync::atomic::AtomicBool,
}

/// What a client publish reached.
pub struct Published {
    pub reached: bool,
    /// Subscribers past their stall threshold, here or on peers: wait before publishing
    /// more.
    pub congested: Congestion,
}

pub struct Node {
    pub shard: ShardId,
    pub options: Rc<Options>,
    pub identity: Arc<ServerIdentity>,
    mesh: ShardContext<Envelope>,
    interest: RefCell<Interest>,
    picker: RefCell<QueuePicker>,
    next_conn: Cell<u64>,
    /// Interest changes this shard has broadcast.
    interest_epoch: Cell<u64>,
    /// For each shard, the highest of our interest epochs it has applied.
    applied_by_peer: RefCell<Vec<u64>>,
    epoch_waiters: RefCell<Vec<Waker>>,
    /// Cross-shard deliveries being collected, per peer (sent before any await).
    batches: RefCell<OutgoingBatches>,
    /// A task to send the open batches is spawned (`flush_soon`).
    flush_scheduled: Cell<bool>,
    /// Envelopes that did not fit their ring yet, per peer, kept in order.
    overflow: Vec<RefCell<VecDeque<Envelope>>>,
    draining: Vec<Cell<bool>>,
    room_waiters: RefCell<Vec<Waker>>,
    /// Congested subscribers fed across the mesh, both ways (`congestion.rs`).
    congestion: MeshCongestion,
    /// This shard's streams: one service per account with JetStream (none when off).
    pub(super) jetstream: AccountServices,
    /// Replica of every shard's streams (who owns which, what they capture).
    pub(super) catalog: RefCell<Catalog>,
    pub(super) calls: Calls<ShardReturn>,
    /// Shard 0 coordinates stream creation, update and deletion one at a time, so that
    /// subject-overlap checks see every stream.
    pub(super) coordinating: Cell<bool>,
    pub(super) coordinator_waiters: RefCell<Vec<Waker>>,
    /// Connections, counters, live settings and shutdown phase (monitoring, signals).
    pub ops: ShardOps,
    /// Who receives what each account publishes on the subjects it exports (rebuilt by a
    /// reload, [`Node::rebuild_imports`]).
    stream_imports: RefCell<StreamImports>,
    /// Each account's service imports, and whether it answers any (`service_routing.rs`).
    pub(super) services: RefCell<ServiceImports>,
    /// Reply mappings of the service requests routed here, awaiting responses.
    pub(super) responses: RefCell<ResponseMappings>,
    /// The leaf links' side of routing, on the shard that owns them (shard 0).
    pub leaf: std::cell::OnceCell<Rc<super::leaf::Spoke>>,
    /// Connections moving to or from this shard (`handoff.rs`).
    pub(super) moves: super::handoff::Moves,
    /// The shard of the stream the publish being routed worked on, if any: a stream that
    /// stored it, or whose consumer it asked for messages or acked (read by the
    /// publishing connection, `take_stream_shard`, to decide whether to move there).
    pub(super) stream_shard: Cell<Option<ShardId>>,
}

impl Node {
    pub fn new(
        mesh: ShardContext<Envelope>,
        options: Rc<Options>,
        identity: Arc<ServerIdentity>,
        jetstream: AccountServices,
    ) -> Rc<Node> {
        let shard = mesh.id();
        let peers = mesh.shard_count() as usize;
        let options_for_ops = options.clone();
        let stream_imports = StreamImports::new(&options.accounts);
        let services = ServiceImports::new(&options.accounts);
        let seed = identity
            .server_id
            .bytes()
            .fold(0xCBF2_9CE4_8422_2325_u64, |hash, byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01B3));
        let responses = RefCell::new(ResponseMappings::new(shard, seed));
        for (account, service) in jetstream.iter() {
            if let Some(limits) = options.accounts.get(account).and_then(|config| config.jetstream.as_ref()) {
                service.set_account_consumer_limits(limits.max_consumers, limits.max_ack_pending);
            }
        }
        Rc::new(Node {
            shard,
            options,
            identity,
            mesh,
            interest: RefCell::new(Interest::default()),
            picker: RefCell::new(QueuePicker::new(0x9E37_79B9_7F4A_7C15 ^ u64::from(shard.0))),
            next_conn: Cell::new(0),
            interest_epoch: Cell::new(0),
            applied_by_peer: RefCell::new(vec![0; peers]),
            epoch_waiters: RefCell::new(Vec::new()),
            batches: RefCell::new(OutgoingBatches::new(peers as u16)),
            flush_scheduled: Cell::new(false),
            overflow: (0..peers).map(|_| RefCell::new(VecDeque::new())).collect(),
            draining: (0..peers).map(|_| Cell::new(false)).collect(),
            room_waiters: RefCell::new(Vec::new()),
            congestion: MeshCongestion::new(peers),
            jetstream,
            catalog: RefCell::new(Catalog::default()),
            calls: Calls::default(),
            coordinating: Cell::new(false),
            coordinator_waiters: RefCell::new(Vec::new()),
            ops: ShardOps::new(options_for_ops, peers as u16),
            stream_imports: RefCell::new(stream_imports),
            services: RefCell::new(services),
            responses,
            leaf: std::cell::OnceCell::new(),
            moves: Default::default(),
            stream_shard: Cell::new(None),
        })
    }

    /// Rebuilds the stream and service import tables from `accounts` (a reload changed
    /// the exports or imports; the accounts themselves are the same). Reply mappings of
    /// requests already routed stay until answered or expired.
    pub fn rebuild_imports(&self, accounts: &super::account::Accounts) {
        *self.stream_imports.borrow_mut() = StreamImports::new(accounts);
        *self.services.borrow_mut() = ServiceImports::new(accounts);
    }

    pub fn catalog_len(&self) -> usize {
        self.catalog.borrow().len()
    }

    pub fn shard_count(&self) -> u16 {
        self.mesh.shard_count()
    }

    /// A client id unique across shards (shard ids interleave).
    pub fn next_client_id(&self) -> u64 {
        let local = self.next_conn.get() + 1;
        self.next_conn.set(local);
        local * u64::from(self.shard_count()) + u64::from(self.shard.0)
    }

    pub fn peers(&self) -> impl Iterator<Item = ShardId> + '_ {
        let me = self.shard;
        (0..self.shard_count()).map(ShardId).filter(move |peer| *peer != me)
    }

    /// Adds a client subscription and, if it is the first on its pattern here, tells the
    /// other shards. Returns the interest epoch a barrier must reach to cover it.
    pub fn subscribe(self: &Rc<Self>, subscription: Rc<Subscription>) -> u64 {
        let (pattern, queue) = (subscription.key.clone(), subscription.queue.clone());
        // The leaf links carry `$G`'s interest (a remote's account binding is still `$G`).
        if let Some(spoke) = self.leaf.get().filter(|_| subscription.account == AccountId::GLOBAL) {
            spoke.interest_changed(&subscription.subject, &queue, true, subscription.leaf);
        }
        let first = self.interest.borrow_mut().add_local(subscription);
        if first {
            self.broadcast_interest(pattern.clone(), queue, true);
            self.consumer_interest_changed(&pattern);
        }
        self.interest_epoch.get()
    }

    pub fn unsubscribe(self: &Rc<Self>, subscription: &Rc<Subscription>) {
        let last = self.interest.borrow_mut().remove_local(subscription);
        if let Some(spoke) = self.leaf.get().filter(|_| subscription.account == AccountId::GLOBAL) {
            spoke.interest_changed(&subscription.subject, &subscription.queue, false, subscription.leaf);
        }
        if last {
            self.broadcast_interest(subscription.key.clone(), subscription.queue.clone(), false);
            self.consumer_interest_changed(&subscription.key);
        }
    }

    fn broadcast_interest(self: &Rc<Self>, pattern: Bytes, queue: Option<Bytes>, added: bool) {
        let epoch = self.interest_epoch.get() + 1;
        self.interest_epoch.set(epoch);
        for peer in self.peers().collect::<Vec<_>>() {
            let envelope = Envelope::Interest { pattern: pattern.clone(), queue: queue.clone(), added, epoch };
            self.send(peer, envelope);
        }
    }

    /// Waits until every other shard has applied our interest changes up to `epoch`, so
    /// that a client's PONG after a SUB means publishes anywhere will reach it.
    pub async fn interest_barrier(&self, epoch: u64) {
        poll_fn(|cx| {
            let applied = self.applied_by_peer.borrow();
            let done = self.peers().all(|peer| applied[peer.0 as usize] >= epoch);
            if done {
                return Poll::Ready(());
            }
            self.epoch_waiters.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Routes a client's publish: local subscribers now, envelopes for other shards queued
    /// in order. `key` is the subject's routing key in the publisher's account.
    /// `reached` is true when anyone (here or elsewhere) has interest.
    pub fn publish(self: &Rc<Self>, key: &[u8], publish: &Publish<'_>, publisher: Publisher) -> Published {
        // Only this publish's stream counts (`take_stream_shard`), not one an internal
        // publish reached since.
        self.stream_shard.set(None);
        let routed = self.route(key, publish, Some(publisher));
        let mut reached = routed.reached_anyone();
        let to_peers = routed.remote_shards > 0;
        let mut congested = Congestion { local: self.finish_routing(routed), peers: Vec::new() };
        for import in self.stream_imports.borrow().of(publisher.account) {
            if import.takes(publish.subject) {
                let local = import.local_subject(publish.subject);
                let imported = Publish { subject: &local, ..*publish };
                let routed = self.route(&routing_key(import.importer, &local), &imported, None);
                reached |= routed.reached_anyone();
                congested.local.extend(self.finish_routing(routed));
            }
        }
        let services = self.services.borrow();
        let services = services.of(publisher.account);
        if !services.is_empty() {
            reached |= self.route_services(publisher.account, services, publish.subject, publish, Some(publisher.conn));
        }
        if to_peers && self.congestion.any_peer_congested() {
            congested.peers = self.congested_peers_of(key);
        }
        if self.options.jetstream {
            reached |= match self.jetstream.get(publisher.account) {
                Some(_) => self.route_jetstream(publisher.account, key, publish),
                None => self.refuse_jetstream(publisher.account, publish),
            };
        }
        Published { reached, congested }
    }

    /// The peers with interest in routing key `key` that said subscribers fed from here
    /// are congested (a superset of those the publish reached when queue groups span
    /// shards).
    fn congested_peers_of(&self, key: &[u8]) -> Vec<ShardId> {
        let matches = self.interest.borrow().matches_of(key);
        let mut peers: Vec<ShardId> = Vec::new();
        for remote in &matches.remote {
            if self.congestion.peer_congested(remote.shard) && !peers.contains(&remote.shard) {
                peers.push(remote.shard);
            }
        }
        peers
    }

    /// Waits, for at most `STALL_DURATION_MAX` in all, for the congested subscribers a
    /// publish reached to drain: the producer slows to their pace instead of pushing them
    /// into slow-consumer disconnects (nats-server stalls producers the same way).
    pub async fn stall_for(&self, congested: &Congestion) {
        if congested.is_empty() {
            return;
        }
        let deadline = std::time::Instant::now() + limits::STALL_DURATION_MAX;
        for outbound in &congested.local {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            futures_lite::future::or(outbound.drained(), glommio::timer::sleep(left)).await;
        }
        for peer in &congested.peers {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            futures_lite::future::or(self.congestion.peer_drained(*peer), glommio::timer::sleep(left)).await;
        }
    }

    /// Routes a message a hub sent over a leaf link to the subscribers `scope` names, and
    /// into JetStream as a client's publish is; returns the congested subscribers.
    /// `shown`: what subscribers see when it is not `publish` (a JetStream delivery from
    /// the hub: its stored subject and plain ack reply, routed to its deliver subject).
    pub fn publish_from_leaf(
        self: &Rc<Self>,
        publish: &Publish<'_>,
        shown: Option<&Publish<'_>>,
        publisher: Publisher,
        scope: Scope<'_>,
    ) -> Vec<Rc<Outbound>> {
        let routed = {
            let interest = self.interest.borrow();
            let mut picker = self.picker.borrow_mut();
            let mut batches = self.batches.borrow_mut();
            let delivered = shown.unwrap_or(publish);
            router::route_scoped(
                &interest,
                &mut picker,
                &mut batches,
                publish.subject,
                delivered,
                Some(publisher),
                scope,
            )
        };
        let congested = self.finish_routing(routed);
        if self.jetstream.get(AccountId::GLOBAL).is_some() {
            self.route_jetstream(AccountId::GLOBAL, publish.subject, publish);
        }
        congested
    }

    /// Routes to the subscribers of `to` under the shard's interest, picker and batches.
    pub(super) fn route(&self, to: &[u8], publish: &Publish<'_>, publisher: Option<Publisher>) -> Routed {
        let interest = self.interest.borrow();
        let mut picker = self.picker.borrow_mut();
        let mut batches = self.batches.borrow_mut();
        router::route_publish_to(&interest, &mut picker, &mut batches, to, publish, publisher)
    }

    /// Publishes a message the server itself originates (an API reply, a pub ack) in
    /// `account`.
    pub(super) fn publish_internal(
        self: &Rc<Self>,
        account: AccountId,
        subject: &[u8],
        headers: Option<&[u8]>,
        payload: &[u8],
    ) {
        self.publish_internal_in(account, subject, subject, None, headers, payload);
    }

    /// Publishes a server-originated message to the subscribers of `to` in `account`,
    /// carrying `subject` and `reply` (JetStream deliveries: stored subject, ack reply).
    /// Server-originated messages never wait on a slow subscriber.
    pub(super) fn publish_internal_in(
        self: &Rc<Self>,
        account: AccountId,
        to: &[u8],
        subject: &[u8],
        reply: Option<&[u8]>,
        headers: Option<&[u8]>,
        payload: &[u8],
    ) {
        let publish = Publish { subject, reply, headers, payload };
        let routed = match account {
            AccountId::GLOBAL => self.route(to, &publish, None),
            account => self.route(&routing_key(account, to), &publish, None),
        };
        let _ = self.finish_routing(routed);
        let services = self.services.borrow();
        let services = services.of(account);
        if !services.is_empty() {
            self.route_services(account, services, to, &publish, None);
        }
        self.flush_soon();
    }

    /// Sends the open batches once the tasks ready now have had their turn. The server's
    /// own messages come in bursts from one task (the pub acks a group commit releases, a
    /// pull request's deliveries): one envelope per peer per burst, not one per message,
    /// and the peer is woken once. A batch that fills is sent at once (`finish_routing`).
    fn flush_soon(self: &Rc<Self>) {
        if self.flush_scheduled.get() || self.batches.borrow().open_peers().next().is_none() {
            return;
        }
        self.flush_scheduled.set(true);
        let node = self.clone();
        glommio::spawn_local(async move {
            node.flush_scheduled.set(false);
            node.flush_batches();
        })
        .detach();
    }

    /// Whether any subscription on any shard matches `subject` in `account`.
    pub fn has_interest(&self, account: AccountId, subject: &[u8]) -> bool {
        self.has_interest_within(account, subject, 0)
    }

    /// [`Node::has_interest`], `hops` service imports away from the subject asked about.
    pub(super) fn has_interest_within(&self, account: AccountId, subject: &[u8], hops: usize) -> bool {
        let services = self.services.borrow();
        let services = services.of(account);
        if !services.is_empty() {
            if let Some(interested) = self.service_interest(account, services, subject, hops) {
                return interested;
            }
        }
        let matches = match account {
            AccountId::GLOBAL => self.interest.borrow().matches_of(subject),
            account => self.interest.borrow().matches_of(&routing_key(account, subject)),
        };
        !matches.local.is_empty() || !matches.remote.is_empty()
    }

    /// Sends every open cross-shard batch. Tasks that publish call this before they
    /// await anything, so no message waits in a batch while its shard is idle.
    pub fn flush_batches(self: &Rc<Self>) {
        let open: Vec<ShardId> = self.batches.borrow().open_peers().collect();
        for peer in open {
            self.flush_batch(peer);
        }
    }

    /// Hands a client's publish to stream `stream` on `peer`, which owns it: in the
    /// peer's batch, behind the deliveries routed before it. Sent with the batch, so
    /// callers flush before they await, as for deliveries.
    pub(super) fn send_store(self: &Rc<Self>, peer: ShardId, target: StoreTarget<'_>, publish: &Publish<'_>) {
        let full = self.batches.borrow_mut().push_store(peer, target, publish);
        if full {
            self.flush_batch(peer);
        }
    }

    fn flush_batch(self: &Rc<Self>, peer: ShardId) {
        let batch = self.batches.borrow_mut().take(peer);
        if let Some(batch) = batch {
            self.send(peer, Envelope::Deliver(Box::new(batch)));
        }
    }

    /// Sends full batches, retires expired subscriptions; returns the congested queues.
    pub(super) fn finish_routing(self: &Rc<Self>, routed: Routed) -> Vec<Rc<Outbound>> {
        for peer in routed.full_batches {
            self.flush_batch(peer);
        }
        for subscription in routed.expired {
            self.unsubscribe(&subscription);
        }
        routed.congested
    }

    /// The sid of `conn`'s subscription that matches the routing key `subject` (for the
    /// 503 no-responders status, which goes to the requester's own reply subscription).
    pub fn sid_matching(&self, conn: ConnId, subject: &[u8]) -> Option<Bytes> {
        let mut sid = None;
        self.interest.borrow().for_each_local(subject, |subscription| {
            if sid.is_none() && subscription.conn == conn {
                sid = Some(subscription.sid.clone());
            }
        });
        sid
    }

    /// Sends in order: straight into the ring when nothing is waiting, else behind the
    /// envelopes already queued for that peer. Never blocks the thread.
    pub(super) fn send(self: &Rc<Self>, peer: ShardId, envelope: Envelope) {
        if !matches!(envelope, Envelope::Deliver(_)) {
            // Keep this shard's messages to `peer` in order: batched deliveries first.
            self.flush_batch(peer);
        }
        let index = peer.0 as usize;
        let queued = !self.overflow[index].borrow().is_empty() || self.draining[index].get();
        let envelope = if queued {
            envelope
        } else {
            match self.mesh.try_send(peer, envelope) {
                Ok(()) => return,
                Err(envelope) => envelope,
            }
        };
        self.overflow[index].borrow_mut().push_back(envelope);
        if !self.draining[index].get() {
            self.draining[index].set(true);
            let node = self.clone();
            glommio::spawn_local(async move { node.drain_overflow(peer).await }).detach();
        }
    }

    async fn drain_overflow(self: Rc<Self>, peer: ShardId) {
        let index = peer.0 as usize;
        loop {
            let next = self.overflow[index].borrow_mut().pop_front();
            let Some(envelope) = next else { break };
            // An error means the peer shard has stopped (shutdown): nothing left to tell it.
            let _ = self.mesh.send(peer, envelope).await;
            if self.overflow[index].borrow().len() < limits::MESH_OVERFLOW_ENVELOPES_MAX / 2 {
                for waker in self.room_waiters.borrow_mut().drain(..) {
                    waker.wake();
                }
            }
        }
        self.draining[index].set(false);
        for waker in self.room_waiters.borrow_mut().drain(..) {
            waker.wake();
        }
    }

    /// Envelopes waiting for room in each peer's ring (0 for this shard), for `/metrics`.
    pub fn overflow_depths(&self) -> Vec<usize> {
        self.overflow.iter().map(|queue| queue.borrow().len()).collect()
    }

    /// Envelopes in this shard's ring to each peer (0 for this shard), and the rings'
    /// capacity, for `/metrics`.
    pub fn ring_depths(&self) -> (Vec<usize>, usize) {
        (self.mesh.ring_depths(), self.mesh.ring_capacity())
    }

    /// Whether any peer's overflow queue is long enough that publishers should wait.
    pub fn mesh_congested(&self) -> bool {
        self.overflow.iter().any(|queue| queue.borrow().len() >= limits::MESH_OVERFLOW_ENVELOPES_MAX)
    }

    /// Backpressure for a publishing connection: waits while any peer's queue is long.
    pub async fn wait_for_mesh_room(&self) {
        poll_fn(|cx| {
            if !self.mesh_congested() {
                return Poll::Ready(());
            }
            self.room_waiters.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// The shard's mesh loop: applies what other shards send. Runs for the server's life.
    /// It never waits on a slow subscriber (`congestion.rs` says why).
    ///
    /// `recv` is ready at once while envelopes wait, so without a yield a backlog (a
    /// million interest changes from one client's SUBs) would hold the shard's thread
    /// until it is drained, and no connection on this shard would be served meanwhile
    /// (PING round trips of 1.5 s were measured so). Every `MESH_ENVELOPES_PER_YIELD`
    /// envelopes it yields, and at least every `IO_YIELD_INTERVAL` it waits for the
    /// executor to poll its rings (`shard::Yielder`), so socket completions are reaped
    /// and the shard's other tasks get their turn.
    pub async fn run_mesh(self: Rc<Self>) {
        let mut handled: usize = 0;
        let mut yielder = crate::shard::Yielder::default();
        loop {
            let (from, envelope) = self.mesh.recv().await;
            self.handle_envelope(from, envelope);
            handled += 1;
            if handled % limits::MESH_ENVELOPES_PER_YIELD == 0 {
                yielder.yield_now().await;
            }
        }
    }

    /// Applies what peers have already sent, before this shard routes a client's new
    /// input. A peer's interest change (a SUB there) and a client's publish here can be
    /// ready in the same reactor turn, and the connection's task may run before the mesh
    /// task: the publish would be routed without the interest the peer announced first.
    /// Seen with nats-py, whose `flush()` writes its PING ahead of a SUB still queued in
    /// the client, so the PONG does not cover the SUB: right after start-up, about one run
    /// in ten of `tests/python/test_permissions.py` lost the message published to the
    /// new subscription. Bounded per call.
    pub fn apply_mesh_backlog(self: &Rc<Self>) {
        if self.shard_count() < 2 {
            return;
        }
        for _ in 0..limits::MESH_ENVELOPES_PER_YIELD {
            let Some((from, envelope)) = self.mesh.try_recv() else { return };
            self.handle_envelope(from, envelope);
        }
    }

    fn handle_envelope(self: &Rc<Self>, from: ShardId, envelope: Envelope) {
        crate::shard::work::note();
        match envelope {
            Envelope::Deliver(delivery) => self.deliver_from_peer(from, &delivery),
            Envelope::Interest { pattern, queue, added, epoch } => {
                {
                    let mut interest = self.interest.borrow_mut();
                    if added {
                        interest.add_remote(from, &pattern, queue.clone());
                    } else {
                        interest.remove_remote(from, &pattern, &queue);
                    }
                }
                if let Some(spoke) = self.leaf.get().filter(|_| !account::is_reserved_subject(&pattern)) {
                    spoke.interest_changed(&pattern, &queue, added, false);
                }
                self.send(from, Envelope::InterestApplied { epoch });
                self.consumer_interest_changed(&pattern);
            }
            Envelope::Catalog(change) => self.catalog.borrow_mut().apply(change),
            Envelope::Api(forward) => {
                let node = self.clone();
                glommio::spawn_local(async move { node.answer_here(*forward).await }).detach();
            }
            Envelope::Call { id, call } => {
                let node = self.clone();
                glommio::spawn_local(async move {
                    let value = node.execute_call(*call).await;
                    node.send(from, Envelope::Return { id, value: Box::new(value) });
                })
                .detach();
            }
            Envelope::Return { id, value } => self.calls.complete(id, *value),
            Envelope::InterestApplied { epoch } => {
                let mut applied = self.applied_by_peer.borrow_mut();
                let slot = &mut applied[from.0 as usize];
                *slot = (*slot).max(epoch);
                drop(applied);
                for waker in self.epoch_waiters.borrow_mut().drain(..) {
                    waker.wake();
                }
            }
            Envelope::SubscribersCongested { congested } => self.congestion.set_peer_congested(from, congested),
            Envelope::ServiceResponse(response) => self.answer_peer_response(&response),
            Envelope::Handoff(step) => self.handle_handoff(from, step),
        }
    }

    /// Queues a peer's deliveries at once, whatever the subscribers' state, and tells the
    /// peer when this makes subscribers it feeds congested (its publishers then wait).
    /// Stores the batch's messages for this shard's streams, in order with the deliveries.
    fn deliver_from_peer(self: &Rc<Self>, from: ShardId, batch: &DeliveryBatch) {
        let mut routed = Routed::default();
        let mut deliveries = batch.iter().peekable();
        while deliveries.peek().is_some() {
            {
                // Storing may publish (a pub ack for an earlier message): no borrow across it.
                let interest = self.interest.borrow();
                let mut picker = self.picker.borrow_mut();
                while let Some(delivery) = deliveries.next_if(|delivery| delivery.stream.is_none()) {
                    router::route_delivery(&interest, &mut picker, from, &delivery, &mut routed);
                }
            }
            while let Some(store) = deliveries.next_if(|delivery| delivery.stream.is_some()) {
                let stream = String::from_utf8_lossy(store.stream.unwrap_or_default());
                let target = StoreTarget { account: store.account, stream: &stream, owner_key: store.owner_key };
                self.store_here(target, store.subject, store.reply, store.headers, store.payload);
            }
        }
        let congested = self.finish_routing(routed);
        if !congested.is_empty() && self.congestion.report(from, congested) {
            self.send(from, Envelope::SubscribersCongested { congested: true });
            let node = self.clone();
            glommio::spawn_local(async move {
                node.congestion.watch(from).await;
                node.send(from, Envelope::SubscribersCongested { congested: false });
            })
            .detach();
        }
    }

    /// The shard whose stream the last publish routed here worked on (stored it, or took
    /// it as a pull request or an ack), once.
    pub fn take_stream_shard(&self) -> Option<ShardId> {
        self.stream_shard.take()
    }

    pub fn connection_opened(&self) -> bool {
        let open = self.identity.connections.fetch_add(1, Ordering::Relaxed) + 1;
        if open > self.options.max_connections {
            self.identity.connections.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    pub fn connection_closed(&self) {
        self.identity.connections.fetch_sub(1, Ordering::Relaxed);
    }
}
