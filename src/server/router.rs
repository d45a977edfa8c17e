//! Routing one publish: deliver to this shard's subscribers directly, pick one member per
//! queue group across all shards, and build one envelope per other interested shard.
//! Everything here is synchronous: the caller sends the envelopes (and may wait for ring
//! room) after the interest table's borrow has ended.

use std::rc::Rc;

use bytes::Bytes;

use super::account::AccountId;
use super::batch::{DeliveryRef, OutgoingBatches};
use super::interest::{ConnId, Interest, Subscription};
use super::leaf;
use super::outbound::Outbound;
use crate::protocol;
use crate::shard::ShardId;

/// A message as parsed from a client, borrowing its read buffer.
pub struct Publish<'a> {
    pub subject: &'a [u8],
    pub reply: Option<&'a [u8]>,
    pub headers: Option<&'a [u8]>,
    pub payload: &'a [u8],
}

/// Who published, as far as delivery cares (`echo:false` skips the publisher's own subs).
#[derive(Clone, Copy)]
pub struct Publisher {
    pub conn: ConnId,
    pub echo: bool,
    pub account: AccountId,
}

/// What a publish reached.
#[derive(Default)]
pub struct Routed {
    /// Subscriptions on this shard that received the message.
    pub local_deliveries: usize,
    /// Other shards the message was batched for.
    pub remote_shards: usize,
    /// Peers whose batch is full and must be sent now.
    pub full_batches: Vec<ShardId>,
    /// Local subscriptions whose `UNSUB max` was reached by this delivery.
    pub expired: Vec<Rc<Subscription>>,
    /// Subscribers whose queues passed the stall threshold: the producer waits for them.
    pub congested: Vec<Rc<Outbound>>,
}

impl Routed {
    pub fn reached_anyone(&self) -> bool {
        self.local_deliveries > 0 || self.remote_shards > 0
    }
}

/// Picks queue members; a small xorshift, since fairness not secrecy is the point.
pub struct QueuePicker {
    state: u64,
}

impl QueuePicker {
    pub fn new(seed: u64) -> QueuePicker {
        QueuePicker { state: seed | 1 }
    }

    fn below(&mut self, bound: usize) -> usize {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        (x % bound as u64) as usize
    }
}

/// Routes a publish that arrived on this shard from a client.
pub fn route_publish(
    interest: &Interest,
    picker: &mut QueuePicker,
    batches: &mut OutgoingBatches,
    publish: &Publish<'_>,
    publisher: Option<Publisher>,
) -> Routed {
    route_publish_to(interest, picker, batches, publish.subject, publish, publisher)
}

/// Routes `publish` to the subscribers of `to`, which may differ from the subject the
/// message carries (JetStream deliveries carry the stored subject to a deliver subject
/// or pull inbox). `to` is a routing key (`account::routing_key`): outside `$G` it is
/// never the subject, and the peers read the account from it.
pub fn route_publish_to(
    interest: &Interest,
    picker: &mut QueuePicker,
    batches: &mut OutgoingBatches,
    to: &[u8],
    publish: &Publish<'_>,
    publisher: Option<Publisher>,
) -> Routed {
    route_scoped(interest, picker, batches, to, publish, publisher, Scope::Everyone)
}

/// Which subscribers a message is for: everyone (a client's publish), or, for a message
/// a hub sent over a leaf link, plain subscribers only when `plain` and one member of
/// each named queue group.
#[derive(Clone, Copy)]
pub enum Scope<'a> {
    Everyone,
    Named { plain: bool, queues: &'a [Bytes] },
}

impl Scope<'_> {
    fn plain(&self) -> bool {
        match self {
            Scope::Everyone => true,
            Scope::Named { plain, .. } => *plain,
        }
    }

    fn queue(&self, name: &Bytes) -> bool {
        match self {
            Scope::Everyone => true,
            Scope::Named { queues, .. } => queues.contains(name),
        }
    }
}

/// Routes `publish` to those of `to`'s subscribers that `scope` names.
pub fn route_scoped(
    interest: &Interest,
    picker: &mut QueuePicker,
    batches: &mut OutgoingBatches,
    to: &[u8],
    publish: &Publish<'_>,
    publisher: Option<Publisher>,
    scope: Scope<'_>,
) -> Routed {
    let mut routed = Routed::default();
    let skip = |subscription: &Subscription| publisher.is_some_and(|p| !p.echo && p.conn == subscription.conn);
    let matches = interest.matches_of(to);
    let mut queue_members: Vec<Rc<Subscription>> = Vec::new();
    let mut leaf_members: Vec<Rc<Subscription>> = Vec::new();
    matches.local.iter().for_each(|subscription| {
        if skip(subscription) {
            return;
        }
        match &subscription.queue {
            _ if subscription.leaf => leaf_members.push(subscription.clone()),
            Some(queue) if scope.queue(queue) => queue_members.push(subscription.clone()),
            Some(_) => {}
            None if scope.plain() => deliver(subscription, None, publish, &mut routed),
            None => {}
        }
    });
    let mut remote_plain: Vec<ShardId> = Vec::new();
    let mut remote_queues: Vec<(ShardId, Bytes)> = Vec::new();
    matches.remote.iter().for_each(|remote| match &remote.queue {
        None if scope.plain() => {
            if !remote_plain.contains(&remote.shard) {
                remote_plain.push(remote.shard);
            }
        }
        None => {}
        Some(queue) if scope.queue(queue) => remote_queues.push((remote.shard, queue.clone())),
        Some(_) => {}
    });
    if !leaf_members.is_empty() {
        let served = served_queues(&queue_members, &remote_queues);
        leaf::forwarding::deliver_to_links(&leaf_members, &served, scope.plain(), to, publish, &mut routed);
    }
    let mut queues_for: Vec<(ShardId, Bytes)> = Vec::new();
    pick_queue_members(picker, &queue_members, &remote_queues, |choice| match choice {
        QueueChoice::Local(subscription) => deliver(subscription, None, publish, &mut routed),
        QueueChoice::Remote(shard, queue) => queues_for.push((shard, queue.clone())),
    });
    // Usually the very same slice: compare addresses before bytes.
    let same = std::ptr::eq(to, publish.subject) || to == publish.subject;
    let matched = (!same).then_some(to);
    batch_for_peers(batches, matched, publish, &remote_plain, queues_for, &mut routed);
    routed
}

/// Queue groups with a member on some shard: a leaf link is their member only when none is.
fn served_queues(local: &[Rc<Subscription>], remote: &[(ShardId, Bytes)]) -> Vec<Bytes> {
    let mut served: Vec<Bytes> = local.iter().filter_map(|s| s.queue.clone()).collect();
    served.extend(remote.iter().map(|(_, queue)| queue.clone()));
    served
}

/// Delivers a message shard `from` routed here.
pub fn route_delivery(
    interest: &Interest,
    picker: &mut QueuePicker,
    from: ShardId,
    delivery: &DeliveryRef<'_>,
    routed: &mut Routed,
) {
    let publish = Publish {
        subject: delivery.subject,
        reply: delivery.reply,
        headers: delivery.headers,
        payload: delivery.payload,
    };
    let mut queue_members: Vec<Rc<Subscription>> = Vec::new();
    let mut leaf_members: Vec<Rc<Subscription>> = Vec::new();
    let to = delivery.matched.unwrap_or(delivery.subject);
    interest.for_each_local(to, |subscription| match &subscription.queue {
        _ if subscription.leaf => leaf_members.push(subscription.clone()),
        None if delivery.plain => deliver(subscription, Some(from), &publish, routed),
        None => {}
        Some(queue) if delivery.queues.contains(queue) => queue_members.push(subscription.clone()),
        Some(_) => {}
    });
    if !leaf_members.is_empty() {
        let mut served = served_queues(&queue_members, &[]);
        // Groups this shard was not asked for are served elsewhere.
        let unasked = leaf_members.iter().filter_map(|s| s.queue.clone()).filter(|q| !delivery.queues.contains(q));
        served.extend(unasked);
        leaf::forwarding::deliver_to_links(&leaf_members, &served, delivery.plain, to, &publish, routed);
    }
    pick_queue_members(picker, &queue_members, &[], |choice| {
        if let QueueChoice::Local(subscription) = choice {
            deliver(subscription, Some(from), &publish, routed);
        }
    });
}

enum QueueChoice<'a> {
    Local(&'a Rc<Subscription>),
    Remote(ShardId, &'a Bytes),
}

/// For each queue group name: choose this shard or one of the remote shards with members
/// (each shard equally likely), then, if this shard, one of its members.
fn pick_queue_members<'a>(
    picker: &mut QueuePicker,
    local: &'a [Rc<Subscription>],
    remote: &'a [(ShardId, Bytes)],
    mut choose: impl FnMut(QueueChoice<'a>),
) {
    if local.is_empty() && remote.is_empty() {
        return;
    }
    let mut names: Vec<&Bytes> = Vec::new();
    for name in local.iter().filter_map(|s| s.queue.as_ref()).chain(remote.iter().map(|(_, q)| q)) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    for name in names {
        let members: Vec<&Rc<Subscription>> = local.iter().filter(|s| s.queue.as_ref() == Some(name)).collect();
        let mut shards: Vec<ShardId> = Vec::new();
        for (shard, _) in remote.iter().filter(|(_, queue)| queue == name) {
            if !shards.contains(shard) {
                shards.push(*shard);
            }
        }
        let local_slot = usize::from(!members.is_empty());
        let slot = picker.below(local_slot + shards.len());
        if slot < local_slot {
            choose(QueueChoice::Local(members[picker.below(members.len())]));
        } else {
            choose(QueueChoice::Remote(shards[slot - local_slot], name));
        }
    }
}

/// `from`: the shard that routed the message here (`None`: this one).
fn deliver(subscription: &Rc<Subscription>, from: Option<ShardId>, publish: &Publish<'_>, routed: &mut Routed) {
    if !subscription.outbound.admits_from(from) {
        return;
    }
    if let Some(guard) = subscription.outbound.guard() {
        if !guard.admits_delivery(&subscription.subject, publish.subject, publish.reply) {
            return;
        }
    }
    let sid = &subscription.sid;
    subscription.outbound.count_message_out(publish.headers.map_or(0, <[u8]>::len) + publish.payload.len());
    // MSG/HMSG, two lengths, spaces and line ends fit in 64 bytes.
    let len_hint = publish.subject.len()
        + sid.len()
        + publish.reply.map_or(0, <[u8]>::len)
        + publish.headers.map_or(0, <[u8]>::len)
        + publish.payload.len()
        + 64;
    let written = subscription.outbound.push_sized(len_hint, |out| match publish.headers {
        Some(headers) => protocol::encode_hmsg(out, publish.subject, sid, publish.reply, headers, publish.payload),
        None => protocol::encode_msg(out, publish.subject, sid, publish.reply, publish.payload),
    });
    if written {
        routed.local_deliveries += 1;
        let outbound = &subscription.outbound;
        if outbound.delivery_streak().note(from) {
            // Asks for a PONG, so that the reader reaches an op boundary where it may move.
            outbound.push(|out| out.extend_from_slice(b"PING\r\n"));
        }
        if outbound.congested() && !routed.congested.iter().any(|o| Rc::ptr_eq(o, outbound)) {
            routed.congested.push(outbound.clone());
        }
    }
    if subscription.count_delivery() {
        routed.expired.push(subscription.clone());
    }
}

fn batch_for_peers(
    batches: &mut OutgoingBatches,
    matched: Option<&[u8]>,
    publish: &Publish<'_>,
    plain: &[ShardId],
    queues_for: Vec<(ShardId, Bytes)>,
    routed: &mut Routed,
) {
    let mut shards: Vec<ShardId> = plain.to_vec();
    for (shard, _) in &queues_for {
        if !shards.contains(shard) {
            shards.push(*shard);
        }
    }
    for shard in shards {
        let queues: Vec<Bytes> = queues_for.iter().filter(|(s, _)| *s == shard).map(|(_, q)| q.clone()).collect();
        if batches.push_to(shard, matched, publish, plain.contains(&shard), queues) {
            routed.full_batches.push(shard);
        }
        routed.remote_shards += 1;
    }
}
