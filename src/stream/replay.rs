//! Rebuilding a stream's in-memory state from its log during recovery, and reporting
//! damaged or missing ranges exactly.

use std::ops::Range;

use super::config::StorageKind;
use super::dedupe::DedupeWindow;
use super::edit::{purge_table, PurgeRequest};
use super::flags::MessageFlags;
use super::headers::{header_value, PublishExpectations, BATCH_COMMIT, BATCH_ID};
use super::stored_size::stored_bytes;
use super::table::MessageTable;
use super::ttl::{parse_ttl, TtlIndex};
use crate::store::{RecordKind, ScanEvent};

/// Messages that recovery could not read, reported (never silently dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostRange {
    /// First and last lost sequence (`None` if the damage held no message we can name).
    pub seqs: Option<(u64, u64)>,
    pub segment: Option<u64>,
    /// Damaged byte range within `segment`.
    pub bytes: Option<Range<u64>>,
}

/// Applies scanned records to the table, dedupe window and lost list.
pub struct Replayer<'a> {
    pub table: &'a mut MessageTable,
    pub dedupe: &'a mut DedupeWindow,
    pub lost: &'a mut Vec<LostRange>,
    pub ttl: &'a mut TtlIndex,
    pub flags: &'a mut MessageFlags,
    pub window_ns: i64,
    /// Shortest TTL honoured (the stream's subject delete marker TTL, seconds).
    pub ttl_floor_seconds: u64,
    /// The stream takes atomic batches: drop one whose commit is missing.
    pub atomic_batches: bool,
    /// How the stream's messages count in bytes (`stored_size`).
    pub storage: StorageKind,
    pending_damage: Option<(u64, Range<u64>)>,
    /// Messages of an atomic batch whose commit was not seen yet (`batch.rs`).
    open_batch: Option<(String, Vec<u64>)>,
    /// The sequence the log's first message must have, when known: a replay from the
    /// log's very beginning of a stream that never retired a segment starts at 1.
    first_seq_expected: Option<u64>,
}

impl<'a> Replayer<'a> {
    pub fn new(
        table: &'a mut MessageTable,
        dedupe: &'a mut DedupeWindow,
        lost: &'a mut Vec<LostRange>,
        ttl: &'a mut TtlIndex,
        flags: &'a mut MessageFlags,
        window_ns: i64,
    ) -> Self {
        Replayer {
            table,
            dedupe,
            lost,
            ttl,
            flags,
            window_ns,
            ttl_floor_seconds: 0,
            atomic_batches: false,
            storage: StorageKind::File,
            pending_damage: None,
            open_batch: None,
            first_seq_expected: None,
        }
    }

    /// Declares that the replay starts at the log's beginning and the first message must
    /// be `seq`: anything below the first message found was lost (e.g. a misdirected
    /// write over the stream's first records), and is reported.
    pub fn expect_first_seq(&mut self, seq: u64) {
        self.first_seq_expected = Some(seq);
    }

    pub fn apply(&mut self, event: ScanEvent<'_>) {
        let record = match event {
            ScanEvent::Damage { segment, bytes } => {
                tracing::error!(
                    segment,
                    start = bytes.start,
                    end = bytes.end,
                    "damaged bytes in segment; serving the rest"
                );
                self.flush_damage(None);
                self.pending_damage = Some((segment, bytes));
                return;
            }
            ScanEvent::Record { record, .. } => record,
        };
        match record.kind {
            RecordKind::Message => self.apply_message(&record),
            RecordKind::Delete => {
                self.table.remove(record.seq);
                // A tombstone past the last sequence is a skipped publish (`Keep::Skip`).
                self.table.raise_last_seq(record.seq);
            }
            RecordKind::Front => {
                self.table.remove_below(record.seq);
                self.table.raise_last_seq(record.seq.saturating_sub(1));
            }
            RecordKind::Purge => {
                if let Some(request) = decode_purge(record.subject, record.payload) {
                    purge_table(self.table, &request);
                }
                self.table.raise_last_seq(record.seq);
            }
        }
    }

    fn apply_message(&mut self, record: &crate::store::Record<'_>) {
        if record.seq <= self.table.last_seq {
            tracing::warn!(seq = record.seq, "ignoring message at or below the last sequence");
            return;
        }
        let gap = self.gap_before(record.seq);
        self.flush_damage(gap);
        let subject = String::from_utf8_lossy(record.subject);
        let bytes = stored_bytes(self.storage, record.subject.len(), record.headers.len(), record.payload.len());
        self.table.insert(record.seq, &subject, bytes as u32, record.timestamp_ns);
        let headers = PublishExpectations::from_headers(record.headers);
        if let Some(id) = headers.msg_id {
            self.dedupe.record(id, record.seq, record.timestamp_ns, self.window_ns);
        }
        // A stored TTL was valid when published; a due one expires on the next tick.
        let ttl = headers.ttl.and_then(parse_ttl).map(|ttl| ttl.at_least(self.ttl_floor_seconds));
        if let Some(deadline_ns) = ttl.and_then(|ttl| ttl.deadline_ns(record.timestamp_ns)) {
            self.ttl.insert(record.seq, deadline_ns);
        }
        self.flags.note(record.seq, &headers);
        if self.atomic_batches {
            self.follow_batch(record);
        }
    }

    /// Tracks atomic batches: a batch's messages stand only if its commit (the message
    /// with `Nats-Batch-Commit`) follows them; one cut short by a crash is dropped when
    /// anything else follows it, or at the end of the log.
    fn follow_batch(&mut self, record: &crate::store::Record<'_>) {
        let id = header_value(record.headers, BATCH_ID).filter(|id| !id.is_empty());
        let continues = matches!((&self.open_batch, id), (Some((open, _)), Some(id)) if open == id);
        if !continues {
            self.drop_open_batch();
        }
        let Some(id) = id else { return };
        let (_, seqs) = self.open_batch.get_or_insert_with(|| (id.to_string(), Vec::new()));
        seqs.push(record.seq);
        if header_value(record.headers, BATCH_COMMIT).is_some() {
            self.open_batch = None;
        }
    }

    fn drop_open_batch(&mut self) {
        let Some((id, seqs)) = self.open_batch.take() else { return };
        tracing::warn!(batch = %id, messages = seqs.len(), "dropping an atomic batch whose commit is not on disk");
        for seq in seqs {
            self.table.remove(seq);
        }
    }

    /// The sequences missing before message `seq`, if any. Message records follow each
    /// other +1 in a log (removals are separate records), so a jump is a loss. Before
    /// the first message the floor is the expected first sequence, else 1 when damage
    /// precedes it (a range that may include messages retired earlier, never one that
    /// misses a loss), else unknown.
    fn gap_before(&mut self, seq: u64) -> Option<(u64, u64)> {
        let first_missing = if self.table.last_seq > 0 {
            self.table.last_seq + 1
        } else if let Some(expected) = self.first_seq_expected.take() {
            expected
        } else if self.pending_damage.is_some() {
            1
        } else {
            return None;
        };
        (seq > first_missing).then(|| (first_missing, seq - 1))
    }

    /// Reports pending damage (or a bare sequence gap) as a lost range.
    fn flush_damage(&mut self, gap: Option<(u64, u64)>) {
        let damage = self.pending_damage.take();
        if gap.is_none() && damage.is_none() {
            return;
        }
        let (segment, bytes) = damage.map_or((None, None), |(segment, bytes)| (Some(segment), Some(bytes)));
        tracing::error!(?gap, ?segment, ?bytes, "messages lost to damage");
        self.lost.push(LostRange { seqs: gap, segment, bytes });
    }

    /// Reports damage left at the end of the log; drops an uncommitted batch there.
    pub fn finish(&mut self) {
        self.drop_open_batch();
        self.flush_damage(None);
    }
}

/// Encodes a purge request as (filter bytes, payload).
pub fn encode_purge(request: &PurgeRequest) -> (Vec<u8>, Vec<u8>) {
    let filter = request.filter.clone().unwrap_or_default().into_bytes();
    let mut payload = Vec::with_capacity(16);
    payload.extend_from_slice(&request.up_to_seq.unwrap_or(0).to_le_bytes());
    payload.extend_from_slice(&request.keep.unwrap_or(u64::MAX).to_le_bytes());
    (filter, payload)
}

pub(super) fn decode_purge(filter: &[u8], payload: &[u8]) -> Option<PurgeRequest> {
    let up_to = u64::from_le_bytes(payload.get(0..8)?.try_into().ok()?);
    let keep = u64::from_le_bytes(payload.get(8..16)?.try_into().ok()?);
    let filter = std::str::from_utf8(filter).ok()?;
    Some(PurgeRequest {
        filter: (!filter.is_empty()).then(|| filter.to_string()),
        up_to_seq: (up_to != 0).then_some(up_to),
        keep: (keep != u64::MAX).then_some(keep),
    })
}
