//! Pure edits of a [`MessageTable`]: purge and limit enforcement. The same functions run on
//! the live path and on replay, so a logged request replays to the same state.

use super::config::{DiscardPolicy, StreamConfig};
use super::error::Error;
use super::subjects::SubjectId;
use super::table::MessageTable;

/// A purge request. All `None`: purge everything. `up_to_seq` is exclusive; `keep` keeps the
/// newest N; `filter` restricts either to matching subjects (wildcards allowed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PurgeRequest {
    pub filter: Option<String>,
    pub up_to_seq: Option<u64>,
    pub keep: Option<u64>,
}

/// Applies `request` to `table`; returns how many messages were removed.
pub fn purge_table(table: &mut MessageTable, request: &PurgeRequest) -> u64 {
    if request.filter.is_none() && request.keep.is_none() {
        let first = request.up_to_seq.unwrap_or(table.last_seq + 1);
        return table.remove_below(first.min(table.last_seq + 1));
    }
    let ids: Option<Vec<SubjectId>> = request.filter.as_deref().map(|filter| table.subjects.matching(filter));
    let mut candidates: Vec<u64> = table.live_from(table.base_seq, ids.as_deref()).collect();
    if let Some(up_to) = request.up_to_seq {
        candidates.retain(|seq| *seq < up_to);
    }
    if let Some(keep) = request.keep {
        let removable = candidates.len().saturating_sub(keep as usize);
        candidates.truncate(removable);
    }
    candidates.iter().filter(|seq| table.remove(**seq).is_some()).count() as u64
}

/// Refuses a message `bytes` long on `subject` if a discard-new limit is reached.
///
/// As nats-server: a subject already at `max_msgs_per_subject` is refused only with
/// `discard_new_per_subject`; otherwise its oldest message will make room, so the stream's
/// `max_msgs` does not refuse it and `max_bytes` refuses it only if that oldest message is
/// smaller than the new one. A rollup (which replaces the subject's messages) is never
/// refused for the per-subject limit.
pub fn check_discard_new(
    table: &MessageTable,
    config: &StreamConfig,
    subject: &str,
    bytes: u64,
    rollup: bool,
) -> Result<(), Error> {
    if config.discard != DiscardPolicy::New {
        return Ok(());
    }
    let subject_id = table.subjects.id_of(subject);
    let subject_count = subject_id.and_then(|id| table.subjects.entry(id)).map_or(0, |e| e.count);
    let at_subject_limit = config.max_msgs_per_subject.is_some_and(|max| subject_count >= max);
    if at_subject_limit && config.discard_new_per_subject && !rollup {
        return Err(Error::MaximumMessagesPerSubjectExceeded);
    }
    if config.max_msgs.is_some_and(|max| table.messages + 1 > max) && !at_subject_limit {
        return Err(Error::MaximumMessagesExceeded);
    }
    if config.max_bytes.is_some_and(|max| table.bytes + bytes > max) {
        let replaced_bytes =
            at_subject_limit.then(|| subject_id.and_then(|id| oldest_bytes_of_subject(table, id))).flatten();
        if replaced_bytes.is_none_or(|replaced| replaced < bytes) {
            return Err(Error::MaximumBytesExceeded);
        }
    }
    Ok(())
}

/// Stored bytes of the oldest live message of subject `id`.
fn oldest_bytes_of_subject(table: &MessageTable, id: SubjectId) -> Option<u64> {
    let entry = table.subjects.entry(id)?;
    let start = entry.first_hint.max(table.base_seq);
    (start..=entry.last_seq)
        .find_map(|seq| table.slot(seq).filter(|slot| slot.subject == id.0))
        .map(|slot| u64::from(slot.bytes))
}

/// Removes messages beyond the discard-old limits and, with `expire_age`, older than
/// `max_age`. Returns interior sequences removed one by one (to log as tombstones); front
/// removals are visible as a change of `first_seq`.
pub fn enforce_limits(
    table: &mut MessageTable,
    config: &StreamConfig,
    subject: Option<&str>,
    now_ns: i64,
    expire_age: bool,
) -> Vec<u64> {
    let mut deleted = Vec::new();
    if let (Some(max), Some(subject)) = (config.max_msgs_per_subject, subject) {
        if let Some(id) = table.subjects.id_of(subject) {
            while table.subjects.entry(id).is_some_and(|entry| entry.count > max) {
                let Some(oldest) = table.first_of_subject(id) else {
                    break;
                };
                table.remove(oldest);
                deleted.push(oldest);
            }
        }
    }
    while config.max_msgs.is_some_and(|max| table.messages > max) && config.discard == DiscardPolicy::Old {
        table.remove(table.first_seq());
    }
    while config.max_bytes.is_some_and(|max| table.bytes > max) && config.discard == DiscardPolicy::Old {
        table.remove(table.first_seq());
    }
    if expire_age {
        expire_by_age(table, config, now_ns);
    }
    deleted
}

/// Removes messages older than `max_age`; returns how many.
pub fn expire_by_age(table: &mut MessageTable, config: &StreamConfig, now_ns: i64) -> u64 {
    let Some(max_age) = config.max_age else {
        return 0;
    };
    let cutoff = now_ns.saturating_sub(max_age.as_nanos() as i64);
    let first_kept = table.first_at_or_after(cutoff);
    table.remove_below(first_kept)
}
