//! The wire config of each stream as the client gave it (normalised), kept beside the
//! stream's own files as `jetstream.json` so info replies echo it exactly after a restart.
//! Written atomically: temporary file, fsync, rename, fsync of the directory.

use std::fs;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::jetstream::stream_config::StreamConfig as WireConfig;

pub const RECORD_FILE: &str = "jetstream.json";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApiRecord {
    pub config: WireConfig,
    pub created_ns: i64,
}

pub fn write(dir: &Path, record: &ApiRecord) -> std::io::Result<()> {
    let temporary = dir.join(format!("{RECORD_FILE}.tmp"));
    let bytes = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    let mut file = fs::File::create(&temporary)?;
    file.write_all(&bytes)?;
    file.sync_data()?;
    drop(file);
    fs::rename(&temporary, dir.join(RECORD_FILE))?;
    fs::File::open(dir)?.sync_all()
}

/// The saved record, or `None` when missing or unreadable (the caller rebuilds it from
/// the engine's config: a stream is never lost because this file is damaged).
pub fn read(dir: &Path) -> Option<ApiRecord> {
    let bytes = fs::read(dir.join(RECORD_FILE)).ok()?;
    match serde_json::from_slice(&bytes) {
        Ok(record) => Some(record),
        Err(error) => {
            tracing::warn!(dir = %dir.display(), %error, "unreadable {RECORD_FILE}; rebuilding from the stream's own config");
            None
        }
    }
}
