//! Client authentication: a token, or one user and password (DESIGN §1). Secrets are
//! compared in constant time.

use super::options::Options;
use super::permissions::Permissions;
use crate::protocol::ConnectOptions;

/// Whether connections must authenticate (and so get a deadline for CONNECT).
pub fn required(options: &Options) -> bool {
    options.token.is_some() || options.user.is_some() || !options.users.is_empty()
}

/// What a client presented in CONNECT, kept for its connection's life so a reload can
/// check it against new settings (as nats-server keeps the client's options).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Credentials {
    pub token: Option<String>,
    pub user: Option<String>,
    pub pass: Option<String>,
}

impl Credentials {
    pub fn of(connect: &ConnectOptions) -> Credentials {
        Credentials { token: connect.auth_token.clone(), user: connect.user.clone(), pass: connect.pass.clone() }
    }
}

/// Whether a CONNECT's credentials satisfy the server's.
pub fn accepts(options: &Options, connect: &ConnectOptions) -> bool {
    holds(options, &Credentials::of(connect))
}

/// Whether `credentials` satisfy the server's settings in `options`.
pub fn holds(options: &Options, credentials: &Credentials) -> bool {
    if let Some(token) = &options.token {
        return credentials.token.as_deref().is_some_and(|given| same(given, token));
    }
    if options.user.is_none() && options.users.is_empty() {
        return true;
    }
    let (Some(given_user), Some(given_pass)) = (credentials.user.as_deref(), credentials.pass.as_deref()) else {
        return false;
    };
    let single = options.user.as_deref().map(|user| (user, options.pass.as_deref().unwrap_or("")));
    let listed = options.users.iter().map(|user| (user.name.as_str(), user.password.as_str()));
    // Every entry is compared (no early exit), so timing says nothing about which matched.
    single
        .into_iter()
        .chain(listed)
        .fold(false, |found, (user, password)| found | (same(given_user, user) & same(given_pass, password)))
}

/// Whether the authorization settings differ between `before` and `after`.
pub fn changed(before: &Options, after: &Options) -> bool {
    (&before.token, &before.user, &before.pass, &before.users, &before.default_permissions)
        != (&after.token, &after.user, &after.pass, &after.users, &after.default_permissions)
}

/// The permissions of the connection that presented `credentials` (which `holds`
/// accepted): a listed user's own, else `default_permissions`; `None` means everything
/// is allowed. A token or the single `user` gets none, as in nats-server.
pub fn permissions_for(options: &Options, credentials: &Credentials) -> Option<Permissions> {
    let (Some(given_user), Some(given_pass)) = (credentials.user.as_deref(), credentials.pass.as_deref()) else {
        return None;
    };
    if options.token.is_some() || options.users.is_empty() {
        return None;
    }
    let listed = options.users.iter().find(|user| same(given_user, &user.name) & same(given_pass, &user.password))?;
    listed.permissions.clone().or_else(|| options.default_permissions.clone())
}

fn same(given: &str, expected: &str) -> bool {
    let (given, expected) = (given.as_bytes(), expected.as_bytes());
    let mut difference = given.len() ^ expected.len();
    for (index, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ given.get(index).copied().unwrap_or(0));
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::super::options::User;
    use super::*;

    #[test]
    fn token_and_user_password() {
        let mut options = Options { token: Some("s3cret".into()), ..Options::default() };
        let mut connect = ConnectOptions::default();
        assert!(!accepts(&options, &connect));
        connect.auth_token = Some("s3cret".into());
        assert!(accepts(&options, &connect));
        connect.auth_token = Some("s3cre".into());
        assert!(!accepts(&options, &connect));
        options.token = None;
        options.user = Some("alice".into());
        options.pass = Some("pw".into());
        connect.user = Some("alice".into());
        connect.pass = Some("pw".into());
        assert!(accepts(&options, &connect));
        connect.pass = Some("pW".into());
        assert!(!accepts(&options, &connect));
    }

    #[test]
    fn any_listed_user_with_its_own_password() {
        let user =
            |name: &str, password: &str| User { name: name.into(), password: password.into(), permissions: None };
        let options = Options { users: vec![user("alice", "one"), user("bob", "two")], ..Options::default() };
        assert!(required(&options));
        let credentials =
            |user: &str, pass: &str| Credentials { token: None, user: Some(user.into()), pass: Some(pass.into()) };
        assert!(holds(&options, &credentials("alice", "one")));
        assert!(holds(&options, &credentials("bob", "two")));
        assert!(!holds(&options, &credentials("alice", "two")));
        assert!(!holds(&options, &credentials("carol", "one")));
        assert!(!holds(&options, &Credentials::default()));
        let changed_password = Options { users: vec![user("alice", "uno"), user("bob", "two")], ..Options::default() };
        assert!(changed(&options, &changed_password));
        assert!(!changed(&options, &options.clone()));
    }
}
