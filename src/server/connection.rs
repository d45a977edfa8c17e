//! One client connection on its shard (until it moves: `connection/moving.rs`): the
//! handshake, then each parsed op.
//! A reader task (this file) parses and acts; a writer task drains the [`Outbound`]
//! queue. The two own separate descriptors of one socket (`dup`), so neither waits on the
//! other.

use std::os::fd::{AsRawFd, FromRawFd};
use std::rc::Rc;

use bytes::Bytes;
use futures_lite::AsyncWriteExt;
use glommio::net::TcpStream;

use super::account::{self, AccountId};
use super::auth;
use super::congestion::Congestion;
use super::guard::Guard;
use super::info;
use super::interest::{ConnId, Subscription};
use super::node::Node;
use super::outbound::{CloseReason, Outbound};
use super::permissions;
use super::router::{Publish, Publisher};
use super::shard_ops::{ConnectionView, Phase};
use super::tls;
use crate::limits;
use crate::protocol::{self, ClientOp, ConnectOptions, Parsed};
use crate::shard::ShardId;
use crate::subject;

mod moving;
mod read_wait;
pub use moving::serve_arrival;

/// Per-connection state the reader keeps.
struct Client {
    id: ConnId,
    node: Rc<Node>,
    outbound: Rc<Outbound>,
    connected: bool,
    options: ConnectOptions,
    /// What monitoring sees of this connection; holds its subscriptions by sid.
    view: Rc<ConnectionView>,
    /// The interest epoch the next PONG must wait for (0: nothing to wait for).
    pending_epoch: u64,
    pings: Rc<std::cell::Cell<u32>>,
    /// The names in the client's TLS certificate, for `verify_and_map`.
    certificate_names: Option<tls::der::CertificateNames>,
    /// The nonce this connection's INFO carried, for an nkey user's signature.
    nonce: Option<String>,
    /// The account CONNECT bound this connection to, for life.
    account: AccountId,
    /// The routing key of the subject being published (`account::routing_key_into`),
    /// reused so a publish outside `$G` allocates nothing.
    key: Vec<u8>,
    /// The other shard whose streams this connection's last publishes worked on, and how
    /// many in a row: at `handoff::publishes_before_move` (doubled for each earlier move)
    /// the connection moves there.
    streak: Option<(ShardId, u32)>,
    /// How many times this connection has moved.
    moves: u32,
    /// The outbound's `chunks_taken` when the last read returned: a reply written since
    /// answers what that read brought (`read_wait`).
    chunks_at_read: u64,
    /// The shard's other connections' sockets, gathered for a blocking read wait.
    other_sockets: Vec<std::os::fd::RawFd>,
    /// Input read and not parsed when the connection stops reading to move.
    unread: Vec<u8>,
}

/// Serves one accepted connection until it closes.
pub async fn serve(node: Rc<Node>, stream: TcpStream) {
    if node.ops.refusing_connections() {
        // Lame duck or shutting down: clients go to another server.
        let mut stream = stream;
        let _ = stream.close().await;
        return;
    }
    let peer = stream.peer_addr().ok();
    let client_ip = peer.map(|a| a.ip().to_string()).unwrap_or_default();
    if !node.connection_opened() {
        // INFO first, as nats-server: clients read it before any error.
        let mut refusal = Vec::new();
        info::encode_for_client(&mut refusal, &node, node.next_client_id(), &client_ip, false);
        protocol::encode_err(&mut refusal, "maximum connections exceeded");
        let mut stream = stream;
        let _ = stream.write_all(&refusal).await;
        let _ = stream.close().await;
        return;
    }
    let _ = stream.set_nodelay(true);
    let id = node.next_client_id();
    let live = node.ops.live_options();
    let auth_needed = auth::required(&live);
    let nonce = auth::nonce_required(&live).then(super::nkey::new_nonce);
    drop(live);
    let mut stream = stream;
    let Some(opening) = tls::negotiate::begin(&node, &mut stream, id, &client_ip, auth_needed, nonce.as_deref()).await
    else {
        node.connection_closed();
        return;
    };
    let Some(writer_stream) = duplicate(&stream) else {
        node.connection_closed();
        return;
    };
    let tls_first = opening.established.is_some() && !opening.info_sent;
    let tls_facts =
        opening.established.as_ref().map(|established| tls::context::facts(&established.session, tls_first));
    let certificate_names =
        opening.established.as_ref().and_then(|established| tls::identity::peer_names(&established.session));
    let (stream, writer_stream) = tls::transport::split(stream, writer_stream, opening.established);
    let outbound = Rc::new(Outbound::new(node.options.max_pending));
    let view = Rc::new(ConnectionView::new(id, client_ip.clone(), peer.map_or(0, |a| a.port()), outbound.clone()));
    *view.tls.borrow_mut() = tls_facts;
    node.ops.register(view.clone());
    let client = Client::new(id, &node, &view, certificate_names, nonce.clone());
    if !stream.is_tls() {
        client.arm_delivery_moves();
    }
    if !opening.info_sent {
        outbound.push(|out| {
            info::encode_for_tls_client(out, &node, id, &client_ip, auth_needed, nonce.as_deref(), tls_first)
        });
    }
    let deadline = node.options.write_deadline;
    let writer = glommio::spawn_local(write_loop(writer_stream, view.clone(), deadline));
    // Held, not detached, so they end with the connection: a detached timer task keeps
    // the connection's queue and buffers alive until its next tick (two minutes for the
    // pinger), which a connect/close loop turns into unbounded memory.
    let auth_timeout = auth_needed.then(|| spawn_auth_timeout(&node, &outbound));
    serve_client(client, stream, writer, auth_timeout, Vec::new()).await;
}

/// The connection's life after its handshake: read until it closes or moves, then close.
async fn serve_client(
    mut client: Client,
    mut stream: tls::transport::Reader,
    writer: glommio::Task<()>,
    auth_timeout: Option<glommio::Task<()>>,
    unread: Vec<u8>,
) {
    let (node, outbound, view, id) = (client.node.clone(), client.outbound.clone(), client.view.clone(), client.id);
    let pinger = spawn_pinger(&node, &view, client.pings.clone());
    let reason = match client.read_loop(&mut stream, unread).await {
        ReadEnd::Closed(reason) => reason,
        ReadEnd::Move(target) => {
            let moved = client.move_to(target, stream, writer).await;
            pinger.await;
            if let Some(auth_timeout) = auth_timeout {
                auth_timeout.await;
            }
            if moved {
                return;
            }
            // The connection closed while its writer finished: closed here, as usual.
            let reason = outbound.closed().unwrap_or(CloseReason::WriteError);
            let subscriptions = super::monitor::snapshot::subscription_snapshots(&view);
            client.release_subscriptions().await;
            node.ops.unregister(id, reason, subscriptions);
            node.connection_closed();
            return;
        }
    };
    node.arrival_closed(id);
    if reason == CloseReason::ServerShutdown && outbound.closed().is_none() {
        // Graceful shutdown stopped the reading only: keep writing what is owed (pub
        // acks) until told to close. (Lame duck closes the outbound itself.)
        node.ops.reached(Phase::Closing).await;
    }
    if reason == CloseReason::SlowConsumer {
        // nats-server's log line, so operators' alerts on it keep working.
        let max_pending = node.options.max_pending;
        let client_ip = view.ip.clone();
        tracing::warn!(client = id, %client_ip, "Slow Consumer Detected: MaxPending of {max_pending} Exceeded");
    }
    let closed_reason = outbound.closed().unwrap_or_else(|| reason.clone());
    outbound.close(reason);
    // Both end on the close (see `Outbound::closing`).
    pinger.await;
    if let Some(auth_timeout) = auth_timeout {
        auth_timeout.await;
    }
    let subscriptions = super::monitor::snapshot::subscription_snapshots(&view);
    client.release_subscriptions().await;
    writer.await;
    node.ops.unregister(id, closed_reason, subscriptions);
    node.connection_closed();
}

/// How a connection's reading ended.
enum ReadEnd {
    Closed(CloseReason),
    /// Its publishes go to streams of this shard: hand it there.
    Move(ShardId),
}

impl From<CloseReason> for ReadEnd {
    fn from(reason: CloseReason) -> ReadEnd {
        ReadEnd::Closed(reason)
    }
}

fn duplicate(stream: &TcpStream) -> Option<TcpStream> {
    // SAFETY: dup returns a new descriptor we own (or -1, checked) for the same socket.
    let fd = unsafe { libc::dup(stream.as_raw_fd()) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is a fresh, valid, owned socket descriptor.
    Some(unsafe { TcpStream::from_raw_fd(fd) })
}

async fn write_loop(mut stream: tls::transport::Writer, view: Rc<ConnectionView>, deadline: std::time::Duration) {
    let outbound = view.outbound.clone();
    let _ = stream.set_write_timeout(Some(deadline));
    let mut written = None;
    while let Some(chunk) = outbound.take(written).await {
        if stream.write_all(&chunk).await.is_err() {
            outbound.close(CloseReason::WriteError);
            break;
        }
        written = Some(chunk);
    }
    if outbound.suspended() && outbound.closed().is_none() {
        // Handed to another shard: the socket lives on there.
        return;
    }
    stream.finish().await;
    // Wake the reader (its read returns 0) whatever closed the connection.
    // SAFETY: shutdown on a descriptor we own; errors (already closed) are harmless.
    unsafe { libc::shutdown(stream.as_raw_fd(), libc::SHUT_RDWR) };
    stream.close().await;
}

/// Sleeps for `duration`; false if the connection closed first.
async fn sleep_unless_closed(duration: std::time::Duration, outbound: &Outbound) -> bool {
    let slept = async {
        glommio::timer::sleep(duration).await;
        true
    };
    let closed = async {
        outbound.closing().await;
        false
    };
    futures_lite::future::or(slept, closed).await
}

/// Closes a client that has not authenticated within `auth_timeout`; ends when the
/// connection closes.
fn spawn_auth_timeout(node: &Rc<Node>, outbound: &Rc<Outbound>) -> glommio::Task<()> {
    let timeout = node.options.auth_timeout();
    let outbound = outbound.clone();
    glommio::spawn_local(async move {
        if !sleep_unless_closed(timeout, &outbound).await {
            return;
        }
        if !outbound.authenticated() && outbound.closed().is_none() {
            outbound.close_with_error("Authentication Timeout", CloseReason::ProtocolError);
        }
    })
}

/// Pings the client every `ping_interval` and closes it when too many go unanswered;
/// ends when the connection closes.
fn spawn_pinger(node: &Rc<Node>, view: &Rc<ConnectionView>, pings: Rc<std::cell::Cell<u32>>) -> glommio::Task<()> {
    let interval = node.options.ping_interval;
    let max_outstanding = node.options.ping_max_outstanding;
    let (view, outbound) = (view.clone(), view.outbound.clone());
    glommio::spawn_local(async move {
        loop {
            if !sleep_unless_closed(interval, &outbound).await || outbound.closed().is_some() {
                return;
            }
            if pings.get() >= max_outstanding {
                outbound.close_with_error("Stale Connection", CloseReason::StaleConnection);
                return;
            }
            pings.set(pings.get() + 1);
            view.send_ping();
        }
    })
}

impl Client {
    fn new(
        id: ConnId,
        node: &Rc<Node>,
        view: &Rc<ConnectionView>,
        certificate_names: Option<tls::der::CertificateNames>,
        nonce: Option<String>,
    ) -> Client {
        Client {
            id,
            node: node.clone(),
            outbound: view.outbound.clone(),
            connected: false,
            options: ConnectOptions::default(),
            view: view.clone(),
            pending_epoch: 0,
            pings: Rc::new(std::cell::Cell::new(0)),
            certificate_names,
            nonce,
            account: AccountId::GLOBAL,
            key: Vec::new(),
            streak: None,
            moves: 0,
            chunks_at_read: 0,
            other_sockets: Vec::new(),
            unread: Vec::new(),
        }
    }

    /// `unread`: input already read from the socket (a handed-over connection's).
    async fn read_loop(&mut self, stream: &mut tls::transport::Reader, unread: Vec<u8>) -> ReadEnd {
        let max_payload = self.node.options.max_payload;
        // Small until the client sends traffic: a connection that never speaks, or only
        // handshakes and idles, costs a few KiB. `size` doubles (after CONNECT) each time
        // a read fills the buffer, up to READ_BUFFER_BYTES.
        let mut size = match unread.is_empty() {
            true => limits::READ_BUFFER_BYTES_UNCONNECTED,
            false => limits::READ_BUFFER_BYTES,
        };
        let (mut start, mut end) = (0usize, unread.len());
        let mut buffer = unread;
        buffer.resize(buffer.len().max(size), 0);
        size = size.max(end.next_power_of_two().min(limits::READ_BUFFER_BYTES));
        let mut ops_since_yield: usize = 0;
        let mut yielder = crate::shard::Yielder::default();
        self.view.socket.set(Some(stream.raw_fd()));
        loop {
            let mut needed = None;
            if start < end {
                self.node.apply_mesh_backlog();
            }
            while start < end {
                // A client that keeps the socket full (a million SUBs) must not hold the
                // shard: the other connections get a turn every so many operations.
                ops_since_yield += 1;
                if ops_since_yield >= limits::CONNECTION_OPS_PER_YIELD {
                    ops_since_yield = 0;
                    self.node.flush_batches();
                    yielder.yield_now().await;
                }
                match protocol::parse(&buffer[start..end], max_payload) {
                    Ok(Parsed::Op { op, consumed }) => {
                        crate::shard::work::note();
                        let handled = match op {
                            // Hot path: a publish needs no await unless something is
                            // congested (awaiting `handle` per message showed in profiles).
                            ClientOp::Pub { subject, reply, headers, payload }
                                if self.connected && (headers.is_none() || self.options.headers) =>
                            {
                                let congested = self.publish(Publish { subject, reply, headers, payload });
                                if !congested.is_empty() || self.node.mesh_congested() {
                                    self.wait_for_room(congested).await;
                                }
                                Ok(())
                            }
                            op => self.handle(op).await,
                        };
                        if let Err(reason) = handled {
                            return reason.into();
                        }
                        start += consumed;
                        if let Some(target) = self.move_due(stream) {
                            self.node.flush_batches();
                            self.unread = buffer[start..end].to_vec();
                            return ReadEnd::Move(target);
                        }
                    }
                    Ok(Parsed::Incomplete { needed: want }) => {
                        needed = want;
                        break;
                    }
                    Err(error) => {
                        let mut line = Vec::new();
                        if error.nats_sends_err() {
                            protocol::encode_err(&mut line, error.nats_text());
                        }
                        self.outbound.close_after(&line, CloseReason::ProtocolError);
                        return CloseReason::ProtocolError.into();
                    }
                }
            }
            self.node.flush_batches();
            if let Some(reason) = self.outbound.closed() {
                return reason.into();
            }
            compact(&mut buffer, &mut start, &mut end, needed, size);
            let read = match self.read_waiting(stream.plain_fd(), &mut buffer[end..]).await {
                read_wait::Waited::Read(read) => Some(Ok(read)),
                read_wait::Waited::Closed => Some(Ok(0)),
                read_wait::Waited::Declined => {
                    let read = read_wait::noting_turns(stream.read(&mut buffer[end..]));
                    futures_lite::future::or(async { Some(read.await) }, async {
                        self.node.ops.reader_reached(&self.view, Phase::Stopping).await;
                        None
                    })
                    .await
                }
            };
            let read = match read {
                // Shutting down: read nothing more from this client.
                None => return self.outbound.closed().unwrap_or(CloseReason::ServerShutdown).into(),
                Some(Ok(0) | Err(_)) => return self.outbound.closed().unwrap_or(CloseReason::ClientClosed).into(),
                Some(Ok(read)) => read,
            };
            self.view.mark_active();
            self.chunks_at_read = self.outbound.chunks_taken();
            end += read;
            if end == buffer.len() && self.connected {
                size = (size * 2).min(limits::READ_BUFFER_BYTES);
            }
        }
    }

    async fn handle(&mut self, op: ClientOp<'_>) -> Result<(), CloseReason> {
        tracing::trace!(client = self.id, "<<- {}", super::trace::describe(&op));
        if !self.connected && !matches!(op, ClientOp::Connect { .. }) && auth::required(&self.node.ops.live_options()) {
            return Err(self.fail("Authorization Violation"));
        }
        match op {
            ClientOp::Connect { json } => self.connect(json).await?,
            ClientOp::Pub { headers: Some(_), .. } if !self.options.headers && self.connected => {
                // nats-server closes silently on HPUB from a client that declined headers.
                return Err(CloseReason::ProtocolError);
            }
            ClientOp::Pub { subject, reply, headers, payload } => {
                let congested = self.publish(Publish { subject, reply, headers, payload });
                self.wait_for_room(congested).await;
            }
            ClientOp::Sub { subject, queue, sid } => {
                self.subscribe(subject, queue, sid);
                // Each first subscription on a pattern is an envelope to every other
                // shard: a client sending SUBs faster than the peers apply them waits
                // here, so the mesh's overflow queues stay bounded.
                if self.node.mesh_congested() {
                    self.node.flush_batches();
                    self.node.wait_for_mesh_room().await;
                }
            }
            ClientOp::Unsub { sid, max } => self.unsubscribe(sid, max),
            ClientOp::Ping => {
                self.node.flush_batches();
                if self.pending_epoch > 0 {
                    self.node.interest_barrier(self.pending_epoch).await;
                    self.pending_epoch = 0;
                }
                self.outbound.push(|out| out.extend_from_slice(b"PONG\r\n"));
            }
            ClientOp::Pong => {
                self.pings.set(0);
                self.view.pong_received();
            }
            ClientOp::Info { .. } | ClientOp::Ok => {}
            // nats-server closes without replying when a client sends -ERR.
            ClientOp::Err { .. } => return Err(CloseReason::ClientClosed),
        }
        Ok(())
    }

    /// After a publish: waits while a subscriber it reached, or the mesh, is congested.
    async fn wait_for_room(&self, congested: Congestion) {
        if !congested.is_empty() {
            let stalls = &self.node.ops.stats.stalled_clients;
            stalls.set(stalls.get() + 1);
            self.node.flush_batches();
            self.node.stall_for(&congested).await;
        }
        if self.node.mesh_congested() {
            self.node.flush_batches();
            self.node.wait_for_mesh_room().await;
        }
    }

    fn fail(&self, text: &str) -> CloseReason {
        self.outbound.close_with_error(text, CloseReason::ProtocolError);
        CloseReason::ProtocolError
    }

    fn ok(&self) {
        if self.options.verbose {
            self.outbound.push(|out| out.extend_from_slice(b"+OK\r\n"));
        }
    }

    async fn connect(&mut self, json: &[u8]) -> Result<(), CloseReason> {
        let options = match ConnectOptions::from_json(json) {
            Ok(options) => options,
            // nats-server closes silently on a CONNECT it cannot decode.
            Err(_) => return Err(CloseReason::ProtocolError),
        };
        self.view.estimate_rtt_at_connect();
        if !(0..=1).contains(&options.protocol) {
            return Err(self.fail("invalid client protocol"));
        }
        if options.no_responders && !options.headers {
            return Err(self.fail("no responders requires headers support"));
        }
        let live = self.node.ops.live_options();
        let credentials = match live.tls_context.as_ref().is_some_and(|context| context.settings.verify_and_map) {
            // The user is the certificate's, whatever CONNECT says (as nats-server).
            true => tls::identity::credentials(&live, self.certificate_names.as_ref()),
            false => Some(auth::Credentials::of(&options, self.nonce.as_deref())),
        };
        let Some(mut credentials) = credentials else {
            return Err(self.fail("Authorization Violation"));
        };
        if !auth::check(&live, &mut credentials).await {
            return Err(self.fail("Authorization Violation"));
        }
        let permissions = auth::permissions_for(&live, &credentials);
        self.account = auth::account_for(&live, &credentials);
        *self.view.account.borrow_mut() = live.accounts.name_of(self.account).to_string();
        self.outbound.set_guard(permissions.map(|permissions| Rc::new(Guard::new(permissions))));
        *self.view.name.borrow_mut() = options.name.clone().unwrap_or_default();
        *self.view.lang.borrow_mut() = options.lang.clone().unwrap_or_default();
        *self.view.version.borrow_mut() = options.version.clone().unwrap_or_default();
        *self.view.user.borrow_mut() = credentials.user.clone().unwrap_or_default();
        *self.view.credentials.borrow_mut() = Some(credentials);
        self.connected = true;
        self.outbound.set_authenticated();
        self.options = options;
        self.ok();
        Ok(())
    }

    fn publish(&mut self, publish: Publish<'_>) -> Congestion {
        if self.options.pedantic && !subject::is_valid_literal_subject(publish.subject) {
            // nats-server answers -ERR, then +OK (verbose): the connection stays. It routes
            // the message anyway; jetcore drops it (a wildcard is no publish subject).
            self.outbound.push(|out| protocol::encode_err(out, "Invalid Publish Subject"));
            self.ok();
            return Congestion::default();
        }
        // Counted before the permission check: nats-server counts refused publishes too.
        let bytes = publish.headers.map_or(0, <[u8]>::len) + publish.payload.len();
        self.view.count_publish(bytes);
        let stats = &self.node.ops.stats;
        stats.client_publishes.set(stats.client_publishes.get() + 1);
        stats.client_publish_bytes.set(stats.client_publish_bytes.get() + bytes as u64);
        if let Some(guard) = self.outbound.guard() {
            if !guard.may_publish(publish.subject) {
                // nats-server drops the message, says why, and keeps the connection.
                let text = permissions::publish_violation(publish.subject);
                tracing::info!(client = self.id, "{text}");
                self.outbound.push(|out| protocol::encode_err(out, &text));
                return Congestion::default();
            }
        }
        let publisher = Publisher { conn: self.id, echo: self.options.echo, account: self.account };
        // +OK before any message the publish causes, as nats-server orders them.
        self.ok();
        let published = match self.account {
            // A `$G` subject that reads as another account's key is nobody's.
            AccountId::GLOBAL if account::is_reserved_subject(publish.subject) => return Congestion::default(),
            AccountId::GLOBAL => self.node.publish(publish.subject, &publish, publisher),
            account => {
                let mut key = std::mem::take(&mut self.key);
                account::routing_key_into(account, publish.subject, &mut key);
                let published = self.node.publish(&key, &publish, publisher);
                self.key = key;
                published
            }
        };
        self.count_stream_work(self.node.take_stream_shard());
        if !published.reached && self.options.no_responders {
            if let Some(reply) = publish.reply {
                self.no_responders(reply);
            }
        }
        published.congested
    }

    fn no_responders(&self, reply: &[u8]) {
        if let Some(sid) = self.node.sid_matching(self.id, &account::routing_key(self.account, reply)) {
            self.outbound.push(|out| protocol::encode_hmsg(out, reply, &sid, None, b"NATS/1.0 503\r\n\r\n", b""));
        }
    }

    fn subscribe(&mut self, subject: &[u8], queue: Option<&[u8]>, sid: &[u8]) {
        let reserved = self.account == AccountId::GLOBAL && account::is_reserved_subject(subject);
        if !subject::is_valid_subject(subject) || queue.is_some_and(|q| q.is_empty()) || reserved {
            self.outbound.push(|out| protocol::encode_err(out, "Invalid Subject"));
            return;
        }
        if let Some(guard) = self.outbound.guard() {
            if !guard.may_subscribe(subject, queue) {
                let text = permissions::subscribe_violation(subject, queue);
                tracing::info!(client = self.id, "{text}");
                self.outbound.push(|out| protocol::encode_err(out, &text));
                return;
            }
        }
        let subscriptions_max = self.node.options.max_subscriptions;
        if subscriptions_max > 0 && self.view.subscriptions.borrow().len() >= subscriptions_max {
            self.prune_expired_now();
            if self.view.subscriptions.borrow().len() >= subscriptions_max {
                // nats-server refuses the SUB and keeps the connection.
                tracing::info!(client = self.id, "Maximum Subscriptions Exceeded (max_subs {subscriptions_max})");
                self.outbound.push(|out| protocol::encode_err(out, "maximum subscriptions exceeded"));
                return;
            }
        }
        self.ok();
        if self.view.subscriptions.borrow().contains_key(sid) {
            return;
        }
        let subject_bytes = Bytes::copy_from_slice(subject);
        let subscription = Rc::new(Subscription {
            conn: self.id,
            sid: Bytes::copy_from_slice(sid),
            subject: subject_bytes.clone(),
            account: self.account,
            // In `$G` the key is the subject: shared, not copied.
            key: match self.account {
                AccountId::GLOBAL => subject_bytes,
                account => Bytes::from(account::routing_key(account, subject)),
            },
            queue: queue.map(Bytes::copy_from_slice),
            outbound: self.outbound.clone(),
            delivered: Default::default(),
            max: Default::default(),
            leaf: false,
        });
        self.prune_expired();
        self.view.subscriptions.borrow_mut().insert(subscription.sid.clone(), subscription.clone());
        self.pending_epoch = self.node.subscribe(subscription);
    }

    fn unsubscribe(&mut self, sid: &[u8], max: Option<u64>) {
        self.ok();
        let Some(subscription) = self.view.subscriptions.borrow().get(sid).cloned() else { return };
        if let Some(max) = max {
            if subscription.delivered.get() < max {
                subscription.max.set(Some(max));
                return;
            }
        }
        self.view.subscriptions.borrow_mut().remove(sid);
        self.node.unsubscribe(&subscription);
    }

    /// Drops map entries whose `UNSUB max` limit was reached during delivery.
    fn prune_expired(&mut self) {
        let count = self.view.subscriptions.borrow().len();
        if count >= 64 && count.is_power_of_two() {
            self.prune_expired_now();
        }
    }

    fn prune_expired_now(&mut self) {
        self.view
            .subscriptions
            .borrow_mut()
            .retain(|_, subscription| subscription.max.get().is_none_or(|max| subscription.delivered.get() < max));
    }

    /// Removes every subscription of a closing connection, yielding between chunks: a
    /// million subscriptions take seconds to remove, and the shard's other connections
    /// must be served meanwhile (a 2–3 s PING stall was measured without the yields).
    async fn release_subscriptions(&mut self) {
        let subscriptions: Vec<_> = self.view.subscriptions.borrow_mut().drain().map(|(_, s)| s).collect();
        for chunk in subscriptions.chunks(limits::CONNECTION_OPS_PER_YIELD) {
            for subscription in chunk {
                self.node.unsubscribe(subscription);
            }
            if self.node.mesh_congested() {
                self.node.flush_batches();
                self.node.wait_for_mesh_room().await;
            }
            crate::shard::yield_to_io().await;
        }
    }
}

/// Makes room to read: moves unread bytes to the front and grows the buffer when one
/// frame needs more than it holds.
fn compact(buffer: &mut Vec<u8>, start: &mut usize, end: &mut usize, needed: Option<usize>, size: usize) {
    if *start == *end {
        *start = 0;
        *end = 0;
    } else if *start > 0 && (buffer.len() - *end < size / 4 || needed.is_some()) {
        buffer.copy_within(*start..*end, 0);
        *end -= *start;
        *start = 0;
    }
    let want = needed.unwrap_or(0).max(*end + size / 4).max(size);
    if want > buffer.len() {
        buffer.resize(want, 0);
    } else if buffer.len() > size * 4 && *end < size {
        buffer.truncate(size);
        buffer.shrink_to_fit();
    }
}
