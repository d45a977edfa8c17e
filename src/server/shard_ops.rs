//! What one shard keeps for operating the server rather than routing messages: its open
//! connections (for `/connz`, lame duck and shutdown), its counters and latency histograms
//! (for `/metrics`), the settings a reload may change, and where it is in its life
//! (serving, lame duck, stopping). Owned by the shard's thread alone, like the rest of
//! [`Node`](super::node::Node); other threads see it only through snapshots the shard
//! makes when asked over the mesh.

use std::cell::{Cell, RefCell};
use std::collections::hash_map::RandomState;
use std::collections::BTreeMap;
use std::future::poll_fn;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use hdrhistogram::Histogram;

use super::closed_ring::ClosedRing;
use super::interest::{ConnId, Subscription};
use super::monitor::snapshot::{self, ClosedSnapshot, SubscriptionSnapshot};
use super::options::Options;
use super::outbound::{CloseReason, Outbound};
use crate::limits;
use crate::shard::LocalSignal;
use crate::subject::split_map::SplitMap;

/// A connection as monitoring and shutdown see it. The reader task updates it; the
/// shard reads it when asked.
pub struct ConnectionView {
    pub id: ConnId,
    pub ip: String,
    pub port: u16,
    pub started: SystemTime,
    /// When the connection was accepted, for the round trip estimated at CONNECT.
    accepted: Instant,
    pub last_activity: Cell<SystemTime>,
    pub outbound: Rc<Outbound>,
    /// From CONNECT.
    pub name: RefCell<String>,
    pub lang: RefCell<String>,
    pub version: RefCell<String>,
    pub user: RefCell<String>,
    /// The name of the account CONNECT bound the connection to (`$G` before CONNECT).
    pub account: RefCell<String>,
    /// What CONNECT presented; `None` until CONNECT passed authentication. A reload
    /// checks it against new authorization settings.
    pub credentials: RefCell<Option<super::auth::Credentials>>,
    /// Messages the client published and their header and payload bytes.
    pub in_msgs: Cell<u64>,
    pub in_bytes: Cell<u64>,
    /// The round trip as nats-server keeps it: estimated at CONNECT (from the accept),
    /// then the last server PING the client answered (zero: before CONNECT). `/connz`'s
    /// `rtt` and the `rtt` of `Nats-Request-Info`.
    pub rtt: Cell<Duration>,
    /// When the server's PING now awaiting its PONG was sent.
    ping_sent: Cell<Option<Instant>>,
    /// What the TLS handshake settled, for `/connz`; `None` on a plaintext connection.
    pub tls: RefCell<Option<TlsFacts>>,
    /// The connection's subscriptions by sid (the reader's own table; split so that a
    /// million SUBs do not stall the shard while it grows, see `SplitMap`).
    pub(crate) subscriptions: RefCell<SplitMap<Bytes, Rc<Subscription>, RandomState>>,
    /// The socket the reader reads from, once it reads: its readiness ends another
    /// connection's blocking read wait (`connection/read_wait.rs`).
    pub socket: Cell<Option<RawFd>>,
    /// The reader task, while it waits to read: woken when the shard stops intake.
    /// One slot, replaced on each wait, so waiting never piles up waker clones (glommio
    /// counts a task's wakers in an i16).
    reader_waker: RefCell<Option<Waker>>,
}

impl ConnectionView {
    pub fn new(id: ConnId, ip: String, port: u16, outbound: Rc<Outbound>) -> ConnectionView {
        let now = SystemTime::now();
        ConnectionView {
            id,
            ip,
            port,
            started: now,
            accepted: Instant::now(),
            last_activity: Cell::new(now),
            outbound,
            name: RefCell::default(),
            lang: RefCell::default(),
            version: RefCell::default(),
            user: RefCell::default(),
            account: RefCell::new(super::account::GLOBAL_ACCOUNT_NAME.to_string()),
            credentials: RefCell::default(),
            in_msgs: Cell::new(0),
            in_bytes: Cell::new(0),
            rtt: Cell::new(Duration::ZERO),
            ping_sent: Cell::new(None),
            tls: RefCell::default(),
            subscriptions: RefCell::default(),
            socket: Cell::new(None),
            reader_waker: RefCell::default(),
        }
    }

    /// Messages delivered to this connection (every subscription, its own echoes, API
    /// replies and JetStream deliveries included, unsubscribed or not).
    pub fn out_msgs(&self) -> u64 {
        self.outbound.messages_out().0
    }

    /// Header and payload bytes of the messages delivered to this connection.
    pub fn out_bytes(&self) -> u64 {
        self.outbound.messages_out().1
    }

    /// Counts one publish; `bytes` are its headers and payload, as nats-server counts.
    pub fn count_publish(&self, bytes: usize) {
        self.in_msgs.set(self.in_msgs.get() + 1);
        self.in_bytes.set(self.in_bytes.get() + bytes as u64);
    }

    /// Sends the client a PING, timing it for `rtt`.
    pub fn send_ping(&self) {
        self.ping_sent.set(Some(Instant::now()));
        self.outbound.push(|out| out.extend_from_slice(b"PING\r\n"));
    }

    /// CONNECT arrived: until a PING is answered, the round trip is the time from the
    /// accept to now (at least 1 ns), as nats-server estimates it.
    pub fn estimate_rtt_at_connect(&self) {
        self.rtt.set(self.accepted.elapsed().max(Duration::from_nanos(1)));
    }

    /// The client answered a PING: the round trip is measured if the server sent it.
    pub fn pong_received(&self) {
        if let Some(sent) = self.ping_sent.take() {
            self.rtt.set(sent.elapsed());
        }
    }

    /// As nats-server does when `/connz` reads an unmeasured `rtt`: a client library's
    /// connection (it named its `lang`) that has authenticated gets a PING now, so the
    /// next read has a figure. Raw clients (telnet, tests) are left alone.
    pub fn measure_rtt_if_unknown(&self) {
        let unmeasured = self.rtt.get().is_zero() && self.ping_sent.get().is_none();
        let library = !self.lang.borrow().is_empty() && self.credentials.borrow().is_some();
        if unmeasured && library && self.outbound.closed().is_none() {
            self.send_ping();
        }
    }

    /// Called once per socket read, not per message: reading the clock per publish
    /// would cost the hot path.
    pub fn mark_active(&self) {
        self.last_activity.set(SystemTime::now());
    }
}

/// A TLS connection's settled parameters, as `/connz` shows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFacts {
    /// `1.2` or `1.3`.
    pub version: &'static str,
    /// Go's name for the suite (`TLS_AES_128_GCM_SHA256`).
    pub cipher_suite: String,
    /// The handshake came before INFO (`handshake_first`).
    pub first: bool,
}

/// Where the shard is in its life. Only ever moves forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    Serving,
    /// Lame duck: no new connections; clients were told (`ldm: true`) and are being closed.
    LameDuck,
    /// Shutting down: no new connections, no more reading from clients; replies already
    /// owed (pub acks) are still written.
    Stopping,
    /// Connections are being closed; nothing more is written.
    Closing,
}

/// Per-shard counters for `/metrics`. Cells, not atomics: one writer, the shard.
pub struct ShardStats {
    /// Messages clients published (accepted or refused by permissions, as nats-server
    /// counts) and their header and payload bytes.
    pub client_publishes: Cell<u64>,
    pub client_publish_bytes: Cell<u64>,
    /// Messages (and header and payload bytes) delivered to connections closed since:
    /// added at their close, so totals are this plus what open connections report.
    pub closed_out_msgs: Cell<u64>,
    pub closed_out_bytes: Cell<u64>,
    /// Connections closed as slow consumers (their queue passed `max_pending`).
    pub slow_consumers: Cell<u64>,
    /// Connections closed for unanswered PINGs.
    pub stale_connections: Cell<u64>,
    /// Times a publisher waited for a congested subscriber to drain.
    pub stalled_clients: Cell<u64>,
    /// Connections handed over to this shard (`handoff.rs`), counted once complete.
    pub connection_handoffs: Cell<u64>,
    /// Client reads made by a blocking wait outside the reactor (`connection/read_wait.rs`).
    pub blocking_reads: Cell<u64>,
    pub jetstream_deliveries: Cell<u64>,
    pub stores_ok: Cell<u64>,
    pub stores_failed: Cell<u64>,
    pub connections_accepted: Cell<u64>,
    /// Connections closed (after registering); `memory_release` watches it.
    pub connections_closed: Cell<u64>,
    /// Notified at each close, so `memory_release` sleeps while no connection closes.
    pub connection_closed: LocalSignal,
    /// Time from handing a message to its stream to its durable pub ack (append, group
    /// commit and fdatasync), in microseconds.
    pub store_latency_micros: RefCell<Histogram<u64>>,
}

impl Default for ShardStats {
    fn default() -> Self {
        ShardStats {
            client_publishes: Cell::new(0),
            client_publish_bytes: Cell::new(0),
            closed_out_msgs: Cell::new(0),
            closed_out_bytes: Cell::new(0),
            slow_consumers: Cell::new(0),
            stale_connections: Cell::new(0),
            stalled_clients: Cell::new(0),
            connection_handoffs: Cell::new(0),
            blocking_reads: Cell::new(0),
            jetstream_deliveries: Cell::new(0),
            stores_ok: Cell::new(0),
            stores_failed: Cell::new(0),
            connections_accepted: Cell::new(0),
            connections_closed: Cell::new(0),
            connection_closed: LocalSignal::default(),
            store_latency_micros: RefCell::new(latency_histogram()),
        }
    }
}

/// A histogram of microseconds from 1 µs to `LATENCY_HISTOGRAM_MICROS_MAX`, 3 digits.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, limits::LATENCY_HISTOGRAM_MICROS_MAX, 3).expect("static histogram bounds are valid")
}

pub struct ShardOps {
    connections: RefCell<BTreeMap<ConnId, Rc<ConnectionView>>>,
    /// This shard's share of the last `CLOSED_CONNECTIONS_KEPT` closed connections: plain
    /// figures taken at the close (not their views, which would keep their buffers alive).
    closed: RefCell<ClosedRing>,
    pub stats: ShardStats,
    /// The settings a reload may change (auth, logging); everything else stays as started.
    live: RefCell<Rc<Options>>,
    phase: Cell<Phase>,
    /// One-shot waiters on a phase change (each waits once).
    phase_waiters: RefCell<Vec<Waker>>,
    /// The accept loop, while it waits: one slot, replaced on each wait.
    accept_waker: RefCell<Option<Waker>>,
    /// Stores handed to this shard's streams whose outcome is not known yet.
    stores_in_flight: Cell<usize>,
    store_waiters: RefCell<Vec<Waker>>,
}

impl ShardOps {
    pub fn new(options: Rc<Options>, shard_count: u16) -> ShardOps {
        ShardOps {
            connections: RefCell::default(),
            closed: RefCell::new(ClosedRing::for_shard(limits::CLOSED_CONNECTIONS_KEPT, shard_count)),
            stats: ShardStats::default(),
            live: RefCell::new(options),
            phase: Cell::new(Phase::Serving),
            phase_waiters: RefCell::default(),
            accept_waker: RefCell::default(),
            stores_in_flight: Cell::new(0),
            store_waiters: RefCell::default(),
        }
    }

    pub fn live_options(&self) -> Rc<Options> {
        self.live.borrow().clone()
    }

    pub fn set_live_options(&self, options: Rc<Options>) {
        *self.live.borrow_mut() = options;
    }

    pub fn register(&self, view: Rc<ConnectionView>) {
        self.stats.connections_accepted.set(self.stats.connections_accepted.get() + 1);
        self.connections.borrow_mut().insert(view.id, view);
    }

    /// Takes a connection another shard handed over (not counted as accepted again).
    pub fn adopt(&self, view: Rc<ConnectionView>) {
        self.connections.borrow_mut().insert(view.id, view);
    }

    /// Forgets a connection handed to another shard (not closed: nothing is recorded).
    pub fn release(&self, id: ConnId) {
        self.connections.borrow_mut().remove(&id);
    }

    /// Moves a closed connection from the open ones to the closed ones, keeping what it
    /// was delivered in the shard's totals. `subscriptions` are the ones it had at the
    /// close (released since).
    pub fn unregister(&self, id: ConnId, reason: CloseReason, subscriptions: Vec<SubscriptionSnapshot>) {
        let Some(view) = self.connections.borrow_mut().remove(&id) else { return };
        self.stats.connections_closed.set(self.stats.connections_closed.get() + 1);
        self.stats.connection_closed.notify();
        let (messages, bytes) = view.outbound.messages_out();
        let stats = &self.stats;
        stats.closed_out_msgs.set(stats.closed_out_msgs.get() + messages);
        stats.closed_out_bytes.set(stats.closed_out_bytes.get() + bytes);
        let counter = match reason {
            CloseReason::SlowConsumer => Some(&stats.slow_consumers),
            CloseReason::StaleConnection => Some(&stats.stale_connections),
            _ => None,
        };
        if let Some(counter) = counter {
            counter.set(counter.get() + 1);
        }
        let mut connection = snapshot::connection_snapshot(&view, false);
        connection.subscription_count = subscriptions.len();
        connection.subscriptions = subscriptions;
        self.closed.borrow_mut().push(ClosedSnapshot { connection, stopped: SystemTime::now(), reason });
    }

    /// Calls `each` on every remembered closed connection, oldest first.
    pub fn for_each_closed(&self, mut each: impl FnMut(ClosedSnapshot)) {
        for closed in self.closed.borrow().snapshots() {
            each(closed);
        }
    }

    pub fn connections(&self) -> Vec<Rc<ConnectionView>> {
        self.connections.borrow().values().cloned().collect()
    }

    /// The round trip measured on connection `id` (zero: not measured, or not here).
    pub fn rtt_of(&self, id: ConnId) -> Duration {
        self.connections.borrow().get(&id).map_or(Duration::ZERO, |view| view.rtt.get())
    }

    pub fn connection_count(&self) -> usize {
        self.connections.borrow().len()
    }

    /// Puts the sockets of every connection but `except` into `sockets`; false (and
    /// `sockets` unfinished) if one has none yet or there are more than `max`.
    pub fn sockets_except(&self, except: ConnId, max: usize, sockets: &mut Vec<RawFd>) -> bool {
        sockets.clear();
        let connections = self.connections.borrow();
        if connections.len() > max + 1 {
            return false;
        }
        for (id, view) in connections.iter() {
            if *id == except {
                continue;
            }
            match view.socket.get() {
                Some(fd) => sockets.push(fd),
                None => return false,
            }
        }
        true
    }

    pub fn phase(&self) -> Phase {
        self.phase.get()
    }

    /// Moves to `phase` (never backwards) and wakes whoever waits on a phase change.
    pub fn advance(&self, phase: Phase) {
        if phase <= self.phase.get() {
            return;
        }
        self.phase.set(phase);
        let waiters: Vec<Waker> = self.phase_waiters.borrow_mut().drain(..).collect();
        let slots = self.connections().into_iter().filter_map(|view| view.reader_waker.borrow_mut().take());
        let accept = self.accept_waker.borrow_mut().take();
        for waker in waiters.into_iter().chain(slots).chain(accept) {
            waker.wake();
        }
    }

    /// Resolves once the shard is at `phase` or later. For a task that waits once; a
    /// loop that waits again and again uses a slot (`reader_reached`, `accept_reached`).
    pub async fn reached(&self, phase: Phase) {
        poll_fn(|cx| {
            if self.phase.get() >= phase {
                return Poll::Ready(());
            }
            self.phase_waiters.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Like `reached`, for a connection's reader, which waits on every read.
    pub async fn reader_reached(&self, view: &ConnectionView, phase: Phase) {
        poll_fn(|cx| Self::poll_slot(self.phase.get() >= phase, &view.reader_waker, cx.waker())).await
    }

    /// Like `reached`, for the accept loop, which waits on every accept.
    pub async fn accept_reached(&self, phase: Phase) {
        poll_fn(|cx| Self::poll_slot(self.phase.get() >= phase, &self.accept_waker, cx.waker())).await
    }

    fn poll_slot(done: bool, slot: &RefCell<Option<Waker>>, waker: &Waker) -> Poll<()> {
        if done {
            return Poll::Ready(());
        }
        let mut slot = slot.borrow_mut();
        if !slot.as_ref().is_some_and(|current| current.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
        Poll::Pending
    }

    /// Whether new connections are turned away.
    pub fn refusing_connections(&self) -> bool {
        self.phase.get() >= Phase::LameDuck
    }

    pub fn store_started(&self) {
        self.stores_in_flight.set(self.stores_in_flight.get() + 1);
    }

    pub fn store_finished(&self, ok: bool, latency: std::time::Duration) {
        let left = self.stores_in_flight.get();
        assert!(left > 0, "a store finished that never started");
        self.stores_in_flight.set(left - 1);
        let counter = if ok { &self.stats.stores_ok } else { &self.stats.stores_failed };
        counter.set(counter.get() + 1);
        let micros = (latency.as_micros() as u64).clamp(1, limits::LATENCY_HISTOGRAM_MICROS_MAX);
        let _ = self.stats.store_latency_micros.borrow_mut().record(micros);
        if left == 1 {
            for waker in self.store_waiters.borrow_mut().drain(..) {
                waker.wake();
            }
        }
    }

    /// Resolves when no store is in flight on this shard.
    pub async fn stores_settled(&self) {
        poll_fn(|cx| {
            if self.stores_in_flight.get() == 0 {
                return Poll::Ready(());
            }
            self.store_waiters.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Closes every connection: queued bytes are written first, then the socket closes.
    pub fn close_all(&self, reason: CloseReason) {
        for view in self.connections() {
            view.outbound.close(reason.clone());
        }
    }
}
