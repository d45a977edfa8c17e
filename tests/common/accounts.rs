//! A server started from an accounts configuration, and a client logged in as one of its
//! users (whose password is its name, as the account tests write them).

use std::time::Duration;

use async_nats::Client;

use super::TestServer;

/// `config` in a `.conf` file that lives as long as the returned handle.
pub fn config_file(config: &str) -> tempfile::NamedTempFile {
    let file = tempfile::Builder::new().suffix(".conf").tempfile().unwrap();
    std::fs::write(file.path(), config).unwrap();
    file
}

/// A two-shard server started with `config`; keep the file while the server runs.
pub fn server_with(config: &str) -> (TestServer, tempfile::NamedTempFile) {
    let file = config_file(config);
    let path = file.path().display().to_string();
    (TestServer::start(&["-c", path.as_str(), "--shards", "2"]), file)
}

/// `user` connected with the password `user`.
pub async fn login(server: &TestServer, user: &str) -> Client {
    async_nats::ConnectOptions::with_user_and_password(user.into(), user.into())
        .request_timeout(Some(Duration::from_secs(5)))
        .connect(server.url())
        .await
        .unwrap_or_else(|error| panic!("{user} connects: {error}"))
}
