//! The consumers of one shard's streams: who they are, the shard's one timer wheel, and
//! the queue of effects waiting to be carried out (DESIGN §5).
//!
//! Every call into a [`Consumer`] goes through [`ConsumerRegistry::call`], which builds
//! its [`Context`] (tick, stream view, interest, wheel) and queues the effects it
//! returns, tagged with the consumer. The server's consumer pump carries them out in
//! order (`consumer_effects`), so deliveries of one consumer leave in consumer-sequence
//! order. Borrows of the registry never outlive a synchronous call.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::future::Future;
use std::rc::Rc;
use std::task::{Poll, Waker};
use std::time::Instant;

use crate::consumer::{
    Consumer, ConsumerId, Context, Effect, Expired, InterestView, MessageMeta, ShardTimers, StreamSeq, Tick, TimerKey,
};
use crate::engine::EngineStreamView;
use crate::jetstream::consumer_config::ConsumerConfig;
use crate::stream::Stream;
use crate::subject::TokenHashBuilder;

/// What the service needs from the server: subscription interest and a way to publish.
pub trait Outlet {
    fn has_interest(&self, subject: &str) -> bool;
    /// Publishes to the subscribers of `to`; the message carries `subject` (the stored
    /// subject for deliveries) and `reply`.
    fn publish(&self, to: &str, subject: &[u8], reply: Option<&[u8]>, headers: Option<&[u8]>, payload: &[u8]);
    /// Publishes as a client would (a stream's `republish`): to the subscribers of
    /// `subject` and into any stream that captures it, resolving once that stream stored
    /// it. Without streams: `publish`.
    fn republish<'a>(&'a self, subject: &'a str, headers: &'a [u8], payload: &'a [u8]) -> LocalFuture<'a> {
        self.publish(subject, subject.as_bytes(), None, Some(headers), payload);
        Box::pin(async {})
    }
    /// A client's publish is done (acked or refused), `latency` after it came.
    fn stored(&self, _ok: bool, _latency: std::time::Duration) {}
}

/// A future on the shard's own executor (not `Send`).
pub type LocalFuture<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + 'a>>;

/// Before the server attaches its outlet (while restoring at start) nobody is subscribed.
struct NoOutlet;

impl InterestView for NoOutlet {
    fn has_interest(&self, _subject: &str) -> bool {
        false
    }
}

struct OutletInterest<'a>(&'a dyn Outlet);

impl InterestView for OutletInterest<'_> {
    fn has_interest(&self, subject: &str) -> bool {
        self.0.has_interest(subject)
    }
}

/// One consumer and what the service keeps beside it.
pub struct ConsumerEntry {
    pub consumer: Consumer,
    pub stream: Rc<str>,
    pub name: Rc<str>,
    pub config: ConsumerConfig,
    pub created_ns: i64,
    /// Durable on file storage: config and state are kept on disk.
    pub persisted: bool,
    /// State changed since it was last written.
    pub dirty: bool,
    /// A state write is in flight.
    pub writing: bool,
    pub last_write: Tick,
    /// When a state write last waited for the disk (see `persist_consumer`).
    pub last_sync: Tick,
    /// The last state write (or the state loaded at start) waited for the disk; false
    /// while a write that reached only the page cache is the newest.
    pub last_write_synced: bool,
    /// The last state write failed (its error was logged; the next success is too).
    pub write_failing: bool,
    /// Wall-clock times (Unix ns) of the last delivery and the last ack, for consumer
    /// info's `delivered.last_active` and `ack_floor.last_active`. Not persisted.
    pub last_delivered_ns: Option<i64>,
    pub last_acked_ns: Option<i64>,
    /// Its create request is not answered yet: an inactivity deletion waits until it is
    /// (a threshold of 1 ns must not delete a consumer before its create reply).
    pub creating: bool,
}

/// Per stream: its consumers by name and what the consumers may see of it.
#[derive(Default)]
pub struct StreamConsumers {
    pub by_name: BTreeMap<String, ConsumerId>,
    /// Highest sequence known durable.
    pub visible_last: u64,
    /// `Stream::removed_total` when the consumers last recounted.
    pub removed_seen: u64,
}

/// An effect waiting to be carried out.
pub struct QueuedEffect {
    pub consumer: ConsumerId,
    pub stream: Rc<str>,
    pub effect: Effect,
}

#[derive(Default)]
pub struct Registry {
    pub streams: HashMap<String, StreamConsumers, TokenHashBuilder>,
    pub consumers: HashMap<ConsumerId, ConsumerEntry>,
    /// Consumers whose state may need writing (a superset of those with `dirty` set), so
    /// the pump never scans every consumer.
    pub dirty_ids: BTreeSet<ConsumerId>,
    next_id: u64,
}

pub struct ConsumerRegistry {
    pub(super) registry: RefCell<Registry>,
    timers: RefCell<ShardTimers>,
    queue: RefCell<VecDeque<QueuedEffect>>,
    outlet: RefCell<Option<Rc<dyn Outlet>>>,
    origin: Instant,
    /// Wall-clock nanoseconds at `origin`: ticks become times for info (`pinned_ts`).
    origin_wall_ns: i64,
    notified: Cell<bool>,
    waker: RefCell<Option<Waker>>,
    /// Wakes the state writer (`run_persister`) when a durable's state needs writing.
    pub(super) persist_wanted: crate::shard::LocalSignal,
    /// Tasks waiting for a consumer's state write to finish.
    write_waiters: RefCell<Vec<Waker>>,
    writes_finished: Cell<u64>,
    /// Tasks waiting for queued effects to be carried out (`effects_carried_out`).
    take_waiters: RefCell<Vec<Waker>>,
    /// Effects ever queued, and ever carried out (the queue is FIFO, so the first
    /// `effects_finished` queued ones are done). A run the pump took counts as carried
    /// out when the pump comes back for more: it carries out one run at a time.
    effects_queued: Cell<u64>,
    effects_finished: Cell<u64>,
    /// Size of the run the pump took last (not yet counted as finished).
    run_taken: Cell<u64>,
}

impl Default for ConsumerRegistry {
    fn default() -> Self {
        ConsumerRegistry {
            registry: RefCell::new(Registry::default()),
            timers: RefCell::new(ShardTimers::new(Tick::ZERO)),
            queue: RefCell::new(VecDeque::new()),
            outlet: RefCell::new(None),
            origin: Instant::now(),
            origin_wall_ns: super::now_ns(),
            notified: Cell::new(false),
            waker: RefCell::new(None),
            persist_wanted: crate::shard::LocalSignal::default(),
            write_waiters: RefCell::new(Vec::new()),
            writes_finished: Cell::new(0),
            take_waiters: RefCell::new(Vec::new()),
            effects_queued: Cell::new(0),
            effects_finished: Cell::new(0),
            run_taken: Cell::new(0),
        }
    }
}

impl ConsumerRegistry {
    pub fn attach(&self, outlet: Rc<dyn Outlet>) {
        *self.outlet.borrow_mut() = Some(outlet);
    }

    pub fn outlet(&self) -> Option<Rc<dyn Outlet>> {
        self.outlet.borrow().clone()
    }

    /// Milliseconds since the shard started, from a monotonic clock.
    pub fn now(&self) -> Tick {
        Tick(self.origin.elapsed().as_millis() as u64)
    }

    /// The wall-clock time (Unix nanoseconds) of `tick`, to the tick's millisecond.
    pub fn wall_ns(&self, tick: Tick) -> i64 {
        let millis = tick.since(Tick::ZERO) as i64;
        self.origin_wall_ns.saturating_add(millis.saturating_mul(crate::limits::CONSUMER_TICK_NANOS as i64))
    }

    pub fn next_id(&self) -> ConsumerId {
        let mut registry = self.registry.borrow_mut();
        registry.next_id += 1;
        ConsumerId(registry.next_id)
    }

    /// The stream's entry, created on first use with everything stored so far visible.
    pub fn ensure_stream(&self, stream: &Stream) {
        let name = stream.name();
        let mut registry = self.registry.borrow_mut();
        registry.streams.entry(name).or_insert_with(|| StreamConsumers {
            by_name: BTreeMap::new(),
            visible_last: stream.last_seq(),
            removed_seen: stream.removed_total(),
        });
    }

    pub fn find(&self, stream: &str, name: &str) -> Option<ConsumerId> {
        self.registry.borrow().streams.get(stream)?.by_name.get(name).copied()
    }

    pub fn ids_of(&self, stream: &str) -> Vec<ConsumerId> {
        let registry = self.registry.borrow();
        registry.streams.get(stream).map(|s| s.by_name.values().copied().collect()).unwrap_or_default()
    }

    pub fn names_of(&self, stream: &str) -> Vec<String> {
        let registry = self.registry.borrow();
        registry.streams.get(stream).map(|s| s.by_name.keys().cloned().collect()).unwrap_or_default()
    }

    pub fn count(&self) -> usize {
        self.registry.borrow().consumers.len()
    }

    /// The last sequence of `stream` known durable (what consumers and followers see).
    pub(super) fn visible_last_of(&self, stream: &Stream) -> u64 {
        self.visible_last(stream)
    }

    fn visible_last(&self, stream: &Stream) -> u64 {
        let registry = self.registry.borrow();
        registry.streams.get(&stream.name()).map_or_else(|| stream.last_seq(), |s| s.visible_last)
    }

    /// Builds a consumer with a context (`entry_of`), then registers it.
    pub fn insert(&self, stream: &Stream, entry_of: impl FnOnce(&mut Context<'_>) -> ConsumerEntry) -> ConsumerId {
        self.ensure_stream(stream);
        let mut effects = Vec::new();
        let visible_last = self.visible_last(stream);
        let entry = self.with_context(stream, visible_last, &mut effects, entry_of);
        let id = entry.consumer.id();
        let stream_name = entry.stream.clone();
        {
            let mut registry = self.registry.borrow_mut();
            if let Some(consumers) = registry.streams.get_mut(&*stream_name) {
                consumers.by_name.insert(entry.name.to_string(), id);
            }
            if entry.dirty {
                registry.dirty_ids.insert(id);
                self.persist_wanted.notify();
            }
            registry.consumers.insert(id, entry);
        }
        self.enqueue(id, &stream_name, effects);
        id
    }

    /// Calls consumer `id` of `stream` with a fresh context; false if it is gone.
    pub fn call(
        &self,
        stream: &Stream,
        id: ConsumerId,
        action: impl FnOnce(&mut ConsumerEntry, &mut Context<'_>),
    ) -> bool {
        let visible_last = self.visible_last(stream);
        let mut effects = Vec::new();
        let stream_name = {
            let mut registry = self.registry.borrow_mut();
            let Some(entry) = registry.consumers.get_mut(&id) else { return false };
            self.with_context(stream, visible_last, &mut effects, |cx| action(entry, cx));
            entry.stream.clone()
        };
        self.enqueue(id, &stream_name, effects);
        true
    }

    /// Removes a consumer from the maps (after `Consumer::delete`).
    pub fn remove(&self, id: ConsumerId) -> Option<ConsumerEntry> {
        let mut registry = self.registry.borrow_mut();
        let entry = registry.consumers.remove(&id)?;
        if let Some(consumers) = registry.streams.get_mut(&*entry.stream) {
            if consumers.by_name.get(&*entry.name) == Some(&id) {
                consumers.by_name.remove(&*entry.name);
            }
        }
        registry.dirty_ids.remove(&id);
        Some(entry)
    }

    /// A stream went away: forget its consumers (their files went with its directory).
    pub fn forget_stream(&self, stream: &str) -> Vec<ConsumerEntry> {
        let ids = self.ids_of(stream);
        let removed = ids.into_iter().filter_map(|id| self.remove(id)).collect();
        self.registry.borrow_mut().streams.remove(stream);
        removed
    }

    fn with_context<T>(
        &self,
        stream: &Stream,
        visible_last: u64,
        effects: &mut Vec<Effect>,
        body: impl FnOnce(&mut Context<'_>) -> T,
    ) -> T {
        let view = EngineStreamView { stream, visible_last };
        let outlet = self.outlet();
        let interest: Box<dyn InterestView + '_> = match &outlet {
            Some(outlet) => Box::new(OutletInterest(&**outlet)),
            None => Box::new(NoOutlet),
        };
        let mut timers = self.timers.borrow_mut();
        let mut cx = Context { now: self.now(), stream: &view, interest: &*interest, timers: &mut timers, effects };
        body(&mut cx)
    }

    /// A publish to `stream` is durable: it becomes visible and its consumers look at it.
    pub fn stream_appended(&self, stream: &Stream, seq: u64, subject: &str, header_bytes: usize, payload_bytes: usize) {
        let ids = stream.with_name(|name| {
            let mut registry = self.registry.borrow_mut();
            let Some(consumers) = registry.streams.get_mut(name) else { return None };
            consumers.visible_last = consumers.visible_last.max(seq);
            Some(consumers.by_name.values().copied().collect::<Vec<_>>())
        });
        let Some(ids) = ids else {
            self.ensure_stream(stream);
            return self.stream_appended(stream, seq, subject, header_bytes, payload_bytes);
        };
        // Nobody to tell (the usual case for a stream only written to): a consumer created
        // later starts from the stream as it is then.
        if ids.is_empty() {
            return;
        }
        if let Some(summary) = stream.message_summary(seq) {
            let meta = MessageMeta {
                seq: StreamSeq(seq),
                timestamp_nanos: summary.timestamp_ns,
                subject_bytes: subject.len() as u32,
                header_bytes: header_bytes as u32,
                payload_bytes: payload_bytes as u32,
            };
            for id in ids {
                self.call(stream, id, |entry, cx| entry.consumer.on_stream_append(&meta, subject.as_bytes(), cx));
            }
        }
        self.stream_maybe_removed(stream);
    }

    /// If the stream removed messages since the consumers last looked, they recount.
    pub fn stream_maybe_removed(&self, stream: &Stream) {
        self.settle_removals(stream, false);
    }

    /// The stream was just purged: consumers settle what it removed as a purge.
    pub fn stream_purged(&self, stream: &Stream) {
        self.settle_removals(stream, true);
    }

    fn settle_removals(&self, stream: &Stream, purged: bool) {
        let removed = stream.removed_total();
        let ids = {
            let mut registry = self.registry.borrow_mut();
            let Some(consumers) = registry.streams.get_mut(&stream.name()) else { return };
            if consumers.removed_seen == removed && !purged {
                return;
            }
            consumers.removed_seen = removed;
            consumers.by_name.values().copied().collect::<Vec<_>>()
        };
        for id in ids {
            self.call(stream, id, |entry, cx| {
                if purged {
                    entry.consumer.on_stream_purged(cx)
                } else {
                    entry.consumer.on_stream_removed(cx)
                }
            });
        }
    }

    /// Consumers whose deliver subject or waiting pull inboxes `pattern` may cover, for
    /// re-checking interest after a subscription change.
    pub fn affected_by_interest(&self, pattern: &[u8]) -> Vec<(Rc<str>, ConsumerId)> {
        let registry = self.registry.borrow();
        let covers = |subject: &str| crate::subject::matches(pattern, subject.as_bytes());
        registry
            .consumers
            .iter()
            .filter(|(_, entry)| match entry.consumer.push_state() {
                Some(push) => covers(&push.deliver_subject()),
                None => entry.consumer.waiting_requests().any(|request| covers(&request.reply)),
            })
            .map(|(id, entry)| (entry.stream.clone(), *id))
            .collect()
    }

    fn enqueue(&self, id: ConsumerId, stream: &Rc<str>, effects: Vec<Effect>) {
        if effects.is_empty() {
            self.wake();
            return;
        }
        let mut queue = self.queue.borrow_mut();
        self.effects_queued.set(self.effects_queued.get() + effects.len() as u64);
        for effect in effects {
            queue.push_back(QueuedEffect { consumer: id, stream: stream.clone(), effect });
        }
        drop(queue);
        self.wake();
    }

    pub fn pop_effect(&self) -> Option<QueuedEffect> {
        let popped = self.queue.borrow_mut().pop_front();
        self.took_run(u64::from(popped.is_some()));
        popped
    }

    /// Pops the deliveries at the front of the queue, at most `max` (they may be read
    /// together; nothing queued behind them is passed).
    pub fn pop_deliveries(&self, max: usize) -> Vec<QueuedEffect> {
        let mut queue = self.queue.borrow_mut();
        let mut run = Vec::new();
        while run.len() < max && matches!(queue.front(), Some(QueuedEffect { effect: Effect::Deliver(_), .. })) {
            run.extend(queue.pop_front());
        }
        drop(queue);
        self.took_run(run.len() as u64);
        run
    }

    /// The pump is back for more: its previous run is finished; it now takes `count`.
    fn took_run(&self, count: u64) {
        self.effects_finished.set(self.effects_finished.get() + self.run_taken.replace(count));
        debug_assert!(self.effects_finished.get() <= self.effects_queued.get());
        self.wake_take_waiters();
    }

    /// Resolves once every effect queued so far (deliveries included) has been carried
    /// out, so what it sent is on its way, ahead of anything sent after this resolves.
    /// Effects queued later are not waited for, so a busy pump cannot starve the caller.
    ///
    /// Two callers need this order on the wire. A publish that may remove messages
    /// (per-subject limits, rollups) waits first, so a message acknowledged to its
    /// publisher reaches the consumers due to get it even when the very next publish
    /// replaces it (KV watchers). A consumer info waits first, so its `num_pending` never
    /// counts as delivered a message the client has yet to receive (nats-py's KV watch
    /// ends its initial values on `num_pending == 0`).
    /// Resolves at once when no outlet is attached (no pump runs then).
    /// Whether `effects_carried_out` would wait now.
    pub fn effects_pending(&self) -> bool {
        self.outlet.borrow().is_some() && self.effects_finished.get() < self.effects_queued.get()
    }

    pub fn effects_carried_out(&self) -> impl Future<Output = ()> + '_ {
        let target = self.effects_queued.get();
        std::future::poll_fn(move |cx| {
            if self.outlet.borrow().is_none() || self.effects_finished.get() >= target {
                return Poll::Ready(());
            }
            self.take_waiters.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        })
    }

    fn wake_take_waiters(&self) {
        if self.take_waiters.borrow().is_empty() {
            return;
        }
        for waker in self.take_waiters.borrow_mut().drain(..) {
            waker.wake();
        }
    }

    /// Moves the wheel to now; the expired timers grouped by consumer, in order.
    pub fn expired_timers(&self) -> Vec<(ConsumerId, Vec<crate::consumer::TimerKind>)> {
        let mut expired: Vec<Expired<TimerKey>> = Vec::new();
        self.timers.borrow_mut().advance(self.now(), &mut expired);
        let mut grouped: Vec<(ConsumerId, Vec<crate::consumer::TimerKind>)> = Vec::new();
        for timer in expired {
            match grouped.iter_mut().find(|(id, _)| *id == timer.key.consumer) {
                Some((_, kinds)) => kinds.push(timer.key.kind),
                None => grouped.push((timer.key.consumer, vec![timer.key.kind])),
            }
        }
        grouped
    }

    pub fn next_wake(&self) -> Option<Tick> {
        self.timers.borrow().next_wake()
    }

    pub fn stream_of(&self, id: ConsumerId) -> Option<Rc<str>> {
        self.registry.borrow().consumers.get(&id).map(|entry| entry.stream.clone())
    }

    /// Wakes the pump (new effects, or a timer that may be due sooner).
    pub fn wake(&self) {
        self.notified.set(true);
        if let Some(waker) = self.waker.borrow_mut().take() {
            waker.wake();
        }
    }

    /// Resolves after the next state write finishes.
    pub fn write_finished(&self) -> impl Future<Output = ()> + '_ {
        let seen = self.writes_finished.get();
        std::future::poll_fn(move |cx| {
            if self.writes_finished.get() != seen {
                return Poll::Ready(());
            }
            self.write_waiters.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        })
    }

    pub fn wake_writers(&self) {
        self.writes_finished.set(self.writes_finished.get() + 1);
        for waker in self.write_waiters.borrow_mut().drain(..) {
            waker.wake();
        }
    }

    /// Resolves once `wake` was called since the last time it resolved.
    pub fn notified(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            if self.notified.replace(false) {
                return Poll::Ready(());
            }
            *self.waker.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        })
    }
}
