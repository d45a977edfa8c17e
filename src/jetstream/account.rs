//! `$JS.API.INFO`: the account's JetStream usage and limits (`account_info_response`).
//!
//! Shape of Go's `JetStreamAccountStats` (usage tier embedded first, then `domain`,
//! `api`, `tiers`) as recorded from nats-server 2.15.1. Every key except `domain` and
//! `tiers` must be present: async-nats fails `create_key_value` on a missing one.

use super::api_level::API_LEVEL;
use super::stream_config::is_zero_u64;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Reply body of `$JS.API.INFO`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountInfo {
    #[serde(flatten)]
    pub usage: AccountUsage,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    pub api: ApiStats,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tiers: BTreeMap<String, AccountUsage>,
}

/// Usage and limits of the account (or of one tier such as `R1`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountUsage {
    pub memory: u64,
    pub storage: u64,
    pub reserved_memory: u64,
    pub reserved_storage: u64,
    pub streams: u64,
    pub consumers: u64,
    pub limits: AccountLimits,
}

/// Account limits; `-1` means unlimited.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountLimits {
    pub max_memory: i64,
    pub max_storage: i64,
    pub max_streams: i64,
    pub max_consumers: i64,
    pub max_ack_pending: i64,
    pub memory_max_stream_bytes: i64,
    pub storage_max_stream_bytes: i64,
    pub max_bytes_required: bool,
}

impl Default for AccountLimits {
    /// An account without limits, as a default nats-server reports it.
    fn default() -> AccountLimits {
        AccountLimits {
            max_memory: -1,
            max_storage: -1,
            max_streams: -1,
            max_consumers: -1,
            max_ack_pending: -1,
            memory_max_stream_bytes: -1,
            storage_max_stream_bytes: -1,
            max_bytes_required: false,
        }
    }
}

/// API call counters. `total` counts calls answered, `errors` those answered with an error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiStats {
    pub level: u32,
    pub total: u64,
    pub errors: u64,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub inflight: u64,
}

impl Default for ApiStats {
    fn default() -> ApiStats {
        ApiStats { level: API_LEVEL, total: 0, errors: 0, inflight: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_account_matches_nats_server() {
        let info = AccountInfo {
            usage: AccountUsage::default(),
            domain: String::new(),
            api: ApiStats::default(),
            tiers: BTreeMap::new(),
        };
        assert_eq!(
            serde_json::to_string(&info).unwrap(),
            concat!(
                r#"{"memory":0,"storage":0,"reserved_memory":0,"reserved_storage":0,"streams":0,"consumers":0,"#,
                r#""limits":{"max_memory":-1,"max_storage":-1,"max_streams":-1,"max_consumers":-1,"max_ack_pending":-1,"#,
                r#""memory_max_stream_bytes":-1,"storage_max_stream_bytes":-1,"max_bytes_required":false},"#,
                r#""api":{"level":2,"total":0,"errors":0}}"#
            )
        );
    }
}
