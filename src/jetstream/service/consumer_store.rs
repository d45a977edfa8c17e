//! Durable consumers on disk, beside their stream: `<stream dir>/consumers/<name>.config.json`
//! (the normalised wire config and creation time) and `<name>.state`
//! (`ConsumerState::encode`), written and read with the engine's [`ConsumerFiles`].
//!
//! Recovery rule (DESIGN §4): a consumer is never dropped because its files look damaged.
//! A config that cannot be read is reported and the consumer stays on disk, unloaded; a
//! state that cannot be read is reported and the consumer restarts from its config with
//! an empty state (it redelivers: duplicates, never loss).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::consumer::ConsumerState;
use crate::engine::{ConsumerFiles, Disk};
use crate::jetstream::consumer_config::ConsumerConfig;
use crate::stream::Error;

/// The server's consumers' files: apart from the embedded engine's, whose configuration
/// is not the wire's. Only the shard's consumer pump writes a state, so two writes of one
/// consumer's state never overlap.
pub const FILES: ConsumerFiles = ConsumerFiles::new("consumers", ".config.json");

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

/// Writes the config durably (creating the directory on first use).
pub async fn write_config(disk: &dyn Disk, stream_dir: &Path, record: &ConsumerRecord) -> Result<(), Error> {
    FILES.write_config(disk, stream_dir, &record.name, record).await
}

/// Removes a deleted consumer's files (missing ones are fine; a failure is logged: the
/// consumer is gone for clients either way).
pub async fn remove(disk: &dyn Disk, stream_dir: &Path, name: &str) {
    if let Err(error) = FILES.remove(disk, stream_dir, name).await {
        tracing::warn!(%error, "could not remove consumer files");
    }
}

/// Every durable consumer saved under `stream_dir`, in name order.
pub async fn load_all(disk: &dyn Disk, stream_dir: &Path) -> Vec<StoredConsumer> {
    let mut names = match FILES.names(disk, stream_dir).await {
        Ok(names) => names,
        Err(error) => {
            tracing::error!(%error, "cannot list consumers; none loaded");
            return Vec::new();
        }
    };
    names.sort();
    let mut found = Vec::new();
    for name in names {
        let record = match FILES.read_config::<ConsumerRecord>(disk, stream_dir, &name).await {
            Ok(Some(record)) => record,
            Ok(None) => continue,
            Err(error) => {
                tracing::error!(%error, "unreadable consumer config; consumer left on disk, not loaded");
                continue;
            }
        };
        let state = FILES.read_state(disk, stream_dir, &name).await.unwrap_or_else(|error| {
            tracing::error!(%error, "damaged consumer state; restarting it from its config (messages may be redelivered)");
            None
        });
        found.push(StoredConsumer { record, state });
    }
    found
}
