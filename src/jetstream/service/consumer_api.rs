//! The consumer endpoints a stream's owning shard answers: create (every subject form),
//! info, delete, names, list; and the consumer-bound traffic that is not a JSON request:
//! pull requests (`CONSUMER.MSG.NEXT`), acks (`$JS.ACK`) and flow-control replies
//! (`$JS.FC`).

use std::cell::Cell;

use super::consumer_store::{self, ConsumerRecord};
use super::consumers::ConsumerEntry;
use super::{now_ns, StreamService, API_LEVEL};
use crate::consumer::{AckSubject, Consumer, ConsumerId, Context, Position};
use crate::jetstream::consumer_api::{
    ConsumerListBody, ConsumerNamesBody, ConsumerNamesRequest, CreateConsumerRequest,
};
use crate::jetstream::consumer_config::ConsumerConfig;
use crate::jetstream::consumer_info::{ConsumerInfo, PriorityGroupState, SequenceInfo};
use crate::jetstream::consumer_settings;
use crate::jetstream::errors::ApiError;
use crate::jetstream::metadata;
use crate::jetstream::policies::{ConsumerAction, RetentionPolicy, StorageType};
use crate::jetstream::request::decode_request;
use crate::jetstream::responses::{encode_reply, Paged, ResponseType};
use crate::jetstream::stream_api::SuccessBody;
use crate::jetstream::stream_config::StreamConsumerLimits;
use crate::jetstream::stream_info::ClusterInfo;
use crate::jetstream::{ApiRequest, Timestamp};
use crate::limits::{CONSUMER_LIST_PAGE, CONSUMER_NAMES_PAGE, CONSUMER_NAME_GENERATED_BYTES};
use crate::stream::Stream;

impl StreamService {
    /// Answers a consumer API request for a stream this shard owns.
    pub async fn consumer_reply(&self, request: ApiRequest<'_>, body: &[u8]) -> Vec<u8> {
        match request {
            ApiRequest::ConsumerCreate { .. } | ApiRequest::ConsumerDurableCreate { .. } => {
                encode_reply(ResponseType::ConsumerCreate, &self.create_consumer(request, body).await)
            }
            ApiRequest::ConsumerInfo { stream, consumer } => {
                // Sent deliveries first: `num_pending` must not run ahead of the wire.
                self.consumers.effects_carried_out().await;
                let outcome = self.stream_handle(stream).and_then(|_| self.consumer_info_named(stream, consumer));
                encode_reply(ResponseType::ConsumerInfo, &outcome)
            }
            ApiRequest::ConsumerDelete { stream, consumer } => {
                encode_reply(ResponseType::ConsumerDelete, &self.delete_consumer(stream, consumer).await)
            }
            ApiRequest::ConsumerNames { stream } => {
                encode_reply(ResponseType::ConsumerNames, &self.consumer_names(stream, body))
            }
            ApiRequest::ConsumerList { stream } => {
                encode_reply(ResponseType::ConsumerList, &self.consumer_list(stream, body))
            }
            ApiRequest::ConsumerPause { stream, consumer } => {
                encode_reply(ResponseType::ConsumerPause, &self.pause_consumer(stream, consumer, body).await)
            }
            ApiRequest::ConsumerReset { stream, consumer } => {
                encode_reply(ResponseType::ConsumerReset, &self.reset_consumer(stream, consumer, body).await)
            }
            ApiRequest::ConsumerUnpin { stream, consumer } => {
                encode_reply(ResponseType::ConsumerUnpin, &self.unpin_consumer(stream, consumer, body))
            }
            _ => encode_reply(ResponseType::System, &Err::<(), _>(ApiError::bad_request())),
        }
    }

    pub(super) fn stream_handle(&self, name: &str) -> Result<std::rc::Rc<Stream>, ApiError> {
        self.record(name)?;
        self.engine.stream(name).map_err(|_| ApiError::stream_not_found())
    }

    async fn create_consumer(&self, request: ApiRequest<'_>, body: &[u8]) -> Result<ConsumerInfo, ApiError> {
        let resolved = CreateConsumerRequest::decode(body)?.resolve(&request)?;
        let stream_name = match request {
            ApiRequest::ConsumerCreate { stream, .. } | ApiRequest::ConsumerDurableCreate { stream, .. } => stream,
            _ => return Err(ApiError::bad_request()),
        };
        let record = self.record(stream_name)?;
        let stream = self.stream_handle(stream_name)?;
        let mut requested = resolved.config;
        let name = resolved.name.unwrap_or_else(generated_name);
        if requested.durable_name.is_empty() && self.is_durable(stream_name, &name) {
            // An update naming a durable by `name` alone updates that durable (nats-server
            // accepts it too, but then stores the config without `durable_name`, so the
            // consumer silently stops being durable; jetcore keeps it durable).
            requested.durable_name = name.clone();
        }
        let (account_consumers_max, account_ack_pending_max) = self.account_consumer_limits.get();
        let config = match account_ack_pending_max {
            max if max > 0 => {
                // The account's ceiling acts as the stream's own consumer limit would.
                let mut capped = record.config.clone();
                let stream_max = capped.consumer_limits.max_ack_pending;
                capped.consumer_limits.max_ack_pending = if stream_max > 0 { stream_max.min(max) } else { max };
                requested.normalized(&capped)?
            }
            _ => requested.normalized(&record.config)?,
        };
        if let Some(id) = self.consumers.find(stream_name, &name) {
            return self.create_existing(&stream, id, config, resolved.action).await;
        }
        if resolved.action == ConsumerAction::Update {
            return Err(ApiError::consumer_does_not_exist());
        }
        // nats-server: the account's limit replaces a stream's that is unset or larger.
        let stream_consumers_max = record.config.max_consumers;
        let consumers_allowed = match account_consumers_max {
            max if max > 0 && (stream_consumers_max <= 0 || max < stream_consumers_max) => max,
            _ => stream_consumers_max,
        };
        if self.consumers.ids_of(stream_name).len() >= consumers_max(consumers_allowed) {
            return Err(ApiError::maximum_consumers_limit());
        }
        let retention = record.config.retention;
        if retention == RetentionPolicy::WorkQueue {
            self.check_workqueue_filters(stream_name, &config)?;
        }
        let persisted = config.is_durable() && record.config.storage == StorageType::File && !config.mem_storage;
        let created_ns = now_ns();
        let id = self.consumers.next_id();
        let entry_config = config.clone();
        let entry_name = name.clone();
        let pause_until = config.pause_until;
        self.consumers.insert(&stream, |cx| ConsumerEntry {
            consumer: Consumer::new_paused(
                id,
                stream_name,
                &entry_name,
                consumer_settings::settings(&entry_config, retention),
                super::consumer_pause::pause_tick(pause_until, cx.now),
                cx,
            ),
            stream: stream_name.into(),
            name: entry_name.as_str().into(),
            config: entry_config,
            created_ns,
            persisted,
            dirty: persisted,
            writing: false,
            last_write: cx.now,
            last_sync: cx.now,
            last_write_synced: true,
            write_failing: false,
            creating: true,
            last_delivered_ns: None,
            last_acked_ns: None,
        });
        if persisted {
            let stored = ConsumerRecord { name: name.clone(), config: config.clone(), created_ns };
            if let Err(error) = self.persist_new_consumer(&stream, id, &stored).await {
                self.discard_consumer(&stream, id);
                return Err(ApiError::consumer_create(error.to_string()));
            }
        }
        // Like nats-server, the reply shows the consumer before its first deliveries:
        // async-nats KV history and keys stop at once if it says `num_pending: 0`.
        let info = self.consumer_info(id).ok_or_else(ApiError::consumer_not_found);
        self.consumers.call(&stream, id, |entry, cx| {
            entry.creating = false;
            entry.consumer.restart_inactivity(cx);
        });
        self.recheck_push_interest(&stream, id);
        self.advise_consumer(stream_name, &name, super::advisories::Action::Create);
        info
    }

    fn is_durable(&self, stream: &str, name: &str) -> bool {
        let Some(id) = self.consumers.find(stream, name) else { return false };
        self.consumers.registry.borrow().consumers.get(&id).is_some_and(|entry| entry.config.is_durable())
    }

    /// A workqueue stream's consumers must not share messages: with several, each needs
    /// a filter and no two filters may overlap (nats-server 10099 / 10100).
    fn check_workqueue_filters(&self, stream: &str, config: &ConsumerConfig) -> Result<(), ApiError> {
        let registry = self.consumers.registry.borrow();
        let Some(consumers) = registry.streams.get(stream) else { return Ok(()) };
        let new_filters = filters_of(config);
        for id in consumers.by_name.values() {
            let Some(other) = registry.consumers.get(id) else { continue };
            let other_filters = filters_of(&other.config);
            if new_filters.is_empty() || other_filters.is_empty() {
                return Err(ApiError::consumer_workqueue_multiple_unfiltered());
            }
            let overlap = new_filters
                .iter()
                .any(|a| other_filters.iter().any(|b| crate::subject::collide(a.as_bytes(), b.as_bytes())));
            if overlap {
                return Err(ApiError::consumer_workqueue_not_unique());
            }
        }
        Ok(())
    }

    /// Config then state, both durable before the create is answered: a restart must
    /// find the consumer where its deliver policy put it.
    async fn persist_new_consumer(
        &self,
        stream: &Stream,
        id: ConsumerId,
        stored: &ConsumerRecord,
    ) -> Result<(), crate::stream::Error> {
        consumer_store::write_config(&*self.disk, stream.dir(), stored).await?;
        let _ = self.persist_consumer(id, true).await;
        Ok(())
    }

    /// Create of a name that exists: identical config → its info; `create` → 10148;
    /// otherwise an in-place update (a pull consumer cannot become push or back).
    async fn create_existing(
        &self,
        stream: &Stream,
        id: ConsumerId,
        config: ConsumerConfig,
        action: ConsumerAction,
    ) -> Result<ConsumerInfo, ApiError> {
        let (current, persisted, created_ns, name) = {
            let registry = self.consumers.registry.borrow();
            let entry = registry.consumers.get(&id).ok_or_else(ApiError::consumer_not_found)?;
            (entry.config.clone(), entry.persisted, entry.created_ns, entry.name.to_string())
        };
        if same_config(&current, &config) {
            return self.consumer_info(id).ok_or_else(ApiError::consumer_not_found);
        }
        if action == ConsumerAction::Create {
            return Err(ApiError::consumer_already_exists());
        }
        if let Some(refusal) = update_refusal(&current, &config) {
            return Err(ApiError::consumer_create(refusal));
        }
        if current.is_durable() != config.is_durable() {
            return Err(ApiError::consumer_create("consumer update error: cannot change consumer type"));
        }
        let retention = self.record(&stream.name())?.config.retention;
        let updated = config.clone();
        self.consumers.call(stream, id, |entry, cx| {
            entry.consumer.update_config(consumer_settings::settings(&updated, retention), cx);
            let pause_changed = entry.config.pause_until != updated.pause_until;
            entry.config = updated;
            if pause_changed {
                let until = super::consumer_pause::pause_tick(entry.config.pause_until, cx.now);
                entry.consumer.pause_advised(until, cx);
            }
        });
        if persisted {
            let stored = ConsumerRecord { name, config, created_ns };
            consumer_store::write_config(&*self.disk, stream.dir(), &stored)
                .await
                .map_err(|error| ApiError::consumer_create(error.to_string()))?;
        }
        self.recheck_push_interest(stream, id);
        self.consumer_info(id).ok_or_else(ApiError::consumer_not_found)
    }

    /// Removes a consumer whose files could not be written (it never existed for clients).
    fn discard_consumer(&self, stream: &Stream, id: ConsumerId) {
        self.consumers.call(stream, id, |entry, cx| entry.consumer.delete(cx));
        self.consumers.remove(id);
    }

    pub(super) fn recheck_push_interest(&self, stream: &Stream, id: ConsumerId) {
        self.consumers.call(stream, id, |entry, cx| recheck_interest(&mut entry.consumer, cx));
    }

    /// A stream update that tightens `consumer_limits` is refused while an existing
    /// consumer exceeds the new limit (nats-server: "change to limits violates consumers").
    /// A limit of 0 is no limit; an unchanged limit is not checked again.
    pub(super) fn check_consumers_within(
        &self,
        stream: &str,
        old: StreamConsumerLimits,
        new: StreamConsumerLimits,
    ) -> Result<(), ApiError> {
        let threshold = new.inactive_threshold > 0 && new.inactive_threshold != old.inactive_threshold;
        let ack_pending = new.max_ack_pending > 0 && new.max_ack_pending != old.max_ack_pending;
        if !threshold && !ack_pending {
            return Ok(());
        }
        let registry = self.consumers.registry.borrow();
        let mut violators: Vec<&str> = self
            .consumers
            .ids_of(stream)
            .iter()
            .filter_map(|id| registry.consumers.get(id))
            .filter(|entry| {
                (threshold && entry.config.inactive_threshold > new.inactive_threshold)
                    || (ack_pending && entry.config.max_ack_pending > new.max_ack_pending)
            })
            .map(|entry| &*entry.name)
            .collect();
        if violators.is_empty() {
            return Ok(());
        }
        violators.sort_unstable();
        Err(ApiError::stream_update(format!("change to limits violates consumers: {}", violators.join(", "))))
    }

    pub(super) fn consumer_info_named(&self, stream: &str, name: &str) -> Result<ConsumerInfo, ApiError> {
        let id = self.consumers.find(stream, name).ok_or_else(ApiError::consumer_not_found)?;
        self.consumer_info(id).ok_or_else(ApiError::consumer_not_found)
    }

    fn consumer_info(&self, id: ConsumerId) -> Option<ConsumerInfo> {
        let registry = self.consumers.registry.borrow();
        let entry = registry.consumers.get(&id)?;
        let counters = entry.consumer.counters();
        let pause_remaining = super::consumer_pause::remaining_nanos(entry.config.pause_until);
        let mut config = entry.config.clone();
        metadata::add_server_info(&mut config.metadata, API_LEVEL, &self.server_version);
        Some(ConsumerInfo {
            stream_name: entry.stream.to_string(),
            name: entry.name.to_string(),
            created: Timestamp::from_unix_nanos(entry.created_ns),
            config,
            delivered: SequenceInfo {
                last_active: entry.last_delivered_ns.map(Timestamp::from_unix_nanos),
                ..sequence_info(counters.delivered)
            },
            ack_floor: SequenceInfo {
                last_active: entry.last_acked_ns.map(Timestamp::from_unix_nanos),
                ..sequence_info(counters.ack_floor)
            },
            num_ack_pending: counters.num_ack_pending,
            num_redelivered: counters.num_redelivered,
            num_waiting: counters.num_waiting,
            num_pending: counters.num_pending,
            cluster: Some(ClusterInfo { leader: self.server_name.clone(), ..ClusterInfo::default() }),
            push_bound: counters.push_bound,
            paused: pause_remaining > 0,
            pause_remaining,
            ts: Timestamp::from_unix_nanos(now_ns()),
            priority_groups: self.priority_group_states(entry),
        })
    }

    /// nats-server reports the first priority group of any consumer that has groups,
    /// with the pin it holds (`pinned_ts` is Go's zero time while none is held).
    fn priority_group_states(&self, entry: &ConsumerEntry) -> Vec<PriorityGroupState> {
        let Some(group) = entry.config.priority_groups.first() else { return Vec::new() };
        let pin = entry.consumer.pin();
        vec![PriorityGroupState {
            group: group.clone(),
            pinned_client_id: pin.map(|pin| pin.id.to_string()).unwrap_or_default(),
            pinned_ts: pin
                .map_or(Timestamp::ZERO, |pin| Timestamp::from_unix_nanos(self.consumers.wall_ns(pin.pinned_at))),
        }]
    }

    async fn delete_consumer(&self, stream_name: &str, name: &str) -> Result<SuccessBody, ApiError> {
        let stream = self.stream_handle(stream_name)?;
        let id = self.consumers.find(stream_name, name).ok_or_else(ApiError::consumer_not_found)?;
        self.remove_consumer(&stream, id).await;
        Ok(SuccessBody { success: true })
    }

    /// Deletes a consumer: waiting pulls are told, timers cancelled, files removed.
    pub(super) async fn remove_consumer(&self, stream: &Stream, id: ConsumerId) {
        self.consumers.call(stream, id, |entry, cx| entry.consumer.delete(cx));
        let Some(entry) = self.consumers.remove(id) else { return };
        if entry.persisted {
            consumer_store::remove(&*self.disk, stream.dir(), &entry.name).await;
        }
        let ack_floor = entry.consumer.pending_set().ack_floor().stream.get();
        self.interest_cleanup(stream, ack_floor + 1).await;
        self.advise_consumer(&entry.stream, &entry.name, super::advisories::Action::Delete);
    }

    fn consumer_names(&self, stream: &str, body: &[u8]) -> Result<ConsumerNamesBody, ApiError> {
        let request = decode_request::<ConsumerNamesRequest>(body)?;
        self.stream_handle(stream)?;
        let (consumers, paged) = paginate(self.consumers.names_of(stream), request.offset, CONSUMER_NAMES_PAGE);
        Ok(ConsumerNamesBody { paged, consumers })
    }

    fn consumer_list(&self, stream: &str, body: &[u8]) -> Result<ConsumerListBody, ApiError> {
        let request = decode_request::<ConsumerNamesRequest>(body)?;
        self.stream_handle(stream)?;
        let names = self.consumers.names_of(stream);
        let (page, paged) = paginate(names, request.offset, CONSUMER_LIST_PAGE);
        // A list shows the stored config: no `_nats.level`/`_nats.ver`, as nats-server.
        let mut consumers: Vec<ConsumerInfo> =
            page.iter().filter_map(|name| self.consumer_info_named(stream, name).ok()).collect();
        for info in &mut consumers {
            metadata::remove_server_info(&mut info.config.metadata);
        }
        Ok(ConsumerListBody { paged, consumers, missing: Vec::new() })
    }

    /// A pull request for `stream`'s consumer `name`; false when there is no such
    /// consumer (the caller answers with a no-responders status).
    pub fn consumer_pull(&self, stream_name: &str, name: &str, reply: &str, body: &[u8]) -> bool {
        let Ok(stream) = self.engine.stream(stream_name) else { return false };
        let Some(id) = self.consumers.find(stream_name, name) else { return false };
        self.consumers.call(&stream, id, |entry, cx| entry.consumer.on_pull_request(reply, body, cx))
    }

    /// A message published to a `$JS.ACK` subject.
    pub fn consumer_ack(&self, subject: &str, body: &[u8], reply: Option<&str>) {
        let Ok(ack) = AckSubject::parse(subject) else { return };
        let Ok(stream) = self.engine.stream(ack.stream) else { return };
        let Some(id) = self.consumers.find(ack.stream, ack.consumer) else { return };
        self.consumers.call(&stream, id, |entry, cx| {
            entry.last_acked_ns = Some(now_ns());
            entry.consumer.on_ack(&ack, body, reply, cx)
        });
    }

    /// A reply to a flow-control request, on `$JS.FC.<stream>.<consumer>.<id>`.
    pub fn consumer_flow_control(&self, subject: &str) {
        let mut tokens = subject.split('.').skip(2);
        let (Some(stream_name), Some(name)) = (tokens.next(), tokens.next()) else { return };
        let Ok(stream) = self.engine.stream(stream_name) else { return };
        let Some(id) = self.consumers.find(stream_name, name) else { return };
        self.consumers.call(&stream, id, |entry, cx| entry.consumer.on_flow_control_reply(subject, cx));
    }

    /// Interest in subjects `pattern` covers changed on this shard: push consumers
    /// re-check their deliver subject, pull consumers drop requests whose inbox is gone.
    pub fn consumer_interest_changed(&self, pattern: &[u8]) {
        for (stream_name, id) in self.consumers.affected_by_interest(pattern) {
            let Ok(stream) = self.engine.stream(&stream_name) else { continue };
            self.recheck_push_interest(&stream, id);
        }
    }
}

/// Push: pause or resume with the deliver subject's interest. Pull: drop requests whose
/// reply subject lost its last subscriber.
fn recheck_interest(consumer: &mut Consumer, cx: &mut Context<'_>) {
    if let Some(deliver_subject) = consumer.push_state().map(|push| push.deliver_subject()) {
        let active = cx.interest.has_interest(&deliver_subject);
        consumer.on_interest_change(active, cx);
        return;
    }
    let lost: Vec<String> = consumer
        .waiting_requests()
        .filter(|request| !cx.interest.has_interest(&request.reply))
        .map(|request| request.reply.to_string())
        .collect();
    for reply in lost {
        consumer.on_reply_interest_lost(&reply, cx);
    }
}

fn filters_of(config: &ConsumerConfig) -> Vec<String> {
    if config.filter_subject.is_empty() {
        config.filter_subjects.clone()
    } else {
        vec![config.filter_subject.clone()]
    }
}

/// Two configs are the same consumer when equal apart from server-managed metadata.
fn same_config(stored: &ConsumerConfig, requested: &ConsumerConfig) -> bool {
    let mut stored = stored.clone();
    let mut requested = requested.clone();
    metadata::remove_server_info(&mut stored.metadata);
    metadata::remove_server_info(&mut requested.metadata);
    stored == requested
}

fn paginate<T>(items: Vec<T>, offset: i64, limit: u64) -> (Vec<T>, Paged) {
    let total = items.len() as u64;
    let offset = offset.max(0) as u64;
    let page = items.into_iter().skip(offset as usize).take(limit as usize).collect();
    (page, Paged { total, offset, limit })
}

thread_local! {
    static NAME_STATE: Cell<u64> = const { Cell::new(0) };
}

/// A server-chosen name for a legacy ephemeral (nats-server: 8 characters).
/// How many consumers a stream may have: its own `max_consumers` when positive, else
/// nats-server 2.15's default (it substitutes the default for any value not above zero,
/// while stream info still shows -1).
fn consumers_max(configured: i64) -> usize {
    match usize::try_from(configured) {
        Ok(max) if max > 0 => max,
        _ => crate::limits::CONSUMERS_PER_STREAM_DEFAULT_MAX,
    }
}

fn generated_name() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    NAME_STATE.with(|cell| {
        let mut state = cell.get();
        if state == 0 {
            state = (now_ns() as u64) ^ 0x9E37_79B9_7F4A_7C15 | 1;
        }
        let mut name = String::with_capacity(CONSUMER_NAME_GENERATED_BYTES);
        for _ in 0..CONSUMER_NAME_GENERATED_BYTES {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            name.push(ALPHABET[(state % ALPHABET.len() as u64) as usize] as char);
        }
        cell.set(state);
        name
    })
}

/// Why nats-server refuses to update `current` to `new` (its checkNewConsumerConfig,
/// same checks in the same order), or `None` when the update is allowed.
fn update_refusal(current: &ConsumerConfig, new: &ConsumerConfig) -> Option<&'static str> {
    let refusals = [
        (current.deliver_policy != new.deliver_policy, "deliver policy can not be updated"),
        (current.mem_storage != new.mem_storage, "storage type can not be updated"),
        (current.direct != new.direct, "direct can not be updated"),
        (current.sourcing != new.sourcing, "sourcing can not be updated"),
        (current.opt_start_seq != new.opt_start_seq, "start sequence can not be updated"),
        (current.opt_start_time != new.opt_start_time, "start time can not be updated"),
        (current.ack_policy != new.ack_policy, "ack policy can not be updated"),
        (current.replay_policy != new.replay_policy, "replay policy can not be updated"),
        (current.idle_heartbeat != new.idle_heartbeat, "heart beats can not be updated"),
        (current.flow_control != new.flow_control, "flow control can not be updated"),
        (!current.is_push() && new.is_push(), "can not update pull consumer to push based"),
        (current.is_push() && !new.is_push(), "can not update push consumer to pull based"),
        (current.max_waiting != new.max_waiting, "max waiting can not be updated"),
    ];
    refusals.into_iter().find_map(|(refused, reason)| refused.then_some(reason))
}

/// A consumer position as info reports it; `last_active` is the caller's.
fn sequence_info(position: Position) -> SequenceInfo {
    SequenceInfo { consumer_seq: position.consumer.get(), stream_seq: position.stream.get(), last_active: None }
}
