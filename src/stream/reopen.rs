//! A stream reopens itself in place after a write of its log found the disk full.
//!
//! The write wrote nothing and the log failed every queued group: those publishes got an
//! error and no ack, but the stream's in-memory state (table, dedupe window, TTL index,
//! flags) already counted them. The stream rebuilds that state from its files, as a
//! restart would, and takes publishes again at once: they succeed as soon as space is
//! freed, with no restart, and the sequences of the failed publishes are given out again
//! (none was acknowledged, and consumers never saw them: they read only up to the last
//! durable sequence). See `store/reopen.rs` for the log's part and what stays fail-stop.

use std::cell::Cell;
use std::rc::Rc;

use super::error::Error;
use super::stream::Stream;
use crate::store;
use crate::store::group::Group;

/// Whether the stream's writes find the disk full: an episode runs from the first write
/// that did until one succeeds, and is reported once (the `OUT_OF_STORAGE` advisory).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OutOfStorage {
    #[default]
    No,
    /// An episode began and nobody has reported it yet.
    Began,
    Reported,
}

impl Stream {
    /// Waits until `group` is durable; after a full disk failed it, reopens the stream
    /// from its files before returning the error.
    pub(super) async fn durable(&self, group: &Rc<Group>) -> Result<(), Error> {
        let result = self.log.wait_durable(group).await;
        note_episode(&self.out_of_storage, result.is_ok(), self.log.failed_for_space());
        if result.is_err() && self.log.failed_for_space() {
            // Boxed: reopening holds a whole recovery's future; inline, it would make every
            // publish's future (moved into its task at spawn) that much bigger, and the
            // memcpy costs JS publish ~10 % (`jetbench js-pub`, perf diff).
            Box::pin(self.reopen_in_place()).await;
        }
        Ok(result?)
    }

    /// Rebuilds the stream's state and log from its files. One at a time (under the
    /// checkpoint turn, which also keeps a checkpoint from writing a cut of the old state);
    /// a caller that finds it already done returns.
    async fn reopen_in_place(&self) {
        let _turn = self.checkpoints.turn().await;
        if !self.log.failed_for_space() {
            return;
        }
        // The flusher that failed completes every queued group before it returns.
        self.log.drained().await;
        let name = self.name();
        // Acknowledged appends of an interval policy may still wait for their fdatasync.
        if let Err(error) = self.log.sync_unsynced().await {
            tracing::error!(stream = %name, %error, "fdatasync failed after a full disk; stream stays stopped");
            return;
        }
        let meta = self.meta.borrow().clone();
        let fresh = match Stream::open_with_meta(&self.context, self.dir.clone(), meta).await {
            Ok(fresh) => fresh,
            Err(error) => {
                tracing::error!(stream = %name, %error, "reopening after a full disk failed; stream stays stopped");
                return;
            }
        };
        let Stream { table, dedupe, lost, ttl, flags, log, checkpoints, .. } = fresh;
        let last_seq = table.borrow().last_seq;
        self.table.replace(table.into_inner());
        self.dedupe.replace(dedupe.into_inner());
        self.lost.replace(lost.into_inner());
        self.ttl.replace(ttl.into_inner());
        self.flags.replace(flags.into_inner());
        self.counters.borrow_mut().clear();
        self.schedules.replace(super::schedule::ScheduleIndex::default());
        self.checkpoints.adopt(&checkpoints);
        self.log.adopt(&log);
        let stream_id = self.meta.borrow().stream_id;
        self.context.records.forget_after(stream_id, last_seq);
        tracing::info!(stream = %name, last_seq, "reopened after a full disk; taking publishes again");
    }

    /// The result of a publish's `ensure_room`: a segment the disk had no room for begins
    /// an episode too (nothing was written; the stream needs no reopening).
    pub(super) fn room_made(&self, result: Result<(), store::Error>) -> Result<(), Error> {
        let full = matches!(result, Err(store::Error::NoSpace { .. }));
        note_episode(&self.out_of_storage, result.is_ok(), full);
        Ok(result?)
    }

    /// True once per out-of-storage episode, to the first caller after it began: that
    /// caller reports it.
    pub fn out_of_storage_began(&self) -> bool {
        let began = self.out_of_storage.get() == OutOfStorage::Began;
        if began {
            self.out_of_storage.set(OutOfStorage::Reported);
        }
        began
    }
}

/// A write that succeeded ends an episode; one that found the disk full begins one.
fn note_episode(state: &Cell<OutOfStorage>, written: bool, full: bool) {
    match state.get() {
        OutOfStorage::No if !written && full => state.set(OutOfStorage::Began),
        OutOfStorage::Began | OutOfStorage::Reported if written => state.set(OutOfStorage::No),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_episode_is_reported_once_and_ends_with_a_write() {
        let state = Cell::new(OutOfStorage::No);
        note_episode(&state, true, false);
        assert_eq!(state.get(), OutOfStorage::No);
        note_episode(&state, false, true);
        assert_eq!(state.get(), OutOfStorage::Began);
        state.set(OutOfStorage::Reported);
        note_episode(&state, false, true);
        assert_eq!(state.get(), OutOfStorage::Reported, "a second refusal of the same episode");
        note_episode(&state, true, false);
        assert_eq!(state.get(), OutOfStorage::No);
        note_episode(&state, false, false);
        assert_eq!(state.get(), OutOfStorage::No, "an I/O error is not a full disk");
    }
}
