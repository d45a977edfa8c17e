//! A stream whose directory moves: a restored stream, adopted under its name
//! (`engine::unlisted`). Its log is closed at a cut of the stream as it is, the caller
//! renames the directory, and the log is reopened there from that cut; everything else
//! the stream holds in memory stays as it is. Reopening the stream from its files instead
//! read back and rebuilt its checkpoint: ~50 ms for a million messages, on the restore's
//! critical path (perf/backup.md).

use std::path::PathBuf;
use std::rc::Rc;

use super::error::Error;
use super::stream::{log_config, Stream};
use crate::store::{self, open_log, LogCheckpoint};

impl Stream {
    /// Closes the log, once everything appended is durable, at a cut of the stream as it
    /// is now: the cut to give [`Stream::reopen_moved`].
    pub async fn close_for_move(&self) -> Result<LogCheckpoint, Error> {
        // No cut only after a storage failure, which the log then reports.
        let failed = || {
            let reason = "the log has failed";
            self.log.failure().unwrap_or_else(|| store::Error::BadMetadata { path: self.dir.clone(), reason })
        };
        let cut = self.log.checkpoint_cut().ok_or_else(failed)?;
        self.log.make_durable(&cut).await?;
        self.log.close().await?;
        Ok(cut.checkpoint)
    }

    /// This stream, closed by [`Stream::close_for_move`] with nothing appended since and
    /// its directory now at `dir`: its log reopened there from `cut`. Refused if the log
    /// holds records past the cut (the files changed behind it): the caller opens the
    /// stream from its files instead.
    pub async fn reopen_moved(mut self, dir: PathBuf, cut: LogCheckpoint) -> Result<Stream, Error> {
        let config = log_config(&self.context, &dir, &self.meta.borrow());
        let mut past_cut = false;
        let (log, report) = open_log(self.context.disk.clone(), config, Some(&cut), &mut |_| past_cut = true).await?;
        if past_cut || !report.missing_segments.is_empty() {
            return Err(store::Error::BadMetadata { path: dir, reason: "the log changed after its move's cut" }.into());
        }
        self.log = Rc::new(log.with_stats(self.context.flush_stats.clone()));
        self.dir = dir;
        Ok(self)
    }
}
