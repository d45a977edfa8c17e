//! The embedded storage engine: streams on one shard, usable in-process without a network.
//!
//! An [`Engine`] owns the streams of the glommio executor it is called from (one shard). It
//! does no cross-shard routing: which shard owns a stream is decided by the caller's
//! placement policy and recorded in the stream's metadata (`ShardId`) so a restart finds it.
//!
//! Layout on disk: `<dir>/streams/<name>/{meta.json, checkpoint.bin, <id>.seg}`.
//!
//! A program that does not run glommio uses [`EngineHandle`]: the engine on a shard thread
//! of its own, reached by requests over a channel, answered through [`Reply`]s that block
//! or `.await` (see `engine/handle.rs`). The example below runs on glommio directly:
//! publish with a durable ack, close, reopen, and read from a sequence.
//!
//! ```
//! use jetcore::engine::{Engine, StartPosition};
//! use jetcore::stream::{ShardId, StreamConfig};
//!
//! # fn raise_memlock() {
//! #     let limit = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
//! #     // SAFETY: plain FFI call with a valid pointer; failure only means glommio falls back.
//! #     unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &limit) };
//! # }
//! # raise_memlock();
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().to_path_buf();
//! glommio::LocalExecutorBuilder::default()
//!     .spawn(move || async move {
//!         let engine = Engine::open(&path).await.unwrap();
//!         let config = StreamConfig::new("ORDERS", &["orders.>"]);
//!         engine.create_stream(config, ShardId(0)).await.unwrap();
//!         // Resolves once the record is on stable storage (fdatasync).
//!         let ack = engine.publish("ORDERS", "orders.eu", b"", b"hello").await.unwrap();
//!         assert_eq!(ack.seq, 1);
//!         engine.close().await.unwrap();
//!
//!         let engine = Engine::open(&path).await.unwrap();
//!         let mut cursor = engine.cursor("ORDERS", StartPosition::Sequence(1), None).unwrap();
//!         let message = cursor.next().await.unwrap().unwrap();
//!         assert_eq!(&message.payload[..], b"hello");
//!         assert_eq!(engine.state("ORDERS").unwrap().last_seq, 1);
//!     })
//!     .unwrap()
//!     .join()
//!     .unwrap();
//! ```

mod consumer;
mod consumer_config;
mod consumer_files;
mod handle;
mod many;
mod stream_view;
mod unlisted;

/// The store's types this API carries: the disk an engine runs on, its group-commit counters.
pub use crate::store::{Disk, DmaDisk, FlushCounts, Pow2Counts, SimDisk};
pub use consumer::{ConsumedMessage, ConsumerInfo, DeliveryInfo, DurableConsumer, Settle};
pub use consumer_config::{AckPolicy, ConsumerConfig, DeliverPolicy};
pub use consumer_files::{ConsumerFiles, Durability};
pub use handle::{EngineHandle, Reply};
pub use many::Outgoing;
pub use stream_view::EngineStreamView;
pub use unlisted::UnlistedStream;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::task::{Poll, Waker};

use crate::store::{self, FlushStats};
use crate::stream::record_cache::RecordCache;
use crate::stream::subject_match::patterns_overlap;
use crate::stream::{
    Clock, Error, MarkerWritten, PubAck, PublishRequest, PurgeRequest, ShardId, StorageKind, StoredMessage, Stream,
    StreamConfig, StreamContext, StreamMeta, StreamState, SystemClock,
};

const STREAMS_DIR: &str = "streams";
const DELETED_SUFFIX: &str = ".deleted";
const MEMORY_ROOT: &str = "/memory";

/// Where iteration starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartPosition {
    /// At this sequence (1 is a stream's first; past the last, only new messages).
    Sequence(u64),
    /// Nanoseconds since the Unix epoch.
    Time(i64),
}

/// The streams of one shard: open it on a glommio executor with [`Engine::open`] and keep
/// it there (it is `!Send`; share it between that executor's tasks with an `Rc`). From any
/// other thread or runtime, use [`EngineHandle`], which runs one on a thread of its own.
///
/// Streams take the same [`StreamConfig`] a client sends in `$JS.API.STREAM.CREATE`
/// (limits, retention, storage, `duplicate_window`, TTLs, ...). A publish resolves once its
/// record is durable under the stream's sync policy (by default fdatasync before the
/// ack); publishes in flight together share one write and one fdatasync (group commit).
pub struct Engine {
    file_context: StreamContext,
    memory_context: StreamContext,
    streams_dir: PathBuf,
    streams: RefCell<BTreeMap<String, Rc<Stream>>>,
    failed_to_open: Vec<(String, Error)>,
    appended: Rc<Appended>,
    /// Per stream, its last sequence known durable: what consumers may see. Set at open
    /// and create, raised by [`Engine::publish`].
    visible_last: RefCell<BTreeMap<String, Rc<Cell<u64>>>>,
    /// Durable consumers in use, by stream and name (loaded from disk on first use).
    consumers: RefCell<BTreeMap<(String, String), Rc<DurableConsumer>>>,
}

/// Wakes cursors waiting at the end of a stream when [`Engine::publish`] stored something.
#[derive(Default)]
struct Appended {
    generation: Cell<u64>,
    waiters: RefCell<Vec<Waker>>,
    /// The engine is closing: waiting cursors give up (see `EngineHandle::close`).
    closing: Cell<bool>,
}

impl Appended {
    fn close(&self) {
        self.closing.set(true);
        self.notify();
    }

    fn notify(&self) {
        self.generation.set(self.generation.get() + 1);
        for waker in self.waiters.borrow_mut().drain(..) {
            waker.wake();
        }
    }

    /// Resolves once `notify` ran after `generation` was read.
    async fn since(&self, generation: u64) {
        std::future::poll_fn(|cx| {
            if self.generation.get() != generation {
                return Poll::Ready(());
            }
            self.waiters.borrow_mut().push(cx.waker().clone());
            Poll::Pending
        })
        .await
    }
}

impl Engine {
    /// Opens (or creates) an engine on `dir` with O_DIRECT files. Call inside a glommio executor.
    pub async fn open(dir: impl AsRef<Path>) -> Result<Engine, Error> {
        Engine::open_with(Rc::new(DmaDisk), dir.as_ref(), Rc::new(SystemClock)).await
    }

    /// Opens an engine over any disk and clock (tests use [`SimDisk`] and a manual clock).
    /// Every stream directory is reopened; one that fails is reported in
    /// [`Engine::failed_to_open`] and left on disk untouched.
    pub async fn open_with(disk: Rc<dyn Disk>, dir: &Path, clock: Rc<dyn Clock>) -> Result<Engine, Error> {
        Engine::open_owned(disk, dir, clock, &|_, _| true).await
    }

    /// Opens only the streams this shard owns: `owns(name, recorded_placement)` decides,
    /// given the placement recorded in the stream's metadata (`None` when unreadable).
    /// Several shards share one data directory this way, each opening its own streams.
    pub async fn open_owned(
        disk: Rc<dyn Disk>,
        dir: &Path,
        clock: Rc<dyn Clock>,
        owns: &dyn Fn(&str, Option<ShardId>) -> bool,
    ) -> Result<Engine, Error> {
        let streams_dir = dir.join(STREAMS_DIR);
        disk.create_dir_all(&streams_dir).await.map_err(|e| store::Error::io("create_dir", &streams_dir, &e))?;
        let memory_disk: Rc<dyn Disk> = Rc::new(SimDisk::volatile());
        let records = Rc::new(RecordCache::default());
        let maintenance = Rc::new(crate::shard::LocalSignal::default());
        let mut engine = Engine {
            file_context: StreamContext {
                disk,
                flush_stats: Rc::new(FlushStats::default()),
                clock: clock.clone(),
                records: records.clone(),
                maintenance: maintenance.clone(),
            },
            memory_context: StreamContext {
                disk: memory_disk,
                flush_stats: Rc::new(FlushStats::default()),
                clock,
                records,
                maintenance,
            },
            streams_dir,
            streams: RefCell::new(BTreeMap::new()),
            failed_to_open: Vec::new(),
            appended: Rc::new(Appended::default()),
            visible_last: RefCell::new(BTreeMap::new()),
            consumers: RefCell::new(BTreeMap::new()),
        };
        engine.reopen_streams(owns).await?;
        Ok(engine)
    }

    async fn reopen_streams(&mut self, owns: &dyn Fn(&str, Option<ShardId>) -> bool) -> Result<(), Error> {
        let disk = self.file_context.disk.clone();
        let names =
            disk.list_dir(&self.streams_dir).await.map_err(|e| store::Error::io("list", &self.streams_dir, &e))?;
        for name in names {
            let dir = self.streams_dir.join(&name);
            if let Some(base) = name.strip_suffix(DELETED_SUFFIX) {
                // A delete that was interrupted after its rename: finish it.
                if owns(base, None) {
                    let _ = disk.remove_dir_all(&dir).await;
                }
                continue;
            }
            let recorded = StreamMeta::read(&*disk, &dir).await.ok().flatten().map(|meta| meta.placement);
            if !owns(&name, recorded) {
                continue;
            }
            match Stream::open(&self.file_context, dir).await {
                Ok(stream) => {
                    // Everything recovery found is durable.
                    self.visible_last.borrow_mut().insert(name.clone(), Rc::new(Cell::new(stream.last_seq())));
                    self.streams.borrow_mut().insert(name, Rc::new(stream));
                }
                Err(error) => {
                    tracing::error!(stream = %name, %error, "stream failed to open; left on disk untouched");
                    self.failed_to_open.push((name, error));
                }
            }
        }
        Ok(())
    }

    /// Streams whose files could not be opened at start, with the reason.
    pub fn failed_to_open(&self) -> &[(String, Error)] {
        &self.failed_to_open
    }

    /// Creates a stream; creating an identical one again is a no-op.
    pub async fn create_stream(&self, config: StreamConfig, placement: ShardId) -> Result<StreamState, Error> {
        self.create_stream_extended(config, placement, None).await
    }

    /// [`Engine::create_stream`], with the embedder's `extension` written in the same
    /// metadata file (see [`StreamMeta::extension`]).
    pub async fn create_stream_extended(
        &self,
        config: StreamConfig,
        placement: ShardId,
        extension: Option<serde_json::Value>,
    ) -> Result<StreamState, Error> {
        config.validate()?;
        if let Some(existing) = self.streams.borrow().get(&config.name).filter(|s| s.config() == config) {
            return Ok(existing.state());
        }
        if self.name_taken(&config.name) {
            return Err(Error::StreamNameInUse { name: config.name });
        }
        self.check_overlap(&config)?;
        let (context, dir) = self.location(&config);
        let name = config.name.clone();
        let stream = Rc::new(Stream::create(context, dir, config, placement, extension).await?);
        let state = stream.state();
        if self.streams.borrow_mut().insert(name.clone(), stream).is_some() {
            return Err(Error::StreamNameInUse { name });
        }
        self.visible_last.borrow_mut().insert(name, Rc::new(Cell::new(state.last_seq)));
        Ok(state)
    }

    /// Whether `name` is a stream's, or the files of one that failed to open are on disk
    /// (never overwrite a stream that looks damaged).
    fn name_taken(&self, name: &str) -> bool {
        self.streams.borrow().contains_key(name) || self.failed_to_open.iter().any(|(failed, _)| failed == name)
    }

    /// Refuses patterns that would let two streams capture the same subject.
    fn check_overlap(&self, config: &StreamConfig) -> Result<(), Error> {
        let patterns = config.capture_patterns();
        for (name, stream) in self.streams.borrow().iter().filter(|(name, _)| **name != config.name) {
            let theirs = stream.config().capture_patterns();
            let overlapping = patterns.iter().any(|mine| theirs.iter().any(|other| patterns_overlap(mine, other)));
            if overlapping {
                return Err(Error::SubjectsOverlap { stream: name.clone() });
            }
        }
        Ok(())
    }

    fn location(&self, config: &StreamConfig) -> (&StreamContext, PathBuf) {
        match config.storage {
            StorageKind::File => (&self.file_context, self.streams_dir.join(&config.name)),
            StorageKind::Memory => (&self.memory_context, Path::new(MEMORY_ROOT).join(&config.name)),
        }
    }

    /// Replaces a stream's configuration and applies its limits. A changed `sync` policy or
    /// `segment_size_bytes` is recorded now and takes effect when the stream is next opened.
    pub async fn update_stream(&self, config: StreamConfig) -> Result<StreamState, Error> {
        self.update_stream_extended(config, None).await
    }

    /// [`Engine::update_stream`], replacing the embedder's `extension` too when `Some`.
    pub async fn update_stream_extended(
        &self,
        config: StreamConfig,
        extension: Option<serde_json::Value>,
    ) -> Result<StreamState, Error> {
        let stream = self.stream(&config.name)?;
        self.check_overlap(&config)?;
        stream.update(config, extension).await?;
        Ok(stream.state())
    }

    /// Deletes a stream and its files. Crash-safe: the directory is renamed away first.
    pub async fn delete_stream(&self, name: &str) -> Result<(), Error> {
        let stream = self.stream(name)?;
        self.streams.borrow_mut().remove(name);
        self.visible_last.borrow_mut().remove(name);
        self.consumers.borrow_mut().retain(|(of_stream, _), consumer| {
            let kept = of_stream != name;
            if !kept {
                consumer.mark_deleted();
            }
            kept
        });
        let _ = stream.close().await;
        let disk = &self.context_of(stream.config().storage).disk;
        let doomed = stream.dir().with_file_name(format!("{name}{DELETED_SUFFIX}"));
        match disk.rename(stream.dir(), &doomed).await {
            Ok(()) => {}
            // Nothing was ever written for it (an in-memory stream without messages).
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(store::Error::io("rename", stream.dir(), &error).into()),
        }
        let parent = doomed.parent().unwrap_or(Path::new("/"));
        disk.fsync_dir(parent).await.map_err(|e| store::Error::io("fsync_dir", parent, &e))?;
        disk.remove_dir_all(&doomed).await.map_err(|e| store::Error::io("remove", &doomed, &e))?;
        Ok(())
    }

    /// A handle on stream `name`.
    pub fn stream(&self, name: &str) -> Result<Rc<Stream>, Error> {
        self.streams.borrow().get(name).cloned().ok_or_else(|| Error::StreamNotFound { name: name.into() })
    }

    /// Group-commit counters (write and fdatasync times, group sizes) of this engine's
    /// `storage` streams since it opened, deleted streams included.
    pub fn flush_counts(&self, storage: StorageKind) -> FlushCounts {
        self.context_of(storage).flush_stats.counts()
    }

    fn context_of(&self, storage: StorageKind) -> &StreamContext {
        match storage {
            StorageKind::File => &self.file_context,
            StorageKind::Memory => &self.memory_context,
        }
    }

    /// Names of all open streams, sorted.
    pub fn stream_names(&self) -> Vec<String> {
        self.streams.borrow().keys().cloned().collect()
    }

    /// The stream capturing `subject`, if any.
    pub fn stream_for_subject(&self, subject: &str) -> Option<Rc<Stream>> {
        self.streams.borrow().values().find(|stream| stream.captures(subject)).cloned()
    }

    /// Publishes to `stream`; resolves once durable under its sync policy. `headers` is a raw
    /// NATS header block (may be empty); `Nats-Msg-Id` and `Nats-Expected-*` are honoured.
    pub async fn publish(&self, stream: &str, subject: &str, headers: &[u8], payload: &[u8]) -> Result<PubAck, Error> {
        let ack = self.stream(stream)?.append(PublishRequest::client(subject, headers, payload)).await?;
        self.note_durable(stream, ack.seq);
        Ok(ack)
    }

    /// `seq` of `stream` is durable now, and so is every sequence before it (groups
    /// complete in order): readers waiting for it may go on.
    fn note_durable(&self, stream: &str, seq: u64) {
        if let Some(visible_last) = self.visible_last.borrow().get(stream) {
            visible_last.set(visible_last.get().max(seq));
        }
        self.appended.notify();
    }

    /// `get` without waiting, when the message is at hand (see `Stream::get_now`).
    pub fn get_now(&self, stream: &str, seq: u64) -> Option<StoredMessage> {
        self.streams.borrow().get(stream)?.get_now(seq)
    }

    /// The message at `seq`: [`Error::NoMessageFound`] when it was never stored, or was
    /// deleted, purged or expired.
    pub async fn get(&self, stream: &str, seq: u64) -> Result<StoredMessage, Error> {
        self.stream(stream)?.get(seq).await
    }

    /// The last message whose subject matches `filter` (wildcards allowed).
    pub async fn get_last_by_subject(&self, stream: &str, filter: &str) -> Result<StoredMessage, Error> {
        self.stream(stream)?.get_last_by_subject(filter).await
    }

    /// Message and byte counts, first and last sequences and times: `STREAM.INFO`'s state.
    pub fn state(&self, stream: &str) -> Result<StreamState, Error> {
        Ok(self.stream(stream)?.state())
    }

    /// Removes messages as `$JS.API.STREAM.PURGE` does (all, by subject, up to a sequence,
    /// or keeping the last N); returns how many were removed.
    pub async fn purge(&self, stream: &str, request: PurgeRequest) -> Result<u64, Error> {
        self.stream(stream)?.purge(request).await
    }

    /// Deletes the message at `seq`; false when there was none.
    pub async fn delete_message(&self, stream: &str, seq: u64) -> Result<bool, Error> {
        self.stream(stream)?.delete_message(seq).await
    }

    /// Iterates `stream` from `start`, optionally only subjects matching `filter`.
    pub fn cursor(&self, stream: &str, start: StartPosition, filter: Option<&str>) -> Result<Cursor, Error> {
        let stream = self.stream(stream)?;
        let next_seq = match start {
            StartPosition::Sequence(seq) => seq,
            StartPosition::Time(timestamp_ns) => stream.seq_at_time(timestamp_ns),
        };
        Ok(Cursor { stream, next_seq, filter: filter.map(str::to_string), appended: self.appended.clone() })
    }

    /// Creates durable consumer `config.name` on `stream`, or opens it as it was left
    /// (its position and unacknowledged deliveries survive closing the engine). Opening
    /// one that exists with a different configuration is [`Error::ConsumerNameInUse`]; a
    /// refused configuration is [`Error::ConsumerConfigInvalid`].
    ///
    /// ```
    /// use jetcore::engine::{ConsumerConfig, Engine};
    /// use jetcore::stream::{ShardId, StreamConfig};
    ///
    /// # let limit = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
    /// # // SAFETY: plain FFI call with a valid pointer; failure only means glommio falls back.
    /// # unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &limit) };
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().to_path_buf();
    /// glommio::LocalExecutorBuilder::default()
    ///     .spawn(move || async move {
    ///         let engine = Engine::open(&path).await.unwrap();
    ///         engine.create_stream(StreamConfig::new("ORDERS", &["orders.>"]), ShardId(0)).await.unwrap();
    ///         for payload in [&b"first"[..], b"second"] {
    ///             engine.publish("ORDERS", "orders.eu", b"", payload).await.unwrap();
    ///         }
    ///         let billing = engine.create_consumer("ORDERS", ConsumerConfig::new("billing")).await.unwrap();
    ///         let batch = billing.fetch(10).await.unwrap();
    ///         assert_eq!(batch.len(), 2);
    ///         billing.ack(&batch[0].delivery).await.unwrap(); // durable on return
    ///         drop(billing);
    ///         engine.close().await.unwrap();
    ///
    ///         // Reopened: the unacknowledged message comes back once its ack wait is over;
    ///         // the acknowledged one never does.
    ///         let engine = Engine::open(&path).await.unwrap();
    ///         let billing = engine.consumer("ORDERS", "billing").await.unwrap();
    ///         assert_eq!(billing.info().ack_floor.stream.get(), 1);
    ///         assert_eq!(billing.info().num_ack_pending, 1);
    ///     })
    ///     .unwrap()
    ///     .join()
    ///     .unwrap();
    /// ```
    pub async fn create_consumer(&self, stream: &str, config: ConsumerConfig) -> Result<Rc<DurableConsumer>, Error> {
        let owner = self.stream(stream)?;
        config.validate(&owner.config())?;
        let key = (stream.to_string(), config.name.clone());
        if let Some(existing) = self.consumers.borrow().get(&key) {
            return same_config(existing, &config);
        }
        let disk = self.context_of(owner.config().storage).disk.clone();
        let saved = ConsumerFiles::EMBEDDED.read_config::<ConsumerConfig>(&*disk, owner.dir(), &config.name).await?;
        if saved.as_ref().is_some_and(|saved| *saved != config) {
            return Err(Error::ConsumerNameInUse { stream: key.0, name: key.1 });
        }
        if saved.is_none() {
            ConsumerFiles::EMBEDDED.write_config(&*disk, owner.dir(), &config.name, &config).await?;
        }
        self.load_consumer(owner, config, disk, saved.is_some()).await
    }

    /// Durable consumer `name` of `stream` as it was left; [`Error::ConsumerNotFound`]
    /// when there is none.
    pub async fn consumer(&self, stream: &str, name: &str) -> Result<Rc<DurableConsumer>, Error> {
        let owner = self.stream(stream)?;
        if let Some(existing) = self.consumers.borrow().get(&(stream.to_string(), name.to_string())) {
            return Ok(existing.clone());
        }
        let disk = self.context_of(owner.config().storage).disk.clone();
        let not_found = || Error::ConsumerNotFound { stream: stream.to_string(), name: name.to_string() };
        if crate::stream::config::validate_name(name).is_err() {
            return Err(not_found());
        }
        let config = ConsumerFiles::EMBEDDED.read_config(&*disk, owner.dir(), name).await?.ok_or_else(not_found)?;
        self.load_consumer(owner, config, disk, true).await
    }

    /// Builds a consumer new or from its saved state, registers it and writes its state.
    async fn load_consumer(
        &self,
        stream: Rc<Stream>,
        config: ConsumerConfig,
        disk: Rc<dyn Disk>,
        saved: bool,
    ) -> Result<Rc<DurableConsumer>, Error> {
        let state = match saved {
            true => Some(saved_state(&*disk, stream.dir(), &config.name).await),
            false => None,
        };
        let name = stream.name();
        let visible_last = self.visible_last.borrow().get(&name).cloned().ok_or(Error::StreamNotFound { name })?;
        let start = state.as_ref().map_or(consumer::Start::New, consumer::Start::Restore);
        let clock = self.file_context.clock.clone();
        let key = (stream.name(), config.name.clone());
        if let Some(existing) = self.consumers.borrow().get(&key) {
            // Another task loaded it while this one read the disk.
            return same_config(existing, &config);
        }
        let made = Rc::new(DurableConsumer::assemble(config, stream, visible_last, clock, disk, start));
        self.consumers.borrow_mut().insert(key, made.clone());
        made.persist_now().await?;
        Ok(made)
    }

    /// Deletes durable consumer `name` of `stream` and its files; using it afterwards
    /// answers [`Error::ConsumerNotFound`].
    pub async fn delete_consumer(&self, stream: &str, name: &str) -> Result<(), Error> {
        let consumer = self.consumer(stream, name).await?;
        self.consumers.borrow_mut().remove(&(stream.to_string(), name.to_string()));
        consumer.mark_deleted();
        let owner = self.stream(stream)?;
        ConsumerFiles::EMBEDDED.remove(&*self.context_of(owner.config().storage).disk, owner.dir(), name).await
    }

    /// Periodic work for the shard's timer: interval fdatasyncs, age expiry, and a checkpoint
    /// for streams that grew enough since their last one (`Stream::checkpoint_due`, bounding
    /// how much a restart after a crash must scan). Idle streams do no I/O.
    /// Returns the delete markers expiry wrote (consumers must hear of them), by stream.
    pub async fn tick(&self) -> Result<Vec<(Rc<Stream>, Vec<MarkerWritten>)>, Error> {
        let mut written = Vec::new();
        for stream in self.all() {
            stream.sync_if_due().await?;
            let markers = stream.expire().await?;
            if stream.checkpoint_due() {
                stream.checkpoint().await?;
            }
            if !markers.is_empty() {
                written.push((stream, markers));
            }
        }
        Ok(written)
    }

    /// When `tick` next has work without a new write (nanoseconds of the stream clock):
    /// the soonest of every stream's `Stream::next_maintenance_ns`; `None` when nothing
    /// comes due until a stream is written or reconfigured (`maintenance_wanted`).
    pub fn next_maintenance_ns(&self) -> Option<i64> {
        self.all().iter().filter_map(|stream| stream.next_maintenance_ns()).min()
    }

    /// Resolves once a stream was written or reconfigured since it last resolved.
    pub async fn maintenance_wanted(&self) {
        self.file_context.maintenance.notified().await
    }

    /// Asks for a maintenance pass (work the streams do not see, e.g. an open batch).
    pub fn wake_maintenance(&self) {
        self.file_context.maintenance.notify();
    }

    /// Now, on the clock streams stamp messages with.
    pub fn now_ns(&self) -> i64 {
        self.file_context.clock.now_ns()
    }

    /// Writes a checkpoint for every stream so the next open scans little.
    pub async fn checkpoint_all(&self) -> Result<(), Error> {
        for stream in self.all() {
            stream.checkpoint().await?;
        }
        Ok(())
    }

    fn all(&self) -> Vec<Rc<Stream>> {
        self.streams.borrow().values().cloned().collect()
    }

    /// Flushes, checkpoints and closes every stream (a clean stop).
    pub async fn close(self) -> Result<(), Error> {
        let mut first_error = None;
        for stream in self.all() {
            if let Err(error) = stream.close().await {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// The saved state of a consumer whose configuration exists: empty when missing or damaged
/// (reported), so it resumes from its configuration and redelivers, never loses.
async fn saved_state(disk: &dyn Disk, stream_dir: &Path, name: &str) -> crate::consumer::ConsumerState {
    let state = ConsumerFiles::EMBEDDED.read_state(disk, stream_dir, name).await.unwrap_or_else(|error| {
        tracing::error!(%error, "damaged consumer state; resuming from its config (may redeliver)");
        None
    });
    state.unwrap_or_default()
}

fn same_config(existing: &Rc<DurableConsumer>, config: &ConsumerConfig) -> Result<Rc<DurableConsumer>, Error> {
    if existing.config() != config {
        let (stream, name) = (existing.stream_name().to_string(), config.name.clone());
        return Err(Error::ConsumerNameInUse { stream, name });
    }
    Ok(existing.clone())
}

/// What a tail still waiting when its engine closes gets.
fn closing_error() -> Error {
    let closing = std::io::Error::other("the engine is closing");
    store::Error::io("wait for a message", Path::new(""), &closing).into()
}

/// Reads a stream forward from any position; sees messages published after it was made
/// ([`Engine::cursor`]). [`Cursor::next`] stops at the end; [`Cursor::wait_next`] waits
/// there (a tail).
pub struct Cursor {
    stream: Rc<Stream>,
    next_seq: u64,
    filter: Option<String>,
    appended: Rc<Appended>,
}

impl Cursor {
    /// The next message, or `None` at the end of the stream.
    pub async fn next(&mut self) -> Option<Result<StoredMessage, Error>> {
        let seq = self.stream.next_seq(self.next_seq, self.filter.as_deref())?;
        self.next_seq = seq + 1;
        Some(self.stream.get(seq).await)
    }

    /// The next message; at the end of the stream, waits for one (a tail). Woken by
    /// [`Engine::publish`] on the engine that made the cursor, once the new message is
    /// durable; appends made past the engine (the server's publish path) do not wake it.
    pub async fn wait_next(&mut self) -> Result<StoredMessage, Error> {
        loop {
            let generation = self.appended.generation.get();
            if let Some(message) = self.next().await {
                return message;
            }
            if self.appended.closing.get() {
                return Err(closing_error());
            }
            self.appended.since(generation).await;
        }
    }

    /// The sequence the next call will start from.
    pub fn position(&self) -> u64 {
        self.next_seq
    }
}
