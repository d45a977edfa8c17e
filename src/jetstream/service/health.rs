//! What `/healthz` asks of one account's service on one shard: is each stream it owns
//! running, and which consumers does it have. A stream whose storage failed (an
//! fdatasync error is fail-stop, `store/flush.rs`) is stopped: it serves reads but takes
//! no writes, and the server is not healthy while it stays so. A stream whose record
//! exists but whose storage is not open could not be recovered.

use super::StreamService;
use crate::jetstream::policies::StorageType;

/// One stream's condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamCondition {
    Running,
    /// Writes stopped after a storage failure; the failure as the stream recorded it.
    Stopped(String),
    /// Configured, but its storage is not open (recovery failed).
    NotRecovered,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamHealth {
    pub name: String,
    pub condition: StreamCondition,
    /// A memory stream (nats-server's health check, which walks the store directory,
    /// never sees one).
    pub memory: bool,
    /// The stream's consumers, by name.
    pub consumers: Vec<String>,
}

impl StreamService {
    /// The health of this shard's streams of the account (only `stream` when given; an
    /// empty list when this shard does not own it).
    pub fn health(&self, stream: Option<&str>) -> Vec<StreamHealth> {
        let names: Vec<String> = match stream {
            Some(name) => self.records.borrow().contains_key(name).then(|| name.to_string()).into_iter().collect(),
            None => self.records.borrow().keys().cloned().collect(),
        };
        names
            .into_iter()
            .map(|name| {
                let condition = match self.engine.state(&name) {
                    Ok(state) => state.failed.map_or(StreamCondition::Running, StreamCondition::Stopped),
                    Err(_) => StreamCondition::NotRecovered,
                };
                let consumers = self.consumers.names_of(&name);
                let memory =
                    self.records.borrow().get(&name).is_some_and(|record| record.config.storage == StorageType::Memory);
                StreamHealth { name, condition, memory, consumers }
            })
            .collect()
    }
}
