//! The JetStream service of one shard: the `$JS.API` operations on the streams this shard
//! owns, the publish path into them, and their consumers. It answers with reply bytes;
//! routing requests to the owning shard and delivering replies is the server's job
//! (DESIGN §6).
//!
//! Consumers: `consumers` (registry, the shard's timer wheel, the effect queue),
//! `consumer_api` (create/info/delete/names/list, pulls, acks, flow control),
//! `consumer_effects` (carrying out deliveries and statuses, state writes, restore),
//! `consumer_store` (files beside the stream); what a consumer may see is
//! `engine::EngineStreamView` (durable messages only). A publish reaches consumers only
//! after it is durable.
//!
//! Mirrors and sources: `sourcing` (the following stream's links, progress, storing
//! copies), `origin_reads` (reads of an origin's durable messages, long polls),
//! `followers` (a follower as interest on its origin). The server's `source_pump`
//! carries reads between shards.

mod advisories;
mod batch;
mod batch_publish;
mod consumer_api;
mod consumer_effects;
mod consumer_pause;
mod consumer_reset;
mod consumer_store;
mod consumer_unpin;
mod consumers;
pub(crate) mod convert;
mod direct_get;
mod fast_batch;
mod fast_batch_publish;
mod followers;
mod health;
mod interest;
mod maintenance;
mod origin_reads;
mod owner;
mod publish;
mod records;
mod republish;
mod requests;
mod restore;
mod snapshot;
mod sourcing;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::rc::Rc;

use crate::engine::Engine;
use crate::jetstream::errors::ApiError;
use crate::jetstream::metadata;
use crate::jetstream::policies::StorageType;
use crate::jetstream::stream_config::StreamConfig as WireConfig;
use crate::jetstream::stream_info::{ClusterInfo, StreamInfo};
use crate::jetstream::Timestamp;
use crate::shard::ShardId;
use crate::stream::{self, SystemClock};
use crate::subject::TokenHashBuilder;

pub use advisories::advisory_id;
pub use consumers::{LocalFuture, Outlet};
pub use health::{StreamCondition, StreamHealth};
pub use origin_reads::{OriginBatch, OriginMessage, OriginReply, OriginRequest, OriginStart};
pub use publish::Taken;
pub use records::ApiRecord;
pub use restore::{restore_failed, RestoreInto, RestoredStream, RESTORE_STAGING_DIR};
pub use snapshot::Snapshot;

/// The `$JS.ACK` subjects acks and flow-control replies come on.
pub use crate::consumer::AckSubject;
/// The lower layers' types this service's API carries: the disk and sync policy it opens
/// with, the group-commit counters it reports.
pub use crate::engine::{Disk, DmaDisk, FlushCounts, Pow2Counts};
pub use crate::stream::OwnerKey;
pub use crate::stream::SyncPolicy;
pub use crate::stream::{idle_after_blocking, last_write_blocked};
pub use requests::ApiReply;

pub use crate::jetstream::api_level::API_LEVEL;

/// What other shards need to know about a stream to route to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamSummary {
    pub name: String,
    pub subjects: Vec<String>,
    pub allow_direct: bool,
    /// Where its owner sits on its shard: a publish there resolves it with this.
    pub owner_key: OwnerKey,
    /// What the stream reserves against the account's and the server's limits.
    pub reservation: Reservation,
}

/// A stream's `max_bytes` (`-1`: unset) and whether it is kept in memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reservation {
    pub memory: bool,
    pub max_bytes: i64,
}

/// Usage figures for `$JS.API.INFO`, summed over shards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub memory_bytes: u64,
    pub storage_bytes: u64,
    pub streams: u64,
    pub consumers: u64,
    /// Sum of `max_bytes` of memory / file streams that set it (nats-server's reservations).
    pub reserved_memory_bytes: u64,
    pub reserved_storage_bytes: u64,
    /// `$JS.API` requests this shard answered (direct gets and pull requests excluded, as
    /// nats-server counts), and how many of those answers were errors.
    pub api_requests: u64,
    pub api_errors: u64,
}

impl std::ops::AddAssign for Usage {
    /// Adds another shard's usage (account totals are sums over shards).
    fn add_assign(&mut self, other: Usage) {
        self.memory_bytes += other.memory_bytes;
        self.storage_bytes += other.storage_bytes;
        self.streams += other.streams;
        self.consumers += other.consumers;
        self.reserved_memory_bytes += other.reserved_memory_bytes;
        self.reserved_storage_bytes += other.reserved_storage_bytes;
        self.api_requests += other.api_requests;
        self.api_errors += other.api_errors;
    }
}

pub struct StreamService {
    engine: Engine,
    shard: u16,
    sync: SyncPolicy,
    server_id: String,
    server_name: String,
    server_version: String,
    records: RefCell<HashMap<String, ApiRecord, TokenHashBuilder>>,
    consumers: consumers::ConsumerRegistry,
    /// `$JS.API` answers given on this shard: (requests, errors). See [`Usage::api_requests`].
    api_answers: Cell<(u64, u64)>,
    /// Where consumer files go (the same real disk the engine writes).
    disk: Rc<dyn Disk>,
    /// Atomic batches being staged (`batch.rs`).
    batches: RefCell<batch::OpenBatches>,
    /// Fast batches being published (`fast_batch.rs`).
    fast_batches: RefCell<fast_batch::FastBatches>,
    /// One owner per stream served here (`owner.rs`).
    owners: RefCell<stream::StreamOwners>,
    /// Mirrors and sources followed here, and followers waiting on this shard's streams.
    sourcing: sourcing::SourcingState,
    /// The account's consumer ceilings, `(max_consumers, max_ack_pending)` (`-1`: none),
    /// set once at start by the server (`set_account_consumer_limits`).
    account_consumer_limits: Cell<(i64, i64)>,
    /// `jetstream { domain }`, named in pub acks and stream info (empty: none).
    domain: std::cell::OnceCell<String>,
    /// The account JetStream serves, named in priority-group advisories (unset: `$G`).
    account_name: std::cell::OnceCell<String>,
}

impl StreamService {
    /// Names this server's JetStream domain; set once, at start.
    pub fn set_domain(&self, domain: String) {
        let _ = self.domain.set(domain);
    }

    /// The JetStream domain, empty when none is configured.
    pub fn domain(&self) -> String {
        self.domain.get().cloned().unwrap_or_default()
    }

    /// Names the account this service serves; set once, at start.
    pub fn set_account_name(&self, name: String) {
        let _ = self.account_name.set(name);
    }

    /// The account this service serves (`$G` unless the server named another).
    pub fn account_name(&self) -> &str {
        self.account_name.get().map_or("$G", String::as_str)
    }

    /// Opens the streams of `shard` under `dir`, one account's JetStream directory (its
    /// streams are in `dir/streams`; others belong to other shards); every file of
    /// theirs, streams' and consumers', goes through `disk`. A server opens one service
    /// per account with JetStream on each shard: names are free per account. `server`:
    /// this server's id and name, which advisories carry.
    pub async fn open(
        disk: Rc<dyn Disk>,
        dir: &Path,
        shard: u16,
        shard_count: u16,
        sync: SyncPolicy,
        server: (String, String),
        server_version: String,
    ) -> Result<StreamService, stream::Error> {
        let (server_id, server_name) = server;
        let owns = |name: &str, recorded: Option<ShardId>| {
            let owner = match recorded {
                Some(recorded) => crate::shard::placement::owner(name, recorded, shard_count),
                None => crate::shard::placement::shard_for(name, shard_count),
            };
            owner.0 == shard
        };
        let engine = Engine::open_owned(disk.clone(), dir, Rc::new(SystemClock), &owns).await?;
        let service = StreamService {
            engine,
            shard,
            sync,
            server_id,
            server_name,
            server_version,
            records: RefCell::new(HashMap::default()),
            consumers: consumers::ConsumerRegistry::default(),
            api_answers: Cell::new((0, 0)),
            batches: RefCell::new(batch::OpenBatches::default()),
            fast_batches: RefCell::new(fast_batch::FastBatches::default()),
            disk,
            owners: RefCell::new(stream::StreamOwners::default()),
            sourcing: sourcing::SourcingState::default(),
            account_consumer_limits: Cell::new((-1, -1)),
            domain: std::cell::OnceCell::new(),
            account_name: std::cell::OnceCell::new(),
        };
        service.load_records().await;
        Ok(service)
    }

    /// Each opened stream's wire config. A stream whose config cannot be read is not
    /// served (never served with defaults in place of what the client set): reported,
    /// and its files left as they are.
    async fn load_records(&self) {
        for name in self.engine.stream_names() {
            let Ok(stream) = self.engine.stream(&name) else { continue };
            let record = match records::load(&stream).await {
                Ok(Some(record)) => record,
                Ok(None) => rebuilt_record(&stream.config()),
                Err(error) => {
                    tracing::error!(shard = self.shard, stream = %name, %error, "stream not served: its config is unreadable; files left on disk untouched");
                    continue;
                }
            };
            self.install_owner(&record.config);
            self.records.borrow_mut().insert(name, record);
        }
    }

    /// Every stream this shard owns, for the other shards' catalogs.
    /// The account's `max_consumers` (per stream, as nats-server applies it) and
    /// `max_ack_pending` (a consumer's default and ceiling); `-1`: no limit.
    pub fn set_account_consumer_limits(&self, max_consumers: i64, max_ack_pending: i64) {
        self.account_consumer_limits.set((max_consumers, max_ack_pending));
    }

    pub fn summaries(&self) -> Vec<StreamSummary> {
        self.records.borrow().values().map(|record| self.summary(&record.config)).collect()
    }

    /// What other shards need to know about stream `config.name`, served here.
    fn summary(&self, config: &WireConfig) -> StreamSummary {
        StreamSummary {
            name: config.name.clone(),
            subjects: config.subjects.clone(),
            allow_direct: config.allow_direct,
            owner_key: self.owners.borrow().key_of(&config.name).unwrap_or(OwnerKey::NONE),
            reservation: Reservation {
                memory: config.storage == crate::jetstream::policies::StorageType::Memory,
                max_bytes: config.max_bytes,
            },
        }
    }

    /// Group-commit counters of this shard's `storage` streams, for `/metrics`.
    pub fn flush_counts(&self, storage: StorageType) -> FlushCounts {
        self.engine.flush_counts(convert::storage_kind(storage))
    }

    pub fn usage(&self) -> Usage {
        let mut usage = Usage::default();
        for name in self.engine.stream_names() {
            let Ok(state) = self.engine.state(&name) else { continue };
            match state.storage {
                stream::StorageKind::File => usage.storage_bytes += state.bytes,
                stream::StorageKind::Memory => usage.memory_bytes += state.bytes,
            }
            usage.streams += 1;
        }
        for record in self.records.borrow().values() {
            let reserved = record.config.max_bytes.max(0) as u64;
            match record.config.storage {
                StorageType::File => usage.reserved_storage_bytes += reserved,
                StorageType::Memory => usage.reserved_memory_bytes += reserved,
            }
        }
        usage.consumers = self.consumers.count() as u64;
        (usage.api_requests, usage.api_errors) = self.api_answers.get();
        usage
    }

    /// Counts one answered `$JS.API` request for the account's `api` statistics.
    pub fn count_api_answer(&self, reply: &ApiReply) {
        let (requests, errors) = self.api_answers.get();
        self.api_answers.set((requests + 1, errors + u64::from(reply.is_error())));
    }

    /// Creates a stream (placement already decided: this shard) or confirms an identical
    /// one. Overlap with other streams was checked by the caller against the catalog.
    pub async fn create(&self, config: WireConfig) -> Result<(StreamInfo, bool), ApiError> {
        if let Some(existing) = self.records.borrow().get(&config.name) {
            return if same_config(&existing.config, &config) {
                self.info(&config.name, false).map(|info| (info, true))
            } else {
                Err(ApiError::stream_name_exist())
            };
        }
        let engine_config = convert::engine_config(&config, self.sync)?;
        let placement = ShardId(self.shard);
        let record = ApiRecord { config: config.clone(), created_ns: now_ns() };
        self.engine
            .create_stream_extended(engine_config, placement, Some(record.to_extension()))
            .await
            .map_err(|e| convert::api_error(&e))?;
        self.register_created(record);
        self.info(&config.name, false).map(|info| (info, true))
    }

    /// Serves a stream the engine now holds (just created, or a restore adopted).
    fn register_created(&self, record: ApiRecord) {
        let config = record.config.clone();
        self.records.borrow_mut().insert(config.name.clone(), record);
        self.install_owner(&config);
        if let Ok(stream) = self.engine.stream(&config.name) {
            self.consumers.ensure_stream(&stream);
        }
        self.advise_stream(&config.name, advisories::Action::Create);
    }

    /// Applies an update allowed by nats-server's rules (storage may not change).
    pub async fn update(&self, config: WireConfig) -> Result<StreamInfo, ApiError> {
        let existing = self.record(&config.name)?;
        if existing.config.storage != config.storage {
            return Err(crate::jetstream::stream_config::update_changes_storage());
        }
        if existing.config.allow_msg_counter != config.allow_msg_counter {
            return Err(crate::jetstream::stream_config::update_changes_counter());
        }
        if existing.config.persist_mode != config.persist_mode {
            return Err(crate::jetstream::stream_config::update_changes_persist_mode());
        }
        crate::jetstream::source_checks::check_update(&existing.config, &config)?;
        self.check_consumers_within(&config.name, existing.config.consumer_limits, config.consumer_limits)?;
        let engine_config = convert::engine_config(&config, self.sync)?;
        let record = ApiRecord { config: config.clone(), created_ns: existing.created_ns };
        self.engine
            .update_stream_extended(engine_config, Some(record.to_extension()))
            .await
            .map_err(|e| convert::api_error(&e))?;
        self.records.borrow_mut().insert(config.name.clone(), record);
        self.install_owner(&config);
        self.advise_stream(&config.name, advisories::Action::Modify);
        self.info(&config.name, true)
    }

    pub async fn delete(&self, name: &str) -> Result<(), ApiError> {
        self.record(name)?;
        if let Ok(stream) = self.engine.stream(name) {
            for id in self.consumers.ids_of(name) {
                self.consumers.call(&stream, id, |entry, cx| entry.consumer.delete(cx));
            }
        }
        self.engine.delete_stream(name).await.map_err(|e| convert::api_error(&e))?;
        self.forget_sourcing(name);
        self.consumers.forget_stream(name);
        self.records.borrow_mut().remove(name);
        self.remove_owner(name);
        self.advise_stream(name, advisories::Action::Delete);
        Ok(())
    }

    fn record(&self, name: &str) -> Result<ApiRecord, ApiError> {
        self.records.borrow().get(name).cloned().ok_or_else(ApiError::stream_not_found)
    }

    /// Stream info; `with_cluster` adds the `cluster` block nats-server shows in info
    /// replies (not in create replies).
    pub fn info(&self, name: &str, with_cluster: bool) -> Result<StreamInfo, ApiError> {
        self.info_with_subjects(name, with_cluster, None)
    }

    fn info_with_subjects(&self, name: &str, with_cluster: bool, filter: Option<&str>) -> Result<StreamInfo, ApiError> {
        let record = self.record(name)?;
        let state = self.engine.state(name).map_err(|e| convert::api_error(&e))?;
        let subjects = match filter {
            Some(filter) => self.engine.stream(name).map(|s| s.subject_counts(filter)).unwrap_or_default(),
            None => BTreeMap::new(),
        };
        let (mirror, sources) = self.source_infos(name, record.config.mirror.as_ref(), &record.config.sources);
        let mut config = record.config.clone();
        metadata::add_server_info(&mut config.metadata, API_LEVEL, &self.server_version);
        // A mirror or source counts as a consumer of its origin, as in nats-server.
        let mut state = convert::wire_state(&state, subjects, self.consumer_count_with_followers(name));
        if state.first_seq == 0 && config.first_seq > 0 {
            // An empty stream created with `first_seq: 1` reports 1, as nats-server does.
            state.first_seq = config.first_seq;
        }
        Ok(StreamInfo {
            config,
            created: Timestamp::from_unix_nanos(record.created_ns),
            state,
            domain: self.domain(),
            cluster: with_cluster.then(|| ClusterInfo { leader: self.server_name.clone(), ..ClusterInfo::default() }),
            mirror,
            sources,
            ts: Timestamp::from_unix_nanos(now_ns()),
        })
    }

    /// Whether publishes to `name` get a pub ack (`no_ack` streams get none).
    pub fn acks(&self, name: &str) -> bool {
        self.owner(name).is_none_or(|owner| !owner.rules().no_ack)
    }

    /// Periodic work: interval syncs, age expiry.
    pub async fn tick(&self) {
        match self.engine.tick().await {
            // Delete markers are published by the stream itself: durable now, so
            // consumers (KV watchers) get them like any message.
            Ok(written) => {
                for (stream, markers) in written {
                    for marker in markers {
                        self.consumers.stream_appended(&stream, marker.seq, &marker.subject, marker.header_bytes, 0);
                        self.origin_appended();
                    }
                }
            }
            Err(error) => tracing::error!(shard = self.shard, %error, "stream maintenance failed"),
        }
        self.fire_schedules().await;
        let records = self.records.borrow();
        let timed_out = self
            .batches
            .borrow_mut()
            .abandon_idle(|name| records.get(name).is_some_and(|record| record.config.allow_atomic));
        for (stream, id) in timed_out {
            self.advise_batch_abandoned(&stream, &id, "timeout");
        }
        self.fast_batches
            .borrow_mut()
            .abandon_idle(|name| records.get(name).is_some_and(|record| record.config.allow_batched));
        drop(records);
        self.streams_maybe_removed();
    }

    /// Consumers of streams that removed messages (age, purge, delete) recount.
    pub fn streams_maybe_removed(&self) {
        for name in self.engine.stream_names() {
            if let Ok(stream) = self.engine.stream(&name) {
                self.consumers.stream_maybe_removed(&stream);
            }
        }
    }

    /// Connects consumers to the server (interest, publishing).
    pub fn attach_outlet(&self, outlet: Rc<dyn Outlet>) {
        self.consumers.attach(outlet);
    }

    /// Flushes and checkpoints every stream (a clean stop).
    pub async fn checkpoint(&self) {
        self.persist_consumers(true).await;
        if let Err(error) = self.engine.checkpoint_all().await {
            tracing::error!(shard = self.shard, %error, "checkpoint failed");
        }
    }
}

/// Two configs are the same stream when equal apart from server-managed metadata.
fn same_config(stored: &WireConfig, requested: &WireConfig) -> bool {
    let mut stored = stored.clone();
    let mut requested = requested.clone();
    metadata::remove_server_info(&mut stored.metadata);
    metadata::remove_server_info(&mut requested.metadata);
    stored == requested
}

/// A wire config for a stream that has none (created through the embedded `Engine`).
fn rebuilt_record(config: &stream::StreamConfig) -> ApiRecord {
    let mut wire = WireConfig { name: config.name.clone(), subjects: config.subjects.clone(), ..WireConfig::default() };
    wire.storage = match config.storage {
        stream::StorageKind::File => StorageType::File,
        stream::StorageKind::Memory => StorageType::Memory,
    };
    wire.max_msgs = config.max_msgs.map_or(-1, |v| v as i64);
    wire.max_bytes = config.max_bytes.map_or(-1, |v| v as i64);
    wire.max_age = config.max_age.map_or(0, |v| v.as_nanos() as i64);
    wire.max_msgs_per_subject = config.max_msgs_per_subject.map_or(-1, |v| v as i64);
    wire.max_msg_size = config.max_msg_size.map_or(-1, i64::from);
    wire.duplicate_window = config.duplicate_window.as_nanos() as i64;
    let wire = wire.clone().normalized(crate::jetstream::stream_config::ConfigPurpose::Create).unwrap_or(wire);
    ApiRecord { config: wire, created_ns: now_ns() }
}

pub fn now_ns() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}
