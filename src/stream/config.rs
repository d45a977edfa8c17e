//! [`StreamConfig`]: what a stream stores and how long, validated field by field.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::stream::REMOVAL_RECORDS_BYTES_MAX;
use super::subject_match::is_valid_pattern;
use crate::limits::{
    DIRECT_IO_ALIGNMENT, DUPLICATE_WINDOW_NANOS_DEFAULT, RECORD_BYTES_MAX, SEGMENT_SIZE_BYTES_DEFAULT,
    SEGMENT_SIZE_BYTES_MIN, STREAM_NAME_BYTES_MAX, SUBJECT_BYTES_MAX,
};
use crate::store::record::RECORD_HEADER_BYTES;
use crate::store::SyncPolicy;

/// Where messages live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum StorageKind {
    #[default]
    File,
    Memory,
}

/// What happens when a limit is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum DiscardPolicy {
    /// Remove the oldest messages to make room.
    #[default]
    Old,
    /// Refuse the new message.
    New,
}

/// A stream's configuration. `None` limits are unlimited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamConfig {
    pub name: String,
    /// Subject patterns captured; empty means just the stream's name.
    pub subjects: Vec<String>,
    pub storage: StorageKind,
    pub max_msgs: Option<u64>,
    pub max_bytes: Option<u64>,
    pub max_age: Option<Duration>,
    pub max_msgs_per_subject: Option<u64>,
    /// Largest headers + payload accepted.
    pub max_msg_size: Option<u32>,
    pub discard: DiscardPolicy,
    /// Window for `Nats-Msg-Id` deduplication; zero disables it.
    pub duplicate_window: Duration,
    pub sync: SyncPolicy,
    pub segment_size_bytes: u64,
    /// With `discard: New`, refuse a message whose subject is at `max_msgs_per_subject`
    /// (otherwise the subject's oldest message makes room, as nats-server does).
    #[serde(default)]
    pub discard_new_per_subject: bool,
    /// Honour `Nats-Rollup: sub|all` (a rollup replaces earlier messages).
    #[serde(default)]
    pub allow_rollup: bool,
    /// Honour `Nats-TTL` (per-message expiry); refused when off.
    #[serde(default)]
    pub allow_msg_ttl: bool,
    /// Subject delete markers (nats-server 2.11): when `max_age` or a `Nats-TTL` removes
    /// the last message of a subject, a marker message with this TTL takes its place
    /// (see `stream/markers.rs`). Whole seconds, at least one.
    #[serde(default)]
    pub subject_delete_marker_ttl: Option<Duration>,
    /// Atomic batch publish (`Nats-Batch-Id`, ADR-50): see `stream/batch.rs`.
    #[serde(default)]
    pub allow_atomic: bool,
    /// A counter stream (ADR-49): every client message is a `Nats-Incr` increment and is
    /// stored as the subject's new total (see `stream/counter.rs`).
    #[serde(default)]
    pub allow_msg_counter: bool,
    /// Message schedules (ADR-51, `Nats-Schedule`): see `stream/schedule.rs`. Whoever runs
    /// the stream fires them with `Stream::fire_schedules` (the server's maintenance pass
    /// does; `Engine::tick` does not).
    #[serde(default)]
    pub allow_msg_schedules: bool,
    /// Sequence of the first message of a new stream (0 and 1: start at 1). Read only at
    /// creation, as nats-server does; changing it later changes nothing.
    #[serde(default)]
    pub first_seq: u64,
    /// Filled only by a mirror or sources: captures no subject at all, not even its
    /// name (`subjects` is then empty). Messages come in through `Stream::append` with a mirror or source origin.
    #[serde(default)]
    pub sourced_only: bool,
    /// Serves gets by sequence (direct get, KV get) from the shard's record cache: each
    /// small message is cached as it is appended and as it is read (`record_cache.rs`).
    #[serde(default)]
    pub cache_reads: bool,
}

/// A rejected configuration: which field, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub field: &'static str,
    pub reason: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid stream config field `{}`: {}", self.field, self.reason)
    }
}

impl std::error::Error for ConfigError {}

fn reject(field: &'static str, reason: impl Into<String>) -> Result<(), ConfigError> {
    Err(ConfigError { field, reason: reason.into() })
}

impl StreamConfig {
    /// A file-backed stream with nats-server's defaults.
    pub fn new(name: impl Into<String>, subjects: &[&str]) -> StreamConfig {
        StreamConfig {
            name: name.into(),
            subjects: subjects.iter().map(|s| s.to_string()).collect(),
            storage: StorageKind::File,
            max_msgs: None,
            max_bytes: None,
            max_age: None,
            max_msgs_per_subject: None,
            max_msg_size: None,
            discard: DiscardPolicy::Old,
            duplicate_window: Duration::from_nanos(DUPLICATE_WINDOW_NANOS_DEFAULT),
            sync: SyncPolicy::Always,
            segment_size_bytes: SEGMENT_SIZE_BYTES_DEFAULT,
            discard_new_per_subject: false,
            allow_rollup: false,
            allow_msg_ttl: false,
            subject_delete_marker_ttl: None,
            allow_atomic: false,
            allow_msg_counter: false,
            allow_msg_schedules: false,
            first_seq: 0,
            sourced_only: false,
            cache_reads: false,
        }
    }

    /// The subject delete marker TTL in whole seconds (0: no markers).
    pub fn marker_ttl_seconds(&self) -> u64 {
        self.subject_delete_marker_ttl.map_or(0, |ttl| ttl.as_secs())
    }

    /// The captured subject patterns (the name itself when none are configured, nothing
    /// for a stream filled only by its mirror or sources).
    pub fn capture_patterns(&self) -> Vec<String> {
        if self.sourced_only {
            return Vec::new();
        }
        if self.subjects.is_empty() {
            return vec![self.name.clone()];
        }
        self.subjects.clone()
    }

    /// Largest headers + payload a message on a subject of `subject_len` bytes may carry:
    /// the configured `max_msg_size`, and always what fits in one record and one segment.
    pub fn message_bytes_max(&self, subject_len: usize) -> usize {
        let overhead = RECORD_HEADER_BYTES + subject_len + REMOVAL_RECORDS_BYTES_MAX;
        let fits = (self.segment_size_bytes as usize).min(RECORD_BYTES_MAX).saturating_sub(overhead);
        self.max_msg_size.map_or(fits, |max| (max as usize).min(fits))
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate_name(&self.name)?;
        for subject in &self.subjects {
            if !is_valid_pattern(subject) || subject.len() > SUBJECT_BYTES_MAX {
                return reject("subjects", format!("invalid subject pattern {subject:?}"));
            }
        }
        let segment = self.segment_size_bytes;
        if segment < SEGMENT_SIZE_BYTES_MIN || segment % DIRECT_IO_ALIGNMENT as u64 != 0 {
            return reject(
                "segment_size_bytes",
                format!("must be ≥ {SEGMENT_SIZE_BYTES_MIN} and a multiple of {DIRECT_IO_ALIGNMENT}"),
            );
        }
        if self.max_msg_size.is_some_and(|max| max as usize > self.message_bytes_max(0)) {
            return reject(
                "max_msg_size",
                format!("must be at most {} bytes for this segment size", self.message_bytes_max(0)),
            );
        }
        if self.max_msgs == Some(0) || self.max_bytes == Some(0) || self.max_msgs_per_subject == Some(0) {
            return reject("max_msgs", "zero limits are not allowed; use None for unlimited");
        }
        if let (Some(age), window) = (self.max_age, self.duplicate_window) {
            if window > age {
                return reject("duplicate_window", "must not exceed max_age");
            }
        }
        if self.subject_delete_marker_ttl.is_some_and(|ttl| ttl.as_secs() == 0) {
            return reject("subject_delete_marker_ttl", "must be at least 1 second");
        }
        if self.subject_delete_marker_ttl.is_some() && !self.allow_msg_ttl {
            return reject("subject_delete_marker_ttl", "needs allow_msg_ttl");
        }
        if let SyncPolicy::Interval(period) = self.sync {
            if period.is_zero() {
                return reject("sync", "interval must be positive");
            }
        }
        Ok(())
    }

    /// Checks that `self` may replace `old`.
    pub fn validate_update(&self, old: &StreamConfig) -> Result<(), ConfigError> {
        self.validate()?;
        if self.name != old.name {
            return reject("name", "cannot change a stream's name");
        }
        if self.storage != old.storage {
            return reject("storage", "cannot change storage type");
        }
        Ok(())
    }
}

/// Stream names: 1-255 bytes, no `.`, `*`, `>`, `/`, `\` or whitespace.
pub fn validate_name(name: &str) -> Result<(), ConfigError> {
    if name.is_empty() {
        return reject("name", "must not be empty");
    }
    if name.len() > STREAM_NAME_BYTES_MAX {
        return reject("name", format!("longer than {STREAM_NAME_BYTES_MAX} bytes"));
    }
    if let Some(bad) =
        name.chars().find(|c| matches!(c, '.' | '*' | '>' | '/' | '\\') || c.is_whitespace() || c.is_control())
    {
        return reject("name", format!("must not contain {bad:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_names_name_the_field() {
        for name in ["", "a.b", "a*", "a>", "a/b", "a\\b", "a b", &"x".repeat(256)] {
            let error = StreamConfig::new(name, &["x"]).validate().unwrap_err();
            assert_eq!(error.field, "name", "{name:?}");
        }
        assert!(StreamConfig::new("ORDERS", &["orders.>"]).validate().is_ok());
    }

    #[test]
    fn bad_subjects_and_limits_name_their_field() {
        assert_eq!(StreamConfig::new("S", &["a.>.b"]).validate().unwrap_err().field, "subjects");
        let mut config = StreamConfig::new("S", &["a"]);
        config.segment_size_bytes = 1000;
        assert_eq!(config.validate().unwrap_err().field, "segment_size_bytes");
        let mut config = StreamConfig::new("S", &["a"]);
        config.max_age = Some(Duration::from_secs(1));
        assert_eq!(config.validate().unwrap_err().field, "duplicate_window");
    }
}
