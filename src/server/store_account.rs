//! Which account's JetStream data a store directory holds. jetcore serves JetStream in one
//! account (`Accounts::jetstream_account`) and its store keeps no account per stream, so a
//! restart that served the same streams to another account would hand one tenant's data
//! to another. The store records its account in `STORE_DIR/jetstream-account` (written
//! the first time a configured account's JetStream starts on it) and a start that would
//! serve it in a different account is refused. A store without the file was written
//! without accounts: it is `$G`'s when it holds streams, and anyone's while empty.

use std::path::Path;

use super::account::GLOBAL_ACCOUNT_NAME;

const ACCOUNT_FILE: &str = "jetstream-account";
/// Where the streams live under the store directory (`store::` keeps one directory each).
const STREAMS_DIR: &str = "jetstream/streams";

/// Claims `store_dir` for `account`'s JetStream, or says whose data it holds.
pub fn claim(store_dir: &Path, account: &str) -> Result<(), String> {
    let file = store_dir.join(ACCOUNT_FILE);
    let recorded = match std::fs::read_to_string(&file) {
        Ok(text) => Some(text.trim().to_string()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => return Err(format!("cannot read {}: {error}", file.display())),
    };
    let streams = std::fs::read_dir(store_dir.join(STREAMS_DIR));
    let holds_streams = streams.is_ok_and(|mut entries| entries.next().is_some());
    let owner = match recorded {
        Some(owner) => owner,
        None if holds_streams => GLOBAL_ACCOUNT_NAME.to_string(),
        None if account == GLOBAL_ACCOUNT_NAME => return Ok(()),
        None => {
            return std::fs::write(&file, format!("{account}\n"))
                .map_err(|error| format!("cannot write {}: {error}", file.display()));
        }
    };
    match owner == account {
        true => Ok(()),
        false => Err(format!(
            "store directory {:?} holds the JetStream data of account {owner:?}, and this configuration serves \
             JetStream in account {account:?}: accounts never see each other's streams (serve JetStream in \
             {owner:?} or use another store directory)",
            store_dir.display().to_string()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_is_served_to_one_account_only() {
        let dir = tempfile::tempdir().unwrap();
        assert!(claim(dir.path(), "$G").is_ok(), "an empty store is anyone's");
        assert!(claim(dir.path(), "A").is_ok());
        assert!(claim(dir.path(), "A").is_ok());
        assert!(claim(dir.path(), "B").unwrap_err().contains("account \"A\""));
        assert!(claim(dir.path(), "$G").is_err());
        let old = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(old.path().join("jetstream/streams/ORDERS")).unwrap();
        assert!(claim(old.path(), "$G").is_ok(), "a store written without accounts is $G's");
        assert!(claim(old.path(), "A").unwrap_err().contains("account \"$G\""));
    }
}
