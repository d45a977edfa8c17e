//! Messages across a leaf link. Toward the hub: the router hands a message's matching
//! leaf subscriptions here, and each link gets it once, as one `LMSG` naming the queue
//! groups it was chosen for (a link is a queue member only where no local member is:
//! local members first, as nats-server). From the hub: routed as a publish limited to
//! what the hub named (plain subscribers, one member per named group), never back to
//! the link it came from.
//!
//! A JetStream delivery travels to its deliver subject but shows the stored subject to
//! its subscriber. Across a leaf the stored subject rides on the ack reply, after an `@`
//! (`LMSG <deliver> $JS.ACK.<…>@<stored>`, nats-server's `jsAckDeliverIdx`): the
//! receiving side routes on the deliver subject and shows the stored one.

use std::rc::Rc;

use bytes::Bytes;

use super::super::interest::Subscription;
use super::super::outbound::Outbound;
use super::super::router::{Publish, Routed};
use super::wire;

/// The sid of every hub subscription (a link has one subscription per subject and queue).
pub const SID: &[u8] = b"leaf";

const JS_ACK_PREFIX: &[u8] = b"$JS.ACK.";

/// Where the stored subject starts in a delivery's ack reply that carries one: the `@`
/// after at least eight dots of a `$JS.ACK.` reply (stream and consumer names may hold
/// an `@` of their own).
fn stored_subject_at(reply: &[u8]) -> Option<usize> {
    if !reply.starts_with(JS_ACK_PREFIX) {
        return None;
    }
    let mut dots = 0;
    for (index, byte) in reply.iter().enumerate() {
        match byte {
            b'.' => dots += 1,
            b'@' if dots >= 8 => return Some(index),
            _ => {}
        }
    }
    None
}

/// A hub's delivery split into (ack reply, stored subject), when its reply carries one.
pub fn split_delivery_reply(reply: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = stored_subject_at(reply)?;
    Some((&reply[..at], &reply[at + 1..]))
}

/// Sends `publish`, routed to `to`, to each link among `members` (the matching leaf
/// subscriptions) once: with `plain` when a plain one matched, naming each group of
/// theirs not in `served`.
pub fn deliver_to_links(
    members: &[Rc<Subscription>],
    served: &[Bytes],
    plain: bool,
    to: &[u8],
    publish: &Publish<'_>,
    routed: &mut Routed,
) {
    // A JetStream delivery (routed to its deliver subject) carries its stored subject on
    // the ack reply.
    let carried: Option<Vec<u8>> = match publish.reply {
        Some(reply) if to != publish.subject && reply.starts_with(JS_ACK_PREFIX) => {
            Some([reply, b"@", publish.subject].concat())
        }
        _ => None,
    };
    let reply = carried.as_deref().or(publish.reply);
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
        let len_hint = to.len() + reply.map_or(0, <[u8]>::len) + body_len + 64;
        let written = outbound.push_sized(len_hint, |out| {
            wire::encode_message(out, to, reply, &queues, publish.headers, publish.payload)
        });
        if written {
            routed.local_deliveries += 1;
            if outbound.congested() && !routed.congested.iter().any(|o| Rc::ptr_eq(o, outbound)) {
                routed.congested.push(outbound.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_subject_follows_the_at_after_eight_dots() {
        let reply = b"$JS.ACK.ORDERS.C.1.2.3.1796341491649829220.12@orders.0";
        assert_eq!(
            split_delivery_reply(reply),
            Some((&b"$JS.ACK.ORDERS.C.1.2.3.1796341491649829220.12"[..], &b"orders.0"[..]))
        );
        // An `@` in the stream's name is part of the reply.
        let named = b"$JS.ACK.OR@DERS.C.1.2.3.4.5@a.b";
        assert_eq!(split_delivery_reply(named), Some((&b"$JS.ACK.OR@DERS.C.1.2.3.4.5"[..], &b"a.b"[..])));
        assert_eq!(split_delivery_reply(b"$JS.ACK.a.b.c.d.e@9"), None);
        assert_eq!(split_delivery_reply(b"_INBOX.a.b.c.d.e.f.g.h@x"), None);
        assert_eq!(split_delivery_reply(b"$JS.ACK.ORDERS.C.1.2.3.4.5"), None);
    }
}
