//! A durable consumer on the embedded engine: [`Engine::create_consumer`](super::Engine::create_consumer)
//! makes or reopens one; [`DurableConsumer::fetch`] hands out the next messages and
//! [`DurableConsumer::ack`] / [`nak`](DurableConsumer::nak) / [`term`](DurableConsumer::term)
//! settle them ([`DurableConsumer::settle`] for the rest). It runs the server's consumer
//! state machine (`crate::consumer`) as a pull consumer whose only pull requests are the
//! fetches, with a timer wheel of its own driven by the engine's clock.
//!
//! CONTRACT: what a call changed (delivered position, acks, the pending set) is on stable
//! storage when the call returns `Ok` (one atomic file replace, fdatasync included), so a
//! reopened engine resumes after the last acknowledged message and redelivers the ones
//! delivered but not acknowledged. Calls made together share one state write. Redelivery
//! after `ack_wait` happens at a fetch: the fetch looks at the clock first. A consumer
//! sees only messages published through [`Engine::publish`](super::Engine::publish) that
//! are durable (and what the stream held when the engine opened). Acks do not remove
//! messages from the stream (no interest or work-queue retention on the engine).

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;

use super::consumer_config::ConsumerConfig;
use super::consumer_files::{ConsumerFiles, Durability};
use super::stream_view::EngineStreamView;
use crate::consumer::{
    AckSubject, AlwaysInterested, Consumer, ConsumerId, ConsumerSeq, ConsumerState, Context, Counters, DeliveryCount,
    Effect, Position, ShardTimers, StreamSeq, Tick, TimerWheel,
};
use crate::limits::{CONSUMER_TICK_NANOS, ENGINE_CONSUMER_FETCH_MAX};
use crate::store::{self, Disk};
use crate::stream::{Clock, Error, StoredMessage, Stream};

/// Every embedded consumer has its own wheel, so one id serves all.
const CONSUMER_ID: ConsumerId = ConsumerId(1);
/// The reply subject of the fetch's pull request (never sent anywhere).
const FETCH_INBOX: &str = "_ENGINE.FETCH";

/// What identifies one delivery, for acking it: stream and consumer sequence, delivery
/// count (1 the first time), and how many matching messages were still undelivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeliveryInfo {
    pub stream_seq: StreamSeq,
    pub consumer_seq: ConsumerSeq,
    pub delivery_count: DeliveryCount,
    /// Matching messages not yet delivered after this one.
    pub pending: u64,
    /// When the message was stored (Unix nanoseconds).
    pub timestamp_ns: i64,
}

/// What to do with a delivery ([`DurableConsumer::settle`]); the wire's ack bodies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settle {
    /// Done with it (`+ACK`).
    Ack,
    /// Redeliver it at the next fetch (`-NAK`).
    Nak,
    /// Redeliver it once this much time has passed (`-NAK {"delay": ns}`).
    NakWithDelay(std::time::Duration),
    /// Still working on it: its ack wait starts again (`+WPI`).
    InProgress,
    /// Never deliver it again (`+TERM`).
    Term,
}

/// A message a fetch handed out, with its delivery.
#[derive(Clone, Debug)]
pub struct ConsumedMessage {
    pub message: StoredMessage,
    pub delivery: DeliveryInfo,
}

/// A consumer's position and counts (the dynamic part of nats-server's consumer info).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumerInfo {
    /// Last delivered (stream and consumer sequence).
    pub delivered: Position,
    /// Everything at or below this is acknowledged.
    pub ack_floor: Position,
    /// Delivered, not acknowledged yet.
    pub num_ack_pending: u64,
    /// Pending messages delivered more than once.
    pub num_redelivered: u64,
    /// Matching messages not delivered yet.
    pub num_pending: u64,
}

/// A durable consumer of one stream; see the module documentation. Shared between the
/// engine's tasks as an `Rc`; every call runs on the engine's shard.
pub struct DurableConsumer {
    config: ConsumerConfig,
    stream: Rc<Stream>,
    stream_name: String,
    /// The stream's last durable sequence, kept by the engine (see `Engine::publish`).
    visible_last: Rc<Cell<u64>>,
    clock: Rc<dyn Clock>,
    disk: Rc<dyn Disk>,
    stream_dir: PathBuf,
    machine: RefCell<Machine>,
    /// Bumped by every call that changed what is persisted.
    changed: Cell<u64>,
    /// The `changed` value the last state write covered.
    persisted: Cell<u64>,
    /// One state write at a time.
    writing: glommio::sync::Semaphore,
    deleted: Cell<bool>,
}

/// The state machine, its timers, and what of the stream it has been told about.
struct Machine {
    consumer: Consumer,
    timers: ShardTimers,
    /// The stream's durable messages up to here were given to `Consumer::on_stream_append`.
    seen_last: u64,
    /// `Stream::removed_total` when the consumer last heard of removals.
    seen_removed: u64,
}

/// How a consumer comes to be.
pub(super) enum Start<'a> {
    New,
    Restore(&'a ConsumerState),
}

/// What a step of the state machine asks for.
struct Step {
    deliveries: Vec<DeliveryInfo>,
    /// The `changed` generation to persist (unchanged when nothing changed).
    generation: u64,
}

impl DurableConsumer {
    /// Builds the consumer over `stream`, new (positioned by its deliver policy) or
    /// restored from its saved state. Writes nothing.
    pub(super) fn assemble(
        config: ConsumerConfig,
        stream: Rc<Stream>,
        visible_last: Rc<Cell<u64>>,
        clock: Rc<dyn Clock>,
        disk: Rc<dyn Disk>,
        start: Start<'_>,
    ) -> DurableConsumer {
        let now = tick_at(clock.now_ns());
        let mut timers = TimerWheel::new(now);
        let last = visible_last.get();
        let view = EngineStreamView { stream: &stream, visible_last: last };
        let mut effects = Vec::new();
        let mut cx =
            Context { now, stream: &view, interest: &AlwaysInterested, timers: &mut timers, effects: &mut effects };
        let stream_name = stream.name();
        let consumer = match start {
            Start::New => Consumer::new(CONSUMER_ID, &stream_name, &config.name, config.settings(), &mut cx),
            Start::Restore(state) => {
                match Consumer::restore(CONSUMER_ID, &stream_name, &config.name, config.settings(), state, &mut cx) {
                    Ok(consumer) => consumer,
                    Err(error) => {
                        tracing::error!(stream = %stream_name, consumer = %config.name, ?error,
                            "consumer state does not fit its stream; resuming from its config");
                        let empty = ConsumerState::default();
                        Consumer::restore(CONSUMER_ID, &stream_name, &config.name, config.settings(), &empty, &mut cx)
                            .expect("an empty state fits any stream")
                    }
                }
            }
        };
        let seen_removed = stream.removed_total();
        let machine = Machine { consumer, timers, seen_last: last, seen_removed };
        DurableConsumer {
            stream_dir: stream.dir().to_path_buf(),
            config,
            stream,
            stream_name,
            visible_last,
            clock,
            disk,
            machine: RefCell::new(machine),
            // A new consumer's first state is written by its creator.
            changed: Cell::new(1),
            persisted: Cell::new(0),
            writing: glommio::sync::Semaphore::new(1),
            deleted: Cell::new(false),
        }
    }

    /// The configuration it was created with.
    pub fn config(&self) -> &ConsumerConfig {
        &self.config
    }

    /// The stream it reads.
    pub fn stream_name(&self) -> &str {
        &self.stream_name
    }

    /// Up to `batch` messages (at most `limits::ENGINE_CONSUMER_FETCH_MAX`), without
    /// waiting: first those whose ack wait passed or that were NAKed (lowest sequence
    /// first, delivery count raised), then new matching ones in stream order. Fewer or
    /// none at the end of the stream or at `max_ack_pending`. The delivered position is
    /// durable on return.
    pub async fn fetch(&self, batch: usize) -> Result<Vec<ConsumedMessage>, Error> {
        let batch = batch.min(ENGINE_CONSUMER_FETCH_MAX);
        self.check_live()?;
        if batch == 0 {
            return Ok(Vec::new());
        }
        let body = format!("{{\"batch\":{batch}}}");
        let step = self.step(|consumer, cx| {
            consumer.on_pull_request(FETCH_INBOX, body.as_bytes(), cx);
            // The request ends with this call, answered or not.
            consumer.on_reply_interest_lost(FETCH_INBOX, cx);
        });
        self.persist(step.generation).await?;
        let mut messages = Vec::with_capacity(step.deliveries.len());
        for delivery in step.deliveries {
            match self.stream.get(delivery.stream_seq.get()).await {
                Ok(message) => messages.push(ConsumedMessage { message, delivery }),
                // Removed since (limits, purge): settled at its next redelivery.
                Err(Error::NoMessageFound) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(messages)
    }

    /// Acknowledges a delivery (with [`AckPolicy::All`](super::AckPolicy::All), every
    /// delivery before it too); durable on return. Acking twice changes nothing.
    pub async fn ack(&self, delivery: &DeliveryInfo) -> Result<(), Error> {
        self.settle(delivery, Settle::Ack).await
    }

    /// Asks for a redelivery now: the next fetch hands the message out again.
    pub async fn nak(&self, delivery: &DeliveryInfo) -> Result<(), Error> {
        self.settle(delivery, Settle::Nak).await
    }

    /// Never deliver this message again (settled as if acknowledged).
    pub async fn term(&self, delivery: &DeliveryInfo) -> Result<(), Error> {
        self.settle(delivery, Settle::Term).await
    }

    /// Acts on a delivery as a `$JS.ACK` message with that body does on the wire; the
    /// change is durable on return. A delivery that is no longer pending (acked, termed,
    /// past `max_deliver`) changes nothing.
    pub async fn settle(&self, delivery: &DeliveryInfo, settle: Settle) -> Result<(), Error> {
        self.check_live()?;
        let delay_body;
        let body: &[u8] = match settle {
            Settle::Ack => b"+ACK",
            Settle::Nak => b"-NAK",
            Settle::NakWithDelay(delay) => {
                delay_body = format!("-NAK {{\"delay\": {}}}", delay.as_nanos().min(i64::MAX as u128));
                delay_body.as_bytes()
            }
            Settle::InProgress => b"+WPI",
            Settle::Term => b"+TERM",
        };
        let subject = AckSubject {
            domain: None,
            account_hash: None,
            stream: &self.stream_name,
            consumer: &self.config.name,
            delivery_count: delivery.delivery_count,
            stream_seq: delivery.stream_seq,
            consumer_seq: delivery.consumer_seq,
            timestamp_nanos: delivery.timestamp_ns,
            pending: delivery.pending,
        };
        let step = self.step(|consumer, cx| consumer.on_ack(&subject, body, None, cx));
        self.persist(step.generation).await
    }

    /// Position and counts as of now (ack waits that passed count as pending).
    pub fn info(&self) -> ConsumerInfo {
        let Counters { delivered, ack_floor, num_ack_pending, num_redelivered, num_pending, .. } =
            self.machine.borrow().consumer.counters();
        ConsumerInfo { delivered, ack_floor, num_ack_pending, num_redelivered, num_pending }
    }

    /// Runs `action` on the state machine after bringing it up to date: the stream's new
    /// durable messages and removals, and the timers due by now. Synchronous: no borrow
    /// outlives it.
    fn step(&self, action: impl FnOnce(&mut Consumer, &mut Context<'_>)) -> Step {
        let mut effects = Vec::new();
        {
            let mut machine = self.machine.borrow_mut();
            let Machine { consumer, timers, seen_last, seen_removed } = &mut *machine;
            let now = tick_at(self.clock.now_ns()).max(timers.now());
            let visible_last = self.visible_last.get();
            let view = EngineStreamView { stream: &self.stream, visible_last };
            let mut expired = Vec::new();
            timers.advance(now, &mut expired);
            let mut cx = Context { now, stream: &view, interest: &AlwaysInterested, timers, effects: &mut effects };
            self.catch_up(consumer, seen_last, visible_last, &mut cx);
            let removed = self.stream.removed_total();
            if removed != *seen_removed {
                *seen_removed = removed;
                consumer.on_stream_removed(&mut cx);
            }
            if !expired.is_empty() {
                consumer.on_timers(expired.iter().map(|timer| timer.key.kind), &mut cx);
            }
            action(consumer, &mut cx);
        }
        let mut deliveries = Vec::new();
        for effect in effects {
            match effect {
                Effect::Deliver(delivery) => deliveries.push(DeliveryInfo {
                    stream_seq: delivery.stream_seq,
                    consumer_seq: delivery.consumer_seq,
                    delivery_count: delivery.delivery_count,
                    pending: delivery.pending,
                    timestamp_ns: delivery.timestamp_nanos,
                }),
                Effect::StateChanged => self.changed.set(self.changed.get() + 1),
                Effect::Advisory(advisory) => {
                    let (stream, consumer) = (&self.stream_name, &self.config.name);
                    tracing::debug!(%stream, %consumer, ?advisory, "consumer advisory");
                }
                // Status replies answer the fetch's request, which has ended; no double
                // acks, no retention, no deletion by inactivity here.
                Effect::Status(_) | Effect::AckReply { .. } | Effect::Acked { .. } | Effect::Delete(_) => {}
            }
        }
        Step { deliveries, generation: self.changed.get() }
    }

    /// Tells the consumer of each durable message it has not heard of (it counts the
    /// matching ones as pending).
    fn catch_up(&self, consumer: &mut Consumer, seen_last: &mut u64, visible_last: u64, cx: &mut Context<'_>) {
        while *seen_last < visible_last {
            *seen_last += 1;
            let seq = *seen_last;
            let Some(meta) = self.stream.message_summary(seq).map(EngineStreamView::meta) else { continue };
            self.stream.with_subject(seq, |subject| consumer.on_stream_append(&meta, subject.as_bytes(), cx));
        }
    }

    /// Makes the state durable as of `generation` (a no-op if a write already covered it).
    async fn persist(&self, generation: u64) -> Result<(), Error> {
        if self.persisted.get() >= generation {
            return Ok(());
        }
        let _permit = self.writing.acquire_permit(1).await.map_err(|error| {
            let closed = std::io::Error::other(error.to_string());
            store::Error::io("consumer state write", &self.stream_dir, &closed)
        })?;
        // A write that finished while this one waited may have covered it.
        if self.persisted.get() >= generation {
            return Ok(());
        }
        let covered = self.changed.get();
        let state = self.machine.borrow().consumer.state();
        let durability = Durability::Synced;
        ConsumerFiles::EMBEDDED
            .write_state(&*self.disk, &self.stream_dir, &self.config.name, &state, durability)
            .await?;
        self.persisted.set(self.persisted.get().max(covered));
        Ok(())
    }

    /// Writes the current state (the creator of a new consumer calls this once).
    pub(super) async fn persist_now(&self) -> Result<(), Error> {
        self.persist(self.changed.get()).await
    }

    /// After deletion every call answers `ConsumerNotFound`.
    pub(super) fn mark_deleted(&self) {
        self.deleted.set(true);
    }

    fn check_live(&self) -> Result<(), Error> {
        if self.deleted.get() {
            return Err(Error::ConsumerNotFound { stream: self.stream_name.clone(), name: self.config.name.clone() });
        }
        Ok(())
    }
}

/// The consumer's clock tick at `now_ns` (Unix nanoseconds).
fn tick_at(now_ns: i64) -> Tick {
    Tick(u64::try_from(now_ns).unwrap_or(0) / CONSUMER_TICK_NANOS)
}
