//! Removing messages by time, from the shard's maintenance timer: `max_age` and
//! per-message TTLs (`Nats-TTL`). Durable before `expire` returns.
//!
//! Two ways to remove by age. The fast one cuts the front of the stream (one `Front`
//! record), used when nothing needs a message-by-message look. The careful one goes
//! message by message, as nats-server's age check does, when the stream has subject
//! delete markers (an emptied subject gets its marker, `markers.rs`) or messages that
//! never expire (`Nats-TTL: never`, skipped). TTL expiry is always message by message.
//! Either way a pass's removals and the markers they leave are appended in one
//! synchronous section, so they become durable together.

use super::edit::expire_by_age;
use super::error::Error;
use super::markers::MarkerWritten;
use super::stream::{Stream, REMOVAL_RECORDS_BYTES_MAX};
use crate::store::record::RECORD_HEADER_BYTES;
use crate::store::RecordKind;

/// Bytes of removal records and markers one careful pass appends at most: well within the
/// smallest segment, so `ensure_room` can always grant it.
const EXPIRY_PASS_BYTES_MAX: usize = 32 * 1024;
const _: () = assert!(EXPIRY_PASS_BYTES_MAX as u64 * 2 <= crate::limits::SEGMENT_SIZE_BYTES_MIN);
/// Slots a careful age pass looks at at most (never-expiring messages at the front are
/// looked at again on every pass).
const AGE_SCAN_SLOTS_MAX: usize = 64 * 1024;
/// A tombstone (or a `Front` record): a record with a 16-byte payload at most.
pub(super) const REMOVAL_RECORD_BYTES: usize = RECORD_HEADER_BYTES + 16;

impl Stream {
    /// Expires messages older than `max_age` and messages whose `Nats-TTL` passed (call
    /// from the shard's timer). Durable when this returns; returns the delete markers it
    /// wrote, which consumers must be told of like any publish.
    pub async fn expire(&self) -> Result<Vec<MarkerWritten>, Error> {
        let config = self.meta.borrow().config.clone();
        let mut markers = if self.age_expiry_inline(&config) {
            self.expire_by_age_now().await?;
            Vec::new()
        } else {
            self.expire_by_age_carefully().await?
        };
        markers.extend(self.expire_by_ttl_now().await?);
        Ok(markers)
    }

    /// Removes messages whose TTL passed, each logged as a tombstone, with markers.
    async fn expire_by_ttl_now(&self) -> Result<Vec<MarkerWritten>, Error> {
        if !self.ttl.borrow().has_due(self.context.clock.now_ns()) {
            return Ok(Vec::new());
        }
        let first_due = self.ttl.borrow().due(self.context.clock.now_ns(), 1).first().map(|(_, seq)| *seq);
        let room = self.pass_room(EXPIRY_PASS_BYTES_MAX, first_due);
        self.log.ensure_room(room).await?;
        let now = self.context.clock.now_ns();
        let due = self.ttl.borrow().due(now, crate::limits::TTL_EXPIRIES_PER_PASS_MAX);
        let mut by_seq: Vec<u64> = due.iter().map(|(_, seq)| *seq).collect();
        by_seq.sort_unstable();
        let pass = self.remove_and_mark(&by_seq, room, now)?;
        {
            let mut index = self.ttl.borrow_mut();
            for (deadline_ns, seq) in due {
                // Handled, or already gone some other way; what the budget left waits.
                if pass.handled(seq) {
                    index.remove(deadline_ns, seq);
                }
            }
        }
        self.finish_pass(pass).await
    }

    /// Removes messages older than `max_age` one by one, skipping those that never
    /// expire, with markers for the subjects this empties.
    async fn expire_by_age_carefully(&self) -> Result<Vec<MarkerWritten>, Error> {
        let Some(&first_due) = self.age_due().first() else {
            return Ok(Vec::new()); // idle streams do no I/O on a tick
        };
        let room = self.pass_room(EXPIRY_PASS_BYTES_MAX, Some(first_due));
        self.log.ensure_room(room).await?;
        let due = self.age_due();
        let pass = self.remove_and_mark(&due, room, self.context.clock.now_ns())?;
        self.finish_pass(pass).await
    }

    /// Live messages past `max_age` that may expire, oldest first.
    fn age_due(&self) -> Vec<u64> {
        let Some(max_age) = self.meta.borrow().config.max_age else {
            return Vec::new();
        };
        let cutoff = self.context.clock.now_ns().saturating_sub(max_age.as_nanos() as i64);
        let table = self.table.borrow();
        let flags = self.flags.borrow();
        let removals_max = EXPIRY_PASS_BYTES_MAX / REMOVAL_RECORD_BYTES;
        table
            .live_from(table.first_seq(), None)
            .take(AGE_SCAN_SLOTS_MAX)
            .take_while(|seq| table.slot(*seq).is_some_and(|slot| slot.timestamp_ns < cutoff))
            .filter(|seq| !flags.never_expires(*seq))
            .take(removals_max)
            .collect()
    }

    /// Waits for a pass's records, then lets segments go.
    async fn finish_pass(&self, pass: super::markers::Pass) -> Result<Vec<MarkerWritten>, Error> {
        if let Some(group) = &pass.group {
            self.durable(group).await?;
            self.after_removals(pass.first_before).await;
        }
        Ok(pass.markers)
    }

    async fn expire_by_age_now(&self) -> Result<u64, Error> {
        if !self.has_expired_messages() {
            return Ok(0); // idle streams do no I/O on a tick
        }
        self.log.ensure_room(REMOVAL_RECORDS_BYTES_MAX).await?;
        let (removed, first_before, group) = {
            let config = self.meta.borrow().config.clone();
            let mut table = self.table.borrow_mut();
            let first_before = table.first_seq();
            let now = self.context.clock.now_ns();
            let removed = expire_by_age(&mut table, &config, now);
            let group = if removed > 0 {
                Some(self.append_op(RecordKind::Front, table.first_seq(), now, b"", b"")?)
            } else {
                None
            };
            (removed, first_before, group)
        };
        if let Some(group) = group {
            self.durable(&group).await?;
            self.after_removals(first_before).await;
        }
        Ok(removed)
    }

    fn has_expired_messages(&self) -> bool {
        let Some(max_age) = self.meta.borrow().config.max_age else {
            return false;
        };
        let table = self.table.borrow();
        let cutoff = self.context.clock.now_ns().saturating_sub(max_age.as_nanos() as i64);
        table.slot(table.first_seq()).is_some_and(|slot| slot.timestamp_ns < cutoff)
    }
}
