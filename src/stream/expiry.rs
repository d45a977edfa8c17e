//! Removing messages by time, from the shard's maintenance timer: `max_age` (from the
//! front, logged as a `Front` record) and per-message TTLs (`Nats-TTL`, anywhere in the
//! stream, each logged as a tombstone). Both are durable before `expire` returns.

use super::edit::expire_by_age;
use super::error::Error;
use super::stream::{Stream, REMOVAL_RECORDS_BYTES_MAX};
use crate::store::record::RECORD_HEADER_BYTES;
use crate::store::RecordKind;

impl Stream {
    /// Expires messages older than `max_age` and messages whose `Nats-TTL` passed (call
    /// from the shard's timer). Durable when this returns.
    pub async fn expire(&self) -> Result<u64, Error> {
        let by_age = self.expire_by_age_now().await?;
        Ok(by_age + self.expire_by_ttl_now().await?)
    }

    /// Removes up to `TTL_EXPIRIES_PER_PASS_MAX` messages whose TTL passed, each logged as
    /// a tombstone.
    async fn expire_by_ttl_now(&self) -> Result<u64, Error> {
        if !self.ttl.borrow().has_due(self.context.clock.now_ns()) {
            return Ok(0);
        }
        let tombstone_bytes = RECORD_HEADER_BYTES + 16;
        self.log
            .ensure_room(crate::limits::TTL_EXPIRIES_PER_PASS_MAX * tombstone_bytes)
            .await?;
        let (removed, first_before, group) = {
            let mut table = self.table.borrow_mut();
            let first_before = table.first_seq();
            let now = self.context.clock.now_ns();
            let due = self
                .ttl
                .borrow_mut()
                .take_due(now, crate::limits::TTL_EXPIRIES_PER_PASS_MAX);
            let mut group = None;
            let mut removed = 0;
            for seq in due {
                if table.slot(seq).is_none() {
                    continue; // already removed by a limit, purge or rollup
                }
                group = Some(self.append_op(RecordKind::Delete, seq, now, b"", b"")?);
                table.remove(seq);
                removed += 1;
            }
            (removed, first_before, group)
        };
        if let Some(group) = group {
            self.log.wait_durable(&group).await?;
            self.after_removals(first_before).await;
        }
        Ok(removed)
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
            self.log.wait_durable(&group).await?;
            self.after_removals(first_before).await;
        }
        Ok(removed)
    }

    fn has_expired_messages(&self) -> bool {
        let Some(max_age) = self.meta.borrow().config.max_age else {
            return false;
        };
        let table = self.table.borrow();
        let cutoff = self
            .context
            .clock
            .now_ns()
            .saturating_sub(max_age.as_nanos() as i64);
        table
            .slot(table.first_seq())
            .is_some_and(|slot| slot.timestamp_ns < cutoff)
    }
}
