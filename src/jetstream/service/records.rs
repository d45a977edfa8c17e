//! The wire config of each stream as the client gave it (normalised), so info replies echo
//! it exactly after a restart. It is kept as the extension of the stream's own metadata
//! file (`stream::StreamMeta::extension`): one atomic, checksummed write through the
//! `Disk` covers the engine's config and this one, and a damaged file fails the stream's
//! open (reported, left on disk) instead of being replaced by defaults.
//!
//! Stores written before that kept it apart, as `jetstream.json`: [`migrate`] moves it in.

use serde::{Deserialize, Serialize};

use crate::jetstream::stream_config::StreamConfig as WireConfig;
use crate::stream::Stream;

/// The file older stores kept the record in, beside the stream's metadata.
pub const LEGACY_RECORD_FILE: &str = "jetstream.json";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApiRecord {
    pub config: WireConfig,
    pub created_ns: i64,
}

impl ApiRecord {
    /// The record as the stream's metadata extension.
    pub fn to_extension(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a stream record serializes")
    }
}

/// Why a stream's record could not be read; the stream is then not served.
#[derive(Debug)]
pub enum RecordError {
    /// The metadata's extension (checksummed, so written so) does not decode.
    Undecodable(serde_json::Error),
    /// An old store's `jetstream.json` is unreadable or does not decode.
    LegacyUnreadable(String),
    /// Moving an old store's record into the metadata failed.
    Migration(crate::stream::Error),
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Undecodable(error) => write!(f, "stream config in meta.json does not decode: {error}"),
            RecordError::LegacyUnreadable(error) => write!(f, "unreadable {LEGACY_RECORD_FILE}: {error}"),
            RecordError::Migration(error) => write!(f, "could not move {LEGACY_RECORD_FILE} into meta.json: {error}"),
        }
    }
}

/// The stream's record: from its metadata, or migrated there from an old store's
/// `jetstream.json` (removed once the metadata holding it is durable). `Ok(None)` when it
/// has none (a stream created through the embedded `Engine`).
pub async fn load(stream: &Stream) -> Result<Option<ApiRecord>, RecordError> {
    if let Some(extension) = stream.extension() {
        return serde_json::from_value(extension).map(Some).map_err(RecordError::Undecodable);
    }
    let Some(bytes) = stream.read_legacy_file(LEGACY_RECORD_FILE).await.map_err(RecordError::LegacyUnreadable)? else {
        return Ok(None);
    };
    let record: ApiRecord =
        serde_json::from_slice(&bytes).map_err(|error| RecordError::LegacyUnreadable(error.to_string()))?;
    stream.set_extension(record.to_extension()).await.map_err(RecordError::Migration)?;
    if let Err(error) = stream.remove_legacy_file(LEGACY_RECORD_FILE).await {
        // Harmless: the metadata's copy is the one read from now on.
        tracing::warn!(dir = %stream.dir().display(), %error, "could not remove migrated {LEGACY_RECORD_FILE}");
    }
    tracing::info!(dir = %stream.dir().display(), "moved {LEGACY_RECORD_FILE} into meta.json");
    Ok(Some(record))
}
