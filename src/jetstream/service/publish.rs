//! A client's publish into a stream of this shard, one way down: the owner is resolved
//! once, the message is appended at once, synchronously up to the group commit (borrowed
//! from the connection's buffer, not copied), and its pub ack waits in the owner's
//! in-order [`AckQueue`]. One task per stream, running while the queue is not empty,
//! waits for each group commit in turn, tells consumers and followers of the messages it
//! made durable, republishes, and sends the acks: never one before its record is durable.
//!
//! A message that cannot be appended without waiting (the log rolls to a new segment, or
//! consumers' deliveries of what it may replace are still going out) is copied into the
//! queue, and every message after it waits there too, so a stream stores messages in the
//! order they came. Atomic batches take `StreamService::store_batch_message`
//! (`batch_publish.rs`).

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;

use super::owner::StreamOwner;
use super::{batch, convert, republish, StreamService};
use crate::jetstream::errors::ApiError;
use crate::jetstream::pub_ack::{encode_pub_ack_error, PubAck as WirePubAck};
use crate::jetstream::stream_transforms::StreamTransforms;
use crate::shard::signal::LocalSignal;
use crate::stream::{self, Appended, Keep, PendingAppend};

/// What [`StreamService::publish`] did with a message.
#[derive(Debug, PartialEq, Eq)]
pub enum Taken {
    /// Appended or queued; its ack follows from the stream's queue.
    Queued,
    /// A message of an atomic batch: the caller hands it to
    /// `StreamService::store_batch_message`.
    Batch,
}

/// The pub acks of one stream, in the order its messages came.
#[derive(Default)]
pub(super) struct AckQueue {
    entries: RefCell<VecDeque<PendingAck>>,
    /// Entries not appended yet (`AckState::Waiting`): while there are any, every new
    /// message waits behind them.
    waiting: Cell<usize>,
    /// The queue's task is running.
    draining: Cell<bool>,
}

struct PendingAck {
    reply: Option<Box<str>>,
    started: Instant,
    /// Told once the ack is sent (a republished copy's publisher waits for it).
    done: Option<Rc<LocalSignal>>,
    state: AckState,
}

enum AckState {
    /// Not appended yet: an owned copy, appended in turn by the queue's task.
    Waiting(Box<OwnedMessage>),
    /// In the log's open group; acked once its group is durable.
    Appended(Box<AppendedMessage>),
    /// Answered without waiting for a group (a duplicate, a refusal), sent in turn.
    Answered(Result<(u64, bool), ApiError>),
}

struct OwnedMessage {
    subject: String,
    headers: Vec<u8>,
    payload: Vec<u8>,
}

/// A client's message, borrowed from where it was read.
struct Message<'a> {
    subject: &'a str,
    headers: &'a [u8],
    payload: &'a [u8],
}

struct AppendedMessage {
    pending: PendingAppend,
    /// The subject stored (after the stream's subject transform), for consumers.
    subject: Box<str>,
    header_bytes: usize,
    payload_bytes: usize,
    keep: Keep,
    republish: Option<RepublishCopy>,
}

/// What a stream with `republish` copies once the message is durable.
struct RepublishCopy {
    transforms: Rc<StreamTransforms>,
    previous_seq: u64,
    headers: Vec<u8>,
    payload: Vec<u8>,
}

impl StreamService {
    /// Takes a client's message for stream `name` of this shard. Its pub ack (or error)
    /// goes to `reply` once the message is durable, through the outlet, which is also
    /// told when the publish is done (`Outlet::stored`).
    pub fn publish(
        self: &Rc<Self>,
        name: &str,
        subject: &[u8],
        reply: Option<&[u8]>,
        headers: &[u8],
        payload: &[u8],
    ) -> Taken {
        self.take(name, subject, reply, headers, payload, None)
    }

    /// A copy a stream republished, into stream `name` of this shard: taken as a
    /// client's message without a reply, resolving once it is stored (or refused).
    pub async fn publish_copy(self: &Rc<Self>, name: &str, subject: &[u8], headers: &[u8], payload: &[u8]) -> Taken {
        let done = Rc::new(LocalSignal::default());
        let taken = self.take(name, subject, None, headers, payload, Some(done.clone()));
        if taken == Taken::Queued {
            done.notified().await;
        }
        taken
    }

    fn take(
        self: &Rc<Self>,
        name: &str,
        subject: &[u8],
        reply: Option<&[u8]>,
        headers: &[u8],
        payload: &[u8],
        done: Option<Rc<LocalSignal>>,
    ) -> Taken {
        let started = Instant::now();
        let reply = reply.map(|reply| String::from_utf8_lossy(reply).into());
        let Some(owner) = self.owner(name) else {
            let state = AckState::Answered(Err(ApiError::stream_not_found()));
            let entry = PendingAck { reply, started, done, state };
            self.send_ack(name, false, entry);
            return Taken::Queued;
        };
        if batch::batch_id(headers).is_some() {
            return Taken::Batch;
        }
        let subject = String::from_utf8_lossy(subject);
        let message = Message { subject: &subject, headers, payload };
        let waits =
            owner.acks.waiting.get() > 0 || (owner.settings.get().may_replace && self.consumers.effects_pending());
        let state = match waits {
            true => None,
            false => self.append_now(&owner, &message),
        };
        let state = state.unwrap_or_else(|| {
            owner.acks.waiting.set(owner.acks.waiting.get() + 1);
            AckState::Waiting(Box::new(OwnedMessage {
                subject: message.subject.to_string(),
                headers: message.headers.to_vec(),
                payload: message.payload.to_vec(),
            }))
        });
        owner.acks.entries.borrow_mut().push_back(PendingAck { reply, started, done, state });
        self.drain_soon(&owner);
        Taken::Queued
    }

    /// Appends `message` without an `.await`; `None` when it has to wait (a roll).
    fn append_now(&self, owner: &StreamOwner, message: &Message<'_>) -> Option<AckState> {
        let settings = owner.settings.get();
        if settings.sealed {
            return Some(AckState::Answered(Err(ApiError::stream_sealed())));
        }
        // The stream's subject transform decides the subject stored (and seen by
        // consumers and republish); the capture was on `captured`.
        let transforms = owner.transforms.borrow().clone();
        let captured = message.subject;
        let subject = match &transforms {
            Some(transforms) => transforms.stored_subject(captured),
            None => Cow::Borrowed(captured),
        };
        let republishes = transforms.as_ref().is_some_and(|transforms| transforms.republish.is_some());
        let previous_seq = if republishes { republish::last_seq_of_subject(&owner.stream, &subject) } else { 0 };
        let keep = self.keep_for(settings.retention, &owner.name, &subject);
        let (headers, payload) = (message.headers, message.payload);
        let origin = stream::Origin::Client;
        let request = stream::PublishRequest { origin, captured, subject: &subject, headers, payload, keep };
        let pending = match owner.stream.append_now(request) {
            Ok(None) => return None,
            Err(error) => return Some(AckState::Answered(Err(convert::api_error(&error)))),
            Ok(Some(Appended::Duplicate(seq))) => return Some(AckState::Answered(Ok((seq, true)))),
            Ok(Some(Appended::Pending(pending))) => pending,
        };
        let republish = transforms.filter(|_| republishes).map(|transforms| RepublishCopy {
            transforms,
            previous_seq,
            headers: headers.to_vec(),
            payload: payload.to_vec(),
        });
        Some(AckState::Appended(Box::new(AppendedMessage {
            pending,
            subject: subject.into(),
            header_bytes: headers.len(),
            payload_bytes: payload.len(),
            keep,
            republish,
        })))
    }

    /// Starts the task of `owner`'s queue unless it runs.
    fn drain_soon(self: &Rc<Self>, owner: &Rc<StreamOwner>) {
        if owner.acks.draining.replace(true) {
            return;
        }
        let service = self.clone();
        let owner = owner.clone();
        glommio::spawn_local(async move { service.drain_acks(&owner).await }).detach();
    }

    /// The task of a stream's queue: appends the waiting messages, then acks the front
    /// once durable, until the queue is empty.
    async fn drain_acks(&self, owner: &StreamOwner) {
        loop {
            if owner.acks.waiting.get() > 0 {
                self.append_waiting(owner).await;
                continue;
            }
            let front = owner.acks.entries.borrow_mut().pop_front();
            let Some(PendingAck { reply, started, done, state }) = front else {
                owner.acks.draining.set(false);
                return;
            };
            let outcome = match state {
                AckState::Answered(outcome) => outcome,
                AckState::Appended(message) => self.settle(owner, *message).await,
                AckState::Waiting(_) => unreachable!("waiting entries are appended first"),
            };
            let entry = PendingAck { reply, started, done, state: AckState::Answered(outcome) };
            self.send_ack(&owner.name, owner.settings.get().no_ack, entry);
        }
    }

    /// Appends the oldest waiting message, after what it waits for.
    async fn append_waiting(&self, owner: &StreamOwner) {
        // Only this task takes entries out, so the index holds across the awaits.
        let taken = {
            let mut entries = owner.acks.entries.borrow_mut();
            let index = entries.iter().position(|entry| matches!(entry.state, AckState::Waiting(_)));
            index.map(|index| {
                // Stands in until the message is appended; never sent.
                let placeholder = AckState::Answered(Ok((0, false)));
                match std::mem::replace(&mut entries[index].state, placeholder) {
                    AckState::Waiting(message) => (index, message),
                    _ => unreachable!("found waiting"),
                }
            })
        };
        let Some((index, message)) = taken else {
            owner.acks.waiting.set(0);
            return;
        };
        if owner.settings.get().may_replace {
            // Deliveries of what this publish may replace go out first (see
            // `effects_carried_out`).
            self.consumers.effects_carried_out().await;
        }
        let message = Message { subject: &message.subject, headers: &message.headers, payload: &message.payload };
        let state = loop {
            if let Some(state) = self.append_now(owner, &message) {
                break state;
            }
            let request = stream::PublishRequest::client(message.subject, message.headers, message.payload);
            if let Err(error) = owner.stream.make_room(request).await {
                break AckState::Answered(Err(convert::api_error(&error)));
            }
        };
        if let Some(entry) = owner.acks.entries.borrow_mut().get_mut(index) {
            entry.state = state;
        }
        owner.acks.waiting.set(owner.acks.waiting.get() - 1);
    }

    /// Waits for an appended message to be durable; only then do consumers, followers
    /// and republish learn of it.
    async fn settle(&self, owner: &StreamOwner, message: AppendedMessage) -> Result<(u64, bool), ApiError> {
        owner.stream.settle(&message.pending).await.map_err(|e| convert::api_error(&e))?;
        let seq = message.pending.seq;
        if message.keep == Keep::Store {
            let (headers, payload) = (message.header_bytes, message.payload_bytes);
            self.consumers.stream_appended(&owner.stream, seq, &message.subject, headers, payload);
            self.origin_appended();
        }
        if let Some(copy) = &message.republish {
            if let Some(rule) = &copy.transforms.republish {
                let stored = republish::Stored {
                    stream: &owner.name,
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
    /// `entry` is answered (`AckState::Answered`).
    fn send_ack(&self, name: &str, no_ack: bool, entry: PendingAck) {
        let AckState::Answered(outcome) = entry.state else { unreachable!("only answered entries are sent") };
        if let Some(done) = entry.done {
            done.notify();
        }
        let Some(outlet) = self.consumers.outlet() else { return };
        if let Some(reply) = entry.reply.filter(|_| !no_ack) {
            let payload = match &outcome {
                Ok((seq, duplicate)) => {
                    let stream = name.to_string();
                    WirePubAck { stream, seq: *seq, domain: self.domain(), duplicate: *duplicate, batch: None }.encode()
                }
                Err(error) => encode_pub_ack_error(name, error),
            };
            outlet.publish(&reply, &reply, None, None, &payload);
        }
        outlet.stored(outcome.is_ok(), entry.started.elapsed());
    }
}
