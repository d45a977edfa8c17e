//! The owner of one stream on its shard: the [`Stream`], the rules its config sets for
//! writes ([`StreamRules`]), and the pub acks waiting for its group commits, in the order
//! the messages came. A publish resolves the owner once; everything after goes through it.
//!
//! A client's message is appended at once, synchronously up to the group commit and
//! borrowed from where it was read. One that cannot be appended without waiting (the log
//! rolls to a new segment, or consumers' deliveries of what it may replace are still going
//! out) is copied into the queue, and every message after it waits there too, so a stream
//! stores messages in the order they came. The queue's task, one per stream from its
//! first message on, is the caller's (it tells consumers and sends acks): it appends the
//! waiting messages ([`StreamOwner::append_next_waiting`]), settles the appended ones and
//! answers the front ([`StreamOwner::pop_front`]), never an ack before its record is durable.
//!
//! The task outlives an empty queue: it parks ([`StreamOwner::parked`]) holding only a weak
//! reference, and the next message wakes it. A publisher with one message in flight empties
//! the queue after every ack; spawning the task anew for each message cost a task's
//! allocation, the copy of its future and its first poll (perf/latency.md, "2026-12-07
//! (late)"). When the owner goes (its stream deleted), its drop wakes the parked task, which
//! finds no owner and ends.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;

use super::error::Error;
use super::ingest::{Origin, PublishRequest};
use super::rules::{Retention, StreamRules};
use super::stream::{Appended, Keep, PendingAppend, Stream};
use crate::shard::signal::LocalSignal;

pub struct StreamOwner {
    name: Rc<str>,
    stream: Rc<Stream>,
    /// Replaced whole on a config update; a publish works with the rules it started with.
    rules: RefCell<Rc<StreamRules>>,
    acks: AckQueue,
}

/// The pub acks of one stream, in the order its messages came.
#[derive(Default)]
struct AckQueue {
    entries: RefCell<VecDeque<PendingAck>>,
    /// Entries not appended yet (`AckState::Waiting`): while there are any, every new
    /// message waits behind them.
    waiting: Cell<usize>,
    /// The queue's task exists (running, or parked on `arrived`).
    draining: Cell<bool>,
    /// Wakes the parked task: a message arrived, or the owner is gone.
    arrived: Rc<LocalSignal>,
}

impl Drop for AckQueue {
    fn drop(&mut self) {
        self.arrived.notify();
    }
}

/// Who waits for a publish's answer.
pub struct AckTicket {
    /// Where the pub ack goes (none: the publisher asked for no reply).
    pub reply: Option<Box<str>>,
    pub started: Instant,
    /// Told once the ack is sent (a republished copy's publisher waits for it).
    pub done: Option<Rc<LocalSignal>>,
}

struct PendingAck {
    ticket: AckTicket,
    state: AckState,
}

enum AckState {
    /// Not appended yet: an owned copy, appended in turn by the queue's task.
    Waiting(Box<OwnedMessage>),
    /// In the log's open group; acked once its group is durable.
    Appended(Box<AppendedMessage>),
    /// Answered without waiting for a group (a duplicate, a refusal), sent in turn.
    Answered(Result<(u64, bool), Error>),
}

/// The front of the queue, handed to its task: settle it (if appended), then answer.
pub enum Front {
    Appended(Box<AppendedMessage>),
    /// The sequence and whether it was a duplicate, or why it was refused.
    Answered(Result<(u64, bool), Error>),
}

/// A client's message, borrowed from where it was read.
pub struct ClientMessage<'a> {
    /// The subject it was published to (captured by the stream).
    pub subject: &'a str,
    pub headers: &'a [u8],
    pub payload: &'a [u8],
}

struct OwnedMessage {
    subject: String,
    headers: Vec<u8>,
    payload: Vec<u8>,
}

/// A message in the log's open group, waiting for its group commit.
pub struct AppendedMessage {
    pub pending: PendingAppend,
    /// The subject stored (after the stream's subject transform), for consumers.
    pub subject: Box<str>,
    pub header_bytes: usize,
    pub payload_bytes: usize,
    pub keep: Keep,
    pub republish: Option<RepublishCopy>,
}

/// What a stream with `republish` copies once the message is durable.
pub struct RepublishCopy {
    /// The rules the message was appended under (their `republish` is set).
    pub rules: Rc<StreamRules>,
    /// The stored subject's sequence before this message (0: none).
    pub previous_seq: u64,
    pub headers: Vec<u8>,
    pub payload: Vec<u8>,
}

impl StreamOwner {
    pub fn new(stream: Rc<Stream>, rules: StreamRules) -> StreamOwner {
        StreamOwner {
            name: stream.name().into(),
            stream,
            rules: RefCell::new(Rc::new(rules)),
            acks: AckQueue::default(),
        }
    }

    pub fn name(&self) -> &Rc<str> {
        &self.name
    }

    pub fn stream(&self) -> &Rc<Stream> {
        &self.stream
    }

    pub fn rules(&self) -> Rc<StreamRules> {
        self.rules.borrow().clone()
    }

    /// The stream's config changed: later writes follow `rules`.
    pub fn set_rules(&self, rules: StreamRules) {
        *self.rules.borrow_mut() = Rc::new(rules);
    }

    /// Takes a client's message: appended now unless it must wait (`must_wait`, or
    /// messages already waiting), queued for its answer either way. `interested` says
    /// whether a consumer or follower of the stream takes messages on a stored subject
    /// (asked under interest retention). True when the queue's task must be started; a
    /// parked one is woken.
    pub fn take(
        &self,
        message: ClientMessage<'_>,
        ticket: AckTicket,
        must_wait: bool,
        interested: &dyn Fn(&str) -> bool,
    ) -> bool {
        let waits = must_wait || self.acks.waiting.get() > 0;
        let state = match waits {
            true => None,
            false => self.append_now(&message, interested),
        };
        let state = state.unwrap_or_else(|| {
            self.acks.waiting.set(self.acks.waiting.get() + 1);
            AckState::Waiting(Box::new(OwnedMessage {
                subject: message.subject.to_string(),
                headers: message.headers.to_vec(),
                payload: message.payload.to_vec(),
            }))
        });
        self.acks.entries.borrow_mut().push_back(PendingAck { ticket, state });
        if self.acks.draining.replace(true) {
            self.acks.arrived.notify();
            return false;
        }
        true
    }

    /// Whether messages wait to be appended (the queue's task appends them first).
    pub fn has_waiting(&self) -> bool {
        self.acks.waiting.get() > 0
    }

    /// Appends the oldest waiting message, waiting for the log's room if it must. The
    /// caller has waited for what else it waits for (consumers' deliveries).
    pub async fn append_next_waiting(&self, interested: &dyn Fn(&str) -> bool) {
        // Only the queue's task takes entries out, so the index holds across the awaits.
        let taken = {
            let mut entries = self.acks.entries.borrow_mut();
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
            self.acks.waiting.set(0);
            return;
        };
        let message = ClientMessage { subject: &message.subject, headers: &message.headers, payload: &message.payload };
        let state = loop {
            if let Some(state) = self.append_now(&message, interested) {
                break state;
            }
            let request = PublishRequest::client(message.subject, message.headers, message.payload);
            if let Err(error) = self.stream.make_room(request).await {
                break AckState::Answered(Err(error));
            }
        };
        if let Some(entry) = self.acks.entries.borrow_mut().get_mut(index) {
            entry.state = state;
        }
        self.acks.waiting.set(self.acks.waiting.get() - 1);
    }

    /// Takes the front of the queue for its task; `None` when the queue is empty (the task
    /// parks). Call only when nothing waits (`has_waiting`).
    pub fn pop_front(&self) -> Option<(AckTicket, Front)> {
        let PendingAck { ticket, state } = self.acks.entries.borrow_mut().pop_front()?;
        let front = match state {
            AckState::Answered(outcome) => Front::Answered(outcome),
            AckState::Appended(message) => Front::Appended(message),
            AckState::Waiting(_) => unreachable!("waiting entries are appended first"),
        };
        Some((ticket, front))
    }

    /// Parks the queue's task of `owner` (whose queue it found empty) until a message
    /// arrives; the owner again, or `None` when it is gone (the task ends). The task holds
    /// no strong reference while parked, so a deleted stream's owner is dropped at once.
    pub async fn parked(owner: Rc<StreamOwner>) -> Option<Rc<StreamOwner>> {
        let arrived = owner.acks.arrived.clone();
        let weak = Rc::downgrade(&owner);
        drop(owner); // shadowing it would keep it alive while parked
        loop {
            arrived.notified().await;
            let owner = weak.upgrade()?;
            if !owner.acks.entries.borrow().is_empty() {
                return Some(owner);
            }
        }
    }

    /// Appends `message` without an `.await`; `None` when it has to wait (a roll).
    fn append_now(&self, message: &ClientMessage<'_>, interested: &dyn Fn(&str) -> bool) -> Option<AckState> {
        let rules = self.rules();
        if let Err(error) = rules.check_publish() {
            return Some(AckState::Answered(Err(error)));
        }
        // The subject transform decides the subject stored (and seen by consumers and
        // republish); the capture was on `captured`.
        let captured = message.subject;
        let subject = rules.stored_subject(captured);
        let previous_seq = match rules.republish {
            Some(_) => self.last_seq_on(&subject),
            None => 0,
        };
        let keep = match rules.retention == Retention::Interest && !interested(&subject) {
            true => Keep::Skip,
            false => Keep::Store,
        };
        let (headers, payload) = (message.headers, message.payload);
        let origin = Origin::Client;
        let request = PublishRequest { origin, captured, subject: &subject, headers, payload, keep, at_ns: None };
        let pending = match self.stream.append_now(request) {
            Ok(None) => return None,
            Err(error) => return Some(AckState::Answered(Err(error))),
            Ok(Some(Appended::Duplicate(seq))) => return Some(AckState::Answered(Ok((seq, true)))),
            Ok(Some(Appended::Pending(pending))) => pending,
        };
        let republish = rules.republish.is_some().then(|| RepublishCopy {
            rules: rules.clone(),
            previous_seq,
            headers: headers.to_vec(),
            payload: payload.to_vec(),
        });
        let subject = match subject {
            Cow::Borrowed(subject) => subject.into(),
            Cow::Owned(subject) => subject.into_boxed_str(),
        };
        Some(AckState::Appended(Box::new(AppendedMessage {
            pending,
            subject,
            header_bytes: headers.len(),
            payload_bytes: payload.len(),
            keep,
            republish,
        })))
    }

    /// The last sequence the stream stored under the literal `subject` (0: none).
    pub fn last_seq_on(&self, subject: &str) -> u64 {
        self.stream.last_per_subject_at(u64::MAX, &[subject.to_string()]).last().copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{FlushStats, SimDisk};
    use crate::stream::record_cache::RecordCache;
    use crate::stream::{ShardId, StorageKind, StreamConfig, StreamContext, SystemClock};

    fn on_executor<F: std::future::Future<Output = ()> + 'static>(test: impl FnOnce() -> F + Send + 'static) {
        glommio::LocalExecutorBuilder::default().spawn(|| test()).expect("executor").join().expect("join");
    }

    async fn memory_owner() -> Rc<StreamOwner> {
        let context = StreamContext {
            disk: Rc::new(SimDisk::volatile()),
            flush_stats: Rc::new(FlushStats::default()),
            clock: Rc::new(SystemClock),
            records: Rc::new(RecordCache::default()),
            maintenance: Rc::new(LocalSignal::default()),
        };
        let mut config = StreamConfig::new("PARK", &["park.>"]);
        config.storage = StorageKind::Memory;
        let stream = Stream::create(&context, "/PARK".into(), config, ShardId(0), None).await.expect("create");
        Rc::new(StreamOwner::new(Rc::new(stream), StreamRules::default()))
    }

    fn take_one(owner: &StreamOwner) -> bool {
        let ticket = AckTicket { reply: None, started: Instant::now(), done: None };
        let message = ClientMessage { subject: "park.a", headers: b"", payload: b"x" };
        owner.take(message, ticket, false, &|_| true)
    }

    /// What the queue's task does before it answers the front: appends what waits.
    async fn front(owner: &StreamOwner) -> Option<(AckTicket, Front)> {
        while owner.has_waiting() {
            owner.append_next_waiting(&|_| true).await;
        }
        owner.pop_front()
    }

    #[test]
    fn the_parked_task_wakes_for_the_next_message_and_ends_with_its_owner() {
        on_executor(|| async {
            let owner = memory_owner().await;
            assert!(take_one(&owner), "the first message starts the task");
            assert!(matches!(front(&owner).await, Some((_, Front::Appended(_)))));
            assert!(front(&owner).await.is_none(), "the queue is empty: the task parks");
            let parked = glommio::spawn_local(StreamOwner::parked(owner.clone()));
            futures_lite::future::yield_now().await;
            assert!(!take_one(&owner), "a parked task is woken, not started again");
            let woken = parked.await.expect("woken with its owner");
            assert!(Rc::ptr_eq(&woken, &owner));
            assert!(front(&owner).await.is_some());
            drop(woken);

            // Parked again, now holding the only reference: the owner goes, the task ends.
            let weak = Rc::downgrade(&owner);
            let parked = glommio::spawn_local(StreamOwner::parked(owner));
            assert!(parked.await.is_none(), "the task ends when its owner is gone");
            assert!(weak.upgrade().is_none(), "a parked task keeps no owner alive");
        });
    }
}
