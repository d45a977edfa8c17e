//! Durable consumers on disk, beside their stream: `<stream dir>/consumers/<name>.config.json`
//! (the normalised wire config and creation time) and `<name>.state`
//! (`ConsumerState::encode`). Both are written atomically through the store's
//! `meta_file` (temporary file, fdatasync, rename, directory fsync) and carry a checksum.
//!
//! Recovery rule (DESIGN §4): a consumer is never dropped because its files look damaged.
//! A config that cannot be read is reported and the consumer stays on disk, unloaded; a
//! state that cannot be read is reported and the consumer restarts from its config with
//! an empty state (it redelivers: duplicates, never loss).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::consumer::ConsumerState;
use crate::jetstream::consumer_config::ConsumerConfig;
use crate::store::{meta_file, Disk};

pub const CONSUMERS_DIR: &str = "consumers";
const CONFIG_SUFFIX: &str = ".config.json";
const STATE_SUFFIX: &str = ".state";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConsumerRecord {
    pub name: String,
    pub config: ConsumerConfig,
    pub created_ns: i64,
}

/// A durable consumer as found on disk at start.
pub struct StoredConsumer {
    pub record: ConsumerRecord,
    /// `None` when missing or damaged (reported already).
    pub state: Option<ConsumerState>,
}

pub fn consumers_dir(stream_dir: &Path) -> PathBuf {
    stream_dir.join(CONSUMERS_DIR)
}

fn config_path(stream_dir: &Path, name: &str) -> PathBuf {
    consumers_dir(stream_dir).join(format!("{name}{CONFIG_SUFFIX}"))
}

fn state_path(stream_dir: &Path, name: &str) -> PathBuf {
    consumers_dir(stream_dir).join(format!("{name}{STATE_SUFFIX}"))
}

/// Writes the config durably (creating the directory on first use).
pub async fn write_config(
    disk: &dyn Disk,
    stream_dir: &Path,
    record: &ConsumerRecord,
) -> Result<(), crate::store::Error> {
    let dir = consumers_dir(stream_dir);
    disk.create_dir_all(&dir).await.map_err(|e| crate::store::Error::io("create_dir", &dir, &e))?;
    let body = serde_json::to_vec(record).expect("consumer record serializes");
    meta_file::write_atomic(disk, &config_path(stream_dir, &record.name), &body, "mid_meta_write").await
}

/// Writes the state durably. Only the shard's consumer pump calls this, so two writes of
/// one consumer's state never overlap.
pub async fn write_state(
    disk: &dyn Disk,
    stream_dir: &Path,
    name: &str,
    state: &ConsumerState,
    durability: meta_file::Durability,
) -> Result<(), crate::store::Error> {
    meta_file::write_replace(
        disk,
        &state_path(stream_dir, name),
        &state.encode(),
        durability,
        "mid_consumer_state_write",
    )
    .await
}

/// Removes a deleted consumer's files (missing ones are fine).
pub async fn remove(disk: &dyn Disk, stream_dir: &Path, name: &str) {
    for path in [config_path(stream_dir, name), state_path(stream_dir, name)] {
        match disk.remove_file(&path).await {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => tracing::warn!(path = %path.display(), %error, "could not remove consumer file"),
        }
    }
    let dir = consumers_dir(stream_dir);
    if let Err(error) = disk.fsync_dir(&dir).await {
        tracing::warn!(dir = %dir.display(), %error, "could not sync consumer directory");
    }
}

/// Every durable consumer saved under `stream_dir`, in name order.
pub async fn load_all(disk: &dyn Disk, stream_dir: &Path) -> Vec<StoredConsumer> {
    let dir = consumers_dir(stream_dir);
    let names = match disk.list_dir(&dir).await {
        Ok(names) => names,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(error) => {
            tracing::error!(dir = %dir.display(), %error, "cannot list consumers; none loaded");
            return Vec::new();
        }
    };
    let mut found = Vec::new();
    for file in names {
        let Some(name) = file.strip_suffix(CONFIG_SUFFIX) else { continue };
        let Some(record) = read_config(disk, stream_dir, name).await else { continue };
        let state = read_state(disk, stream_dir, name).await;
        found.push(StoredConsumer { record, state });
    }
    found
}

async fn read_config(disk: &dyn Disk, stream_dir: &Path, name: &str) -> Option<ConsumerRecord> {
    let path = config_path(stream_dir, name);
    let parsed = match meta_file::read(disk, &path).await {
        Ok(Some(body)) => serde_json::from_slice::<ConsumerRecord>(&body).map_err(|e| e.to_string()),
        Ok(None) => return None,
        Err(error) => Err(error.to_string()),
    };
    match parsed {
        Ok(record) => Some(record),
        Err(error) => {
            tracing::error!(path = %path.display(), %error, "unreadable consumer config; consumer left on disk, not loaded");
            None
        }
    }
}

async fn read_state(disk: &dyn Disk, stream_dir: &Path, name: &str) -> Option<ConsumerState> {
    let path = state_path(stream_dir, name);
    let decoded = match meta_file::read(disk, &path).await {
        Ok(Some(body)) => ConsumerState::decode(&body).map_err(|e| format!("{e:?}")),
        Ok(None) => return None,
        Err(error) => Err(error.to_string()),
    };
    match decoded {
        Ok(state) => Some(state),
        Err(error) => {
            tracing::error!(path = %path.display(), %error, "damaged consumer state; restarting it from its config (messages may be redelivered)");
            None
        }
    }
}
