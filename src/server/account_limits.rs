//! JetStream resource limits at stream create and update, as nats-server checks them
//! (`checkStreamCfg`, `checkLimits`, `checkBytesLimits`): the account's
//! `max_bytes_required`, per-stream byte ceilings, `max_streams`, `max_consumers`, and
//! the bytes every stream reserves (its `max_bytes`, or 1 when unset) against the
//! account's `max_mem` / `max_file` and the server's `max_memory_store` /
//! `max_file_store`. Checked by the coordinator (shard 0), which sees every stream, per
//! account: an account's limits count its own streams only (the server's store limits
//! count every account's reservations, as nats-server's do).

use super::account::AccountId;
use super::catalog::Catalog;
use super::node::Node;
use crate::jetstream::account::AccountLimits;
use crate::jetstream::errors::ApiError;
use crate::jetstream::policies::StorageType;
use crate::jetstream::stream_config::StreamConfig;

/// The server's own store limits (`jetstream { max_memory_store, max_file_store }`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ServerStoreLimits {
    pub memory_bytes: Option<u64>,
    pub storage_bytes: Option<u64>,
}

impl Node {
    /// Whether `config` (a create, or an update of `account`'s stream `name`) fits the
    /// limits of that account and of the server.
    pub(super) fn check_stream_limits(
        &self,
        account: AccountId,
        name: &str,
        config: &StreamConfig,
    ) -> Result<(), ApiError> {
        let limits = self.options.accounts.get(account).and_then(|a| a.jetstream.clone());
        let server = ServerStoreLimits {
            memory_bytes: self.options.max_memory_store,
            storage_bytes: self.options.max_file_store,
        };
        check_stream(&limits.unwrap_or_default(), server, &self.catalog.borrow(), account, name, config)
    }
}

/// nats-server's order: what the config itself must say, then counts, then bytes.
pub fn check_stream(
    account: &AccountLimits,
    server: ServerStoreLimits,
    catalog: &Catalog,
    account_id: AccountId,
    name: &str,
    config: &StreamConfig,
) -> Result<(), ApiError> {
    let memory = config.storage == StorageType::Memory;
    if account.max_bytes_required && config.max_bytes <= 0 {
        return Err(ApiError::stream_max_bytes_required());
    }
    let stream_bytes_max = if memory { account.memory_max_stream_bytes } else { account.storage_max_stream_bytes };
    if stream_bytes_max > 0 && config.max_bytes > stream_bytes_max {
        return Err(ApiError::stream_max_stream_bytes_exceeded());
    }
    let existing = catalog.get(account_id, name);
    let streams = catalog.of(account_id).count() as i64;
    if existing.is_none() && account.max_streams > 0 && streams >= account.max_streams {
        return Err(ApiError::maximum_streams_limit());
    }
    if config.max_consumers > 0 && account.max_consumers > 0 && config.max_consumers > account.max_consumers {
        return Err(ApiError::maximum_consumers_limit());
    }
    // An update gives back what the stream reserved before.
    let returned = existing.map_or(0, |entry| match entry.reservation {
        reservation if reservation.memory == memory && reservation.max_bytes > 0 => reservation.max_bytes,
        _ => 0,
    });
    let wanted = catalog.reserved_bytes(account_id, memory) - returned + config.max_bytes.max(1);
    let wanted_on_server = catalog.reserved_bytes_all(memory) - returned + config.max_bytes.max(1);
    let account_max = if memory { account.max_memory } else { account.max_storage };
    let server_max = if memory { server.memory_bytes } else { server.storage_bytes };
    let over_account = account_max >= 0 && wanted > account_max;
    let over_server = server_max.is_some_and(|max| wanted_on_server as u64 > max);
    match (over_account || over_server, memory) {
        (false, _) => Ok(()),
        (true, true) => Err(ApiError::memory_resources_exceeded()),
        (true, false) => Err(ApiError::storage_resources_exceeded()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::catalog::{CatalogChange, CatalogEntry};
    use super::*;
    use crate::jetstream::service::{OwnerKey, Reservation};
    use crate::shard::ShardId;

    fn config(name: &str, memory: bool, max_bytes: i64) -> StreamConfig {
        let body = format!(
            r#"{{"name":"{name}","storage":"{}","max_bytes":{max_bytes}}}"#,
            if memory { "memory" } else { "file" }
        );
        StreamConfig::from_request(name, body.as_bytes(), crate::jetstream::stream_config::ConfigPurpose::Create)
            .unwrap()
    }

    fn add(catalog: &mut Catalog, name: &str, memory: bool, max_bytes: i64) {
        catalog.apply(CatalogChange::Upsert(CatalogEntry {
            account: AccountId::GLOBAL,
            name: name.into(),
            owner: ShardId(0),
            subjects: vec![name.to_lowercase()],
            allow_direct: false,
            owner_key: OwnerKey::NONE,
            reservation: Reservation { memory, max_bytes },
        }));
    }

    #[test]
    fn the_issue_limits_refuse_with_nats_server_codes() {
        let account = AccountLimits {
            max_memory: 64 << 20,
            max_storage: 32 << 20,
            max_streams: 2,
            max_consumers: 20,
            max_ack_pending: 100,
            memory_max_stream_bytes: 2048,
            storage_max_stream_bytes: 4096,
            max_bytes_required: true,
        };
        let server = ServerStoreLimits::default();
        let mut catalog = Catalog::default();
        let code = |result: Result<(), ApiError>| result.unwrap_err().err_code;
        assert_eq!(
            code(check_stream(&account, server, &catalog, AccountId::GLOBAL, "S", &config("S", false, -1))),
            10113
        );
        assert_eq!(
            code(check_stream(&account, server, &catalog, AccountId::GLOBAL, "M", &config("M", true, 4096))),
            10122
        );
        assert_eq!(
            code(check_stream(&account, server, &catalog, AccountId::GLOBAL, "F", &config("F", false, 8192))),
            10122
        );
        assert!(check_stream(&account, server, &catalog, AccountId::GLOBAL, "F", &config("F", false, 4096)).is_ok());
        add(&mut catalog, "F", false, 4096);
        add(&mut catalog, "G", false, 4096);
        assert_eq!(
            code(check_stream(&account, server, &catalog, AccountId::GLOBAL, "H", &config("H", false, 10))),
            10027
        );
        assert!(
            check_stream(&account, server, &catalog, AccountId::GLOBAL, "G", &config("G", false, 100)).is_ok(),
            "an update"
        );
    }

    #[test]
    fn reservations_count_against_account_and_server_bytes() {
        let account = AccountLimits { max_memory: 1000, ..AccountLimits::default() };
        let server = ServerStoreLimits { memory_bytes: None, storage_bytes: Some(2 << 20) };
        let mut catalog = Catalog::default();
        let code = |result: Result<(), ApiError>| result.unwrap_err().err_code;
        assert_eq!(
            code(check_stream(&account, server, &catalog, AccountId::GLOBAL, "M1", &config("M1", true, 2000))),
            10028
        );
        add(&mut catalog, "M2", true, 600);
        assert_eq!(
            code(check_stream(&account, server, &catalog, AccountId::GLOBAL, "M3", &config("M3", true, 600))),
            10028
        );
        assert!(
            check_stream(&account, server, &catalog, AccountId::GLOBAL, "M4", &config("M4", true, -1)).is_ok(),
            "1 byte fits"
        );
        assert!(
            check_stream(&account, server, &catalog, AccountId::GLOBAL, "M2", &config("M2", true, 1000)).is_ok(),
            "update"
        );
        assert_eq!(
            code(check_stream(&account, server, &catalog, AccountId::GLOBAL, "M2", &config("M2", true, 1001))),
            10028
        );
        add(&mut catalog, "F2", false, 2 << 20);
        assert_eq!(
            code(check_stream(&account, server, &catalog, AccountId::GLOBAL, "F3", &config("F3", false, -1))),
            10047
        );
    }
}
