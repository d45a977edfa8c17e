//! A client's publish into a stream of this shard, one way down: the stream's owner
//! (`stream::StreamOwner`) is resolved once and appends the message at once, borrowed
//! from the connection's buffer, queueing its pub ack in order. One task per stream,
//! started by its first message and parked while the owner's queue is empty, waits for
//! each group commit in turn, tells consumers and followers of the messages it made
//! durable, republishes, and sends the acks: never one before its record is durable.
//! Atomic batches take
//! `StreamService::store_batch_message` (`batch_publish.rs`).

use std::rc::Rc;
use std::time::Instant;

use super::{batch, convert, fast_batch, republish, StreamService};
use crate::jetstream::pub_ack::{encode_pub_ack_error, PubAck as WirePubAck};
use crate::shard::signal::LocalSignal;
use crate::stream::{self, AckTicket, AppendedMessage, ClientMessage, Front, Keep, OwnerKey, StreamOwner};

/// What [`StreamService::publish`] did with a message.
#[derive(Debug, PartialEq, Eq)]
pub enum Taken {
    /// Appended or queued; its ack follows from the stream's queue.
    Queued,
    /// A message of an atomic batch: the caller hands it to
    /// `StreamService::store_batch_message`.
    Batch,
}

impl StreamService {
    /// Takes a client's message for stream `name` of this shard, whose owner `key`
    /// names (from the stream's catalog entry). Its pub ack (or error) goes to `reply`
    /// once the message is durable, through the outlet, which is also told when the
    /// publish is done (`Outlet::stored`).
    pub fn publish(
        self: &Rc<Self>,
        key: OwnerKey,
        name: &str,
        subject: &[u8],
        reply: Option<&[u8]>,
        headers: &[u8],
        payload: &[u8],
    ) -> Taken {
        self.take(key, name, subject, reply, headers, payload, None)
    }

    /// A copy a stream republished, into stream `name` of this shard: taken as a
    /// client's message without a reply, resolving once it is stored (or refused).
    pub async fn publish_copy(
        self: &Rc<Self>,
        key: OwnerKey,
        name: &str,
        subject: &[u8],
        headers: &[u8],
        payload: &[u8],
    ) -> Taken {
        let done = Rc::new(LocalSignal::default());
        let taken = self.take(key, name, subject, None, headers, payload, Some(done.clone()));
        if taken == Taken::Queued {
            done.notified().await;
        }
        taken
    }

    #[expect(clippy::too_many_arguments, reason = "a publish's parts, borrowed from the connection's buffer")]
    fn take(
        self: &Rc<Self>,
        key: OwnerKey,
        name: &str,
        subject: &[u8],
        reply: Option<&[u8]>,
        headers: &[u8],
        payload: &[u8],
        done: Option<Rc<LocalSignal>>,
    ) -> Taken {
        // Replies are ASCII in practice: checked, not rebuilt (`from_utf8_lossy`'s
        // chunking cost 1.2 % of a shard publishing with async-nats).
        let reply = reply.map(|reply| match std::str::from_utf8(reply) {
            Ok(text) => text.into(),
            Err(_) => String::from_utf8_lossy(reply).into(),
        });
        let ticket = AckTicket { reply, started: Instant::now(), done };
        let Some(owner) = self.owner_at(key) else {
            let refusal = stream::Error::StreamNotFound { name: name.to_string() };
            self.send_ack(name, false, ticket, Ack { outcome: Err(refusal), counter_total: None });
            return Taken::Queued;
        };
        if let Some(reply) = ticket.reply.as_deref().filter(|reply| fast_batch::is_fast_reply(reply)) {
            let size = headers.len() + payload.len();
            if !self.fast_batch_arrives(name, owner.rules().allow_batched, reply, size, ticket.started) {
                return Taken::Queued;
            }
        } else if batch::batch_id(headers).is_some() {
            return Taken::Batch;
        }
        let subject = String::from_utf8_lossy(subject);
        let message = ClientMessage { subject: &subject, headers, payload };
        let must_wait = owner.rules().may_replace && self.consumers.effects_pending();
        if owner.take(message, ticket, must_wait, &|subject| self.interested(name, subject)) {
            let service = self.clone();
            glommio::spawn_local(async move { service.drain_acks(owner).await }).detach();
        }
        Taken::Queued
    }

    /// Whether a consumer of `stream`, or a mirror or source following it, takes
    /// messages on `subject` (interest retention skips those nobody takes).
    fn interested(&self, stream: &str, subject: &str) -> bool {
        self.consumers.interested_in(stream, subject) || self.sourcing.followers.interested_in(stream, subject)
    }

    /// The task of a stream's queue: appends the waiting messages, then acks the front
    /// once durable; parks when the queue is empty (holding the owner weakly), and ends
    /// when the owner is gone.
    async fn drain_acks(&self, owner: Rc<StreamOwner>) {
        let mut owner = owner;
        loop {
            self.drain_queue(&owner).await;
            let Some(again) = StreamOwner::parked(owner).await else { return };
            owner = again;
        }
    }

    /// One turn of [`Self::drain_acks`]: until the queue is empty.
    async fn drain_queue(&self, owner: &StreamOwner) {
        let name = owner.name().clone();
        let interested = |subject: &str| self.interested(&name, subject);
        loop {
            if owner.has_waiting() {
                if owner.rules().may_replace {
                    // Deliveries of what this publish may replace go out first (see
                    // `effects_carried_out`).
                    self.consumers.effects_carried_out().await;
                }
                owner.append_next_waiting(&interested).await;
                continue;
            }
            let Some((ticket, front)) = owner.pop_front() else { return };
            let (outcome, counter_total) = match front {
                Front::Answered(outcome) => (outcome, None),
                Front::Appended(message) => {
                    let counter_total = message.pending.counter_total.clone();
                    (self.settle(owner, *message).await, counter_total)
                }
            };
            if outcome.is_err() && owner.stream().out_of_storage_began() {
                self.advise_out_of_storage(&name);
            }
            let ack = Ack { outcome, counter_total };
            self.send_ack(&name, owner.rules().no_ack, ticket, ack);
        }
    }

    /// Waits for an appended message to be durable; only then do consumers, followers
    /// and republish learn of it.
    async fn settle(&self, owner: &StreamOwner, message: AppendedMessage) -> Result<(u64, bool), stream::Error> {
        owner.stream().settle(&message.pending).await?;
        let seq = message.pending.seq;
        if message.keep == Keep::Store {
            let (headers, payload) = (message.header_bytes, message.payload_bytes);
            self.consumers.stream_appended(owner.stream(), seq, &message.subject, headers, payload);
            self.origin_appended();
        }
        if let Some(copy) = &message.republish {
            if let Some(rule) = &copy.rules.republish {
                let stored = republish::Stored {
                    stream: owner,
                    subject: &message.subject,
                    seq,
                    previous_seq: copy.previous_seq,
                    headers: &copy.headers,
                    payload: &copy.payload,
                };
                self.republish(rule, &stored).await;
            }
        }
        Ok((seq, false))
    }

    /// Sends the pub ack (unless the stream has `no_ack`) and says the publish is done.
    fn send_ack(&self, name: &str, no_ack: bool, ticket: AckTicket, ack: Ack) {
        let Ack { outcome, counter_total } = ack;
        if let Some(done) = ticket.done {
            done.notify();
        }
        let Some(outlet) = self.consumers.outlet() else { return };
        if let Some(reply) = ticket.reply.as_deref().filter(|reply| fast_batch::is_fast_reply(reply)) {
            for (to, payload) in self.fast_batch_settled(name, reply, &outcome) {
                if !no_ack {
                    outlet.publish(&to, to.as_bytes(), None, None, &payload);
                }
            }
            outlet.stored(outcome.is_ok(), ticket.started.elapsed());
            return;
        }
        if let Some(reply) = ticket.reply.filter(|_| !no_ack) {
            let payload = match &outcome {
                Ok((seq, duplicate)) => {
                    let (stream, seq, duplicate) = (name.to_string(), *seq, *duplicate);
                    let counter_total = counter_total.map(String::from);
                    let domain = self.domain();
                    WirePubAck { stream, seq, domain, duplicate, counter_total, ..WirePubAck::default() }.encode()
                }
                Err(error) => encode_pub_ack_error(name, &convert::api_error(error)),
            };
            outlet.publish(&reply, reply.as_bytes(), None, None, &payload);
        }
        outlet.stored(outcome.is_ok(), ticket.started.elapsed());
    }
}

/// A publish's answer: stored (sequence, duplicate) or refused, and a counter stream's
/// new total of the subject.
struct Ack {
    outcome: Result<(u64, bool), stream::Error>,
    counter_total: Option<Box<str>>,
}
