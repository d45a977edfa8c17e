//! One leaf remote's connection, kept up for the server's life on shard 0: dial a URL
//! (the configured ones, then those the hub advertises), handshake, serve the hub's
//! operations, and after a close wait `reconnect` plus jitter and dial the next URL. A
//! loop (the hub sent back our own `$LDS.` subject) waits `LEAF_LOOP_RECONNECT_DELAY`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;

use super::config::{LeafRemote, LeafUrl};
use super::forwarding;
use super::handshake::{link_permissions, HubInfo, LeafConnect};
use super::interest::Advertisement;
use super::wire::{self, HubOp, LeafMessage, WireError};
use super::Spoke;
use crate::limits;
use crate::server::account::AccountId;
use crate::server::congestion::Congestion;
use crate::server::guard::Guard;
use crate::server::interest::{ConnId, Subscription};
use crate::server::node::Node;
use crate::server::outbound::{CloseReason, Outbound};
use crate::server::router::{Publish, Publisher, Scope};

/// An open link: its queue to the hub and what `/leafz` shows of it.
pub struct LinkState {
    pub conn: ConnId,
    pub outbound: Rc<Outbound>,
    pub url: LeafUrl,
    pub account: String,
    pub hub: HubInfo,
    pub started: std::time::SystemTime,
    pub in_msgs: Cell<u64>,
    pub in_bytes: Cell<u64>,
    pub rtt: Cell<Duration>,
    /// When the PING now outstanding was sent (its PONG measures `rtt`).
    ping_sent: Cell<Option<Instant>>,
    /// The hub's subscriptions on this link, by (subject, queue).
    pub subscriptions: RefCell<HashMap<(Bytes, Option<Bytes>), Rc<Subscription>>>,
}

impl LinkState {
    fn send_ping(&self) {
        if self.ping_sent.get().is_none() {
            self.ping_sent.set(Some(Instant::now()));
        }
        self.outbound.push(|out| out.extend_from_slice(b"PING\r\n"));
    }

    fn pong_received(&self) {
        if let Some(sent) = self.ping_sent.take() {
            self.rtt.set(sent.elapsed());
        }
    }

    /// Sends `advertisement` unless the hub's import rules refuse its subject.
    pub fn advertise(&self, advertisement: &Advertisement) {
        if let (Some(guard), Advertisement::Add { subject, queue }) = (self.outbound.guard(), advertisement) {
            if !guard.may_subscribe(subject, queue.as_ref().map(|(queue, _)| queue.as_ref())) {
                return;
            }
        }
        self.outbound.push(|out| match advertisement {
            Advertisement::Add { subject, queue } => {
                wire::encode_subscribe(out, subject, queue.as_ref().map(|(q, weight)| (q.as_ref(), *weight)))
            }
            Advertisement::Remove { subject, queue } => wire::encode_unsubscribe(out, subject, queue.as_deref()),
        });
    }
}

/// How a session ended.
enum Ended {
    /// Could not connect or the hub closed: try the next URL after `reconnect`.
    Retry,
    /// The hub saw our loop subject: wait the loop delay.
    Loop,
}

/// Keeps `remote` connected for the server's life.
pub async fn run(node: Rc<Node>, spoke: Rc<Spoke>, remote: LeafRemote, interval: Duration) {
    let mut advertised: Vec<LeafUrl> = Vec::new();
    let mut attempt: usize = 0;
    let mut jitter_seed = Instant::now().elapsed().subsec_nanos() as u64 ^ 0x9E37_79B9_7F4A_7C15;
    loop {
        let mut candidates = remote.urls.clone();
        for url in &advertised {
            if !candidates.iter().any(|known| known.host == url.host && known.port == url.port) {
                let credentials = &remote.urls[0];
                candidates.push(LeafUrl {
                    user: credentials.user.clone(),
                    password: credentials.password.clone(),
                    token: credentials.token.clone(),
                    ..url.clone()
                });
            }
        }
        let url = candidates[attempt % candidates.len()].clone();
        attempt += 1;
        let delay = match session(&node, &spoke, &remote, &url, &mut advertised).await {
            Ended::Loop => limits::LEAF_LOOP_RECONNECT_DELAY,
            Ended::Retry => {
                jitter_seed ^= jitter_seed << 13;
                jitter_seed ^= jitter_seed >> 7;
                jitter_seed ^= jitter_seed << 17;
                let spread = interval.as_millis() as u64 * u64::from(limits::LEAF_RECONNECT_JITTER_PERCENT) / 100;
                interval + Duration::from_millis(jitter_seed % (spread + 1))
            }
        };
        glommio::timer::sleep(delay).await;
    }
}

async fn connect(url: &LeafUrl) -> Option<TcpStream> {
    let address = url.address();
    let dial = async { TcpStream::connect(address.as_str()).await.ok() };
    let timeout = async {
        glommio::timer::sleep(limits::LEAF_HANDSHAKE_TIMEOUT).await;
        None
    };
    futures_lite::future::or(dial, timeout).await
}

/// Reads until one whole operation is in `buffer`; its length, or None on close/error.
async fn read_op(stream: &mut TcpStream, buffer: &mut Vec<u8>, payload_max: usize) -> Option<usize> {
    loop {
        match wire::parse(buffer, payload_max) {
            Ok((_, used)) => return Some(used),
            Err(WireError::Invalid(_)) => return None,
            Err(WireError::Incomplete) => {}
        }
        let mut chunk = [0u8; 16 * 1024];
        let read = stream.read(&mut chunk).await.ok().filter(|read| *read > 0)?;
        buffer.extend_from_slice(&chunk[..read]);
    }
}

/// The hub's first INFO, within the handshake timeout.
async fn read_hub_info(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Result<HubInfo, String> {
    let read = read_op(stream, buffer, limits::PAYLOAD_BYTES_DEFAULT);
    let timeout = async {
        glommio::timer::sleep(limits::LEAF_HANDSHAKE_TIMEOUT).await;
        None
    };
    let used = futures_lite::future::or(read, timeout).await.ok_or("no INFO from the hub")?;
    let info = match wire::parse(&buffer[..used], limits::PAYLOAD_BYTES_DEFAULT) {
        Ok((HubOp::Info(json), _)) => HubInfo::parse(json)?,
        _ => return Err("the hub did not start with INFO".into()),
    };
    buffer.drain(..used);
    info.check_leafnode_port()?;
    Ok(info)
}

fn encode_connect(node: &Node, remote: &LeafRemote, url: &LeafUrl, out: &mut Vec<u8>) {
    let options = &node.options;
    LeafConnect {
        version: super::super::info::NATS_COMPATIBLE_VERSION,
        server_id: &node.identity.server_id,
        domain: options.jetstream_domain.as_deref().filter(|_| options.jetstream),
        name: &node.identity.server_name,
        cluster: options.cluster_name.as_deref(),
        headers: true,
        jetstream: options.jetstream,
        compress_mode: "not supported",
        remote_account: &remote.account,
        protocol: 1,
        user: url.user.as_deref(),
        pass: url.password.as_deref(),
        auth_token: url.token.as_deref(),
    }
    .encode(out);
}

/// One connection to `url`, from dial to close.
async fn session(
    node: &Rc<Node>,
    spoke: &Rc<Spoke>,
    remote: &LeafRemote,
    url: &LeafUrl,
    advertised: &mut Vec<LeafUrl>,
) -> Ended {
    let Some(mut stream) = connect(url).await else {
        tracing::debug!(url = %url.address(), "leafnode: could not connect");
        return Ended::Retry;
    };
    let _ = stream.set_nodelay(true);
    let mut buffer = Vec::new();
    let hub = match read_hub_info(&mut stream, &mut buffer).await {
        Ok(hub) => hub,
        Err(error) => {
            tracing::error!(url = %url.address(), "leafnode: {error}");
            let _ = stream.close().await;
            return Ended::Retry;
        }
    };
    merge_urls(advertised, hub.advertised_urls());
    let Some(writer_stream) = duplicate(&stream) else { return Ended::Retry };
    let outbound = Rc::new(Outbound::new(node.options.max_pending));
    outbound.push(|out| encode_connect(node, remote, url, out));
    let link = Rc::new(LinkState {
        conn: node.next_client_id(),
        outbound: outbound.clone(),
        url: url.clone(),
        account: remote.account.clone(),
        hub,
        started: std::time::SystemTime::now(),
        in_msgs: Cell::new(0),
        in_bytes: Cell::new(0),
        rtt: Cell::new(Duration::ZERO),
        ping_sent: Cell::new(None),
        subscriptions: RefCell::new(HashMap::new()),
    });
    let writer = glommio::spawn_local(write_loop(writer_stream, outbound.clone()));
    let pings = Rc::new(Cell::new(0u32));
    let pinger = glommio::spawn_local(ping_loop(node.clone(), link.clone(), pings.clone()));
    let mut reader = Reader {
        node: node.clone(),
        spoke: spoke.clone(),
        link: link.clone(),
        pings,
        up: false,
        congested: Vec::new(),
    };
    let ended = reader.serve(&mut stream, buffer, advertised).await;
    if reader.up {
        tracing::info!(url = %url.address(), hub = %link.hub.server_name, "leafnode connection closed");
    }
    spoke.link_down(&outbound);
    outbound.close(CloseReason::ClientClosed);
    let subscriptions: Vec<_> = link.subscriptions.borrow_mut().drain().map(|(_, s)| s).collect();
    for subscription in subscriptions {
        node.unsubscribe(&subscription);
    }
    pinger.await;
    writer.await;
    // SAFETY: shutdown on a descriptor we own; an error (already closed) is harmless.
    unsafe { libc::shutdown(stream.as_raw_fd(), libc::SHUT_RDWR) };
    let _ = stream.close().await;
    ended
}

fn merge_urls(known: &mut Vec<LeafUrl>, urls: Vec<LeafUrl>) {
    for url in urls {
        if !known.contains(&url) {
            known.push(url);
        }
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

async fn write_loop(mut stream: TcpStream, outbound: Rc<Outbound>) {
    let mut written = None;
    while let Some(chunk) = outbound.take(written).await {
        if stream.write_all(&chunk).await.is_err() {
            outbound.close(CloseReason::WriteError);
            break;
        }
        written = Some(chunk);
    }
    let _ = stream.flush().await;
    // SAFETY: shutdown on a descriptor we own; wakes the reader whatever closed the link.
    unsafe { libc::shutdown(stream.as_raw_fd(), libc::SHUT_RDWR) };
    let _ = stream.close().await;
}

/// PINGs the hub every `ping_interval`; closes the link when too many go unanswered.
async fn ping_loop(node: Rc<Node>, link: Rc<LinkState>, pings: Rc<Cell<u32>>) {
    let outbound = &link.outbound;
    let interval = node.options.ping_interval;
    loop {
        let slept = async {
            glommio::timer::sleep(interval).await;
            true
        };
        let closed = async {
            outbound.closing().await;
            false
        };
        if !futures_lite::future::or(slept, closed).await {
            return;
        }
        if pings.get() >= node.options.ping_max_outstanding {
            outbound.close_with_error("Stale Connection", CloseReason::StaleConnection);
            return;
        }
        pings.set(pings.get() + 1);
        link.send_ping();
    }
}

struct Reader {
    node: Rc<Node>,
    spoke: Rc<Spoke>,
    link: Rc<LinkState>,
    pings: Rc<Cell<u32>>,
    /// The hub accepted our CONNECT (its second INFO came) and interest was sent.
    up: bool,
    /// Subscribers past their stall threshold: the link reads on once they drain.
    congested: Vec<Rc<Outbound>>,
}

impl Reader {
    async fn serve(&mut self, stream: &mut TcpStream, mut buffer: Vec<u8>, advertised: &mut Vec<LeafUrl>) -> Ended {
        let hub_payload_max = self.link.hub.max_payload.unwrap_or(limits::PAYLOAD_BYTES_DEFAULT);
        let payload_max = hub_payload_max.max(self.node.options.max_payload);
        let mut chunk = vec![0u8; limits::READ_BUFFER_BYTES];
        loop {
            let mut start = 0;
            loop {
                let parsed = wire::parse(&buffer[start..], payload_max);
                let (op, used) = match parsed {
                    Ok(parsed) => parsed,
                    Err(WireError::Incomplete) => break,
                    Err(WireError::Invalid(line)) => {
                        tracing::error!("leafnode: invalid protocol from the hub: {line:?}");
                        return Ended::Retry;
                    }
                };
                let outcome = self.handle(op, advertised);
                start += used;
                if let Some(ended) = outcome {
                    return ended;
                }
            }
            buffer.drain(..start);
            self.node.flush_batches();
            let congested = Congestion { local: std::mem::take(&mut self.congested), peers: Vec::new() };
            self.node.stall_for(&congested).await;
            if self.link.outbound.closed().is_some() {
                return Ended::Retry;
            }
            let read = match stream.read(&mut chunk).await {
                Ok(read) if read > 0 => read,
                _ => return Ended::Retry,
            };
            buffer.extend_from_slice(&chunk[..read]);
        }
    }

    fn handle(&mut self, op: HubOp<'_>, advertised: &mut Vec<LeafUrl>) -> Option<Ended> {
        match op {
            HubOp::Ping => {
                self.link.outbound.push(|out| out.extend_from_slice(b"PONG\r\n"));
            }
            HubOp::Pong => {
                self.pings.set(0);
                self.link.pong_received();
            }
            HubOp::Ok => {}
            HubOp::Info(json) => {
                let info = HubInfo::parse(json).ok()?;
                merge_urls(advertised, info.advertised_urls());
                if info.connect_info && !self.up {
                    self.up = true;
                    let permissions = link_permissions(&info, self.spoke.crossing.jetstream_local());
                    self.link.outbound.set_guard(permissions.map(|p| Rc::new(Guard::new(p))));
                    let address = self.link.url.address();
                    tracing::info!(url = %address, hub = %self.link.hub.server_name, "leafnode connection created");
                    self.spoke.link_up(self.link.clone());
                    // Measures the round trip `/leafz` shows, as nats-server does at once.
                    self.link.send_ping();
                }
            }
            HubOp::Err(text) => {
                let text = String::from_utf8_lossy(text).into_owned();
                tracing::error!(url = %self.link.url.address(), "leafnode: the hub refused the link: {text}");
                if text.contains("Loop detected") {
                    return Some(Ended::Loop);
                }
            }
            HubOp::Subscribe { subject, queue } => return self.hub_subscribed(subject, queue),
            HubOp::Unsubscribe { subject, queue } => {
                let key = (Bytes::copy_from_slice(subject), queue.map(Bytes::copy_from_slice));
                let removed = self.link.subscriptions.borrow_mut().remove(&key);
                if let Some(subscription) = removed {
                    self.node.unsubscribe(&subscription);
                }
            }
            HubOp::Message(message) => self.hub_message(message),
        }
        None
    }

    fn hub_subscribed(&mut self, subject: &[u8], queue: Option<&[u8]>) -> Option<Ended> {
        let crossing = &self.spoke.crossing;
        if subject == crossing.loop_subject.as_ref() {
            let text = format!("Loop detected for leafnode account={:?}", self.link.account);
            tracing::error!("leafnode: {text}");
            self.link.outbound.close_with_error(&text, CloseReason::ProtocolError);
            return Some(Ended::Loop);
        }
        let exported = self.link.outbound.guard().is_none_or(|guard| guard.may_publish(subject));
        if subject.starts_with(b"$LDS.") || !crossing.crosses(subject) || !exported {
            return None;
        }
        if !crate::subject::is_valid_subject(subject) {
            return None;
        }
        let key = (Bytes::copy_from_slice(subject), queue.map(Bytes::copy_from_slice));
        if self.link.subscriptions.borrow().contains_key(&key) {
            // A queue group's new weight: membership is what counts here.
            return None;
        }
        let subscription = Rc::new(Subscription {
            conn: self.link.conn,
            sid: Bytes::from_static(forwarding::SID),
            subject: key.0.clone(),
            account: AccountId::GLOBAL,
            key: key.0.clone(),
            queue: key.1.clone(),
            outbound: self.link.outbound.clone(),
            delivered: Default::default(),
            max: Default::default(),
            leaf: true,
        });
        self.link.subscriptions.borrow_mut().insert(key, subscription.clone());
        self.node.subscribe(subscription);
        None
    }

    fn hub_message(&mut self, message: LeafMessage<'_>) {
        let link = &self.link;
        link.in_msgs.set(link.in_msgs.get() + 1);
        let size = message.headers.map_or(0, <[u8]>::len) + message.payload.len();
        link.in_bytes.set(link.in_bytes.get() + size as u64);
        let mapped = self.spoke.crossing.map_inbound(message.subject);
        let subject = mapped.as_deref().unwrap_or(message.subject);
        if mapped.is_none() && !self.spoke.crossing.crosses(subject) {
            return;
        }
        if link.outbound.guard().is_some_and(|guard| !guard.may_subscribe(message.subject, None)) {
            return;
        }
        let publish = Publish { subject, reply: message.reply, headers: message.headers, payload: message.payload };
        // A JetStream delivery: routed to its deliver subject, shown with its stored one.
        let shown = message.reply.and_then(forwarding::split_delivery_reply).map(|(reply, stored)| Publish {
            subject: stored,
            reply: Some(reply),
            headers: message.headers,
            payload: message.payload,
        });
        let publisher = Publisher { conn: link.conn, echo: false, account: AccountId::GLOBAL };
        // No queue names: plain subscribers only (the hub picked no group for us).
        let scope = Scope::Named { plain: true, queues: &message.queues };
        let congested = self.node.publish_from_leaf(&publish, shown.as_ref(), publisher, scope);
        for outbound in congested {
            if !self.congested.iter().any(|known| Rc::ptr_eq(known, &outbound)) {
                self.congested.push(outbound);
            }
        }
    }
}
