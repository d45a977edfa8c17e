//! Unlisted streams: a stream built where nothing sees it, then adopted whole.
//!
//! A restore stores a backup's messages as they arrive, before it knows the backup is
//! whole and before the name is its to take. So it builds the stream unlisted: created in
//! a directory of the caller's (a file stream; the server gives one under its restore
//! staging directory, emptied at every start, so a crash leaves nothing behind) or under
//! a hidden name (a memory stream), absent from [`Engine::stream`] and every listing,
//! capturing nothing. [`Engine::adopt`] then makes it the stream of its name: a file
//! stream's log is closed, its directory renamed into the streams directory and the log
//! reopened there, the state in memory kept (`stream::relocate`); the shard's maintenance
//! writes its first checkpoint after. A memory stream is listed as it is. Until then
//! [`Engine::discard`] removes it and its files.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::{Engine, MEMORY_ROOT};
use crate::store;
use crate::stream::{Error, ShardId, StorageKind, Stream, StreamConfig, StreamState};

/// A stream built unlisted, until it is adopted or discarded.
pub struct UnlistedStream {
    stream: Rc<Stream>,
}

impl UnlistedStream {
    /// The stream, to append to.
    pub fn stream(&self) -> &Rc<Stream> {
        &self.stream
    }
}

impl Engine {
    /// Creates stream `config` unlisted: a file stream in `file_dir` (which must not
    /// exist, on the streams directory's file system), a memory stream under a hidden
    /// name made from `file_dir`'s last component.
    pub async fn create_unlisted(
        &self,
        config: StreamConfig,
        placement: ShardId,
        extension: Option<serde_json::Value>,
        file_dir: &Path,
    ) -> Result<UnlistedStream, Error> {
        config.validate()?;
        let dir = match config.storage {
            StorageKind::File => file_dir.to_path_buf(),
            StorageKind::Memory => {
                let key = file_dir.file_name().map(|name| name.to_string_lossy()).unwrap_or_default();
                Path::new(MEMORY_ROOT).join(format!(".unlisted-{key}"))
            }
        };
        let context = self.context_of(config.storage);
        let stream = Stream::create(context, dir, config, placement, extension).await?;
        Ok(UnlistedStream { stream: Rc::new(stream) })
    }

    /// Makes `unlisted` the stream of its name, as if created now with everything it
    /// holds. Refused (and the stream discarded) when the name is taken or its subjects
    /// overlap another stream's.
    pub async fn adopt(&self, unlisted: UnlistedStream) -> Result<StreamState, Error> {
        let config = unlisted.stream.config();
        let refusal = match self.name_taken(&config.name) {
            true => Err(Error::StreamNameInUse { name: config.name.clone() }),
            false => self.check_overlap(&config),
        };
        if let Err(error) = refusal {
            self.discard(unlisted).await;
            return Err(error);
        }
        let stream = match config.storage {
            StorageKind::Memory => unlisted.stream,
            StorageKind::File => Rc::new(self.move_in(unlisted.stream).await?),
        };
        // The checks above and this insert are apart by the awaits of the move: the caller
        // serialises stream creation (the server's coordinator lock).
        let state = stream.state();
        self.visible_last.borrow_mut().insert(config.name.clone(), Rc::new(std::cell::Cell::new(state.last_seq)));
        self.streams.borrow_mut().insert(config.name, stream);
        // Its first checkpoint, if due (a restored stream: `service::restore`).
        self.wake_maintenance();
        Ok(state)
    }

    /// Removes an unlisted stream and its files.
    pub async fn discard(&self, unlisted: UnlistedStream) {
        let stream = unlisted.stream;
        let _ = stream.close().await;
        let disk = &self.context_of(stream.config().storage).disk;
        let _ = disk.remove_dir_all(stream.dir()).await;
    }

    /// Closes an unlisted file stream, renames its directory into the streams directory
    /// (durably: both parents synced) and reopens it there: its log from a cut taken as
    /// it closed, the rest as it is in memory; or, if another holder of the stream is
    /// left or the log moved past the cut, from its files.
    async fn move_in(&self, stream: Rc<Stream>) -> Result<Stream, Error> {
        let name = stream.config().name;
        let disk = self.file_context.disk.clone();
        let from = stream.dir().to_path_buf();
        let to: PathBuf = self.streams_dir.join(&name);
        let (stream, closed) = match Rc::try_unwrap(stream) {
            Ok(stream) => {
                let closed = stream.close_for_move().await;
                (Some(stream), closed.map(Some))
            }
            Err(shared) => (None, shared.close().await.map(|()| None)),
        };
        let cut = match closed {
            Ok(cut) => cut,
            Err(error) => {
                let _ = disk.remove_dir_all(&from).await;
                return Err(error);
            }
        };
        if let Err(error) = disk.rename(&from, &to).await {
            let _ = disk.remove_dir_all(&from).await;
            return Err(store::Error::io("rename", &from, &error).into());
        }
        // Moved: from here a failure removes the stream from the streams directory, so no
        // stream the caller was told failed comes back at the next start.
        let opened = async {
            for parent in [to.parent(), from.parent()].into_iter().flatten() {
                disk.fsync_dir(parent).await.map_err(|e| store::Error::io("fsync_dir", parent, &e))?;
            }
            let moved = match (stream, cut) {
                (Some(stream), Some(cut)) => stream.reopen_moved(to.clone(), cut).await.ok(),
                _ => None,
            };
            match moved {
                Some(stream) => Ok(stream),
                None => Stream::open(&self.file_context, to.clone()).await,
            }
        };
        match opened.await {
            Ok(stream) => Ok(stream),
            Err(error) => {
                let _ = disk.remove_dir_all(&to).await;
                if let Some(parent) = to.parent() {
                    let _ = disk.fsync_dir(parent).await;
                }
                Err(error)
            }
        }
    }
}
