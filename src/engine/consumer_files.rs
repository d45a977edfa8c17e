//! An embedded durable consumer on disk, beside its stream:
//! `<stream dir>/engine_consumers/<name>.json` (its [`ConsumerConfig`]) and `<name>.state`
//! (`consumer::ConsumerState::encode`, the codec the server's consumers use). Both are
//! replaced atomically (`store::meta_file`: temporary file, fdatasync, rename, directory
//! fsync) and carry a checksum.
//!
//! Kept apart from the server's `consumers/` directory: the server's files hold its wire
//! configuration, which this layer does not know.
//!
//! Recovery rule (DESIGN §4): a state that cannot be read is reported and the consumer
//! resumes from its configuration with an empty state (duplicates, never loss); a
//! configuration that cannot be read is an error and its files stay on disk.

use std::path::{Path, PathBuf};

use super::consumer_config::ConsumerConfig;
use crate::consumer::ConsumerState;
use crate::store::{self, meta_file, Disk};
use crate::stream::Error;

const CONSUMERS_DIR: &str = "engine_consumers";
const CONFIG_SUFFIX: &str = ".json";
const STATE_SUFFIX: &str = ".state";

fn consumers_dir(stream_dir: &Path) -> PathBuf {
    stream_dir.join(CONSUMERS_DIR)
}

fn config_path(stream_dir: &Path, name: &str) -> PathBuf {
    consumers_dir(stream_dir).join(format!("{name}{CONFIG_SUFFIX}"))
}

fn state_path(stream_dir: &Path, name: &str) -> PathBuf {
    consumers_dir(stream_dir).join(format!("{name}{STATE_SUFFIX}"))
}

/// Writes the configuration durably, creating the directory on first use.
pub(super) async fn write_config(disk: &dyn Disk, stream_dir: &Path, config: &ConsumerConfig) -> Result<(), Error> {
    let dir = consumers_dir(stream_dir);
    disk.create_dir_all(&dir).await.map_err(|e| store::Error::io("create_dir", &dir, &e))?;
    let body = serde_json::to_vec(config).expect("a consumer config serializes");
    meta_file::write_atomic(disk, &config_path(stream_dir, &config.name), &body, "mid_meta_write").await?;
    Ok(())
}

/// Writes the state durably (on stable storage when this returns). The caller keeps two
/// writes of one consumer's state from overlapping.
pub(super) async fn write_state(
    disk: &dyn Disk,
    stream_dir: &Path,
    name: &str,
    state: &ConsumerState,
) -> Result<(), Error> {
    let path = state_path(stream_dir, name);
    let durability = meta_file::Durability::Synced;
    meta_file::write_replace(disk, &path, &state.encode(), durability, "mid_consumer_state_write").await?;
    Ok(())
}

/// The saved configuration of consumer `name`, `None` when there is none.
pub(super) async fn read_config(
    disk: &dyn Disk,
    stream_dir: &Path,
    name: &str,
) -> Result<Option<ConsumerConfig>, Error> {
    let path = config_path(stream_dir, name);
    let Some(body) = meta_file::read(disk, &path).await? else { return Ok(None) };
    let config = serde_json::from_slice(&body).map_err(|error| {
        let unreadable = std::io::Error::new(std::io::ErrorKind::InvalidData, error.to_string());
        store::Error::io("read consumer config", &path, &unreadable)
    })?;
    Ok(Some(config))
}

/// The saved state of consumer `name`; empty when missing or damaged (reported).
pub(super) async fn read_state(disk: &dyn Disk, stream_dir: &Path, name: &str) -> ConsumerState {
    let path = state_path(stream_dir, name);
    let decoded = match meta_file::read(disk, &path).await {
        Ok(Some(body)) => ConsumerState::decode(&body).map_err(|error| format!("{error:?}")),
        Ok(None) => return ConsumerState::default(),
        Err(error) => Err(error.to_string()),
    };
    decoded.unwrap_or_else(|error| {
        let path = path.display();
        tracing::error!(%path, %error, "damaged consumer state; resuming from its config (may redeliver)");
        ConsumerState::default()
    })
}

/// Removes a deleted consumer's files (missing ones are fine).
pub(super) async fn remove(disk: &dyn Disk, stream_dir: &Path, name: &str) -> Result<(), Error> {
    for path in [config_path(stream_dir, name), state_path(stream_dir, name)] {
        match disk.remove_file(&path).await {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(store::Error::io("remove", &path, &error).into()),
        }
    }
    let dir = consumers_dir(stream_dir);
    disk.fsync_dir(&dir).await.map_err(|e| store::Error::io("fsync_dir", &dir, &e))?;
    Ok(())
}
