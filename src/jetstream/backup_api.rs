//! `$JS.API.STREAM.SNAPSHOT.<stream>` and `$JS.API.STREAM.RESTORE.<stream>`: request and
//! response bodies, and the subjects of a transfer, as nats-server 2.15 uses them
//! (server/jetstream_api.go `JSApiStreamSnapshotRequest`, `JSApiStreamSnapshotResponse`,
//! `JSApiStreamRestoreRequest`, `JSApiStreamRestoreResponse`; recorded from 2.15.1).
//!
//! A snapshot is sent to `deliver_subject` in chunks, each with a reply subject under
//! `$JS.SNAPSHOT.ACK.<stream>.` that the client answers to open room in the window; an
//! empty message ends it (`NATS/1.0 204` after a full chunk, `408` on a stalled client).

use serde::{Deserialize, Serialize};

use super::stream_config::StreamConfig;
use super::stream_info::StreamState;

/// Chunk size when the request gives none (nats-server: 128 KiB, clamped to 1 KiB..1 MiB).
pub const CHUNK_BYTES_DEFAULT: usize = 128 << 10;
pub const CHUNK_BYTES_MIN: usize = 1 << 10;
pub const CHUNK_BYTES_MAX: usize = 1 << 20;
/// Window when the request gives none (8 MiB, clamped to 1 KiB..32 MiB, at least a chunk).
pub const WINDOW_BYTES_DEFAULT: usize = 8 << 20;
pub const WINDOW_BYTES_MIN: usize = 1 << 10;
pub const WINDOW_BYTES_MAX: usize = 32 << 20;

/// The prefix of a snapshot chunk's reply subject.
pub const SNAPSHOT_ACK_PREFIX: &str = "$JS.SNAPSHOT.ACK.";
/// The prefix of a restore's upload subject.
pub const RESTORE_PREFIX: &str = "$JS.SNAPSHOT.RESTORE.";

/// The snapshot request.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct SnapshotRequest {
    pub deliver_subject: String,
    pub no_consumers: bool,
    pub chunk_size: i64,
    pub window_size: i64,
    /// Ignored by 2.15 (its V2 snapshot checks the store regardless); accepted.
    pub jsck: bool,
}

impl SnapshotRequest {
    /// The chunk size in effect.
    pub fn chunk_bytes(&self) -> usize {
        match self.chunk_size {
            size if size <= 0 => CHUNK_BYTES_DEFAULT,
            size => (size as usize).clamp(CHUNK_BYTES_MIN, CHUNK_BYTES_MAX),
        }
    }

    /// How many full chunks may await their ack.
    pub fn chunks_in_flight_max(&self) -> usize {
        let window = match self.window_size {
            size if size <= 0 => WINDOW_BYTES_DEFAULT,
            size => (size as usize).clamp(WINDOW_BYTES_MIN, WINDOW_BYTES_MAX),
        };
        (window.max(self.chunk_bytes()) / self.chunk_bytes()).max(1)
    }
}

/// The snapshot response: the stream's config and state when the snapshot began.
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotBody {
    pub config: StreamConfig,
    pub state: StreamState,
}

/// The restore request: the config to create the stream with, and the backup's state
/// (not read: the archive's own `state.json` is what a V2 restore goes by).
#[derive(Debug, Clone, Deserialize)]
pub struct RestoreRequest {
    pub config: StreamConfig,
    #[serde(default)]
    pub state: Option<serde_json::Value>,
}

/// The restore response: where to send the chunks.
#[derive(Debug, Clone, Serialize)]
pub struct RestoreBody {
    pub deliver_subject: String,
}

/// The stream a snapshot ack subject or restore upload subject names:
/// `<prefix><stream>.<id>...`.
pub fn transfer_stream<'a>(subject: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = subject.strip_prefix(prefix)?;
    let (stream, id) = rest.split_once('.')?;
    (!stream.is_empty() && !id.is_empty()).then_some(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_clamped_as_nats_server_clamps_them() {
        let request = |chunk_size, window_size| SnapshotRequest { chunk_size, window_size, ..Default::default() };
        assert_eq!(request(0, 0).chunk_bytes(), 128 << 10);
        assert_eq!(request(0, 0).chunks_in_flight_max(), 64);
        assert_eq!(request(10, 0).chunk_bytes(), 1024);
        assert_eq!(request(1 << 30, 1).chunks_in_flight_max(), 1);
        assert_eq!(request(1024, 4096).chunks_in_flight_max(), 4);
    }

    #[test]
    fn transfer_subjects_name_their_stream() {
        assert_eq!(transfer_stream("$JS.SNAPSHOT.ACK.ORDERS.abc.1024.1", SNAPSHOT_ACK_PREFIX), Some("ORDERS"));
        assert_eq!(transfer_stream("$JS.SNAPSHOT.RESTORE.ORDERS.abc", RESTORE_PREFIX), Some("ORDERS"));
        assert_eq!(transfer_stream("$JS.SNAPSHOT.ACK.ORDERS", SNAPSHOT_ACK_PREFIX), None);
    }
}
