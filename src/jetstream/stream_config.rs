//! `StreamConfig` as nats-server 2.15 reads and echoes it, and its normalisation.
//!
//! Field order, names and omit-empty rules follow Go's `StreamConfig` (server/stream.go)
//! and were checked against recorded replies: Go writes `retention`, the limits,
//! `discard`, `storage`, `num_replicas`, `compression`, the `allow_*`/`deny_*` flags and
//! `consumer_limits` even when zero/false; it omits `description`, `subjects`, `no_ack`,
//! `duplicate_window`, `first_seq`, `subject_delete_marker_ttl`, `metadata`, the 2.12+
//! flags and the pass-through objects when empty.
//!
//! `placement`, `mirror`, `sources`, `subject_transform` and `republish` are typed (see
//! `stream_sources`) and echoed; `subject_transform` and `republish` are checked and
//! applied (`stream_transforms`); `mirror` and `sources` are checked by `source_checks`.
//!
//! Decoding is strict like nats-server's: an unknown key is 10025
//! `invalid JSON: json: unknown field "x"` (recorded).

use super::defaults::{
    DESCRIPTION_BYTES_MAX, DUPLICATE_WINDOW_DEFAULT, METADATA_BYTES_MAX, NAME_BYTES_MAX, STREAM_DURATION_MIN,
};
use super::errors::ApiError;
use super::metadata::{self, Metadata};
use super::policies::{Compression, DiscardPolicy, PersistMode, RetentionPolicy, StorageType};
use super::request::{decode_config, parse_body};
use super::stream_sources::{Placement, RePublish, StreamSource, SubjectTransform};
use serde::{Deserialize, Serialize};

/// A stream's configuration. Durations are nanoseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamConfig {
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subjects: Vec<String>,
    pub retention: RetentionPolicy,
    pub max_consumers: i64,
    pub max_msgs: i64,
    pub max_bytes: i64,
    pub max_age: i64,
    pub max_msgs_per_subject: i64,
    #[serde(skip_serializing_if = "is_zero")]
    pub max_msg_size: i64,
    pub discard: DiscardPolicy,
    pub storage: StorageType,
    pub num_replicas: i64,
    #[serde(skip_serializing_if = "is_false")]
    pub no_ack: bool,
    #[serde(skip_serializing_if = "is_zero")]
    pub duplicate_window: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mirror: Option<StreamSource>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<StreamSource>,
    pub compression: Compression,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub first_seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject_transform: Option<SubjectTransform>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub republish: Option<RePublish>,
    pub allow_direct: bool,
    pub mirror_direct: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub discard_new_per_subject: bool,
    pub sealed: bool,
    pub deny_delete: bool,
    pub deny_purge: bool,
    pub allow_rollup_hdrs: bool,
    /// Defaults for consumers of this stream; echoed as `{}` when unset.
    pub consumer_limits: StreamConsumerLimits,
    pub allow_msg_ttl: bool,
    #[serde(skip_serializing_if = "is_zero")]
    pub subject_delete_marker_ttl: i64,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_msg_counter: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_atomic: bool,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_msg_schedules: bool,
    #[serde(skip_serializing_if = "PersistMode::is_default")]
    pub persist_mode: PersistMode,
    #[serde(skip_serializing_if = "is_false")]
    pub allow_batched: bool,
    #[serde(skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

const SECOND_NANOS: i64 = 1_000_000_000;

/// `consumer_limits`: defaults a stream imposes on its consumers (both omit-empty).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StreamConsumerLimits {
    #[serde(skip_serializing_if = "is_zero")]
    pub inactive_threshold: i64,
    #[serde(skip_serializing_if = "is_zero")]
    pub max_ack_pending: i64,
}

/// Whether a config is being normalised for `STREAM.CREATE` or `STREAM.UPDATE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigPurpose {
    Create,
    Update,
}

impl StreamConfig {
    /// Decodes a `STREAM.CREATE.<stream>` / `STREAM.UPDATE.<stream>` body and normalises
    /// it, in nats-server's order: JSON (10025), name vs. subject (10056, also for an
    /// empty body), then `normalized`. Server-only metadata keys a client echoed back
    /// are dropped so that re-sending a stream's info config is idempotent.
    pub fn from_request(stream: &str, body: &[u8], purpose: ConfigPurpose) -> Result<StreamConfig, ApiError> {
        let mut config: StreamConfig = match parse_body(body)? {
            None => StreamConfig::default(),
            Some(mut value) => {
                // `pedantic` belongs to Go's `StreamConfigRequest`, not to the config.
                if let Some(members) = value.as_object_mut() {
                    members.remove("pedantic");
                }
                decode_config(value, body, &super::go_shapes::STREAM_CONFIG_SHAPE)?
            }
        };
        if config.name != stream {
            return Err(ApiError::stream_mismatch());
        }
        metadata::remove_server_info(&mut config.metadata);
        config.normalized(purpose)
    }

    /// Fills in defaults exactly as nats-server echoes them and applies the checks that
    /// need no other stream. Afterwards every limit is `-1` or positive, `num_replicas`
    /// is 1, `duplicate_window` is set (unless mirroring/sourcing) and `_nats.req.level`
    /// is recorded in `metadata`.
    ///
    /// Not checked here (the stream engine owns them, with `subject::collide`): subject
    /// validity and overlaps, see `overlap_within_config` and friends for the texts.
    pub fn normalized(mut self, purpose: ConfigPurpose) -> Result<StreamConfig, ApiError> {
        // nats-server's order of checks (checkStreamCfg): characters, name length,
        // description length, metadata size.
        if !has_valid_name_characters(&self.name) {
            return Err(ApiError::stream_invalid_config(
                "stream name is required and can not contain '.', '*', '>', '\\', '/'",
            ));
        }
        if self.name.len() > NAME_BYTES_MAX {
            let text = format!("stream name is too long, maximum allowed is {NAME_BYTES_MAX}");
            return Err(ApiError::stream_invalid_config(&text));
        }
        if self.description.len() > DESCRIPTION_BYTES_MAX {
            let text = format!("stream description is too long, maximum allowed is {DESCRIPTION_BYTES_MAX}");
            return Err(ApiError::stream_invalid_config(&text));
        }
        if metadata::is_too_large(&self.metadata) {
            let text = format!("stream metadata exceeds maximum size of {METADATA_BYTES_MAX} bytes");
            return Err(ApiError::stream_invalid_config(&text));
        }
        self.num_replicas = match self.num_replicas {
            n if n < 0 => return Err(ApiError::replicas_count_cannot_be_negative()),
            0 | 1 => 1,
            // nats-server checks the persist mode before it finds it is not clustered.
            _ if self.persist_mode == PersistMode::Async && self.storage == StorageType::File => {
                return Err(ApiError::stream_invalid_config(
                    "async persist mode is not supported on replicated streams",
                ));
            }
            _ if self.persist_mode == PersistMode::Async => {
                return Err(ApiError::stream_invalid_config("async persist mode is only supported on file storage"));
            }
            _ => return Err(ApiError::stream_replicas_not_supported()),
        };
        if purpose == ConfigPurpose::Create && self.sealed {
            return Err(ApiError::stream_invalid_config("stream configuration for create can not be sealed"));
        }
        self.normalize_limits();
        self.normalize_durations()?;
        self.normalize_flags()?;
        super::source_checks::check(&self)?;
        if self.subjects.is_empty() && self.mirror.is_none() && self.sources.is_empty() {
            self.subjects.push(self.name.clone());
        }
        super::stream_transforms::normalize(&mut self)?;
        let level = self.required_api_level();
        metadata::set_required_level(&mut self.metadata, level);
        Ok(self)
    }

    /// The API level a server needs to honour this config (`_nats.req.level`).
    pub fn required_api_level(&self) -> u32 {
        if self.allow_batched {
            4
        } else if self.allow_msg_counter
            || self.allow_atomic
            || self.allow_msg_schedules
            || self.persist_mode == PersistMode::Async
        {
            2
        } else if self.allow_msg_ttl || self.subject_delete_marker_ttl > 0 {
            1
        } else {
            0
        }
    }

    fn normalize_limits(&mut self) {
        for limit in [
            &mut self.max_consumers,
            &mut self.max_msgs,
            &mut self.max_bytes,
            &mut self.max_msgs_per_subject,
            &mut self.max_msg_size,
        ] {
            if *limit == 0 || *limit < -1 {
                *limit = -1;
            }
        }
    }

    fn normalize_durations(&mut self) -> Result<(), ApiError> {
        if self.max_age < 0 {
            return Err(ApiError::stream_invalid_config("max age can not be negative"));
        }
        if self.max_age > 0 && self.max_age < STREAM_DURATION_MIN {
            return Err(ApiError::stream_invalid_config("max age needs to be >= 100ms"));
        }
        if self.duplicate_window < 0 {
            return Err(ApiError::stream_invalid_config("duplicates window can not be negative"));
        }
        if self.max_age != 0 && self.duplicate_window > self.max_age {
            return Err(ApiError::stream_invalid_config("duplicates window can not be larger then max age"));
        }
        if self.duplicate_window > 0 && self.duplicate_window < STREAM_DURATION_MIN {
            return Err(ApiError::stream_invalid_config("duplicates window needs to be >= 100ms"));
        }
        // Recorded: mirrors and sourcing streams echo no duplicate_window.
        if self.duplicate_window == 0 && self.mirror.is_none() && self.sources.is_empty() {
            self.duplicate_window = match self.max_age {
                0 => DUPLICATE_WINDOW_DEFAULT,
                age => age.min(DUPLICATE_WINDOW_DEFAULT),
            };
        }
        Ok(())
    }

    fn normalize_flags(&mut self) -> Result<(), ApiError> {
        self.check_counter()?;
        // As nats-server seals: nothing may leave (no age limit, deletes, purges or
        // roll-ups) and nothing new may push old messages out.
        if self.sealed {
            self.discard = DiscardPolicy::New;
            self.deny_delete = true;
            self.deny_purge = true;
            self.allow_rollup_hdrs = false;
            self.max_age = 0;
        }
        // Discarding per subject refuses a publish at the subject's own limit, so it
        // needs both the discard policy and that limit (nats-server's order of checks).
        if self.discard_new_per_subject && self.discard != DiscardPolicy::New {
            let text = "discard new per subject requires discard new policy to be set";
            return Err(ApiError::stream_invalid_config(text));
        }
        if self.discard_new_per_subject && self.max_msgs_per_subject <= 0 {
            let text = "discard new per subject requires max msgs per subject > 0";
            return Err(ApiError::stream_invalid_config(text));
        }
        // Delete markers are TTL'd rollups, so they switch both features on.
        if self.subject_delete_marker_ttl > 0 && self.subject_delete_marker_ttl < SECOND_NANOS {
            return Err(ApiError::stream_invalid_config("subject delete marker TTL must be at least 1 second"));
        }
        if self.subject_delete_marker_ttl < 0 {
            return Err(ApiError::stream_invalid_config("subject delete marker TTL must not be negative"));
        }
        if self.subject_delete_marker_ttl > 0 {
            self.allow_msg_ttl = true;
            self.allow_rollup_hdrs = true;
            self.deny_purge = false;
        }
        if self.allow_msg_schedules {
            self.allow_rollup_hdrs = true;
            self.deny_purge = false;
        }
        if self.deny_purge && self.allow_rollup_hdrs {
            return Err(ApiError::stream_invalid_config("roll-ups require the purge permission"));
        }
        if self.mirror_direct && self.mirror.is_none() {
            return Err(ApiError::stream_invalid_config("stream has no mirror but does have mirror direct"));
        }
        if self.discard == DiscardPolicy::New && self.allow_msg_schedules {
            return Err(ApiError::stream_invalid_config("message scheduling cannot use discard new"));
        }
        self.check_persist_mode()
    }

    /// `persist_mode: async` acknowledges before the disk sync: only a file stream has
    /// one to skip, and an atomic batch promises all or nothing, which an ack ahead of
    /// the sync cannot keep. nats-server's order and texts.
    fn check_persist_mode(&self) -> Result<(), ApiError> {
        if self.persist_mode != PersistMode::Async {
            return Ok(());
        }
        if self.storage != StorageType::File {
            return Err(ApiError::stream_invalid_config("async persist mode is only supported on file storage"));
        }
        if self.allow_atomic {
            return Err(ApiError::stream_invalid_config(
                "async persist mode is not supported with atomic batch publish",
            ));
        }
        Ok(())
    }
}

impl StreamConfig {
    /// What a counter stream may not be, in nats-server's order: its totals need every
    /// increment kept until a newer one of its subject replaces it. Checked before the
    /// delete marker TTL switches `allow_msg_ttl` on (nats-server accepts markers here).
    fn check_counter(&self) -> Result<(), ApiError> {
        if !self.allow_msg_counter {
            return Ok(());
        }
        let refusal = if self.discard == DiscardPolicy::New {
            "counter stream cannot use discard new"
        } else if self.allow_msg_ttl {
            "counter stream cannot use message TTLs"
        } else if self.retention != RetentionPolicy::Limits {
            "counter stream can only use limits retention"
        } else if self.allow_msg_schedules {
            "counter stream cannot use message schedules"
        } else {
            return Ok(());
        };
        Err(ApiError::stream_invalid_config(refusal))
    }
}

/// 10052 for an update that changes `persist_mode`.
pub fn update_changes_persist_mode() -> ApiError {
    ApiError::stream_invalid_config("stream configuration update can not change persist mode")
}

/// 10052 for an update that switches `allow_msg_counter` on or off.
pub fn update_changes_counter() -> ApiError {
    ApiError::stream_invalid_config("stream configuration update can not change message counter setting")
}

/// 10052 for two subjects of one config that overlap, e.g. `subject "f.*" overlaps with "f.>"`.
pub fn overlap_within_config(first: &str, second: &str) -> ApiError {
    ApiError::stream_invalid_config(format!("subject {first:?} overlaps with {second:?}"))
}

/// 10052 for a `>` subject without `no_ack`.
pub fn capture_all_requires_no_ack() -> ApiError {
    ApiError::stream_invalid_config("capturing all subjects requires no-ack to be true")
}

/// 10052 for subjects overlapping `$JS.API.>` without `no_ack`.
pub fn api_overlap_requires_no_ack() -> ApiError {
    ApiError::stream_invalid_config("subjects that overlap with jetstream api require no-ack to be true")
}

/// 10052 for an update that changes the storage type.
pub fn update_changes_storage() -> ApiError {
    ApiError::stream_invalid_config("stream configuration update can not change storage type")
}

/// Stream and consumer names: non-empty, at most 255 bytes, none of `. * > \ /`, no
/// whitespace or control characters.
pub fn is_valid_name(name: &str) -> bool {
    name.len() <= NAME_BYTES_MAX && has_valid_name_characters(name)
}

/// Non-empty, and none of `. * > \ /`, whitespace or control characters (any length).
fn has_valid_name_characters(name: &str) -> bool {
    !name.is_empty()
        && !name.chars().any(|c| matches!(c, '.' | '*' | '>' | '\\' | '/') || c.is_whitespace() || c.is_control())
}

pub(crate) fn is_zero(value: &i64) -> bool {
    *value == 0
}

pub(crate) fn is_zero_u64(value: &u64) -> bool {
    *value == 0
}

pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: &str) -> StreamConfig {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn defaults_are_filled_like_nats_server() {
        let normal = config(r#"{"name":"S"}"#).normalized(ConfigPurpose::Create).unwrap();
        assert_eq!(normal.subjects, vec!["S".to_string()]);
        assert_eq!((normal.max_msgs, normal.max_bytes, normal.max_consumers), (-1, -1, -1));
        assert_eq!((normal.max_msgs_per_subject, normal.max_msg_size, normal.num_replicas), (-1, -1, 1));
        assert_eq!(normal.duplicate_window, DUPLICATE_WINDOW_DEFAULT);
        assert_eq!(normal.metadata.get("_nats.req.level").map(String::as_str), Some("0"));
    }

    #[test]
    fn duplicate_window_is_capped_by_max_age() {
        let normal = config(r#"{"name":"S","max_age":30000000000}"#).normalized(ConfigPurpose::Create).unwrap();
        assert_eq!(normal.duplicate_window, 30_000_000_000);
        let error = config(r#"{"name":"S","max_age":1000000000,"duplicate_window":5000000000}"#)
            .normalized(ConfigPurpose::Create)
            .unwrap_err();
        assert_eq!(error.description, "duplicates window can not be larger then max age");
    }

    #[test]
    fn sealed_only_on_update_and_it_locks_the_stream() {
        let sealed = config(r#"{"name":"S","sealed":true}"#);
        assert_eq!(sealed.clone().normalized(ConfigPurpose::Create).unwrap_err().err_code, 10052);
        let normal = sealed.normalized(ConfigPurpose::Update).unwrap();
        assert!(normal.deny_delete && normal.deny_purge && normal.discard == DiscardPolicy::New);
        // An object store's stream allows roll-ups and may have an age limit; sealing it
        // turns both off rather than failing.
        let bucket = config(r#"{"name":"S","sealed":true,"allow_rollup_hdrs":true,"max_age":3600000000000}"#);
        let normal = bucket.normalized(ConfigPurpose::Update).unwrap();
        assert!(!normal.allow_rollup_hdrs && normal.max_age == 0);
    }

    #[test]
    fn delete_markers_imply_ttl_and_rollup() {
        let normal = config(r#"{"name":"S","subject_delete_marker_ttl":1000000000,"deny_purge":true}"#)
            .normalized(ConfigPurpose::Create)
            .unwrap();
        assert!(normal.allow_msg_ttl && normal.allow_rollup_hdrs && !normal.deny_purge);
        assert_eq!(normal.required_api_level(), 1);
    }

    #[test]
    fn invalid_configs_use_go_texts() {
        let cases = [
            (r#"{"name":"a*b"}"#, "stream name is required and can not contain '.', '*', '>', '\\', '/'"),
            (r#"{"name":"S","max_age":1000}"#, "max age needs to be >= 100ms"),
            (r#"{"name":"S","max_age":-5}"#, "max age can not be negative"),
            (r#"{"name":"S","duplicate_window":5}"#, "duplicates window needs to be >= 100ms"),
            (r#"{"name":"S","deny_purge":true,"allow_rollup_hdrs":true}"#, "roll-ups require the purge permission"),
            (r#"{"name":"S","num_replicas":3}"#, "replicas > 1 not supported in non-clustered mode"),
            (r#"{"name":"S","num_replicas":-1}"#, "replicas count cannot be negative"),
        ];
        for (json, text) in cases {
            assert_eq!(config(json).normalized(ConfigPurpose::Create).unwrap_err().description, text, "{json}");
        }
    }

    #[test]
    fn mirrors_keep_no_subjects_and_no_duplicate_window() {
        let normal = config(r#"{"name":"M","mirror":{"name":"C"}}"#).normalized(ConfigPurpose::Create).unwrap();
        assert!(normal.subjects.is_empty());
        assert_eq!(normal.duplicate_window, 0);
    }
}
