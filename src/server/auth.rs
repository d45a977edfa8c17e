//! Client authentication: a token, or one user and password (DESIGN §1). Secrets are
//! compared in constant time.

use super::options::Options;
use crate::protocol::ConnectOptions;

/// Whether connections must authenticate (and so get a deadline for CONNECT).
pub fn required(options: &Options) -> bool {
    options.token.is_some() || options.user.is_some()
}

/// Whether a CONNECT's credentials satisfy the server's.
pub fn accepts(options: &Options, connect: &ConnectOptions) -> bool {
    if let Some(token) = &options.token {
        return connect.auth_token.as_deref().is_some_and(|given| same(given, token));
    }
    if let Some(user) = &options.user {
        let password = options.pass.as_deref().unwrap_or("");
        let user_ok = connect.user.as_deref().is_some_and(|given| same(given, user));
        let pass_ok = connect.pass.as_deref().is_some_and(|given| same(given, password));
        return user_ok & pass_ok;
    }
    true
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
}
