//! The `metadata` map of stream and consumer configs, and the `_nats.*` keys nats-server
//! manages in it (2.11+ versioning, ADR-44).
//!
//! Recorded from nats-server 2.15.1: the stored config carries `_nats.req.level` (the API
//! level the config needs); create/update/info replies add `_nats.level` (the server's
//! API level) and `_nats.ver` (its version); list and snapshot replies show only
//! `_nats.req.level`.
//! Go writes maps with sorted keys, which `BTreeMap` reproduces.

use std::collections::BTreeMap;

pub type Metadata = BTreeMap<String, String>;

pub const REQUIRED_LEVEL_KEY: &str = "_nats.req.level";
pub const SERVER_LEVEL_KEY: &str = "_nats.level";
pub const SERVER_VERSION_KEY: &str = "_nats.ver";

/// Whether `metadata` is over nats-server's `JSMaxMetadataLen`: every key's and value's
/// bytes summed, for streams and consumers alike.
pub fn is_too_large(metadata: &Metadata) -> bool {
    let bytes: usize = metadata.iter().map(|(key, value)| key.len() + value.len()).sum();
    bytes > super::defaults::METADATA_BYTES_MAX
}

/// Records the API level a config needs; part of the stored config.
pub fn set_required_level(metadata: &mut Metadata, level: u32) {
    metadata.insert(REQUIRED_LEVEL_KEY.to_string(), level.to_string());
}

/// Adds the server's API level and version, as create/update/info replies show them.
pub fn add_server_info(metadata: &mut Metadata, api_level: u32, server_version: &str) {
    metadata.insert(SERVER_LEVEL_KEY.to_string(), api_level.to_string());
    metadata.insert(SERVER_VERSION_KEY.to_string(), server_version.to_string());
}

/// Removes the keys only a server may set, so a config a client read back and sends
/// again (e.g. an update built from stream info) compares equal to the stored one.
pub fn remove_server_info(metadata: &mut Metadata) {
    metadata.remove(SERVER_LEVEL_KEY);
    metadata.remove(SERVER_VERSION_KEY);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_info_round_trip() {
        let mut metadata = Metadata::new();
        set_required_level(&mut metadata, 0);
        let stored = metadata.clone();
        add_server_info(&mut metadata, 5, "2.15.1");
        let keys: Vec<&str> = metadata.keys().map(String::as_str).collect();
        assert_eq!(keys, ["_nats.level", "_nats.req.level", "_nats.ver"]);
        remove_server_info(&mut metadata);
        assert_eq!(metadata, stored);
    }
}
