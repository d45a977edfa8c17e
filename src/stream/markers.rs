//! Subject delete markers (nats-server 2.11, ADR-43): when `max_age` or a `Nats-TTL`
//! removes the last message of a subject, a marker message takes its place so that
//! watchers (a KV watch is an ordered consumer) learn the key is gone. As nats-server
//! 2.15 writes it, the marker has no payload and the headers
//!
//! ```text
//! Nats-Marker-Reason: MaxAge
//! Nats-TTL: <subject_delete_marker_ttl as a Go duration, e.g. 1s, 15m0s>
//! Nats-Rollup: sub
//! ```
//!
//! and expires itself after that TTL, leaving no marker in turn (a message that is a
//! marker, or a KV purge, never leaves one: `flags.rs`). Purges, deletes and the
//! `max_msgs`/`max_bytes` limits leave none, as in nats-server.
//!
//! A marker is an ordinary message record: durable, replayed, delivered to consumers.

use std::rc::Rc;

use super::error::Error;
use super::expiry::REMOVAL_RECORD_BYTES;
use super::headers::{MARKER_REASON, MESSAGE_TTL, ROLLUP};
use super::stored_size::stored_bytes;
use super::stream::Stream;
use super::subjects::SubjectId;
use super::table::MessageTable;
use crate::limits::NANOS_PER_SECOND;
use crate::store::group::Group;
use crate::store::record::encoded_len;
use crate::store::{Record, RecordKind, StreamId};

/// The reason nats-server gives for markers left by `max_age` and by `Nats-TTL`.
pub const MARKER_REASON_MAX_AGE: &str = "MaxAge";

/// A marker a removal pass appended (consumers are told of it like of a publish).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerWritten {
    pub seq: u64,
    pub subject: String,
    pub header_bytes: usize,
}

/// What one removal pass appended.
pub(super) struct Pass {
    /// The group holding its last record, `None` when it appended nothing.
    pub group: Option<Rc<Group>>,
    pub first_before: u64,
    pub markers: Vec<MarkerWritten>,
    /// Every due sequence up to this one was handled (removed, or already gone).
    handled_through: Option<u64>,
}

impl Pass {
    pub fn handled(&self, seq: u64) -> bool {
        self.handled_through.is_some_and(|through| seq <= through)
    }
}

impl Stream {
    /// Removes the messages `due` (ascending) that are still live, logs the removals and
    /// appends a marker for each subject this empties, all within `budget` bytes of
    /// records (room for them was ensured). Stops early when the next removal and its
    /// marker would not fit; the rest waits for the next pass.
    pub(super) fn remove_and_mark(&self, due: &[u64], budget: usize, now: i64) -> Result<Pass, Error> {
        let marker_ttl = self.meta.borrow().config.marker_ttl_seconds();
        let header = (marker_ttl > 0).then(|| marker_header(MARKER_REASON_MAX_AGE, marker_ttl));
        let mut table = self.table.borrow_mut();
        let first_before = table.first_seq();
        let mut used = REMOVAL_RECORD_BYTES; // a `Front` record
        let mut removed = Vec::new();
        let mut emptied = Vec::new();
        let mut handled_through = None;
        for &seq in due {
            let Some(slot) = table.slot(seq).copied() else {
                handled_through = Some(seq);
                continue;
            };
            let id = SubjectId(slot.subject);
            let name = table.subjects.entry(id).map(|entry| entry.name.to_string()).unwrap_or_default();
            let marker_bytes = header.as_ref().map_or(0, |header| encoded_len(name.len(), header.len(), 0));
            if used + REMOVAL_RECORD_BYTES + marker_bytes > budget {
                break;
            }
            used += REMOVAL_RECORD_BYTES + marker_bytes;
            table.remove(seq);
            removed.push(seq);
            handled_through = Some(seq);
            let was_marker = self.flags.borrow().is_marker(seq);
            if header.is_some() && !was_marker && table.subjects.id_of(&name).is_none() {
                emptied.push(name);
            }
        }
        let mut group = None;
        let first = table.first_seq();
        if first > first_before {
            group = Some(self.append_op(RecordKind::Front, first, now, b"", b"")?);
        }
        for seq in removed.iter().filter(|seq| **seq >= first) {
            group = Some(self.append_op(RecordKind::Delete, *seq, now, b"", b"")?);
        }
        let mut markers = Vec::with_capacity(emptied.len());
        if let Some(header) = &header {
            for subject in emptied {
                let (marker_group, seq) = self.append_marker(&mut table, &subject, header, marker_ttl, now)?;
                group = Some(marker_group);
                markers.push(MarkerWritten { seq, subject, header_bytes: header.len() });
            }
        }
        Ok(Pass { group, first_before, markers, handled_through })
    }

    /// Room a pass needs: its budget, or more when the first due message alone (with its
    /// marker) takes more (a subject longer than the budget still expires).
    pub(super) fn pass_room(&self, budget: usize, first_due: Option<u64>) -> usize {
        let marker_ttl = self.meta.borrow().config.marker_ttl_seconds();
        let table = self.table.borrow();
        let subject_len = first_due
            .and_then(|seq| table.slot(seq))
            .and_then(|slot| table.subjects.entry(SubjectId(slot.subject)))
            .map_or(0, |entry| entry.name.len());
        let header_len = if marker_ttl > 0 { marker_header(MARKER_REASON_MAX_AGE, marker_ttl).len() } else { 0 };
        budget.max(2 * REMOVAL_RECORD_BYTES + encoded_len(subject_len, header_len, 0))
    }

    /// Appends a marker on `subject` (which has no message now). Precondition: room.
    fn append_marker(
        &self,
        table: &mut MessageTable,
        subject: &str,
        header: &[u8],
        ttl_seconds: u64,
        now: i64,
    ) -> Result<(Rc<Group>, u64), Error> {
        let seq = table.last_seq + 1;
        let timestamp_ns = now.max(table.last_timestamp_ns);
        let record = Record {
            kind: RecordKind::Message,
            stream_id: StreamId(self.meta.borrow().stream_id),
            seq,
            timestamp_ns,
            subject: subject.as_bytes(),
            headers: header,
            payload: b"",
        };
        let group = self.log.append(&record)?;
        let size = encoded_len(subject.len(), header.len(), 0);
        let storage = self.meta.borrow().config.storage;
        table.insert(seq, subject, stored_bytes(storage, subject.len(), header.len(), 0) as u32, timestamp_ns);
        self.note_appended(size);
        let ttl_nanos = i64::try_from(ttl_seconds.saturating_mul(NANOS_PER_SECOND)).unwrap_or(i64::MAX);
        self.ttl.borrow_mut().insert(seq, timestamp_ns.saturating_add(ttl_nanos));
        self.flags.borrow_mut().insert_marker(seq);
        Ok((group, seq))
    }
}

/// The header block of a marker, byte for byte as nats-server 2.15 writes it.
pub fn marker_header(reason: &str, ttl_seconds: u64) -> Vec<u8> {
    format!(
        "NATS/1.0\r\n{MARKER_REASON}: {reason}\r\n{MESSAGE_TTL}: {}\r\n{ROLLUP}: sub\r\n\r\n",
        go_duration_seconds(ttl_seconds)
    )
    .into_bytes()
}

/// Whole seconds as Go's `time.Duration.String` prints them: `1s`, `1m30s`, `15m0s`,
/// `2h0m0s`.
pub fn go_duration_seconds(total: u64) -> String {
    let (hours, minutes, seconds) = (total / 3600, total / 60 % 60, total % 60);
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, _) => format!("{minutes}m{seconds}s"),
        _ => format!("{hours}h{minutes}m{seconds}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_like_go() {
        for (seconds, text) in
            [(1, "1s"), (59, "59s"), (60, "1m0s"), (90, "1m30s"), (900, "15m0s"), (7200, "2h0m0s"), (3725, "1h2m5s")]
        {
            assert_eq!(go_duration_seconds(seconds), text);
        }
    }

    #[test]
    fn marker_header_matches_nats_server() {
        let header = marker_header(MARKER_REASON_MAX_AGE, 1);
        assert_eq!(header, b"NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: 1s\r\nNats-Rollup: sub\r\n\r\n");
    }
}
