//! Carrying out what consumers decided ([`Effect`]s), in the order they decided it, and
//! the shard-wide consumer chores: firing timers, persisting state, loading durables at
//! start. Called by the server's consumer pump, the only task that writes consumer
//! state files.

use std::rc::Rc;

use super::consumer_store;
use super::consumers::{ConsumerEntry, Outlet, QueuedEffect};
use super::{now_ns, StreamService};
use crate::consumer::{Consumer, ConsumerId, ConsumerState, Delivery, Effect, Tick};
use crate::engine::Durability;
use crate::jetstream::policies::{RetentionPolicy, StorageType};
use crate::limits::{CONSUMER_STATE_PERSIST_INTERVAL_TICKS, CONSUMER_STATE_SYNC_INTERVAL_TICKS};
use crate::protocol::headers::HeaderBlockBuilder;
use crate::stream::{ForwardMessage, Stream};

const MSG_SIZE_HEADER: &[u8] = b"Nats-Msg-Size";
const PIN_ID_HEADER: &[u8] = b"Nats-Pin-Id";
/// Deliveries taken off the queue at once.
const DELIVERY_RUN_MAX: usize = 64;

impl StreamService {
    /// Fires due timers, carries out every queued effect. Returns when the queue is
    /// empty. State writes are not awaited here (see [`StreamService::run_persister`]):
    /// a delivery never waits behind an fsync of consumer state.
    pub async fn run_consumers(self: &Rc<Self>) {
        self.fire_consumer_timers();
        loop {
            let deliveries = self.consumers.pop_deliveries(DELIVERY_RUN_MAX);
            if !deliveries.is_empty() {
                self.deliver_all(deliveries).await;
                continue;
            }
            let Some(queued) = self.consumers.pop_effect() else { break };
            self.carry_out(queued).await;
        }
    }

    /// Shutdown: every waiting pull request of this shard's consumers is answered `409
    /// Server Shutdown` (sent by the next `run_consumers`).
    pub fn answer_waiting_pulls_for_shutdown(&self) {
        let consumers: Vec<(ConsumerId, Rc<str>)> =
            self.consumers.registry.borrow().consumers.iter().map(|(id, entry)| (*id, entry.stream.clone())).collect();
        for (id, stream_name) in consumers {
            let Ok(stream) = self.engine.stream(&stream_name) else { continue };
            self.consumers.call(&stream, id, |entry, cx| entry.consumer.on_server_shutdown(cx));
        }
    }

    /// How long the pump may sleep: until the next timer.
    pub fn consumers_next_wake(&self) -> Option<Tick> {
        self.consumers.next_wake()
    }

    /// The shard's consumer-state writer: writes the state of dirty durables at most
    /// every [`CONSUMER_STATE_PERSIST_INTERVAL_TICKS`], forever. Runs as its own task so
    /// that the pump keeps delivering while a state file is synced. With nothing left to
    /// write it sleeps until a durable's state changes (an idle shard is not woken for it).
    pub async fn run_persister(self: Rc<Self>) {
        let interval = std::time::Duration::from_millis(CONSUMER_STATE_PERSIST_INTERVAL_TICKS);
        loop {
            self.persist_consumers(false).await;
            match self.consumers_unwritten() {
                true => glommio::timer::sleep(interval).await,
                // A change marked after the look above is kept by the signal: no lost wake.
                false => self.consumers.persist_wanted.notified().await,
            }
        }
    }

    /// Whether some durable's state is dirty or being written.
    fn consumers_unwritten(&self) -> bool {
        let registry = self.consumers.registry.borrow();
        let consumers = &registry.consumers;
        registry.dirty_ids.iter().any(|id| consumers.get(id).is_some_and(|entry| entry.dirty || entry.writing))
    }

    pub fn consumers_now(&self) -> Tick {
        self.consumers.now()
    }

    /// Resolves when consumers queued work or armed a timer.
    pub async fn consumers_notified(&self) {
        self.consumers.notified().await
    }

    fn fire_consumer_timers(&self) {
        for (id, kinds) in self.consumers.expired_timers() {
            let Some(stream) = self.consumers.stream_of(id).and_then(|name| self.engine.stream(&name).ok()) else {
                continue;
            };
            self.consumers.call(&stream, id, |entry, cx| entry.consumer.on_timers(kinds, cx));
        }
    }

    async fn carry_out(self: &Rc<Self>, queued: QueuedEffect) {
        let Some(outlet) = self.consumers.outlet() else { return };
        match queued.effect {
            Effect::Deliver(_) => self.deliver_all(vec![queued]).await,
            Effect::Status(status) => {
                let mut headers = Vec::new();
                status.encode_headers(&mut headers);
                outlet.publish(
                    &status.to,
                    status.to.as_bytes(),
                    status.reply.as_deref().map(str::as_bytes),
                    Some(&headers),
                    b"",
                );
            }
            Effect::AckReply { to } => {
                // The client takes this as "the ack is safe": it must be on disk first.
                // (The ack's own `StateChanged` comes after this effect.) The write runs
                // beside the pump, which goes on delivering.
                self.mark_dirty(queued.consumer);
                let service = Rc::clone(self);
                // Not on disk (e.g. ENOSPC): no confirmation; the client's double ack
                // fails, the ack still holds in memory and the write is retried.
                glommio::spawn_local(async move {
                    if service.persist_consumer(queued.consumer, true).await {
                        outlet.publish(&to, to.as_bytes(), None, None, b"");
                    }
                })
                .detach();
            }
            Effect::Advisory(advisory) => self.publish_advisory(queued.consumer, &queued.stream, &advisory),
            Effect::Acked { stream_seq } => {
                self.retention_acked(&queued.stream, queued.consumer, stream_seq.get()).await
            }
            Effect::StateChanged => self.mark_dirty(queued.consumer),
            Effect::Delete(reason) => {
                let creating = self
                    .consumers
                    .registry
                    .borrow()
                    .consumers
                    .get(&queued.consumer)
                    .is_some_and(|entry| entry.creating);
                if creating {
                    return; // `create_consumer` restarts the countdown once it has answered.
                }
                tracing::debug!(consumer = queued.consumer.get(), ?reason, "consumer removed");
                if let Ok(stream) = self.engine.stream(&queued.stream) {
                    self.remove_consumer(&stream, queued.consumer).await;
                }
            }
        }
    }

    /// Reads a run of deliveries' messages one after the other and sends each. Reads
    /// are sequential on purpose: a forward read continues in the log's cached window
    /// (no I/O), while concurrent reads would each miss it and fetch a window of their own.
    async fn deliver_all(&self, run: Vec<QueuedEffect>) {
        let Some(outlet) = self.consumers.outlet() else { return };
        // Consumers that delivered in this run: their `last_active` is set once at the end.
        let mut delivered_to: Vec<ConsumerId> = Vec::new();
        // A run is nearly always of one stream: it is looked up once, not per message. The
        // handle is dropped at every wait, so a stream deleted meanwhile is not read.
        let mut stream: Option<(Rc<str>, Rc<Stream>)> = None;
        // Each delivery's ack reply is written here, one buffer for the run.
        let mut reply = Vec::new();
        for queued in run {
            let Effect::Deliver(delivery) = queued.effect else { continue };
            let seq = delivery.stream_seq.get();
            if !stream.as_ref().is_some_and(|(name, _)| *name == queued.stream) {
                stream = self.engine.stream(&queued.stream).ok().map(|found| (queued.stream.clone(), found));
            }
            let now = stream.as_ref().and_then(|(_, found)| found.forward_now(seq));
            let read = match now {
                Some(message) => Ok(message),
                None => {
                    stream = None;
                    self.engine.get(&queued.stream, seq).await.map(ForwardMessage::from)
                }
            };
            match read {
                Ok(message) => {
                    self.deliver(&*outlet, delivery, message, &mut reply);
                    if delivered_to.last() != Some(&queued.consumer) {
                        delivered_to.push(queued.consumer);
                    }
                }
                Err(error) => {
                    tracing::warn!(stream = %queued.stream, seq, %error, "delivery skipped: message unreadable");
                }
            }
        }
        if !delivered_to.is_empty() {
            let now = now_ns();
            let mut registry = self.consumers.registry.borrow_mut();
            for id in delivered_to {
                if let Some(entry) = registry.consumers.get_mut(&id) {
                    entry.last_delivered_ns = Some(now);
                }
            }
        }
    }

    /// Sends a message with its ack subject as the reply (and, for a pinned client
    /// consumer, `Nats-Pin-Id` after the stored headers, where nats-server appends it).
    fn deliver(&self, outlet: &dyn Outlet, delivery: Delivery, message: ForwardMessage, reply: &mut Vec<u8>) {
        let subject = &message.subject;
        reply.clear();
        delivery.write_ack_reply(reply);
        let reply = Some(&reply[..]);
        let pinned =
            |block: &[u8]| delivery.pin_id.as_deref().map(|id| with_header(block, PIN_ID_HEADER, id.as_bytes()));
        if delivery.headers_only {
            let mut headers = headers_only_block(&message.headers, message.payload.len());
            if let Some(block) = pinned(&headers) {
                headers = block;
            }
            outlet.publish(&delivery.to, subject, reply, Some(&headers), b"");
        } else if let Some(headers) = pinned(&message.headers) {
            outlet.publish(&delivery.to, subject, reply, Some(&headers), &message.payload);
        } else {
            let headers = (!message.headers.is_empty()).then_some(&message.headers[..]);
            outlet.publish(&delivery.to, subject, reply, headers, &message.payload);
        }
    }

    pub(super) fn consumer_name(&self, id: ConsumerId) -> Option<String> {
        self.consumers.registry.borrow().consumers.get(&id).map(|entry| entry.name.to_string())
    }

    fn mark_dirty(&self, id: ConsumerId) {
        let mut registry = self.consumers.registry.borrow_mut();
        let Some(entry) = registry.consumers.get_mut(&id) else { return };
        if entry.persisted {
            entry.dirty = true;
            registry.dirty_ids.insert(id);
            self.consumers.persist_wanted.notify();
        }
    }

    /// Writes the state of every dirty durable whose last write is old enough (`force`:
    /// all of them, e.g. at shutdown).
    pub async fn persist_consumers(&self, force: bool) {
        let now = self.consumers.now();
        let due: Vec<ConsumerId> = {
            let mut registry = self.consumers.registry.borrow_mut();
            let registry = &mut *registry;
            let consumers = &registry.consumers;
            registry.dirty_ids.retain(|id| consumers.get(id).is_some_and(|e| e.dirty || e.writing));
            registry
                .dirty_ids
                .iter()
                .filter(|id| {
                    consumers.get(id).is_some_and(|e| {
                        e.dirty && (force || now.since(e.last_write) >= CONSUMER_STATE_PERSIST_INTERVAL_TICKS)
                    })
                })
                .copied()
                .collect()
        };
        for id in due {
            let _ = self.persist_consumer(id, force).await;
        }
    }

    /// Writes one consumer's state now if it changed since its last write. Writes of one
    /// consumer never overlap (they share a temporary file): a caller that finds one in
    /// flight waits for it, then writes again if still dirty.
    ///
    /// The write waits for the disk when `sync` asks (an ack the client waits on, a
    /// shutdown) or when the last synced write is [`CONSUMER_STATE_SYNC_INTERVAL_TICKS`]
    /// old; the writes in between reach the page cache only. So a crash of the process
    /// loses at most [`CONSUMER_STATE_PERSIST_INTERVAL_TICKS`] of acks and a power loss at
    /// most the sync interval (those messages are redelivered: at-least-once), while the
    /// disk is not asked for two journal commits every few milliseconds per consumer.
    ///
    /// Returns whether the state as of this call is on disk (and synced, if `sync`
    /// asked): a double ack is confirmed only then, since a confirmed ack whose state write
    /// failed (a full disk) would be undone by a restart, which redelivers the
    /// "acknowledged" messages (tests/crash_full_disk.rs).
    pub(super) async fn persist_consumer(&self, id: ConsumerId, sync: bool) -> bool {
        loop {
            let writing = {
                let mut registry = self.consumers.registry.borrow_mut();
                let Some(entry) = registry.consumers.get_mut(&id) else { return false };
                if !entry.persisted {
                    return true; // nothing is kept on disk for it
                }
                if !entry.dirty && !entry.writing {
                    if !sync || entry.last_write_synced {
                        return true;
                    }
                    // The newest write reached only the page cache: write it again, synced.
                    entry.dirty = true;
                }
                entry.writing
            };
            if !writing {
                break;
            }
            self.consumers.write_finished().await;
        }
        let snapshot = {
            let mut registry = self.consumers.registry.borrow_mut();
            let Some(entry) = registry.consumers.get_mut(&id) else { return false };
            if !entry.dirty {
                return !sync || entry.last_write_synced;
            }
            let now = self.consumers.now();
            let sync = sync || now.since(entry.last_sync) >= CONSUMER_STATE_SYNC_INTERVAL_TICKS;
            entry.dirty = false;
            entry.writing = true;
            entry.last_write = now;
            if sync {
                entry.last_sync = now;
            }
            entry.last_write_synced = sync;
            let durability = if sync { Durability::Synced } else { Durability::Cached };
            (entry.stream.clone(), entry.name.clone(), entry.consumer.state(), durability)
        };
        let (stream_name, name, state, durability) = snapshot;
        let written = match self.engine.stream(&stream_name) {
            Ok(stream) => consumer_store::FILES.write_state(&*self.disk, stream.dir(), &name, &state, durability).await,
            Err(_) => Ok(()),
        };
        if let Some(entry) = self.consumers.registry.borrow_mut().consumers.get_mut(&id) {
            entry.writing = false;
            // Logged once per failing spell: the write is retried every few ticks, and on
            // a full disk each retry fails the same way (seen: ~200 error lines a second).
            match &written {
                Err(error) => {
                    if !entry.write_failing {
                        tracing::error!(stream = %stream_name, consumer = %name, %error, "could not persist consumer state; retrying");
                    }
                    entry.write_failing = true;
                    entry.dirty = true;
                }
                Ok(()) if entry.write_failing => {
                    tracing::info!(stream = %stream_name, consumer = %name, "consumer state persisted again");
                    entry.write_failing = false;
                }
                Ok(()) => {}
            }
        }
        if written.is_err() {
            self.consumers.registry.borrow_mut().dirty_ids.insert(id);
            self.consumers.persist_wanted.notify();
        }
        self.consumers.wake_writers();
        written.is_ok()
    }

    /// Restores the durable consumers of every file stream (once, at start, after the
    /// server attached its outlet).
    pub async fn load_consumers(&self) {
        for name in self.engine.stream_names() {
            let Ok(stream) = self.engine.stream(&name) else { continue };
            self.consumers.ensure_stream(&stream);
            let Ok(record) = self.record(&name) else { continue };
            if record.config.storage != StorageType::File {
                continue;
            }
            for stored in consumer_store::load_all(&*self.disk, stream.dir()).await {
                self.restore_consumer(&stream, record.config.retention, stored);
            }
        }
    }

    fn restore_consumer(
        &self,
        stream: &Rc<Stream>,
        retention: RetentionPolicy,
        stored: consumer_store::StoredConsumer,
    ) {
        let record = stored.record;
        let id = self.consumers.next_id();
        let stream_name = stream.name();
        let state = stored.state.unwrap_or_default();
        let config = record.config.clone();
        let settings = crate::jetstream::consumer_settings::settings(&config, retention);
        self.consumers.insert(stream, |cx| {
            let consumer = match Consumer::restore(id, &stream_name, &record.name, settings.clone(), &state, cx) {
                Ok(consumer) => consumer,
                Err(error) => {
                    tracing::error!(stream = %stream_name, consumer = %record.name, ?error,
                        "consumer state does not fit its stream; restarting it from the start");
                    let empty = ConsumerState::default();
                    Consumer::restore(id, &stream_name, &record.name, settings, &empty, cx)
                        .expect("an empty state fits any stream")
                }
            };
            let mut consumer = consumer;
            consumer.pause(super::consumer_pause::pause_tick(config.pause_until, cx.now), cx);
            ConsumerEntry {
                consumer,
                stream: stream_name.as_str().into(),
                name: record.name.as_str().into(),
                config: record.config.clone(),
                created_ns: record.created_ns,
                persisted: true,
                dirty: false,
                writing: false,
                last_write: cx.now,
                last_sync: cx.now,
                last_write_synced: true,
                write_failing: false,
                creating: false,
                last_delivered_ns: None,
                last_acked_ns: None,
            }
        });
    }
}

/// The stored header block (or a fresh one) plus `Nats-Msg-Size: <payload length>`.
fn headers_only_block(stored: &[u8], payload_len: usize) -> Vec<u8> {
    with_header(stored, MSG_SIZE_HEADER, payload_len.to_string().as_bytes())
}

/// The header block `stored` (or a fresh one when there is none) with `name: value`
/// appended last.
fn with_header(stored: &[u8], name: &[u8], value: &[u8]) -> Vec<u8> {
    if stored.len() >= 4 && stored.ends_with(b"\r\n\r\n") {
        let mut block = stored[..stored.len() - 2].to_vec();
        block.extend_from_slice(name);
        block.extend_from_slice(b": ");
        block.extend_from_slice(value);
        block.extend_from_slice(b"\r\n\r\n");
        return block;
    }
    let mut block = Vec::new();
    let mut builder = HeaderBlockBuilder::new(&mut block);
    builder.header(name, value);
    builder.finish();
    block
}
