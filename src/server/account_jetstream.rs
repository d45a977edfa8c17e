//! JetStream per account on one shard: one [`StreamService`] for each account with
//! JetStream on (`Accounts::jetstream_accounts`), each over its own directory of the
//! store (`store_account::jetstream_dir`). A service holds its account's streams,
//! consumers, limits and API counters, so names are free per account and nothing of one
//! account is reachable through another's service; the server picks the service by the
//! account of the client that publishes or asks.

use std::rc::Rc;

use super::account::AccountId;
use crate::jetstream::service::StreamService;

/// This shard's services, one per account with JetStream (empty when JetStream is off).
#[derive(Default)]
pub struct AccountServices {
    list: Vec<(AccountId, Rc<StreamService>)>,
}

impl AccountServices {
    pub fn new(list: Vec<(AccountId, Rc<StreamService>)>) -> AccountServices {
        AccountServices { list }
    }

    /// `account`'s service; `None` when JetStream is not enabled for it.
    pub fn get(&self, account: AccountId) -> Option<&Rc<StreamService>> {
        self.list.iter().find(|(id, _)| *id == account).map(|(_, service)| service)
    }

    pub fn iter(&self) -> impl Iterator<Item = (AccountId, &Rc<StreamService>)> {
        self.list.iter().map(|(id, service)| (*id, service))
    }

    /// Whether JetStream is on (for some account).
    pub fn is_on(&self) -> bool {
        !self.list.is_empty()
    }
}
