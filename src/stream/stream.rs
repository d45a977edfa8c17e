//! [`Stream`]: one stream on one shard: sequence assignment, dedupe, expected-header checks,
//! limits, and its log. All methods run on the owning shard's thread; borrows of the
//! in-memory state are never held across an `.await`.
//!
//! Publish order: `ensure_room` (may roll a segment; the only await before the sequence is
//! assigned), then a synchronous section that checks dedupe, expectations and limits,
//! assigns the next sequence and appends the record plus any removal records to the open
//! group, then waits for that group to be durable.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;

use super::checkpoint;
use super::checkpointing::Checkpoints;
use super::clock::Clock;
use super::config::{StorageKind, StreamConfig};
use super::counter::{check_increment, KnownTotals};
use super::counting::{Counted, CounterStep};
use super::dedupe::DedupeWindow;
use super::edit::{check_discard_new, enforce_limits, expire_by_age};
use super::error::Error;
use super::flags::MessageFlags;
use super::headers::{header_value, PublishExpectations, MESSAGE_INCREMENT};
use super::ingest::{Origin, PublishRequest};
use super::meta::{stream_id_for, StreamMeta, CHECKPOINT_FILE_NAME};
use super::record_cache::RecordCache;
use super::replay::{LostRange, Replayer};
use super::rollup::{check_rollup, check_ttl};
use super::schedule::{check_client_headers, ScheduleIndex};
use super::slot_file::{self, SlotFileRef};
use super::stored_size::stored_bytes;
use super::subject_match::{is_valid_subject, matches};
use super::table::MessageTable;
use super::ttl::TtlIndex;
use crate::shard::ShardId;
use crate::store::group::Group;
use crate::store::record::{encoded_len, RECORD_HEADER_BYTES};
use crate::store::{self, meta_file, open_log, Disk, FlushStats, LogConfig, Record, RecordKind, SegmentLog, StreamId};

/// Room reserved beside each message for the removal records it may cause.
pub(super) const REMOVAL_RECORDS_BYTES_MAX: usize = 4 * (RECORD_HEADER_BYTES + 16);
/// Tombstones logged per publish at most; the rest wait for the next publish or `expire`.
const TOMBSTONES_PER_PUBLISH_MAX: usize = 2;

/// The shard-wide things every stream shares.
#[derive(Clone)]
pub struct StreamContext {
    pub disk: Rc<dyn Disk>,
    /// Group-commit counters of the shard's logs (see `store/flush_stats.rs`).
    pub flush_stats: Rc<FlushStats>,
    pub clock: Rc<dyn Clock>,
    /// Messages cached for gets by sequence (streams with `cache_reads`).
    pub records: Rc<RecordCache>,
    /// Wakes the shard's maintenance task: raised on every append to a log and every
    /// configuration change, after which something may come due (see `maintenance.rs`).
    pub maintenance: Rc<crate::shard::LocalSignal>,
}

/// Whether a publish stores its message. Interest retention skips a message no consumer
/// is interested in: it still gets a sequence and a pub ack, but only a durable skip
/// record (a tombstone one past the last sequence) is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Store,
    Skip,
}

/// The answer to a publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PubAck {
    pub seq: u64,
    /// The message id was seen within the duplicate window; `seq` is the original's.
    pub duplicate: bool,
}

/// What [`Stream::append_now`] did with a message.
pub enum Appended {
    /// The message id was seen within the duplicate window: the original's sequence.
    Duplicate(u64),
    /// In the open group; not durable yet.
    Pending(PendingAppend),
}

/// A message appended but not yet durable: [`Stream::settle`] waits for it.
pub struct PendingAppend {
    group: Rc<Group>,
    pub seq: u64,
    first_before: u64,
    /// A counter stream's new total of the subject, for the pub ack's `val`.
    pub counter_total: Option<Box<str>>,
}

impl PendingAppend {
    /// Whether both were appended to the same group (one write makes both durable).
    pub fn same_group(&self, other: &PendingAppend) -> bool {
        Rc::ptr_eq(&self.group, &other.group)
    }
}

/// The room a message takes in the log: its record, the removal records its limits may
/// log, and for a rollup or a schedule's purge (headers) the purge records naming subjects.
fn room_for(request: &PublishRequest<'_>) -> usize {
    let size = encoded_len(request.subject.len(), request.headers.len(), request.payload.len());
    let rollup_bytes = if request.headers.is_empty() { 0 } else { request.subject.len() + request.headers.len() };
    size + REMOVAL_RECORDS_BYTES_MAX + rollup_bytes
}

pub struct Stream {
    pub(super) context: StreamContext,
    pub(super) dir: PathBuf,
    pub(super) meta: RefCell<StreamMeta>,
    pub(super) table: RefCell<MessageTable>,
    pub(super) dedupe: RefCell<DedupeWindow>,
    pub(super) lost: RefCell<Vec<LostRange>>,
    /// Deadlines of live messages with a `Nats-TTL`.
    pub(super) ttl: RefCell<TtlIndex>,
    /// Live messages that never expire by age, and delete markers.
    pub(super) flags: RefCell<MessageFlags>,
    /// A counter stream's totals by subject (`counter.rs`).
    pub(super) counters: RefCell<KnownTotals>,
    /// Due times of the live message schedules (`schedule.rs`, `scheduler.rs`).
    pub(super) schedules: RefCell<ScheduleIndex>,
    /// Whether writes find the disk full, and whether that was reported (`reopen.rs`).
    pub(super) out_of_storage: Cell<super::reopen::OutOfStorage>,
    pub(super) log: Rc<SegmentLog>,
    /// When the next checkpoint is due, and that only one is written at a time.
    pub(super) checkpoints: Checkpoints,
}

impl Stream {
    /// Creates a new stream in `dir` (metadata, with `extension`, durable for files).
    pub async fn create(
        context: &StreamContext,
        dir: PathBuf,
        config: StreamConfig,
        placement: ShardId,
        extension: Option<serde_json::Value>,
    ) -> Result<Stream, Error> {
        config.validate()?;
        let created_ns = context.clock.now_ns();
        let first_seq = config.first_seq;
        let meta = StreamMeta {
            stream_id: stream_id_for(&config.name, created_ns),
            config,
            placement,
            created_ns,
            // `first_seq`: the first message gets that sequence (nats-server's FirstSeq).
            last_seq_floor: first_seq.saturating_sub(1),
            extension,
        };
        let disk = &*context.disk;
        disk.create_dir_all(&dir).await.map_err(|e| store::Error::io("create_dir", &dir, &e))?;
        if meta.config.storage == StorageKind::File {
            meta.write(disk, &dir).await?;
            let parent = dir.parent().unwrap_or(&dir);
            disk.fsync_dir(parent).await.map_err(|e| store::Error::io("fsync_dir", parent, &e))?;
        }
        Stream::open_with_meta(context, dir, meta).await
    }

    /// Reopens the stream in `dir` from its metadata, checkpoint and segments.
    pub async fn open(context: &StreamContext, dir: PathBuf) -> Result<Stream, Error> {
        let meta = StreamMeta::read(&*context.disk, &dir).await?;
        let meta = meta.ok_or_else(|| store::Error::BadMetadata { path: dir.clone(), reason: "missing meta.json" })?;
        Stream::open_with_meta(context, dir, meta).await
    }

    pub(super) async fn open_with_meta(
        context: &StreamContext,
        dir: PathBuf,
        meta: StreamMeta,
    ) -> Result<Stream, Error> {
        let (saved, checkpoint_bytes, slot_file, deleted) = match load_checkpoint(context, &dir, meta.stream_id).await {
            Some((checkpoint, bytes, slot_file, deleted)) => (Some(checkpoint), bytes, slot_file, deleted),
            None => (None, 0, None, Vec::new()),
        };
        slot_file::remove_others(&*context.disk, &dir, slot_file.map(|file| file.generation)).await;
        let (mut table, mut dedupe, mut lost, mut ttl, mut flags, log_checkpoint) = match saved {
            Some(cp) => (cp.table, cp.dedupe, cp.lost, cp.ttl, cp.flags, Some(cp.log)),
            None => (
                MessageTable::new(),
                DedupeWindow::default(),
                Vec::new(),
                TtlIndex::default(),
                MessageFlags::default(),
                None,
            ),
        };
        let config = &meta.config;
        let log_config = log_config(context, &dir, &meta);
        let window_ns = config.duplicate_window.as_nanos() as i64;
        // Nothing before the replay's start ever took a sequence (no checkpoint, or one cut
        // before the first message) and no segment was ever retired (that saves a floor
        // first): the log's first message must be 1.
        let from_log_start = table.last_seq == 0 && meta.last_seq_floor == 0;
        let mut replayer = Replayer::new(&mut table, &mut dedupe, &mut lost, &mut ttl, &mut flags, window_ns);
        replayer.ttl_floor_seconds = config.marker_ttl_seconds();
        replayer.atomic_batches = config.allow_atomic;
        replayer.storage = config.storage;
        if from_log_start {
            replayer.expect_first_seq(1);
        }
        let opened =
            open_log(context.disk.clone(), log_config, log_checkpoint.as_ref(), &mut |event| replayer.apply(event))
                .await;
        replayer.finish();
        let (log, report) = opened?;
        let log = Rc::new(log.with_stats(context.flush_stats.clone()));
        for (segment, seqs) in report.missing_segments {
            report_missing(&mut table, &mut lost, segment, seqs);
        }
        table.raise_last_seq(meta.last_seq_floor);
        let stream = Stream {
            context: context.clone(),
            dir,
            meta: RefCell::new(meta),
            table: RefCell::new(table),
            dedupe: RefCell::new(dedupe),
            lost: RefCell::new(lost),
            ttl: RefCell::new(ttl),
            flags: RefCell::new(flags),
            counters: RefCell::new(KnownTotals::default()),
            schedules: RefCell::new(ScheduleIndex::default()),
            out_of_storage: Cell::default(),
            log,
            checkpoints: Checkpoints::reopened(report.scanned_bytes, checkpoint_bytes, slot_file, deleted),
        };
        Ok(stream)
    }

    /// Now, on the clock the stream stamps messages with.
    pub fn now_ns(&self) -> i64 {
        self.context.clock.now_ns()
    }

    pub fn name(&self) -> String {
        self.meta.borrow().config.name.clone()
    }

    /// Calls `f` with the name, without copying it.
    pub fn with_name<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        f(&self.meta.borrow().config.name)
    }

    pub fn config(&self) -> StreamConfig {
        self.meta.borrow().config.clone()
    }

    /// When the stream was created (Unix nanoseconds): with its name, its identity.
    pub fn created_ns(&self) -> i64 {
        self.meta.borrow().created_ns
    }

    pub fn placement(&self) -> ShardId {
        self.meta.borrow().placement
    }

    /// The embedder's extension of the metadata (see [`StreamMeta::extension`]).
    pub fn extension(&self) -> Option<serde_json::Value> {
        self.meta.borrow().extension.clone()
    }

    /// Replaces the embedder's extension; durable on `Ok` for file storage.
    pub async fn set_extension(&self, extension: serde_json::Value) -> Result<(), Error> {
        let meta = {
            let mut meta = self.meta.borrow_mut();
            meta.extension = Some(extension);
            meta.clone()
        };
        if meta.config.storage == StorageKind::File {
            meta.write(&*self.context.disk, &self.dir).await?;
        }
        Ok(())
    }

    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    fn stream_id(&self) -> StreamId {
        StreamId(self.meta.borrow().stream_id)
    }

    /// Whether this stream captures `subject`.
    pub fn captures(&self, subject: &str) -> bool {
        let meta = self.meta.borrow();
        let config = &meta.config;
        if config.sourced_only {
            return false;
        }
        if config.subjects.is_empty() {
            return config.name == subject;
        }
        config.subjects.iter().any(|pattern| matches(pattern, subject))
    }

    /// Stores a message: the one way in, for clients, mirrors and sources. Resolves once
    /// it is durable under the stream's sync policy (with `Keep::Skip`: the same checks
    /// and a used-up sequence, nothing stored).
    pub async fn append(&self, request: PublishRequest<'_>) -> Result<PubAck, Error> {
        match self.append_unsettled(request).await? {
            Appended::Duplicate(seq) => Ok(PubAck { seq, duplicate: true }),
            Appended::Pending(pending) => {
                self.settle(&pending).await?;
                Ok(PubAck { seq: pending.seq, duplicate: false })
            }
        }
    }

    /// `append` up to the group commit: appended, making room first when the log must
    /// roll; not yet durable ([`Stream::settle`] waits for that). Many of these, then
    /// their settles in order, make one group commit for many messages.
    pub async fn append_unsettled(&self, request: PublishRequest<'_>) -> Result<Appended, Error> {
        loop {
            if let Some(appended) = self.append_now(request)? {
                return Ok(appended);
            }
            self.make_room(request).await?;
        }
    }

    /// [`Stream::append_unsettled`] for a restore: under sync `always` the record's group
    /// may complete once written, without an fdatasync (`SegmentLog::deferred`). The
    /// caller makes the stream durable with [`Stream::flush`] before it acknowledges
    /// anything, and an ordinary publish in between still waits for everything before it.
    pub async fn append_unsettled_deferred(&self, request: PublishRequest<'_>) -> Result<Appended, Error> {
        loop {
            if let Some(appended) = self.log.deferred(|| self.append_now(request))? {
                return Ok(appended);
            }
            self.make_room(request).await?;
        }
    }

    /// Starts writing the groups deferred appends have filled, without waiting: the open
    /// group keeps filling ([`Stream::append_unsettled_deferred`]).
    pub fn start_writes(&self) {
        self.log.start_flusher_if_due();
    }

    /// Waits until everything appended so far is written and synced.
    pub async fn flush(&self) -> Result<(), Error> {
        Ok(self.log.flush_all().await?)
    }

    /// `append` up to the group commit, without an `.await`: the record is in the open
    /// group when this returns `Some`; [`Stream::settle`] then waits for it to be durable.
    /// `None` when the log must roll to a new segment first: nothing was done, and
    /// `append` is the way in for this message.
    pub fn append_now(&self, request: PublishRequest<'_>) -> Result<Option<Appended>, Error> {
        let PublishRequest { origin, captured, subject, headers, payload, .. } = request;
        self.check_message(origin, captured, subject, headers, payload)?;
        let scheduled = self.scheduled_headers(&request);
        let request = scheduled.as_ref().map_or(request, |headers| PublishRequest { headers, ..request });
        let counted = match self.counter_step(&request)? {
            CounterStep::NotCounted => None,
            CounterStep::Unknown => return Ok(None),
            CounterStep::Counted(counted) => Some(counted),
        };
        let request = counted.as_ref().map_or(request, |counted| counted.request(request));
        if !self.log.has_room(room_for(&request))? {
            return Ok(None);
        }
        self.append_checked(request, counted.as_ref()).map(Some)
    }

    /// Waits until the log has room for `request` (a segment roll) and, on a counter
    /// stream, its subject's total is read; `append_now` takes it if nothing came between.
    pub async fn make_room(&self, request: PublishRequest<'_>) -> Result<(), Error> {
        self.load_counter_total(&request).await?;
        let scheduled = self.scheduled_headers(&request);
        let request = scheduled.as_ref().map_or(request, |headers| PublishRequest { headers, ..request });
        let counted = match self.counter_step(&request)? {
            CounterStep::Counted(counted) => Some(counted),
            CounterStep::NotCounted | CounterStep::Unknown => None,
        };
        let request = counted.as_ref().map_or(request, |counted| counted.request(request));
        self.room_made(self.log.ensure_room(room_for(&request)).await)
    }

    /// Resolves once the record of `pending` is durable and the segments its removals
    /// emptied are retired. Only then may anyone learn of the message.
    pub async fn settle(&self, pending: &PendingAppend) -> Result<(), Error> {
        self.durable(&pending.group).await?;
        self.after_removals(pending.first_before).await;
        Ok(())
    }

    /// The synchronous part after the checks; room for the message was ensured.
    /// `counted`: what a counter stream stores, whose body is `payload`.
    fn append_checked(&self, request: PublishRequest<'_>, counted: Option<&Counted>) -> Result<Appended, Error> {
        let PublishRequest { origin, subject, headers, payload, keep, at_ns, .. } = request;
        let size = encoded_len(subject.len(), headers.len(), payload.len());
        let published = self.publish_now(origin, subject, headers, payload, keep, Checks::All, at_ns)?;
        match published {
            Published::Duplicate(seq) => Ok(Appended::Duplicate(seq)),
            Published::Appended { group, seq, first_before } => {
                self.note_appended(size);
                let counter_total = counted.map(|counted| self.note_counter_total(subject, headers, seq, counted));
                Ok(Appended::Pending(PendingAppend { group, seq, first_before, counter_total }))
            }
        }
    }

    pub(super) fn check_message(
        &self,
        origin: Origin,
        captured: &str,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
    ) -> Result<(), Error> {
        if !is_valid_subject(subject) || subject.len() > crate::limits::SUBJECT_BYTES_MAX {
            return Err(Error::InvalidSubject { subject: subject.into() });
        }
        if origin == Origin::Client && !self.captures(captured) {
            return Err(Error::SubjectNotCaptured { subject: captured.into() });
        }
        if origin == Origin::Client {
            let counts = self.meta.borrow().config.allow_msg_counter;
            check_increment(headers, payload, counts)?;
        }
        let size = headers.len() + payload.len();
        let max = self.meta.borrow().config.message_bytes_max(subject.len());
        if size > max {
            return Err(Error::MessageSizeExceedsMaximum { size, max });
        }
        Ok(())
    }

    /// The synchronous part of publish: no `.await` between checks and append.
    /// With `Checks::DoneForBatch` the expectations, dedupe and discard-new limits were
    /// checked for a whole atomic batch beforehand (`batch.rs`): all of it is appended.
    pub(super) fn publish_now(
        &self,
        origin: Origin,
        subject: &str,
        headers: &[u8],
        payload: &[u8],
        keep: Keep,
        checks: Checks,
        at_ns: Option<i64>,
    ) -> Result<Published, Error> {
        let meta = self.meta.borrow();
        let config = &meta.config;
        let size = stored_bytes(config.storage, subject.len(), headers.len(), payload.len());
        let expectations = origin.expectations(headers, config);
        let now = at_ns.unwrap_or_else(|| self.context.clock.now_ns());
        let window_ns = config.duplicate_window.as_nanos() as i64;
        let mut dedupe = self.dedupe.borrow_mut();
        dedupe.expire(now, window_ns);
        let mut table = self.table.borrow_mut();
        // nats-server's order: expected stream, last sequence and last subject sequence are
        // checked before deduplicating (a retried publish whose expectation no longer holds
        // is refused, not acknowledged as a duplicate); the expected last msg id after.
        let ttl = check_ttl(&expectations, config)?;
        if checks == Checks::All {
            let before_dedupe = PublishExpectations { last_msg_id: None, ..expectations };
            check_expectations(&before_dedupe, &config.name, &table, &dedupe, subject)?;
            if origin == Origin::Client {
                check_client_headers(headers, subject, config, now)?;
            }
            if let Some(seq) = expectations.msg_id.and_then(|id| dedupe.lookup(id)) {
                return Ok(Published::Duplicate(seq));
            }
            // After dedupe, as nats-server: a retried publish is a duplicate first.
            let incremented = || header_value(headers, MESSAGE_INCREMENT).is_some_and(|value| !value.is_empty());
            if origin == Origin::Client && config.allow_msg_counter && !incremented() {
                return Err(Error::MessageCounterIncrementMissing);
            }
            check_expectations(&expectations, &config.name, &table, &dedupe, subject)?;
        }
        let rollup = check_rollup(&expectations, config)?;
        let first_before = table.first_seq();
        if keep == Keep::Skip {
            // nats-server's SkipMsg: the sequence is used up, nothing is stored. Replay
            // raises the last sequence past the tombstone, so the sequence is never reused.
            let seq = table.last_seq + 1;
            let group = self.append_op(RecordKind::Delete, seq, now, b"", b"")?;
            table.raise_last_seq(seq);
            if let Some(id) = expectations.msg_id {
                dedupe.record(id, seq, now, window_ns);
            }
            return Ok(Published::Appended { group, seq, first_before });
        }
        let age_inline = self.age_expiry_inline(config);
        if age_inline {
            expire_by_age(&mut table, config, now);
        }
        let discard_new = match checks {
            Checks::All => check_discard_new(&table, config, subject, size as u64, rollup.is_some()),
            Checks::DoneForBatch => Ok(()),
        };
        if let Err(refused) = discard_new {
            self.log_front_if_moved(&table, first_before, now)?;
            return Err(refused);
        }
        let (seq, timestamp_ns) = match origin {
            Origin::Mirror { seq, timestamp_ns } => {
                if seq <= table.last_seq {
                    return Ok(Published::Duplicate(seq));
                }
                if seq > table.last_seq + 1 {
                    // The origin's gap: a tombstone past the last sequence, as replay reads it.
                    self.append_op(RecordKind::Delete, seq - 1, now, b"", b"")?;
                    table.raise_last_seq(seq - 1);
                }
                (seq, timestamp_ns)
            }
            Origin::Client | Origin::Source => (table.last_seq + 1, now.max(table.last_timestamp_ns)),
        };
        let record = Record {
            kind: RecordKind::Message,
            stream_id: StreamId(meta.stream_id),
            seq,
            timestamp_ns,
            subject: subject.as_bytes(),
            headers,
            payload,
        };
        let group = self.log.append(&record)?;
        table.insert(seq, subject, size as u32, timestamp_ns);
        if config.cache_reads {
            let records = &self.context.records;
            records.insert_parts(meta.stream_id, seq, timestamp_ns, subject, headers, payload);
        }
        if let Some(id) = expectations.msg_id {
            dedupe.record(id, seq, timestamp_ns, window_ns);
        }
        let ttl = ttl.map(|ttl| ttl.at_least(config.marker_ttl_seconds()));
        if let Some(deadline_ns) = ttl.and_then(|ttl| ttl.deadline_ns(timestamp_ns)) {
            let mut index = self.ttl.borrow_mut();
            index.insert(seq, deadline_ns);
            if index.len() as u64 > 2 * table.messages + crate::limits::TTL_INDEX_STALE_ENTRIES_MAX {
                index.retain_live(|seq| table.slot(seq).is_some());
            }
        }
        self.note_flags(&table, seq, &expectations);
        if let Some(rollup) = rollup {
            self.roll_up(&mut table, rollup, subject, seq, now)?;
        }
        self.note_schedule(&mut table, origin, subject, headers, seq, timestamp_ns, now)?;
        let deleted = enforce_limits(&mut table, config, Some(subject), now, age_inline);
        for removed in deleted.iter().take(TOMBSTONES_PER_PUBLISH_MAX) {
            self.append_op(RecordKind::Delete, *removed, now, b"", b"")?;
        }
        self.log_front_if_moved(&table, first_before, now)?;
        Ok(Published::Appended { group, seq, first_before })
    }

    /// Whether `max_age` may cut the front of the stream wherever a limit is enforced. Not
    /// with subject delete markers (each emptied subject needs its marker) nor with
    /// messages that never expire: then only the shard's expiry pass removes by age,
    /// message by message (`expiry.rs`), as nats-server's age check does.
    pub(super) fn age_expiry_inline(&self, config: &StreamConfig) -> bool {
        config.subject_delete_marker_ttl.is_none() && !self.flags.borrow().has_never_expiring()
    }

    /// Records `seq`'s flags, pruning entries of removed messages when they pile up.
    fn note_flags(&self, table: &MessageTable, seq: u64, expectations: &PublishExpectations<'_>) {
        let mut flags = self.flags.borrow_mut();
        flags.note(seq, expectations);
        if flags.len() as u64 > 2 * table.messages + crate::limits::TTL_INDEX_STALE_ENTRIES_MAX {
            flags.retain_live(|seq| table.slot(seq).is_some());
        }
    }

    fn log_front_if_moved(&self, table: &MessageTable, first_before: u64, now: i64) -> Result<(), Error> {
        if table.first_seq() > first_before {
            self.append_op(RecordKind::Front, table.first_seq(), now, b"", b"")?;
        }
        Ok(())
    }

    /// Appends a non-message record. Precondition: room was ensured for it.
    pub(super) fn append_op(
        &self,
        kind: RecordKind,
        seq: u64,
        now: i64,
        subject: &[u8],
        payload: &[u8],
    ) -> Result<Rc<Group>, Error> {
        let record =
            Record { kind, stream_id: self.stream_id(), seq, timestamp_ns: now, subject, headers: b"", payload };
        let group = self.log.append(&record)?;
        self.context.maintenance.notify();
        Ok(group)
    }

    /// After removals became durable: retire whole segments below the new first sequence.
    pub(super) async fn after_removals(&self, first_before: u64) {
        let first = self.table.borrow().first_seq();
        if first <= first_before || !self.log.can_drop_front(first) {
            return;
        }
        // Dropped segments may hold the only record of the highest sequence: persist it first.
        let last = self.table.borrow().last_seq;
        if let Err(error) = self.save_seq_floor(last).await {
            tracing::warn!(%error, "could not save sequence floor; keeping old segments");
            return;
        }
        self.log.drop_segments_below(first).await;
    }

    /// Replaces the configuration (validated by the caller) and, when `extension` is
    /// `Some`, the embedder's extension with it in the same write; applies new limits.
    pub async fn update(&self, config: StreamConfig, extension: Option<serde_json::Value>) -> Result<(), Error> {
        config.validate_update(&self.meta.borrow().config)?;
        let meta = {
            let mut meta = self.meta.borrow_mut();
            meta.config = config;
            if extension.is_some() {
                meta.extension = extension;
            }
            meta.clone()
        };
        if meta.config.storage == StorageKind::File {
            meta.write(&*self.context.disk, &self.dir).await?;
        }
        self.context.maintenance.notify(); // e.g. a new max_age
        self.enforce_all_limits().await
    }

    async fn enforce_all_limits(&self) -> Result<(), Error> {
        loop {
            self.log.ensure_room(REMOVAL_RECORDS_BYTES_MAX).await?;
            let (group, first_before, more) = {
                let config = self.meta.borrow().config.clone();
                let mut table = self.table.borrow_mut();
                let first_before = table.first_seq();
                let now = self.context.clock.now_ns();
                let age_inline = self.age_expiry_inline(&config);
                let mut deleted = enforce_per_subject_all(&mut table, &config, now, age_inline);
                let more = deleted.len() > TOMBSTONES_PER_PUBLISH_MAX;
                deleted.truncate(TOMBSTONES_PER_PUBLISH_MAX);
                let mut last_group = None;
                for seq in deleted {
                    last_group = Some(self.append_op(RecordKind::Delete, seq, now, b"", b"")?);
                }
                if table.first_seq() > first_before {
                    last_group = Some(self.append_op(RecordKind::Front, table.first_seq(), now, b"", b"")?);
                }
                (last_group, first_before, more)
            };
            if let Some(group) = group {
                self.durable(&group).await?;
                self.after_removals(first_before).await;
            }
            if !more {
                return Ok(());
            }
        }
    }

    /// Flushes, checkpoints and closes the files.
    pub async fn close(&self) -> Result<(), Error> {
        let checkpointed = self.checkpoint().await;
        let closed = self.log.close().await;
        checkpointed?;
        Ok(closed?)
    }

    /// The storage failure that stopped writes, if any.
    pub fn failure(&self) -> Option<store::Error> {
        self.log.failure()
    }

    /// For `Interval` sync: fdatasync if the interval has passed (call from a shard timer).
    pub async fn sync_if_due(&self) -> Result<(), Error> {
        Ok(self.log.sync_if_due().await?)
    }
}

/// What `publish_now` checks (see there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Checks {
    All,
    DoneForBatch,
}

pub(super) enum Published {
    Duplicate(u64),
    Appended { group: Rc<Group>, seq: u64, first_before: u64 },
}

pub(super) fn check_expectations(
    expected: &PublishExpectations<'_>,
    name: &str,
    table: &MessageTable,
    dedupe: &DedupeWindow,
    subject: &str,
) -> Result<(), Error> {
    if expected.stream.is_some_and(|stream| stream != name) {
        return Err(Error::WrongExpectedStream { actual: name.into() });
    }
    if expected.last_seq.is_some_and(|seq| seq != table.last_seq) {
        return Err(Error::WrongLastSequence { actual: table.last_seq });
    }
    if let Some(expected_seq) = expected.last_subject_seq {
        let actual = match expected.last_subject_seq_subject {
            Some(filter) => table
                .subjects
                .matching(filter)
                .iter()
                .filter_map(|id| table.subjects.entry(*id))
                .map(|e| e.last_seq)
                .max()
                .unwrap_or(0),
            None => table.subjects.id_of(subject).and_then(|id| table.subjects.entry(id)).map_or(0, |e| e.last_seq),
        };
        if actual != expected_seq {
            return Err(Error::WrongLastSubjectSequence { actual });
        }
    }
    if let Some(expected_id) = expected.last_msg_id {
        let actual = dedupe.last_msg_id.clone().unwrap_or_default();
        if actual != expected_id {
            return Err(Error::WrongLastMsgId { actual });
        }
    }
    Ok(())
}

/// Applies every limit to every subject (after a config update); returns tombstones to log.
fn enforce_per_subject_all(table: &mut MessageTable, config: &StreamConfig, now: i64, age_inline: bool) -> Vec<u64> {
    let names: Vec<String> = table.subjects.counts().map(|(name, _)| name.to_string()).collect();
    let mut deleted = enforce_limits(table, config, None, now, age_inline);
    for name in names {
        deleted.extend(enforce_limits(table, config, Some(&name), now, age_inline));
    }
    deleted
}

/// The log's settings for stream `meta` in `dir`.
pub(super) fn log_config(context: &StreamContext, dir: &std::path::Path, meta: &StreamMeta) -> LogConfig {
    LogConfig {
        dir: dir.to_path_buf(),
        stream_id: StreamId(meta.stream_id),
        segment_size: meta.config.segment_size_bytes,
        sync: meta.config.sync,
        block_bytes: context.disk.block_bytes(),
    }
}

/// What [`load_checkpoint`] found: the checkpoint, its file's size, what it holds of the
/// slot file and the runs it lists as deleted.
type Loaded = (checkpoint::Checkpoint, u64, Option<SlotFileRef>, Vec<(u64, u64)>);

/// The stream's checkpoint with its slots; `None` (a full scan) if either file is missing,
/// damaged or foreign.
async fn load_checkpoint(context: &StreamContext, dir: &std::path::Path, stream_id: u64) -> Option<Loaded> {
    let path = dir.join(CHECKPOINT_FILE_NAME);
    let body = match meta_file::read(&*context.disk, &path).await {
        Ok(body) => body?,
        Err(error) => {
            tracing::warn!(%error, "checkpoint unreadable; scanning all segments");
            return None;
        }
    };
    let Some(head) = checkpoint::decode_head(&body).filter(|head| head.stream_id() == stream_id) else {
        tracing::warn!(path = %path.display(), "checkpoint unreadable; scanning all segments");
        return None;
    };
    let (reference, deleted) = (head.slots, head.deleted.clone());
    let slots = match &reference {
        Some(reference) => match slot_file::read(&*context.disk, dir, reference).await {
            Ok(bytes) => Some(bytes),
            Err(error) => {
                tracing::warn!(%error, "slot file unreadable; scanning all segments");
                return None;
            }
        },
        None => None,
    };
    let Some(checkpoint) = head.complete(slots.as_deref()) else {
        tracing::warn!(path = %path.display(), "checkpoint and slot file disagree; scanning all segments");
        return None;
    };
    Some((checkpoint, body.len() as u64, reference, deleted))
}

/// A checkpointed segment is gone: any message it held that is still live is lost.
fn report_missing(table: &mut MessageTable, lost: &mut Vec<LostRange>, segment: u64, seqs: Option<(u64, u64)>) {
    let Some((first, last)) = seqs else { return };
    let live: Vec<u64> = table.live_from(first, None).take_while(|seq| *seq <= last).collect();
    if live.is_empty() {
        return;
    }
    tracing::error!(segment, first, last, "segment file missing; its messages are lost");
    for seq in &live {
        table.remove(*seq);
    }
    let span = (live[0], *live.last().expect("non-empty"));
    lost.push(LostRange { seqs: Some(span), segment: Some(segment), bytes: None });
}
