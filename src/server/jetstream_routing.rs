//! JetStream on the mesh: a publish captured by a stream goes to the stream's owning
//! shard; `$JS.API` requests go to the shard that can answer them (the stream's owner;
//! shard 0 for creating, updating and deleting streams, so overlap checks see every
//! stream); account-wide answers are gathered from every shard.
//!
//! Everything here is in one account: the publisher's or requester's. Its catalog
//! entries, its service on each shard (`account_jetstream.rs`) and its subscribers for
//! the replies; another account's streams are never looked at.

use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

use bytes::Bytes;

use super::account::{routing_key, AccountId};
use super::api_audit;
use super::backup_routing;
use super::batch::StoreTarget;
use super::catalog::{CatalogChange, CatalogEntry};
use super::consumer_routing;
use super::envelope::{ApiForward, Envelope, ShardCall, ShardReturn, StoreRequest};
use super::node::Node;
use super::restore_routing;
use super::router::Publish;
use crate::jetstream::account::{AccountInfo, AccountUsage, ApiStats};
use crate::jetstream::api_level;
use crate::jetstream::errors::ApiError;
use crate::jetstream::pub_ack::encode_pub_ack_error;
use crate::jetstream::request::decode_request;
use crate::jetstream::responses::{encode_reply, Paged, ResponseType};
use crate::jetstream::service::{ApiReply, StreamSummary, Taken, Usage};
use crate::jetstream::stream_api::{StreamListBody, StreamNamesBody, StreamNamesRequest};
use crate::jetstream::stream_config::{ConfigPurpose, StreamConfig as WireConfig};
use crate::jetstream::ApiRequest;
use crate::limits;
use crate::shard::{placement, ShardId};
use crate::subject;

const API_PREFIX: &[u8] = b"$JS.API.";
/// The shard that serialises stream creation, update and deletion.
pub(super) const COORDINATOR: ShardId = ShardId(0);

impl Node {
    /// Routes the JetStream side of a client publish in `account`, which has JetStream;
    /// `key` is the subject's routing key there. True when JetStream took it (a stream
    /// captured it, or an API handler will answer), so it is not "no responders".
    pub(super) fn route_jetstream(self: &Rc<Self>, account: AccountId, key: &[u8], publish: &Publish<'_>) -> bool {
        if publish.subject.starts_with(API_PREFIX) {
            return self.route_api_request(account, publish);
        }
        if consumer_routing::is_consumer_reply_subject(publish.subject) {
            return self.route_consumer_reply(account, publish);
        }
        if backup_routing::is_snapshot_ack_subject(publish.subject) {
            return self.route_snapshot_ack(account, publish);
        }
        if restore_routing::is_restore_subject(publish.subject) {
            return self.route_restore_chunk(account, publish);
        }
        self.route_capture(account, key, publish)
    }

    /// The JetStream side of a publish from an account JetStream does not serve: an API
    /// request is answered `10039 JetStream not enabled for account` (nats-server's reply,
    /// in the requester's account); nothing else is JetStream's. The system account gets
    /// the generic `system_response` to all but `INFO`, as nats-server answers it.
    pub(super) fn refuse_jetstream(self: &Rc<Self>, account: AccountId, publish: &Publish<'_>) -> bool {
        if !publish.subject.starts_with(API_PREFIX) {
            return false;
        }
        let Ok(subject) = std::str::from_utf8(publish.subject) else { return false };
        let request = ApiRequest::parse(subject);
        let Some(mut response_type) = request.response_type() else { return true };
        let accounts = &self.options.accounts;
        let system = accounts.id_of(&accounts.system_account) == Some(account);
        if system && !matches!(request, ApiRequest::AccountInfo) {
            response_type = ResponseType::System;
        }
        if let Some(reply) = publish.reply {
            let payload = encode_reply(response_type, &Err::<(), _>(ApiError::not_enabled_for_account()));
            self.publish_internal(account, reply, None, &payload);
        }
        true
    }

    /// A message a stream republished: to subscribers on every shard, then into a
    /// stream that captures its subject (never the republishing one: config forbids it).
    /// Resolves once that stream has stored it, so the original's pub ack, sent after,
    /// means the copy can be read (nats-server's order: a KV bucket fed by republish
    /// shows the entry once the put is acknowledged).
    pub(super) async fn publish_republished(
        self: &Rc<Self>,
        account: AccountId,
        subject: &[u8],
        headers: &[u8],
        payload: &[u8],
    ) {
        self.publish_internal(account, subject, Some(headers), payload);
        let Some(entry) = self.catalog.borrow().capture(account, &routing_key(account, subject)) else { return };
        let request = StoreRequest {
            account,
            stream: entry.name.clone(),
            owner_key: entry.owner_key,
            subject: Bytes::copy_from_slice(subject),
            reply: None,
            headers: Some(Bytes::copy_from_slice(headers)),
            payload: Bytes::copy_from_slice(payload),
        };
        self.call(entry.owner, ShardCall::Store(Box::new(request))).await;
    }

    /// Hands `publish` to the stream of `account` that captures its subject (routing key
    /// `key`); false when none does.
    fn route_capture(self: &Rc<Self>, account: AccountId, key: &[u8], publish: &Publish<'_>) -> bool {
        let Some(entry) = self.catalog.borrow().capture(account, key) else { return false };
        let target = StoreTarget { account, stream: &entry.name, owner_key: entry.owner_key };
        self.stream_shard.set(Some(entry.owner));
        if entry.owner == self.shard {
            self.store_here(target, publish.subject, publish.reply, publish.headers, publish.payload);
        } else {
            self.send_store(entry.owner, target, publish);
        }
        true
    }

    /// Stores a client's message in stream `stream`, which this shard owns: appended
    /// now, borrowed from the caller; the pub ack follows once it is durable (the
    /// stream's ack queue, `jetstream/service/publish.rs`).
    pub(super) fn store_here(
        self: &Rc<Self>,
        target: StoreTarget<'_>,
        subject: &[u8],
        reply: Option<&[u8]>,
        headers: Option<&[u8]>,
        payload: &[u8],
    ) {
        let StoreTarget { account, stream, owner_key } = target;
        let Some(service) = self.jetstream.get(account) else { return };
        // Counted until the pub ack is sent: a graceful shutdown waits for these.
        self.ops.store_started();
        if service.publish(owner_key, stream, subject, reply, headers.unwrap_or(&[]), payload) == Taken::Batch {
            let request = StoreRequest {
                account,
                stream: stream.to_string(),
                owner_key,
                subject: Bytes::copy_from_slice(subject),
                reply: reply.map(Bytes::copy_from_slice),
                headers: headers.map(Bytes::copy_from_slice),
                payload: Bytes::copy_from_slice(payload),
            };
            let node = self.clone();
            glommio::spawn_local(async move { node.store_now(request).await }).detach();
        }
    }

    /// A message of an atomic batch: staged, or with its commit the batch stored (or
    /// refused), and acked when this resolves. Counted by the caller
    /// (`ShardOps::store_started`).
    async fn store_now(self: &Rc<Self>, request: StoreRequest) {
        let Some(service) = self.jetstream.get(request.account).cloned() else { return };
        let started = std::time::Instant::now();
        let subject = String::from_utf8_lossy(&request.subject);
        let headers = request.headers.as_deref().unwrap_or(&[]);
        let outcome = service.store_batch_message(&request.stream, &subject, headers, &request.payload).await;
        let stored = outcome.is_ok();
        if let Some(reply) = request.reply.filter(|_| service.acks(&request.stream)) {
            let payload = match outcome {
                Ok(Some(ack)) => ack.encode(),
                // A message of an atomic batch before its commit.
                Ok(None) => Vec::new(),
                Err(error) => encode_pub_ack_error(&request.stream, &error),
            };
            self.publish_internal(request.account, &reply, None, &payload);
        }
        self.ops.store_finished(stored, started.elapsed());
    }

    fn route_api_request(self: &Rc<Self>, account: AccountId, publish: &Publish<'_>) -> bool {
        let Ok(subject) = std::str::from_utf8(publish.subject) else { return true };
        let request = ApiRequest::parse(subject);
        let level_checked = !matches!(request, ApiRequest::Unknown | ApiRequest::DirectGet { .. });
        if level_checked && api_level::refuses(publish.headers) {
            let reply = publish.reply.map(Bytes::copy_from_slice);
            self.send_api_reply(account, reply, required_level_reply(request));
            return true;
        }
        let target = match request {
            ApiRequest::Unknown => return true,
            ApiRequest::StreamCreate { .. }
            | ApiRequest::StreamUpdate { .. }
            | ApiRequest::StreamDelete { .. }
            | ApiRequest::StreamRestore { .. } => Some(COORDINATOR),
            ApiRequest::StreamInfo { stream }
            | ApiRequest::StreamPurge { stream }
            | ApiRequest::StreamSnapshot { stream }
            | ApiRequest::StreamMsgGet { stream }
            | ApiRequest::StreamMsgDelete { stream } => self.stream_owner(account, stream),
            ApiRequest::DirectGet { stream, .. } => match self.catalog.borrow().get(account, stream) {
                Some(entry) if entry.allow_direct => Some(entry.owner),
                // nats-server serves direct gets from a per-stream subscription: no
                // stream (or no allow_direct) means no responders.
                _ => return false,
            },
            // A pull request for a stream nobody has: no responders. One that has an owner
            // counts towards moving the puller there, as a store does.
            ApiRequest::ConsumerNext { stream, .. } => match self.stream_owner(account, stream) {
                Some(owner) => {
                    self.stream_shard.set(Some(owner));
                    Some(owner)
                }
                None => return false,
            },
            other => {
                consumer_routing::consumer_request_stream(&other).and_then(|stream| self.stream_owner(account, stream))
            }
        };
        let forward = ApiForward {
            account,
            subject: subject.to_string(),
            reply: publish.reply.map(Bytes::copy_from_slice),
            body: Bytes::copy_from_slice(publish.payload),
        };
        match target {
            Some(shard) if shard != self.shard => self.send(shard, Envelope::Api(Box::new(forward))),
            _ => {
                let node = self.clone();
                glommio::spawn_local(async move { node.answer_here(forward).await }).detach();
            }
        }
        true
    }

    /// Answers an API request on this shard and publishes the reply.
    pub(super) async fn answer_here(self: Rc<Self>, forward: ApiForward) {
        if consumer_routing::is_consumer_reply_subject(forward.subject.as_bytes()) {
            self.consumer_reply_here(&forward);
            return;
        }
        if backup_routing::is_snapshot_ack_subject(forward.subject.as_bytes()) {
            backup_routing::snapshot_acked(&forward.subject);
            return;
        }
        if restore_routing::is_restore_subject(forward.subject.as_bytes()) {
            self.restore_chunk_here(forward).await;
            return;
        }
        let account = forward.account;
        let request = ApiRequest::parse(&forward.subject);
        // nats-server serves these outside its API dispatcher, so its statistics skip them.
        let counted = !matches!(request, ApiRequest::DirectGet { .. } | ApiRequest::ConsumerNext { .. });
        let message_get = matches!(request, ApiRequest::StreamMsgGet { .. });
        let body = &forward.body[..];
        let reply = match request {
            ApiRequest::AccountInfo => ApiReply::Json(self.account_info(account).await),
            ApiRequest::StreamNames => ApiReply::Json(self.stream_names(account, body)),
            ApiRequest::StreamList => ApiReply::Json(self.stream_list(account, body).await),
            ApiRequest::StreamCreate { stream } => {
                ApiReply::Json(self.coordinate(account, stream, body, Operation::Create).await)
            }
            ApiRequest::StreamUpdate { stream } => {
                ApiReply::Json(self.coordinate(account, stream, body, Operation::Update).await)
            }
            ApiRequest::StreamDelete { stream } => {
                ApiReply::Json(self.coordinate(account, stream, body, Operation::Delete).await)
            }
            ApiRequest::StreamRestore { stream } => ApiReply::Json(self.answer_restore(account, stream, body).await),
            ApiRequest::StreamSnapshot { stream } if self.stream_owner(account, stream) == Some(self.shard) => {
                ApiReply::Json(self.answer_snapshot(&forward, stream).await)
            }
            ApiRequest::StreamInfo { stream }
            | ApiRequest::StreamPurge { stream }
            | ApiRequest::StreamSnapshot { stream }
            | ApiRequest::StreamMsgGet { stream }
            | ApiRequest::StreamMsgDelete { stream }
            | ApiRequest::DirectGet { stream, .. } => match self.jetstream.get(account).cloned() {
                Some(service) if self.stream_owner(account, stream) == Some(self.shard) => {
                    service.handle(request, body).await
                }
                _ => not_found_reply(request),
            },
            other => match consumer_routing::consumer_request_stream(&other) {
                Some(stream) if self.stream_owner(account, stream) == Some(self.shard) => {
                    self.answer_consumer_request(other, &forward).await
                }
                _ => consumer_reply(other, body),
            },
        };
        // Counted after answering: an account info request does not see itself.
        // A message get counts only when it fails: 2.15.1 sends a found message without
        // its API statistics (checked request by request).
        let found_message = message_get && !reply.is_error();
        if let Some(service) = self.jetstream.get(account).filter(|_| counted && !found_message) {
            service.count_api_answer(&reply);
        }
        if let ApiReply::Json(response) = &reply {
            if api_audit::audited(&request) {
                self.audit_api(account, &forward, response);
            }
        }
        self.send_api_reply(account, forward.reply, reply);
    }

    fn send_api_reply(self: &Rc<Self>, account: AccountId, reply_subject: Option<Bytes>, reply: ApiReply) {
        let Some(subject) = reply_subject else { return };
        match reply {
            ApiReply::Json(payload) => self.publish_internal(account, &subject, None, &payload),
            ApiReply::Message { headers, payload } => {
                self.publish_internal(account, &subject, Some(&headers), &payload)
            }
            ApiReply::Batch(messages) => {
                for (headers, payload) in messages {
                    self.publish_internal(account, &subject, Some(&headers), &payload);
                }
            }
            ApiReply::Silent => {}
        }
    }

    async fn account_info(self: &Rc<Self>, account: AccountId) -> Vec<u8> {
        let mut total = Usage::default();
        for value in self.call_all(|| ShardCall::Usage(account)).await {
            if let ShardReturn::Usage(usage) = value {
                total += usage;
            }
        }
        let accounts = &self.options.accounts;
        let limits = accounts.get(account).and_then(|config| config.jetstream.clone());
        let info = AccountInfo {
            usage: AccountUsage {
                limits: limits.unwrap_or_default(),
                memory: total.memory_bytes,
                storage: total.storage_bytes,
                streams: total.streams,
                consumers: total.consumers,
                reserved_memory: total.reserved_memory_bytes,
                reserved_storage: total.reserved_storage_bytes,
                ..AccountUsage::default()
            },
            domain: self.options.jetstream_domain.clone().unwrap_or_default(),
            api: ApiStats {
                level: crate::jetstream::service::API_LEVEL,
                total: total.api_requests,
                errors: total.api_errors,
                ..ApiStats::default()
            },
            tiers: Default::default(),
        };
        encode_reply(ResponseType::AccountInfo, &Ok::<_, ApiError>(info))
    }

    fn stream_names(&self, account: AccountId, body: &[u8]) -> Vec<u8> {
        let outcome = decode_request::<StreamNamesRequest>(body).map(|request| {
            let filter = (!request.subject.is_empty()).then_some(request.subject.as_str());
            let names = self.catalog.borrow().names(account, filter);
            let (page, paged) = paginate(names, request.offset(), limits::STREAM_NAMES_PAGE);
            StreamNamesBody { paged, streams: page }
        });
        encode_reply(ResponseType::StreamNames, &outcome)
    }

    async fn stream_list(self: &Rc<Self>, account: AccountId, body: &[u8]) -> Vec<u8> {
        let request = match decode_request::<StreamNamesRequest>(body) {
            Ok(request) => request,
            Err(error) => return encode_reply(ResponseType::StreamList, &Err::<StreamListBody, _>(error)),
        };
        let mut infos = Vec::new();
        for value in self.call_all(|| ShardCall::StreamInfos(account)).await {
            if let ShardReturn::StreamInfos(mut shard_infos) = value {
                infos.append(&mut shard_infos);
            }
        }
        let filter = (!request.subject.is_empty()).then_some(request.subject.as_str());
        infos.retain(|info| {
            filter.is_none_or(|f| info.config.subjects.iter().any(|s| subject::collide(s.as_bytes(), f.as_bytes())))
        });
        infos.sort_by(|a, b| a.config.name.cmp(&b.config.name));
        // A list shows the stored config: no `_nats.level`/`_nats.ver`, as nats-server.
        for info in &mut infos {
            crate::jetstream::metadata::remove_server_info(&mut info.config.metadata);
        }
        let (page, paged) = paginate(infos, request.offset(), limits::STREAM_LIST_PAGE);
        let body = StreamListBody { paged, streams: page, missing: Vec::new() };
        encode_reply(ResponseType::StreamList, &Ok::<_, ApiError>(body))
    }

    /// Calls every shard (this one included) and collects the answers.
    async fn call_all(self: &Rc<Self>, call: impl Fn() -> ShardCall) -> Vec<ShardReturn> {
        let mut values = Vec::new();
        for shard in 0..self.shard_count() {
            values.push(self.call(ShardId(shard), call()).await);
        }
        values
    }

    /// Asks `shard` (possibly this one) and waits for its answer.
    pub async fn call(self: &Rc<Self>, shard: ShardId, call: ShardCall) -> ShardReturn {
        if shard == self.shard {
            return self.execute_call(call).await;
        }
        let id = self.calls.open();
        self.send(shard, Envelope::Call { id, call: Box::new(call) });
        self.calls.wait(id).await
    }

    /// Carries out a call from another shard (or this one) on this shard's streams.
    pub(super) async fn execute_call(self: &Rc<Self>, call: ShardCall) -> ShardReturn {
        let call = match super::monitor::snapshot::execute_ops_call(self, call).await {
            Ok(value) => return value,
            Err(call) => call,
        };
        let account = match &call {
            ShardCall::CreateStream(account, _)
            | ShardCall::UpdateStream(account, _)
            | ShardCall::DeleteStream(account, _)
            | ShardCall::Usage(account)
            | ShardCall::StreamInfos(account)
            | ShardCall::ReadOrigin(account, _)
            | ShardCall::OpenRestore(account, _)
            | ShardCall::AdoptRestore(account, _)
            | ShardCall::AdoptRestored(account, _) => *account,
            ShardCall::Store(request) => request.account,
            ShardCall::Barrier | ShardCall::Snapshot(_) => return ShardReturn::Done,
        };
        let Some(service) = self.jetstream.get(account).cloned() else {
            return match call {
                ShardCall::StreamInfos(_) => ShardReturn::StreamInfos(Vec::new()),
                _ => ShardReturn::Usage(Usage::default()),
            };
        };
        let upsert = |summary: StreamSummary| CatalogChange::Upsert(self.catalog_entry(account, summary));
        match call {
            ShardCall::CreateStream(_, config) => {
                let name = config.name.clone();
                let (reply, summary) = service.create_reply(*config).await;
                if summary.is_some() {
                    self.follow_sources(account, &name);
                }
                ShardReturn::Reply { reply, change: summary.map(upsert) }
            }
            ShardCall::UpdateStream(_, config) => {
                let name = config.name.clone();
                let (reply, summary) = service.update_reply(*config).await;
                if summary.is_some() {
                    self.follow_sources(account, &name);
                }
                ShardReturn::Reply { reply, change: summary.map(upsert) }
            }
            ShardCall::ReadOrigin(_, request) => ShardReturn::Origin(Box::new(service.read_origin(*request).await)),
            ShardCall::OpenRestore(_, open) => {
                ShardReturn::Reply { reply: self.open_restore_here(account, *open).await, change: None }
            }
            ShardCall::AdoptRestore(_, adoption) => {
                ShardReturn::Reply { reply: self.coordinate_adoption(account, *adoption).await, change: None }
            }
            ShardCall::AdoptRestored(_, subject) => self.adopt_restored_here(account, &subject).await,
            ShardCall::DeleteStream(_, name) => {
                let (reply, deleted) = service.delete_reply(&name).await;
                ShardReturn::Reply { reply, change: deleted.then_some(CatalogChange::Remove { account, name }) }
            }
            ShardCall::Usage(_) => ShardReturn::Usage(service.usage()),
            ShardCall::StreamInfos(_) => ShardReturn::StreamInfos(
                service.summaries().iter().filter_map(|s| service.info(&s.name, false).ok()).collect(),
            ),
            ShardCall::Store(request) => {
                self.ops.store_started();
                let StoreRequest { stream, owner_key, subject, headers, payload, .. } = &*request;
                let headers = headers.as_deref().unwrap_or(&[]);
                if service.publish_copy(*owner_key, stream, subject, headers, payload).await == Taken::Batch {
                    self.store_now(*request).await;
                }
                ShardReturn::Done
            }
            ShardCall::Barrier | ShardCall::Snapshot(_) => ShardReturn::Done,
        }
    }

    pub(super) fn catalog_entry(&self, account: AccountId, summary: StreamSummary) -> CatalogEntry {
        CatalogEntry {
            account,
            name: summary.name,
            owner: self.shard,
            subjects: summary.subjects,
            allow_direct: summary.allow_direct,
            owner_key: summary.owner_key,
            reservation: summary.reservation,
        }
    }

    /// Applies a catalog change here and tells every other shard.
    pub(super) fn broadcast_catalog(self: &Rc<Self>, change: CatalogChange) {
        for peer in self.peers().collect::<Vec<_>>() {
            self.send(peer, Envelope::Catalog(change.clone()));
        }
        self.catalog.borrow_mut().apply(change);
    }

    /// Shard 0's part in creating, updating or deleting a stream.
    pub(super) async fn coordinate(
        self: &Rc<Self>,
        account: AccountId,
        stream: &str,
        body: &[u8],
        operation: Operation,
    ) -> Vec<u8> {
        self.under_coordinator_lock(self.coordinate_locked(account, stream, body, operation)).await
    }

    /// Runs `work` holding the coordinator's lock: one stream change at a time.
    pub(super) async fn under_coordinator_lock<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        self.lock_coordinator().await;
        let value = work.await;
        self.coordinating.set(false);
        for waker in self.coordinator_waiters.borrow_mut().drain(..) {
            waker.wake();
        }
        value
    }

    async fn coordinate_locked(
        self: &Rc<Self>,
        account: AccountId,
        stream: &str,
        body: &[u8],
        operation: Operation,
    ) -> Vec<u8> {
        let existing_owner = self.stream_owner(account, stream);
        let call = match operation {
            Operation::Delete => match existing_owner {
                Some(_) => ShardCall::DeleteStream(account, stream.to_string()),
                None => return encode_reply(ResponseType::StreamDelete, &Err::<(), _>(ApiError::stream_not_found())),
            },
            Operation::Create | Operation::Update => {
                let (purpose, response_type) = match operation {
                    Operation::Create => (ConfigPurpose::Create, ResponseType::StreamCreate),
                    _ => (ConfigPurpose::Update, ResponseType::StreamUpdate),
                };
                let config = match self.checked_for(account, stream, body, purpose).await {
                    Ok(config) => config,
                    Err(error) => return encode_reply(response_type, &Err::<(), _>(error)),
                };
                match operation {
                    Operation::Create => ShardCall::CreateStream(account, Box::new(config)),
                    _ => ShardCall::UpdateStream(account, Box::new(config)),
                }
            }
        };
        let owner = existing_owner.unwrap_or_else(|| placement::shard_for(stream, self.shard_count()));
        match self.call(owner, call).await {
            ShardReturn::Reply { reply, change } => {
                if let Some(change) = change {
                    self.broadcast_catalog(change);
                }
                reply
            }
            _ => encode_reply(ResponseType::StreamCreate, &Err::<(), _>(ApiError::bad_request())),
        }
    }

    /// Every check a create or update makes before the owner is asked: the config
    /// against the whole catalog, the stream's existence (update), the account's limits
    /// and source cycles.
    pub(super) async fn checked_for(
        self: &Rc<Self>,
        account: AccountId,
        stream: &str,
        body: &[u8],
        purpose: ConfigPurpose,
    ) -> Result<WireConfig, ApiError> {
        let config = self.checked_config(account, stream, body, purpose)?;
        if purpose == ConfigPurpose::Update && self.stream_owner(account, stream).is_none() {
            return Err(ApiError::stream_not_found());
        }
        self.check_stream_limits(account, stream, &config)?;
        self.check_source_cycle(account, &config).await?;
        Ok(config)
    }

    /// Decodes and checks a stream config against the whole catalog.
    fn checked_config(
        &self,
        account: AccountId,
        stream: &str,
        body: &[u8],
        purpose: ConfigPurpose,
    ) -> Result<WireConfig, ApiError> {
        let config = WireConfig::from_request(stream, body, purpose)?;
        check_subject_rules(&config)?;
        if self.catalog.borrow().overlapping(account, stream, &config.subjects).is_some() {
            return Err(ApiError::stream_subject_overlap());
        }
        Ok(config)
    }

    async fn lock_coordinator(&self) {
        poll_fn(|cx| {
            if !self.coordinating.get() {
                self.coordinating.set(true);
                return Poll::Ready(());
            }
            self.coordinator_waiters.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

/// nats-server's rules on a config's own subjects (its `checkStreamCfg`): each valid, not
/// `>` alone, clear of the reserved namespaces, none overlapping another. A restore request
/// is held to these at once; the catalog's other streams only when the stream is created.
pub(super) fn check_subject_rules(config: &WireConfig) -> Result<(), ApiError> {
    for (index, pattern) in config.subjects.iter().enumerate() {
        if !subject::is_valid_subject(pattern.as_bytes()) {
            // nats-server's words, without the subject.
            return Err(ApiError::stream_invalid_config("invalid subject".to_string()));
        }
        if pattern == ">" {
            return Err(crate::jetstream::stream_config::capture_all_requires_no_ack());
        }
        reserved_namespace_overlap(pattern, config.no_ack)?;
        for other in &config.subjects[index + 1..] {
            if subject::collide(pattern.as_bytes(), other.as_bytes()) {
                return Err(crate::jetstream::stream_config::overlap_within_config(pattern, other));
            }
        }
    }
    Ok(())
}

/// JetStream's own subject spaces: a stream may capture subjects there only with
/// `no_ack` (nats-server's `checkStreamCfg`), except under `$JS.EVENT.>`.
const JETSTREAM_NAMESPACES: [&str; 3] = ["$JS.>", "$JSC.>", "$NRG.>"];
const JETSTREAM_EVENTS: &str = "$JS.EVENT.>";
const SYSTEM_NAMESPACE: &str = "$SYS.>";
const SYSTEM_ACCOUNT_EVENTS: &str = "$SYS.ACCOUNT.>";

/// 10052 when `pattern` could capture JetStream API or system subjects, worded as
/// nats-server words it. A pattern only has to collide (`*.eu` collides with `$JS.>`).
/// jetcore never lets a stream capture `$JS.API.>` itself, `no_ack` or not: API requests
/// are answered before stream capture is consulted, so such a stream would silently miss them.
fn reserved_namespace_overlap(pattern: &str, no_ack: bool) -> Result<(), ApiError> {
    let bytes = pattern.as_bytes();
    if pattern.starts_with("$JS.API.") || pattern == "$JS.API" {
        return Err(crate::jetstream::stream_config::api_overlap_requires_no_ack());
    }
    if no_ack {
        return Ok(());
    }
    let api = JETSTREAM_NAMESPACES.iter().any(|space| subject::collide(bytes, space.as_bytes()));
    if api && !subject::is_subset(bytes, JETSTREAM_EVENTS.as_bytes()) {
        return Err(crate::jetstream::stream_config::api_overlap_requires_no_ack());
    }
    let system = subject::collide(bytes, SYSTEM_NAMESPACE.as_bytes());
    if system && !subject::is_subset(bytes, SYSTEM_ACCOUNT_EVENTS.as_bytes()) {
        return Err(ApiError::stream_invalid_config("subjects that overlap with system api require no-ack to be true"));
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Operation {
    Create,
    Update,
    Delete,
}

fn paginate<T>(items: Vec<T>, offset: u64, limit: u64) -> (Vec<T>, Paged) {
    let total = items.len() as u64;
    let page = items.into_iter().skip(offset as usize).take(limit as usize).collect();
    (page, Paged { total, offset, limit })
}

/// The reply for a stream request when the stream does not exist.
fn not_found_reply(request: ApiRequest<'_>) -> ApiReply {
    match request.response_type() {
        Some(response_type) => ApiReply::Json(encode_reply(response_type, &Err::<(), _>(ApiError::stream_not_found()))),
        None => ApiReply::Silent,
    }
}

/// A request whose `Nats-Required-Api-Level` is above jetcore's: a pull request gets
/// nats-server's status, every other request its error reply.
fn required_level_reply(request: ApiRequest<'_>) -> ApiReply {
    if let ApiRequest::ConsumerNext { .. } = request {
        let mut headers = Vec::new();
        crate::protocol::headers::encode_status(&mut headers, 412, "Required Api Level");
        return ApiReply::Message { headers, payload: Bytes::new() };
    }
    let Some(response_type) = request.response_type() else { return ApiReply::Silent };
    ApiReply::Json(encode_reply(response_type, &Err::<(), _>(ApiError::required_api_level())))
}

/// A consumer request whose stream does not exist (or is not this shard's).
fn consumer_reply(request: ApiRequest<'_>, body: &[u8]) -> ApiReply {
    let Some(response_type) = request.response_type() else { return ApiReply::Silent };
    let error = crate::jetstream::consumer_api::stream_missing_error(&request, body);
    ApiReply::Json(encode_reply(response_type, &Err::<(), _>(error)))
}
