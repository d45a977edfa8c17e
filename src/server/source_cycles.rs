//! nats-server refuses a mirror or source that would make a stream copy (through other
//! streams) from itself: `500 / 10052 detected cycle`. The coordinator checks a create or
//! update against every stream's mirror and sources, gathered from all shards (rare
//! requests; nothing is cached that could go stale).

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use super::account::AccountId;
use super::envelope::{ShardCall, ShardReturn};
use super::node::Node;
use crate::jetstream::errors::ApiError;
use crate::jetstream::source_checks::detected_cycle;
use crate::jetstream::stream_config::StreamConfig as WireConfig;

impl Node {
    /// Refuses `config` (a stream of `account`, whose origins are its account's streams)
    /// when one of its origins copies, directly or not, from it.
    pub(super) async fn check_source_cycle(
        self: &Rc<Self>,
        account: AccountId,
        config: &WireConfig,
    ) -> Result<(), ApiError> {
        if config.mirror.is_none() && config.sources.is_empty() {
            return Ok(());
        }
        let mut origins_of: HashMap<String, Vec<String>> = HashMap::new();
        for shard in 0..self.shard_count() {
            if let ShardReturn::StreamInfos(infos) =
                self.call(crate::shard::ShardId(shard), ShardCall::StreamInfos(account)).await
            {
                for info in infos {
                    origins_of.insert(info.config.name.clone(), origins(&info.config));
                }
            }
        }
        origins_of.insert(config.name.clone(), origins(config));
        let mut seen = HashSet::new();
        let mut to_visit = origins(config);
        while let Some(name) = to_visit.pop() {
            if name == config.name {
                return Err(detected_cycle());
            }
            if seen.insert(name.clone()) {
                to_visit.extend(origins_of.get(&name).cloned().unwrap_or_default());
            }
        }
        Ok(())
    }
}

fn origins(config: &WireConfig) -> Vec<String> {
    // An external origin is another JetStream's stream: no cycle through this one's.
    let local = config.mirror.iter().chain(&config.sources).filter(|source| source.external.is_none());
    local.map(|source| source.name.clone()).collect()
}
