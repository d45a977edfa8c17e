//! A durable consumer on disk, beside its stream: `<stream dir>/<dir>/<name><suffix>` (its
//! configuration, JSON) and `<name>.state` (`consumer::ConsumerState::encode`). Both are
//! replaced atomically (`store::meta_file`: temporary file, fdatasync, rename, directory
//! fsync) and carry a checksum.
//!
//! Two layouts share this code: the embedded engine's consumers
//! ([`ConsumerFiles::EMBEDDED`], `engine_consumers/<name>.json`, holding this layer's
//! `ConsumerConfig`) and the server's (`consumers/<name>.config.json`, holding its wire
//! configuration, which this layer does not know). They live in different directories,
//! so one never reads the other's files.
//!
//! What to do with a file that cannot be read is the caller's (DESIGN §4: a damaged state
//! means resume from the configuration and redeliver, never loss; a damaged configuration
//! leaves the consumer's files on disk).

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::consumer::ConsumerState;
pub use crate::store::meta_file::Durability;
use crate::store::{self, meta_file, Disk};
use crate::stream::Error;

const STATE_SUFFIX: &str = ".state";

/// Where one kind of consumer keeps its files under a stream's directory.
#[derive(Clone, Copy, Debug)]
pub struct ConsumerFiles {
    dir: &'static str,
    config_suffix: &'static str,
}

impl ConsumerFiles {
    /// The embedded engine's durable consumers.
    pub const EMBEDDED: ConsumerFiles = ConsumerFiles::new("engine_consumers", ".json");

    /// Files in `<stream dir>/<dir>`, configurations named `<name><config_suffix>`.
    pub const fn new(dir: &'static str, config_suffix: &'static str) -> ConsumerFiles {
        ConsumerFiles { dir, config_suffix }
    }

    pub fn dir(&self, stream_dir: &Path) -> PathBuf {
        stream_dir.join(self.dir)
    }

    fn config_path(&self, stream_dir: &Path, name: &str) -> PathBuf {
        self.dir(stream_dir).join(format!("{name}{}", self.config_suffix))
    }

    fn state_path(&self, stream_dir: &Path, name: &str) -> PathBuf {
        self.dir(stream_dir).join(format!("{name}{STATE_SUFFIX}"))
    }

    /// Writes consumer `name`'s configuration durably, creating the directory on first use.
    pub async fn write_config<C: Serialize>(
        &self,
        disk: &dyn Disk,
        stream_dir: &Path,
        name: &str,
        config: &C,
    ) -> Result<(), Error> {
        let dir = self.dir(stream_dir);
        disk.create_dir_all(&dir).await.map_err(|e| store::Error::io("create_dir", &dir, &e))?;
        let body = serde_json::to_vec(config).expect("a consumer config serializes");
        meta_file::write_atomic(disk, &self.config_path(stream_dir, name), &body, "mid_meta_write").await?;
        Ok(())
    }

    /// The saved configuration of consumer `name`: `None` when there is none, an error
    /// when it cannot be read or parsed.
    pub async fn read_config<C: DeserializeOwned>(
        &self,
        disk: &dyn Disk,
        stream_dir: &Path,
        name: &str,
    ) -> Result<Option<C>, Error> {
        let path = self.config_path(stream_dir, name);
        let Some(body) = meta_file::read(disk, &path).await? else { return Ok(None) };
        let config = serde_json::from_slice(&body).map_err(|error| {
            let unreadable = std::io::Error::new(std::io::ErrorKind::InvalidData, error.to_string());
            store::Error::io("read consumer config", &path, &unreadable)
        })?;
        Ok(Some(config))
    }

    /// Writes the state. The caller keeps two writes of one consumer's state from
    /// overlapping.
    pub async fn write_state(
        &self,
        disk: &dyn Disk,
        stream_dir: &Path,
        name: &str,
        state: &ConsumerState,
        durability: Durability,
    ) -> Result<(), Error> {
        let path = self.state_path(stream_dir, name);
        meta_file::write_replace(disk, &path, &state.encode(), durability, "mid_consumer_state_write").await?;
        Ok(())
    }

    /// The saved state of consumer `name`: `Ok(None)` when there is none, `Err` with the
    /// reason and the path when it is damaged or cannot be read.
    pub async fn read_state(
        &self,
        disk: &dyn Disk,
        stream_dir: &Path,
        name: &str,
    ) -> Result<Option<ConsumerState>, String> {
        let path = self.state_path(stream_dir, name);
        let decoded = match meta_file::read(disk, &path).await {
            Ok(Some(body)) => ConsumerState::decode(&body).map(Some).map_err(|error| format!("{error:?}")),
            Ok(None) => Ok(None),
            Err(error) => Err(error.to_string()),
        };
        decoded.map_err(|error| format!("{}: {error}", path.display()))
    }

    /// Removes a deleted consumer's files (missing ones are fine).
    pub async fn remove(&self, disk: &dyn Disk, stream_dir: &Path, name: &str) -> Result<(), Error> {
        for path in [self.config_path(stream_dir, name), self.state_path(stream_dir, name)] {
            match disk.remove_file(&path).await {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(store::Error::io("remove", &path, &error).into()),
            }
        }
        let dir = self.dir(stream_dir);
        disk.fsync_dir(&dir).await.map_err(|e| store::Error::io("fsync_dir", &dir, &e))?;
        Ok(())
    }

    /// The names of the consumers with a configuration under `stream_dir`, in the order
    /// the directory lists them; empty when there is no directory.
    pub async fn names(&self, disk: &dyn Disk, stream_dir: &Path) -> Result<Vec<String>, Error> {
        let dir = self.dir(stream_dir);
        let files = match disk.list_dir(&dir).await {
            Ok(files) => files,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(store::Error::io("list_dir", &dir, &error).into()),
        };
        Ok(files.iter().filter_map(|file| file.strip_suffix(self.config_suffix)).map(str::to_string).collect())
    }
}
