//! `StreamInfo` and `StreamState`, and the bodies of the replies that carry them
//! (`STREAM.CREATE`, `STREAM.UPDATE`, `STREAM.INFO`, entries of `STREAM.LIST`).
//!
//! Shapes follow Go's `StreamInfo` (server/stream.go) and `StreamState`
//! (server/store.go) as recorded from nats-server 2.15.1: an empty stream reports
//! `first_seq:0`, `last_seq:0` and Go's zero time for both timestamps; after a full
//! purge `first_seq = last_seq + 1` with `first_ts` zero and `last_ts` kept.

use super::responses::Paged;
use super::stream_config::{is_false, is_zero_u64, StreamConfig};
use super::stream_sources::StreamSourceInfo;
use super::time::Timestamp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A stream's counters. `num_subjects`, `subjects`, `num_deleted`, `deleted` and `lost`
/// are omitted when zero/empty; `subjects` only appears when `subjects_filter` asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamState {
    pub messages: u64,
    pub bytes: u64,
    pub first_seq: u64,
    pub first_ts: Timestamp,
    pub last_seq: u64,
    pub last_ts: Timestamp,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub num_subjects: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub subjects: BTreeMap<String, u64>,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub num_deleted: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<LostStreamData>,
    pub consumer_count: u64,
}

impl Default for StreamState {
    /// The state of a stream that never stored anything.
    fn default() -> StreamState {
        StreamState {
            messages: 0,
            bytes: 0,
            first_seq: 0,
            first_ts: Timestamp::ZERO,
            last_seq: 0,
            last_ts: Timestamp::ZERO,
            num_subjects: 0,
            subjects: BTreeMap::new(),
            num_deleted: 0,
            deleted: Vec::new(),
            lost: None,
            consumer_count: 0,
        }
    }
}

/// Messages the store found damaged on recovery.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LostStreamData {
    #[serde(default)]
    pub msgs: Vec<u64>,
    #[serde(default)]
    pub bytes: u64,
}

/// `cluster` of stream and consumer info. A standalone nats-server 2.15 reports
/// `{"leader":"<server id>"}` in `STREAM.INFO` / `STREAM.LIST` but none on create/update.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClusterInfo {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub raft_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub leader: String,
}

/// Config and state of one stream, as `STREAM.INFO` and friends report it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamInfo {
    pub config: StreamConfig,
    pub created: Timestamp,
    pub state: StreamState,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror: Option<StreamSourceInfo>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<StreamSourceInfo>,
    /// When the info was gathered.
    pub ts: Timestamp,
}

/// Body of `stream_create_response`: the info, then `did_create:true` on a new stream.
/// An idempotent re-create of an identical stream also answers `did_create:true`
/// (recorded from nats-server 2.15.1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamCreateBody {
    #[serde(flatten)]
    pub info: StreamInfo,
    #[serde(default, skip_serializing_if = "is_false")]
    pub did_create: bool,
}

/// Body of `stream_info_response`: paging (of `state.subjects`; all zero unless
/// `subjects_filter` was given) before the info.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamInfoBody {
    #[serde(flatten)]
    pub paged: Paged,
    #[serde(flatten)]
    pub info: StreamInfo,
}

/// One page of `state.subjects` as nats-server serves it: when any subject matched, the
/// paging says `total` (all of them), the requested `offset` and `limit` = `page_size`;
/// the page holds the subjects (sorted) from `offset`, at most `page_size`. Clients ask
/// again with a larger offset until they have `total`.
pub fn subjects_page(all: BTreeMap<String, u64>, offset: u64, page_size: u64) -> (BTreeMap<String, u64>, Paged) {
    let total = all.len() as u64;
    if total == 0 {
        return (all, Paged::default());
    }
    let paged = Paged { total, offset, limit: page_size };
    if offset == 0 && total <= page_size {
        return (all, paged);
    }
    let page = all.into_iter().skip(offset.min(total) as usize).take(page_size as usize).collect();
    (page, paged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_are_paged_from_the_offset() {
        let all: BTreeMap<String, u64> = (0..5).map(|i| (format!("s.{i}"), 1)).collect();
        let (page, paged) = subjects_page(all.clone(), 0, 10);
        assert_eq!((page.len(), paged), (5, Paged { total: 5, offset: 0, limit: 10 }));
        let (page, paged) = subjects_page(all.clone(), 0, 2);
        assert_eq!(page.keys().collect::<Vec<_>>(), ["s.0", "s.1"]);
        assert_eq!(paged, Paged { total: 5, offset: 0, limit: 2 });
        let (page, _) = subjects_page(all.clone(), 4, 2);
        assert_eq!(page.keys().collect::<Vec<_>>(), ["s.4"]);
        let (page, paged) = subjects_page(all, 5, 10);
        assert!(page.is_empty());
        assert_eq!(paged.offset, 5);
        assert_eq!(subjects_page(BTreeMap::new(), 3, 10).1, Paged::default());
    }

    #[test]
    fn empty_state_matches_go_zero_values() {
        let text = serde_json::to_string(&StreamState::default()).unwrap();
        assert_eq!(
            text,
            r#"{"messages":0,"bytes":0,"first_seq":0,"first_ts":"0001-01-01T00:00:00Z","last_seq":0,"last_ts":"0001-01-01T00:00:00Z","consumer_count":0}"#
        );
    }

    #[test]
    fn deleted_details_sit_between_subjects_and_consumer_count() {
        let state = StreamState { num_subjects: 1, num_deleted: 2, deleted: vec![2, 3], ..StreamState::default() };
        let text = serde_json::to_string(&state).unwrap();
        assert!(text.ends_with(r#""num_subjects":1,"num_deleted":2,"deleted":[2,3],"consumer_count":0}"#), "{text}");
    }
}
