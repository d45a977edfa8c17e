//! Messages across a leaf link. Toward the hub: the router hands a message's matching
//! leaf subscriptions here, and each link gets it once, as one `LMSG` naming the queue
//! groups it was chosen for (a link is a queue member only where no local member is:
//! local members first, as nats-server). From the hub: routed as a publish limited to
//! what the hub named (plain subscribers, one member per named group), never back to
//! the link it came from.

use std::rc::Rc;

use bytes::Bytes;

use super::super::interest::Subscription;
use super::super::outbound::Outbound;
use super::super::router::{Publish, Routed};
use super::wire;

/// The sid of every hub subscription (a link has one subscription per subject and queue).
pub const SID: &[u8] = b"leaf";

/// Sends `publish` to each link among `members` (the matching leaf subscriptions) once:
/// with `plain` when a plain one matched, naming each group of theirs not in `served`.
pub fn deliver_to_links(
    members: &[Rc<Subscription>],
    served: &[Bytes],
    plain: bool,
    publish: &Publish<'_>,
    routed: &mut Routed,
) {
    let mut done: Vec<*const Outbound> = Vec::new();
    for member in members {
        let outbound = &member.outbound;
        if done.contains(&Rc::as_ptr(outbound)) {
            continue;
        }
        done.push(Rc::as_ptr(outbound));
        // The link's export rules: a wildcard the hub asked for (`>`) still carries only
        // what may cross (never `$JS.API` when JetStream answers here).
        if outbound.guard().is_some_and(|guard| !guard.may_publish(publish.subject)) {
            continue;
        }
        let same_link = members.iter().filter(|other| Rc::ptr_eq(&other.outbound, outbound));
        let mut wants_plain = false;
        let mut queues: Vec<&Bytes> = Vec::new();
        for subscription in same_link {
            match &subscription.queue {
                None => wants_plain |= plain,
                Some(queue) if !served.contains(queue) && !queues.contains(&queue) => queues.push(queue),
                Some(_) => {}
            }
        }
        if !wants_plain && queues.is_empty() {
            continue;
        }
        let body_len = publish.headers.map_or(0, <[u8]>::len) + publish.payload.len();
        outbound.count_message_out(body_len);
        let len_hint = publish.subject.len() + publish.reply.map_or(0, <[u8]>::len) + body_len + 64;
        let written = outbound.push_sized(len_hint, |out| {
            wire::encode_message(out, publish.subject, publish.reply, &queues, publish.headers, publish.payload)
        });
        if written {
            routed.local_deliveries += 1;
            if outbound.congested() && !routed.congested.iter().any(|o| Rc::ptr_eq(o, outbound)) {
                routed.congested.push(outbound.clone());
            }
        }
    }
}
