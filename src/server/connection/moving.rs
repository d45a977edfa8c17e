//! A connection's move to another shard, its side of it (`handoff.rs` has the protocol
//! between the shards): when to move, leaving, and being served on arrival.

use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd};
use std::rc::Rc;

use glommio::net::TcpStream;

use super::{duplicate, serve_client, write_loop, Client};
use crate::limits;
use crate::server::auth;
use crate::server::guard::Guard;
use crate::server::handoff;
use crate::server::interest::{ConnId, Subscription};
use crate::server::node::Node;
use crate::server::outbound::{CloseReason, Outbound};
use crate::server::shard_ops::ConnectionView;
use crate::server::tls;
use crate::shard::ShardId;

/// Serves a connection another shard handed over (`handoff.rs`), from its unread input
/// on; its output waits for the old shard's (`Node::arrival_drained`).
pub async fn serve_arrival(node: Rc<Node>, old: ShardId, arrival: handoff::Arrival) {
    let handoff::Arrival { conn, socket, unread, options, account, credentials, subscriptions, facts } = arrival;
    // SAFETY: the old shard gave up every other descriptor of this socket it held.
    let stream = unsafe { TcpStream::from_raw_fd(socket.into_raw_fd()) };
    let outbound = Rc::new(Outbound::new(node.options.max_pending));
    outbound.suspend();
    outbound.set_authenticated();
    outbound.carry_messages_out(facts.messages_out);
    if let Some(credentials) = &credentials {
        let permissions = auth::permissions_for(&node.ops.live_options(), credentials);
        outbound.set_guard(permissions.map(|permissions| Rc::new(Guard::new(permissions))));
    }
    let mut view = ConnectionView::new(conn, facts.ip, facts.port, outbound.clone());
    view.started = facts.started;
    let view = Rc::new(view);
    *view.name.borrow_mut() = facts.name;
    *view.lang.borrow_mut() = facts.lang;
    *view.version.borrow_mut() = facts.version;
    *view.user.borrow_mut() = facts.user;
    *view.account.borrow_mut() = facts.account_name;
    *view.credentials.borrow_mut() = credentials;
    view.in_msgs.set(facts.in_msgs);
    view.in_bytes.set(facts.in_bytes);
    view.rtt.set(facts.rtt);
    node.ops.adopt(view.clone());
    let mut client = Client::new(conn, &node, &view, None, None);
    client.connected = true;
    client.options = options;
    client.account = account;
    client.moves = facts.moves;
    client.arm_delivery_moves();
    // No await from here to `arrived`: the install is this shard's cut.
    for moved in subscriptions {
        let subscription = Rc::new(Subscription {
            conn,
            sid: moved.sid,
            subject: moved.subject,
            account,
            key: moved.key,
            queue: None,
            outbound: outbound.clone(),
            delivered: std::cell::Cell::new(moved.delivered),
            max: std::cell::Cell::new(moved.max),
            leaf: false,
        });
        view.subscriptions.borrow_mut().insert(subscription.sid.clone(), subscription.clone());
        client.pending_epoch = node.subscribe(subscription);
    }
    node.arrived(conn, old, &outbound);
    let Some(writer_stream) = duplicate(&stream) else {
        outbound.close(CloseReason::WriteError);
        let writer = glommio::spawn_local(async {});
        return serve_client(client, tls::transport::Reader::Plain(stream), writer, None, unread).await;
    };
    let deadline = node.options.write_deadline;
    let writer = glommio::spawn_local(write_after_arrival(node.clone(), conn, writer_stream, view.clone(), deadline));
    node.cuts_complete(conn).await;
    serve_client(client, tls::transport::Reader::Plain(stream), writer, None, unread).await;
}

/// A handed-over connection's writer: the old shard's output first, then this one's.
async fn write_after_arrival(
    node: Rc<Node>,
    conn: ConnId,
    stream: TcpStream,
    view: Rc<ConnectionView>,
    deadline: std::time::Duration,
) {
    let outbound = view.outbound.clone();
    let drained = node.arrival_drained(conn).await;
    outbound.resume();
    if let Some((output, closed)) = drained {
        outbound.prepend(output);
        if let Some(reason) = closed {
            outbound.close(reason);
        }
    }
    write_loop(tls::transport::Writer::Plain(stream), view, deadline).await;
}

impl Client {
    /// Counts a publish a stream worked on (`owner`: the stream's shard) towards moving to
    /// that shard: a store, a pull request or an ack. One for a stream here ends the
    /// streak; one no stream took leaves it.
    pub(super) fn count_stream_work(&mut self, owner: Option<ShardId>) {
        let Some(owner) = owner else { return };
        if owner == self.node.shard {
            // Working with a stream here also keeps a receiver here.
            self.outbound.delivery_streak().reset();
        }
        self.streak = match self.streak {
            _ if owner == self.node.shard => None,
            Some((shard, count)) if shard == owner => Some((shard, count.saturating_add(1))),
            _ => Some((owner, 1)),
        };
    }

    /// The shard to move to, when the streak reached `publishes_before_move` and this
    /// connection can move (plaintext; no queue subscription, whose member is picked per
    /// shard; no `UNSUB max` pending, which both copies would count; not closing or
    /// moving).
    ///
    /// A connection moves also to the shard that its last deliveries all came from
    /// (`handoff::DeliveryStreak`), once as many came as a streak needs, unless its stores
    /// are building a streak towards another shard.
    pub(super) fn move_due(&mut self, stream: &tls::transport::Reader) -> Option<ShardId> {
        let needed = self.streak_needed();
        // Still arriving from a move (output held, gate set): the streaks wait for later.
        if needed == 0 || self.outbound.suspended() || self.outbound.gate().is_some() {
            return None;
        }
        let target = match self.streak {
            Some((target, count)) if count >= needed => target,
            streak => {
                let delivering = self.outbound.delivery_streak().due(needed)?;
                // Stores building towards another shard keep it here.
                if streak.is_some_and(|(storing, _)| storing != delivering) {
                    return None;
                }
                delivering
            }
        };
        self.streak = None;
        let subscriptions = self.view.subscriptions.borrow();
        let movable = !stream.is_tls()
            && self.connected
            && self.outbound.closed().is_none()
            && !self.node.ops.refusing_connections()
            && subscriptions.len() <= limits::HANDOFF_SUBSCRIPTIONS_MAX
            && subscriptions
                .values()
                .all(|subscription| subscription.queue.is_none() && subscription.max.get().is_none());
        movable.then_some(target)
    }

    /// Stores (or deliveries) in a row a move needs: `handoff::publishes_before_move()`,
    /// doubled for each move this connection made, so a connection that works on streams
    /// of two shards in long turns settles instead of moving at every turn. 0: moves off.
    fn streak_needed(&self) -> u32 {
        let doublings = self.moves.min(limits::HANDOFF_BACKOFF_DOUBLINGS_MAX);
        handoff::publishes_before_move().saturating_mul(1 << doublings)
    }

    /// Starts counting deliveries towards a move (`handoff::DeliveryStreak`).
    pub(super) fn arm_delivery_moves(&self) {
        self.outbound.delivery_streak().arm(self.streak_needed());
    }

    /// Hands this connection to `target` (`handoff.rs`, steps 1 and 5); false when it
    /// could not go (its socket could not be duplicated), so the caller closes it.
    pub(super) async fn move_to(
        &mut self,
        target: ShardId,
        stream: tls::transport::Reader,
        writer: glommio::Task<()>,
    ) -> bool {
        if self.pending_epoch > 0 {
            // SUBs answered by a PONG must stay covered: let the peers apply them first.
            self.node.interest_barrier(self.pending_epoch).await;
            self.pending_epoch = 0;
        }
        self.outbound.suspend();
        writer.await;
        let tls::transport::Reader::Plain(stream) = stream else { return false };
        // SAFETY: dup returns a new descriptor we own (or -1, checked) for the same socket.
        let fd = unsafe { libc::dup(stream.as_raw_fd()) };
        // Dropped, not closed: closing a glommio stream shuts the socket down.
        drop(stream);
        if fd < 0 {
            return false;
        }
        // SAFETY: `fd` is a fresh descriptor nothing else owns.
        let socket = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        let view = &self.view;
        let subscriptions = view
            .subscriptions
            .borrow()
            .values()
            .map(|subscription| handoff::MovedSubscription {
                sid: subscription.sid.clone(),
                subject: subscription.subject.clone(),
                key: subscription.key.clone(),
                delivered: subscription.delivered.get(),
                max: subscription.max.get(),
            })
            .collect();
        let facts = handoff::Facts {
            ip: view.ip.clone(),
            port: view.port,
            started: view.started,
            name: view.name.borrow().clone(),
            lang: view.lang.borrow().clone(),
            version: view.version.borrow().clone(),
            user: view.user.borrow().clone(),
            account_name: view.account.borrow().clone(),
            in_msgs: view.in_msgs.get(),
            in_bytes: view.in_bytes.get(),
            rtt: view.rtt.get(),
            messages_out: self.outbound.messages_out(),
            moves: self.moves.saturating_add(1),
        };
        let arrival = handoff::Arrival {
            conn: self.id,
            socket,
            unread: std::mem::take(&mut self.unread),
            options: self.options.clone(),
            account: self.account,
            credentials: view.credentials.borrow().clone(),
            subscriptions,
            facts,
        };
        self.node.hand_off(target, &self.outbound, arrival);
        self.node.cuts_complete(self.id).await;
        self.release_subscriptions().await;
        self.node.departed(self.id, target, &self.outbound);
        self.node.ops.release(self.id);
        true
    }
}
