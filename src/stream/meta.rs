//! The stream's metadata file: its configuration, identity, placement, and the sequence
//! floor that keeps sequences from going backwards after a purge and restart.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::config::StreamConfig;
use crate::shard::ShardId;
use crate::store::{meta_file, Disk, Error};

/// File name of the metadata inside a stream's directory.
pub const META_FILE_NAME: &str = "meta.json";
/// File name of the checkpoint inside a stream's directory.
pub const CHECKPOINT_FILE_NAME: &str = "checkpoint.bin";

/// What `meta.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamMeta {
    pub config: StreamConfig,
    /// Written into every record; a fresh stream with the same name gets a new id.
    pub stream_id: u64,
    /// The shard that owns the stream (decided by the caller's placement policy).
    pub placement: ShardId,
    pub created_ns: i64,
    /// `last_seq` is never below this after a restart.
    pub last_seq_floor: u64,
    /// What the embedding layer keeps about the stream beside `config` (the server: the
    /// `$JS.API` config as the client gave it). Opaque here; it lives in this file so one
    /// atomic, checksummed write covers all of a stream's configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extension: Option<serde_json::Value>,
}

impl StreamMeta {
    pub async fn write(&self, disk: &dyn Disk, dir: &Path) -> Result<(), Error> {
        let body = serde_json::to_vec_pretty(self).expect("metadata serializes");
        meta_file::write_atomic(disk, &dir.join(META_FILE_NAME), &body, "mid_meta_write").await
    }

    pub async fn read(disk: &dyn Disk, dir: &Path) -> Result<Option<StreamMeta>, Error> {
        let path = dir.join(META_FILE_NAME);
        let Some(body) = meta_file::read(disk, &path).await? else {
            return Ok(None);
        };
        serde_json::from_slice(&body).map(Some).map_err(|_| Error::BadMetadata { path, reason: "invalid JSON" })
    }
}

/// A stream id from its name and creation time (FNV-1a), never zero.
pub fn stream_id_for(name: &str, created_ns: i64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes().chain(created_ns.to_le_bytes()) {
        hash = (hash ^ byte as u64).wrapping_mul(0x0100_0000_01b3);
    }
    hash.max(1)
}
