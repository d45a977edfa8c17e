//! Reading and editing a stream: get, last/next by subject, iteration positions, state,
//! purge and delete.

use std::collections::BTreeMap;

use super::config::StorageKind;
use super::edit::{purge_table, PurgeRequest};
use super::error::Error;
use super::replay::{encode_purge, LostRange};
use super::stored_size::content_bytes;
use super::stream::{Stream, REMOVAL_RECORDS_BYTES_MAX};
use super::subjects::SubjectId;
use super::table::MessageTable;
use crate::store::{self, ForwardRecord, RecordKind, StoredRecord};

/// A stored message as read back.
pub type StoredMessage = StoredRecord;
/// A message read to be sent on: its subject stays bytes (see `store::ForwardRecord`).
pub type ForwardMessage = ForwardRecord;

/// A snapshot of a stream's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamState {
    pub messages: u64,
    pub bytes: u64,
    pub first_seq: u64,
    pub first_timestamp_ns: i64,
    pub last_seq: u64,
    pub last_timestamp_ns: i64,
    pub num_deleted: u64,
    pub num_subjects: u64,
    /// Ranges recovery found damaged or missing (reported, never silently dropped).
    pub lost: Vec<LostRange>,
    /// Set when the stream stopped accepting writes after a storage failure.
    pub failed: Option<String>,
    pub storage: StorageKind,
}

impl Stream {
    pub fn state(&self) -> StreamState {
        let table = self.table.borrow();
        let first_seq = table.first_seq();
        StreamState {
            messages: table.messages,
            bytes: table.bytes,
            first_seq,
            first_timestamp_ns: table.slot(first_seq).map_or(0, |slot| slot.timestamp_ns),
            last_seq: table.last_seq,
            last_timestamp_ns: table.last_timestamp_ns,
            num_deleted: table.num_deleted(),
            num_subjects: table.subjects.len() as u64,
            lost: self.lost.borrow().clone(),
            failed: self.failure().map(|error| error.to_string()),
            storage: self.meta.borrow().config.storage,
        }
    }

    /// The deleted sequences between the first and the last message (`deleted_details`).
    pub fn deleted_seqs(&self) -> Vec<u64> {
        self.table.borrow().deleted().collect()
    }

    /// Message counts per subject matching `filter` (`>` for all).
    pub fn subject_counts(&self, filter: &str) -> BTreeMap<String, u64> {
        let table = self.table.borrow();
        let ids = table.subjects.matching(filter);
        ids.iter()
            .filter_map(|id| table.subjects.entry(*id))
            .map(|entry| (entry.name.to_string(), entry.count))
            .collect()
    }

    /// The message with sequence `seq`.
    /// A checksum failure is reported in `state().lost` (exact sequence and offset) and
    /// fails only this read; so is a message the table holds and its segment lacks (a
    /// write the disk acknowledged and lost, found at the first read after a checkpoint
    /// that covered it, since recovery does not scan what a checkpoint covers).
    pub async fn get(&self, seq: u64) -> Result<StoredMessage, Error> {
        // A reader going forward (a snapshot, a mirror's batch, a cursor) finds the message
        // right after the last one in the read window: no await, and no copy into the
        // record cache. Taking the awaiting path for each made a 1 GiB snapshot twice as
        // slow (perf/backup.md).
        if let Some(found) = self.get_now(seq) {
            return Ok(found);
        }
        if self.table.borrow().slot(seq).is_none() {
            return Err(Error::NoMessageFound);
        }
        let (stream_id, cache_reads) = {
            let meta = self.meta.borrow();
            (meta.stream_id, meta.config.cache_reads)
        };
        if cache_reads {
            if let Some(cached) = self.context.records.get(stream_id, seq) {
                return Ok(cached);
            }
        }
        match self.log.read_message(seq).await {
            Ok(Some(found)) => {
                if cache_reads {
                    self.context.records.insert(stream_id, &found);
                }
                Ok(found)
            }
            // (Not while the log is failed: the table may still hold publishes that
            // failed, which a reopen takes back, see `reopen.rs`.)
            Ok(None) if self.table.borrow().slot(seq).is_some() && self.log.failure().is_none() => {
                tracing::error!(seq, "message missing from its segment");
                self.report_lost_read(LostRange {
                    seqs: Some((seq, seq)),
                    segment: self.log.segment_holding(seq),
                    bytes: None,
                });
                Err(Error::NoMessageFound)
            }
            Ok(None) => Err(Error::NoMessageFound),
            Err(store::Error::ChecksumMismatch { segment, offset }) => {
                tracing::error!(seq, segment, offset, "checksum mismatch reading message");
                self.report_lost_read(LostRange {
                    seqs: Some((seq, seq)),
                    segment: Some(segment),
                    bytes: Some(offset..offset + 1),
                });
                Err(store::Error::ChecksumMismatch { segment, offset }.into())
            }
            Err(error) => Err(error.into()),
        }
    }

    /// [`Self::get`] when the message can be had without waiting (a forward read within
    /// the log's cached window); `None`: call `get`.
    pub fn get_now(&self, seq: u64) -> Option<StoredMessage> {
        self.forward_now(seq).map(StoredMessage::from)
    }

    /// [`Self::get_now`] for a message to be sent on: the subject stays bytes.
    pub fn forward_now(&self, seq: u64) -> Option<ForwardMessage> {
        self.table.borrow().slot(seq)?;
        self.log.forward_following_now(seq)
    }

    fn report_lost_read(&self, range: LostRange) {
        let mut lost = self.lost.borrow_mut();
        if !lost.iter().any(|known| known.seqs == range.seqs) {
            lost.push(range);
        }
    }

    /// The newest message whose subject matches `filter` (wildcards allowed).
    pub async fn get_last_by_subject(&self, filter: &str) -> Result<StoredMessage, Error> {
        let seq = {
            let table = self.table.borrow();
            let ids = table.subjects.matching(filter);
            ids.iter().filter_map(|id| table.subjects.entry(*id)).map(|entry| entry.last_seq).max()
        };
        self.get(seq.ok_or(Error::NoMessageFound)?).await
    }

    /// The first live sequence ≥ `from` whose subject matches `filter` (`None`: any subject).
    pub fn next_seq(&self, from: u64, filter: Option<&str>) -> Option<u64> {
        let table = self.table.borrow();
        let ids = filter.map(|filter| table.subjects.matching(filter));
        let next = table.live_from(from, ids.as_deref()).next();
        next
    }

    /// The first message at or after `from` whose subject matches `filter`.
    pub async fn next_by_subject(&self, from: u64, filter: Option<&str>) -> Result<StoredMessage, Error> {
        let seq = self.next_seq(from, filter).ok_or(Error::NoMessageFound)?;
        self.get(seq).await
    }

    /// The first sequence stored at or after `timestamp_ns`.
    pub fn seq_at_time(&self, timestamp_ns: i64) -> u64 {
        self.table.borrow().first_at_or_after(timestamp_ns)
    }

    /// Purges messages; durable when this returns. Returns how many were removed.
    pub async fn purge(&self, request: PurgeRequest) -> Result<u64, Error> {
        let (filter, payload) = encode_purge(&request);
        if let Some(filter) = request.filter.as_deref() {
            if !super::subject_match::is_valid_pattern(filter) {
                return Err(Error::InvalidSubject { subject: filter.into() });
            }
        }
        self.log.ensure_room(filter.len() + REMOVAL_RECORDS_BYTES_MAX).await?;
        let (purged, group, first_before) = {
            let mut table = self.table.borrow_mut();
            let first_before = table.first_seq();
            let now = self.context.clock.now_ns();
            let group = self.append_op(RecordKind::Purge, table.last_seq, now, &filter, &payload)?;
            (purge_table(&mut table, &request), group, first_before)
        };
        self.durable(&group).await?;
        self.after_removals(first_before).await;
        Ok(purged)
    }

    /// Deletes message `seq`; `Ok(false)` if it did not exist. Durable when this returns.
    pub async fn delete_message(&self, seq: u64) -> Result<bool, Error> {
        self.log.ensure_room(REMOVAL_RECORDS_BYTES_MAX).await?;
        let (group, first_before) = {
            let mut table = self.table.borrow_mut();
            let first_before = table.first_seq();
            if table.slot(seq).is_none() {
                return Ok(false);
            }
            let group = self.append_op(RecordKind::Delete, seq, self.context.clock.now_ns(), b"", b"")?;
            table.remove(seq);
            (group, first_before)
        };
        self.durable(&group).await?;
        self.after_removals(first_before).await;
        Ok(true)
    }

    /// Uses up every sequence through `seq` without storing anything (a restore's trailing
    /// deletions, nats-server's `SkipMsgs`): the last sequence becomes `seq`, so the next
    /// message gets `seq + 1`. Nothing happens when `seq` is not past the last sequence.
    /// Durable when this returns.
    pub async fn skip_to(&self, seq: u64) -> Result<(), Error> {
        self.log.ensure_room(REMOVAL_RECORDS_BYTES_MAX).await?;
        let group = {
            let mut table = self.table.borrow_mut();
            if seq <= table.last_seq {
                return Ok(());
            }
            // The tombstone past the last sequence: replay raises the last sequence to it.
            let group = self.append_op(RecordKind::Delete, seq, self.context.clock.now_ns(), b"", b"")?;
            table.raise_last_seq(seq);
            group
        };
        self.durable(&group).await
    }
}

/// What the in-memory table knows of one live message, without reading it from disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageSummary {
    pub seq: u64,
    pub timestamp_ns: i64,
    pub subject_bytes: u32,
    /// Headers and payload, from the bytes the message counts for (`stored_size`; a
    /// file-stored message with headers shows 4 bytes more).
    pub content_bytes: u32,
}

/// Read-only lookups for consumers: no I/O, bounded by `until` (the last sequence the
/// caller may see, e.g. the last durable one). `filters` empty means every subject.
impl Stream {
    /// Calls `f` with live message `seq`'s subject.
    pub fn with_subject<R>(&self, seq: u64, f: impl FnOnce(&str) -> R) -> Option<R> {
        let table = self.table.borrow();
        let slot = table.slot(seq)?;
        table.subjects.entry(SubjectId(slot.subject)).map(|entry| f(&entry.name))
    }

    pub fn message_summary(&self, seq: u64) -> Option<MessageSummary> {
        let table = self.table.borrow();
        summarize(&table, seq, self.meta.borrow().config.storage)
    }

    /// The first live message in `from..=until` whose subject matches one of `filters`.
    pub fn next_matching(&self, from: u64, until: u64, filters: &[String]) -> Option<MessageSummary> {
        let table = self.table.borrow();
        let ids = matching_ids(&table, filters);
        if ids.as_ref().is_some_and(|ids| ids.is_empty()) {
            return None;
        }
        let seq = table.live_from(from, ids.as_deref()).next().filter(|seq| *seq <= until)?;
        summarize(&table, seq, self.meta.borrow().config.storage)
    }

    /// Live messages in `from..=until` matching `filters`.
    pub fn count_matching(&self, from: u64, until: u64, filters: &[String]) -> u64 {
        let table = self.table.borrow();
        let ids = matching_ids(&table, filters);
        if from <= table.first_seq() && until >= table.last_seq {
            return match &ids {
                None => table.messages,
                Some(ids) => ids.iter().filter_map(|id| table.subjects.entry(*id)).map(|e| e.count).sum(),
            };
        }
        table.live_from(from, ids.as_deref()).take_while(|seq| *seq <= until).count() as u64
    }

    /// The last sequence (≤ `until`) of every subject matching `filters`, ascending.
    pub fn last_per_subject(&self, until: u64, filters: &[String]) -> Vec<u64> {
        let table = self.table.borrow();
        let ids: Vec<SubjectId> = match matching_ids(&table, filters) {
            Some(ids) => ids,
            None => table.subjects.matching(">"),
        };
        let mut seqs: Vec<u64> = ids
            .iter()
            .filter_map(|id| table.subjects.entry(*id))
            .map(|entry| entry.last_seq)
            .filter(|seq| *seq <= until)
            .collect();
        seqs.sort_unstable();
        seqs
    }

    /// For each subject matching `filters` (wildcards allowed): its newest message at or
    /// below `up_to`, ascending (direct get `multi_last`). Subjects whose newest message
    /// is above `up_to` cost a scan of `first..=up_to`.
    pub fn last_per_subject_at(&self, up_to: u64, filters: &[String]) -> Vec<u64> {
        let table = self.table.borrow();
        let ids = matching_ids(&table, filters).unwrap_or_else(|| table.subjects.matching(">"));
        let entries: Vec<(SubjectId, u64)> =
            ids.iter().filter_map(|id| table.subjects.entry(*id).map(|entry| (*id, entry.last_seq))).collect();
        let mut seqs: Vec<u64> = entries.iter().map(|(_, last)| *last).filter(|last| *last <= up_to).collect();
        let later: Vec<SubjectId> = entries.iter().filter(|(_, last)| *last > up_to).map(|(id, _)| *id).collect();
        if !later.is_empty() {
            let mut newest: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
            for seq in table.live_from(table.base_seq, Some(&later)).take_while(|seq| *seq <= up_to) {
                if let Some(slot) = table.slot(seq) {
                    newest.insert(slot.subject, seq);
                }
            }
            seqs.extend(newest.into_values());
        }
        seqs.sort_unstable();
        seqs
    }

    /// Messages removed since the stream was opened (a change means "recount").
    pub fn removed_total(&self) -> u64 {
        self.table.borrow().removed_total
    }
}

fn summarize(table: &MessageTable, seq: u64, storage: StorageKind) -> Option<MessageSummary> {
    let slot = table.slot(seq)?;
    let subject_bytes = table.subjects.entry(SubjectId(slot.subject)).map_or(0, |e| e.name.len() as u32);
    let content_bytes = content_bytes(storage, slot.bytes, subject_bytes);
    Some(MessageSummary { seq, timestamp_ns: slot.timestamp_ns, subject_bytes, content_bytes })
}

/// Subject ids matching any filter, deduplicated; `None` when there are no filters.
fn matching_ids(table: &MessageTable, filters: &[String]) -> Option<Vec<SubjectId>> {
    if filters.is_empty() {
        return None;
    }
    let mut ids: Vec<SubjectId> = filters.iter().flat_map(|filter| table.subjects.matching(filter)).collect();
    ids.sort_unstable_by_key(|id| id.0);
    ids.dedup();
    Some(ids)
}

impl Stream {
    /// The first live sequence (`last_seq + 1` when empty), without building a state.
    pub fn state_first_seq(&self) -> u64 {
        self.table.borrow().first_seq()
    }

    /// The last assigned sequence (durable or not).
    pub fn last_seq(&self) -> u64 {
        self.table.borrow().last_seq
    }
}
