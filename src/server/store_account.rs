//! Where each account's JetStream data lives under the store directory. nats-server keeps
//! an account's streams in `STORE_DIR/jetstream/<ACCOUNT>/streams`; jetcore does too, with
//! one exception that keeps stores written before it served several accounts readable:
//! those kept one account's streams in `STORE_DIR/jetstream/streams` and named that
//! account in `STORE_DIR/jetstream-account` (no file: `$G`). That account, the store's
//! *first* account, keeps `STORE_DIR/jetstream` as its directory; every other account
//! has its own. A directory is only ever opened for its own account, so no restart can
//! hand one tenant's streams to another, whatever the configuration says.

use std::path::{Path, PathBuf};

use super::account::GLOBAL_ACCOUNT_NAME;

/// Names the store's first account (written by jetcore before per-account directories).
const ACCOUNT_FILE: &str = "jetstream-account";
const JETSTREAM_DIR: &str = "jetstream";
/// The streams' directory inside an account's directory (`engine` keeps one per stream).
const STREAMS_DIR: &str = "streams";

/// `account`'s JetStream directory under `store_dir`.
pub fn jetstream_dir(store_dir: &Path, account: &str) -> Result<PathBuf, String> {
    let root = store_dir.join(JETSTREAM_DIR);
    if account == first_account(store_dir)? {
        return Ok(root);
    }
    // The first account's streams are in `jetstream/streams`: an account of that name
    // would open them as a stream called `streams`.
    let plain = !account.is_empty() && !account.contains(['/', '\\', '\0']) && account != "." && account != "..";
    if !plain || account == STREAMS_DIR {
        return Err(format!("account {account:?} cannot have JetStream: its name cannot be a store directory"));
    }
    Ok(root.join(account))
}

/// The account that `STORE_DIR/jetstream` belongs to.
fn first_account(store_dir: &Path) -> Result<String, String> {
    let file = store_dir.join(ACCOUNT_FILE);
    match std::fs::read_to_string(&file) {
        Ok(text) => Ok(text.trim().to_string()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(GLOBAL_ACCOUNT_NAME.to_string()),
        Err(error) => Err(format!("cannot read {}: {error}", file.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_account_has_its_own_directory_and_an_old_store_keeps_its_account() {
        let fresh = tempfile::tempdir().unwrap();
        let root = fresh.path().join("jetstream");
        assert_eq!(jetstream_dir(fresh.path(), "$G").unwrap(), root, "no accounts: the layout is unchanged");
        assert_eq!(jetstream_dir(fresh.path(), "A").unwrap(), root.join("A"));
        assert!(jetstream_dir(fresh.path(), "streams").unwrap_err().contains("cannot have JetStream"));
        assert!(jetstream_dir(fresh.path(), "..").is_err());
        let old = tempfile::tempdir().unwrap();
        std::fs::write(old.path().join("jetstream-account"), "A\n").unwrap();
        let root = old.path().join("jetstream");
        assert_eq!(jetstream_dir(old.path(), "A").unwrap(), root, "the account it was written for");
        assert_eq!(jetstream_dir(old.path(), "B").unwrap(), root.join("B"));
        assert_eq!(jetstream_dir(old.path(), "$G").unwrap(), root.join("$G"));
    }
}
