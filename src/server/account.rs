//! Accounts: the isolation unit of nats-server's multi-tenancy. Every connection is bound
//! to one account at CONNECT and sees only that account's subjects.
//!
//! An account is named in the configuration and numbered here: [`AccountId`] is its index
//! in [`Accounts`], `$G` (the global account of users outside any `accounts` block) being
//! 0. The routing tables key every subscription by a *routing key*: the subject itself in
//! `$G`, and `\0ID.subject` in any other account, so one trie and one match cache serve
//! every account, a lookup stays one lookup, and an account's subjects cannot match
//! another's (a `$G` wildcard can still reach a prefixed key, which is why deliveries also
//! compare the subscription's account: see [`key_account`]).
//!
//! JetStream is an account's too: [`Accounts::jetstream_accounts`] says which accounts
//! have it (nats-server's rule), and each of those has its own streams, consumers, limits
//! and store directory (`account_jetstream.rs`, `store_account.rs`); stream names are
//! free per account.

use crate::jetstream::account::AccountLimits;

/// An account's number on this server (its index in [`Accounts`]); stable while the
/// configuration is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccountId(pub u32);

impl AccountId {
    /// `$G`: users outside any `accounts` block.
    pub const GLOBAL: AccountId = AccountId(0);
}

/// nats-server's global account.
pub const GLOBAL_ACCOUNT_NAME: &str = "$G";
/// nats-server's default system account.
pub const SYSTEM_ACCOUNT_NAME: &str = "$SYS";

/// The first byte of a routing key outside `$G`. A client's subject never starts with it
/// in `$G` (such a SUB or PUB is refused, see [`is_reserved_subject`]).
const KEY_MARKER: u8 = 0;

/// One `accounts { NAME { ... } }` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountConfig {
    pub name: String,
    /// `jetstream: enabled` (no limits) or `jetstream { limits }`; `None`: not enabled.
    pub jetstream: Option<AccountLimits>,
    pub exports: Vec<Export>,
    pub imports: Vec<Import>,
}

impl AccountConfig {
    pub fn named(name: &str) -> AccountConfig {
        AccountConfig { name: name.to_string(), jetstream: None, exports: Vec::new(), imports: Vec::new() }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportKind {
    Stream,
    Service,
}

/// How many responses a service export's request may get (nats-server's
/// `response_type`): one (`single`, the default), or any number until the export's
/// response threshold passes without one (`stream`, `chunked`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ResponseType {
    #[default]
    Single,
    Stream,
    Chunked,
}

/// `exports: [{stream: "SUBJ"}, {service: "SUBJ", accounts: [B], response_type: stream}]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Export {
    pub kind: ExportKind,
    pub subject: String,
    /// Empty: public, anyone may import.
    pub accounts: Vec<String>,
    /// Service exports only.
    pub response_type: ResponseType,
    /// Service exports only: how long a request's reply mapping waits for a response
    /// (`response_threshold`; `limits::SERVICE_RESPONSE_THRESHOLD_DEFAULT` unless set).
    pub response_threshold: std::time::Duration,
}

/// `imports: [{stream: {account: A, subject: S}, prefix: P}, {service: {account: A,
/// subject: S}, to: T}]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    pub kind: ExportKind,
    /// The exporting account.
    pub account: String,
    /// The subject in the exporting account.
    pub subject: String,
    /// Stream imports: the importer sees `prefix.subject`.
    pub prefix: Option<String>,
    /// Service imports: the importer publishes to `to` (default `subject`); stream
    /// imports: the importer sees `to` (nats-server's mapping).
    pub to: Option<String>,
}

/// Every account of the server, `$G` first. Read-only once the configuration is applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accounts {
    list: Vec<AccountConfig>,
    /// `system_account`, `$SYS` unless configured.
    pub system_account: String,
}

impl Default for Accounts {
    fn default() -> Accounts {
        Accounts { list: vec![AccountConfig::named(GLOBAL_ACCOUNT_NAME)], system_account: SYSTEM_ACCOUNT_NAME.into() }
    }
}

impl Accounts {
    /// Whether any account besides `$G` is configured.
    pub fn configured(&self) -> bool {
        self.list.len() > 1
    }

    /// The account called `name` (`$G` included): the lookup leaf remotes bind with.
    pub fn id_of(&self, name: &str) -> Option<AccountId> {
        self.list.iter().position(|account| account.name == name).map(|index| AccountId(index as u32))
    }

    pub fn name_of(&self, id: AccountId) -> &str {
        self.list.get(id.0 as usize).map_or(GLOBAL_ACCOUNT_NAME, |account| account.name.as_str())
    }

    pub fn get(&self, id: AccountId) -> Option<&AccountConfig> {
        self.list.get(id.0 as usize)
    }

    pub fn iter(&self) -> impl Iterator<Item = (AccountId, &AccountConfig)> {
        self.list.iter().enumerate().map(|(index, account)| (AccountId(index as u32), account))
    }

    /// Whether `other` has the same accounts, in the same order, with the same JetStream
    /// settings and system account: then only exports and imports differ, and a reload
    /// can adopt them (account ids, which routing keys hold, stay the same).
    pub fn same_but_imports(&self, other: &Accounts) -> bool {
        self.system_account == other.system_account
            && self.list.len() == other.list.len()
            && self
                .list
                .iter()
                .zip(&other.list)
                .all(|(mine, theirs)| mine.name == theirs.name && mine.jetstream == theirs.jetstream)
    }

    /// Adds (or, for a name already listed, replaces) an account; `$G` cannot be
    /// configured (nats-server: `"$G" is a Reserved Account`).
    pub fn insert(&mut self, account: AccountConfig) -> Result<AccountId, String> {
        if account.name == GLOBAL_ACCOUNT_NAME {
            return Err(format!("{GLOBAL_ACCOUNT_NAME:?} is a Reserved Account"));
        }
        if let Some(id) = self.id_of(&account.name) {
            self.list[id.0 as usize] = account;
            return Ok(id);
        }
        self.list.push(account);
        Ok(AccountId(self.list.len() as u32 - 1))
    }

    /// The accounts JetStream serves when the server has JetStream on, as nats-server
    /// chooses them (`enableJetStreamAccounts`): `$G` alone when no account besides the
    /// system account is configured; otherwise exactly the accounts whose block enables
    /// it (none of them when no block does, and never `$G`). The system account may not
    /// enable it (nats-server refuses to start, with the same words).
    pub fn jetstream_accounts(&self) -> Result<Vec<AccountId>, String> {
        let system = self.id_of(&self.system_account);
        if system.is_some_and(|id| self.list[id.0 as usize].jetstream.is_some()) {
            return Err("Not allowed to enable JetStream on the system account".into());
        }
        let others: Vec<(AccountId, &AccountConfig)> =
            self.iter().filter(|(id, _)| *id != AccountId::GLOBAL && Some(*id) != system).collect();
        if others.is_empty() {
            return Ok(vec![AccountId::GLOBAL]);
        }
        Ok(others.into_iter().filter(|(_, account)| account.jetstream.is_some()).map(|(id, _)| id).collect())
    }

    /// Whether `account` has JetStream (see [`Self::jetstream_accounts`]).
    pub fn jetstream_enabled(&self, account: AccountId) -> bool {
        self.jetstream_accounts().is_ok_and(|enabled| enabled.contains(&account))
    }
}

/// Whether a `$G` client may not use `subject`: it would read as another account's
/// routing key.
pub fn is_reserved_subject(subject: &[u8]) -> bool {
    subject.first() == Some(&KEY_MARKER)
}

/// Writes `account`'s routing key for `subject` into `out` (cleared first).
pub fn routing_key_into(account: AccountId, subject: &[u8], out: &mut Vec<u8>) {
    out.clear();
    if account != AccountId::GLOBAL {
        out.push(KEY_MARKER);
        push_decimal(account.0, out);
        out.push(b'.');
    }
    out.extend_from_slice(subject);
}

/// `account`'s routing key for `subject`, allocated.
pub fn routing_key(account: AccountId, subject: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(subject.len() + 8);
    routing_key_into(account, subject, &mut key);
    key
}

/// The account and subject a routing key stands for. A key that is not well formed is
/// `$G`'s (the caller refused reserved subjects in `$G`, so none reaches here).
pub fn key_account(key: &[u8]) -> (AccountId, &[u8]) {
    if key.first() != Some(&KEY_MARKER) {
        return (AccountId::GLOBAL, key);
    }
    let Some(dot) = key.iter().position(|&byte| byte == b'.') else { return (AccountId::GLOBAL, key) };
    let mut id: u32 = 0;
    for &digit in &key[1..dot] {
        if !digit.is_ascii_digit() {
            return (AccountId::GLOBAL, key);
        }
        id = id.wrapping_mul(10).wrapping_add(u32::from(digit - b'0'));
    }
    (AccountId(id), &key[dot + 1..])
}

/// Appends `value` in decimal without allocating (a publish in an account builds a key).
fn push_decimal(value: u32, out: &mut Vec<u8>) {
    let mut digits = [0u8; 10];
    let (mut rest, mut start) = (value, digits.len());
    loop {
        start -= 1;
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_keys_round_trip_and_global_keys_are_subjects() {
        assert_eq!(routing_key(AccountId::GLOBAL, b"orders.eu"), b"orders.eu");
        let key = routing_key(AccountId(12), b"orders.>");
        assert_eq!(key, b"\x0012.orders.>");
        assert_eq!(key_account(&key), (AccountId(12), &b"orders.>"[..]));
        assert_eq!(key_account(b"orders.eu"), (AccountId::GLOBAL, &b"orders.eu"[..]));
        assert!(is_reserved_subject(&key));
        assert!(!is_reserved_subject(b"orders"));
    }

    #[test]
    fn jetstream_accounts_follow_nats_server() {
        let mut accounts = Accounts::default();
        assert_eq!(accounts.jetstream_accounts(), Ok(vec![AccountId::GLOBAL]));
        assert!(accounts.insert(AccountConfig::named("$G")).unwrap_err().contains("Reserved Account"));
        let system = accounts.insert(AccountConfig::named("$SYS")).unwrap();
        assert_eq!(accounts.jetstream_accounts(), Ok(vec![AccountId::GLOBAL]), "the system account does not count");
        let a = accounts.insert(AccountConfig::named("A")).unwrap();
        assert_eq!(accounts.jetstream_accounts(), Ok(vec![]), "no block enables it: nobody has it");
        let mut b = AccountConfig::named("B");
        b.jetstream = Some(AccountLimits::default());
        let b = accounts.insert(b).unwrap();
        let mut c = AccountConfig::named("C");
        c.jetstream = Some(AccountLimits::default());
        let c = accounts.insert(c).unwrap();
        assert_eq!(accounts.jetstream_accounts(), Ok(vec![b, c]));
        assert!(!accounts.jetstream_enabled(a) && accounts.jetstream_enabled(b));
        let mut enabled_system = AccountConfig::named("$SYS");
        enabled_system.jetstream = Some(AccountLimits::default());
        assert_eq!(accounts.insert(enabled_system), Ok(system));
        assert!(accounts.jetstream_accounts().unwrap_err().contains("system account"));
        assert_eq!(accounts.id_of("A"), Some(a));
        assert_eq!(accounts.name_of(b), "B");
        assert_eq!(accounts.id_of("$G"), Some(AccountId::GLOBAL));
    }
}
