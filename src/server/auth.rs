//! Client authentication (DESIGN §1): a token, one user and password, listed users, and
//! nkey users who sign the nonce sent in INFO. A password or token may be a bcrypt hash
//! (`$2a$…`, as nats-server accepts); plain secrets are compared in constant time, and
//! bcrypt, slow by design (tens of milliseconds), runs on the shard's blocking thread so
//! a login never stalls the shard's other connections.

use super::account::AccountId;
use super::nkey;
use super::options::Options;
use super::permissions::Permissions;
use crate::protocol::ConnectOptions;

/// Whether connections must authenticate (and so get a deadline for CONNECT).
pub fn required(options: &Options) -> bool {
    options.token.is_some() || options.user.is_some() || !options.users.is_empty() || !options.nkeys.is_empty()
}

/// Whether INFO carries a nonce: when an nkey user could sign it, as nats-server.
pub fn nonce_required(options: &Options) -> bool {
    !options.nkeys.is_empty()
}

/// What a client presented in CONNECT, kept for its connection's life so a reload can
/// check it against new settings (as nats-server keeps the client's options).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Credentials {
    pub token: Option<String>,
    pub user: Option<String>,
    pub pass: Option<String>,
    /// The public nkey whose signature of this connection's nonce verified.
    pub nkey: Option<String>,
    /// The bcrypt hash `pass` or `token` was verified against: a reload that keeps the
    /// hash accepts these credentials again without running bcrypt.
    pub verified_hash: Option<String>,
}

impl Credentials {
    /// `nonce`: the one this connection's INFO carried; the CONNECT's nkey counts only
    /// when its `sig` is that key's signature of it.
    pub fn of(connect: &ConnectOptions, nonce: Option<&str>) -> Credentials {
        let signed = |key: &String| match (connect.sig.as_deref(), nonce) {
            (Some(signature), Some(nonce)) => !nonce.is_empty() && nkey::verifies(key, nonce, signature),
            _ => false,
        };
        Credentials {
            token: connect.auth_token.clone(),
            user: connect.user.clone(),
            pass: connect.pass.clone(),
            nkey: connect.nkey.clone().filter(signed),
            verified_hash: None,
        }
    }
}

/// The answer of [`verdict`]: settled, or a bcrypt comparison still to run.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    Refused,
    Bcrypt { hash: String, given: String },
}

/// Whether `credentials` satisfy the server's settings in `options`, as nats-server's
/// `processClientOrLeafAuthentication` decides: token, else a signed nkey, else the
/// user named in CONNECT with its password.
pub fn verdict(options: &Options, credentials: &Credentials) -> Verdict {
    if let Some(token) = &options.token {
        return secret(token, credentials.token.as_deref(), credentials);
    }
    if !required(options) || no_auth_identity(options, credentials).is_some() {
        return Verdict::Accepted;
    }
    if let Some(key) = &credentials.nkey {
        return match options.nkeys.iter().any(|listed| &listed.public_key == key) {
            true => Verdict::Accepted,
            false => Verdict::Refused,
        };
    }
    let Some(given_user) = credentials.user.as_deref() else { return Verdict::Refused };
    let single = options.user.as_deref().map(|user| (user, options.pass.as_deref().unwrap_or("")));
    let listed = options.users.iter().map(|user| (user.name.as_str(), user.password.as_str()));
    match single.into_iter().chain(listed).find(|(user, _)| *user == given_user) {
        Some((_, password)) => secret(password, credentials.pass.as_deref(), credentials),
        None => Verdict::Refused,
    }
}

/// [`verdict`] to the end: a bcrypt comparison runs on the shard's blocking thread.
/// On success the hash is remembered in `credentials` (see `verified_hash`).
pub async fn check(options: &Options, credentials: &mut Credentials) -> bool {
    match verdict(options, credentials) {
        Verdict::Accepted => true,
        Verdict::Refused => false,
        Verdict::Bcrypt { hash, given } => {
            let verified = hash.clone();
            let matches = glommio::executor().spawn_blocking(move || bcrypt_matches(&hash, &given)).await;
            if matches {
                credentials.verified_hash = Some(verified);
            }
            matches
        }
    }
}

/// Whether the authorization settings differ between `before` and `after`.
pub fn changed(before: &Options, after: &Options) -> bool {
    (&before.token, &before.user, &before.pass, &before.users, &before.nkeys, &before.default_permissions)
        != (&after.token, &after.user, &after.pass, &after.users, &after.nkeys, &after.default_permissions)
        || before.no_auth_user != after.no_auth_user
}

/// Who a client that presented nothing connects as: `no_auth_user`, a listed user name
/// or nkey (nats-server's rule: no user, password, token or nkey in CONNECT).
enum Identity<'a> {
    User(&'a super::options::User),
    Nkey(&'a super::options::NkeyUser),
}

fn no_auth_identity<'a>(options: &'a Options, credentials: &Credentials) -> Option<Identity<'a>> {
    let presented_nothing = credentials.user.is_none()
        && credentials.pass.is_none()
        && credentials.token.is_none()
        && credentials.nkey.is_none();
    let name = options.no_auth_user.as_deref().filter(|_| presented_nothing)?;
    if let Some(user) = options.users.iter().find(|user| user.name == name) {
        return Some(Identity::User(user));
    }
    options.nkeys.iter().find(|key| key.public_key == name).map(Identity::Nkey)
}

/// The listed user or nkey `credentials` (accepted by [`verdict`]) stand for.
fn identity<'a>(options: &'a Options, credentials: &Credentials) -> Option<Identity<'a>> {
    if let Some(identity) = no_auth_identity(options, credentials) {
        return Some(identity);
    }
    if let Some(key) = &credentials.nkey {
        return options.nkeys.iter().find(|listed| &listed.public_key == key).map(Identity::Nkey);
    }
    let given_user = credentials.user.as_deref()?;
    options.users.iter().find(|user| user.name == given_user).map(Identity::User)
}

/// The account of the connection that presented `credentials` (accepted by
/// [`verdict`]): its user's account, `$G` for a token, the single user, or a user
/// outside any account.
pub fn account_for(options: &Options, credentials: &Credentials) -> AccountId {
    if options.token.is_some() {
        return AccountId::GLOBAL;
    }
    let account = match identity(options, credentials) {
        Some(Identity::User(user)) => user.account.as_deref(),
        Some(Identity::Nkey(key)) => key.account.as_deref(),
        None => None,
    };
    account.and_then(|name| options.accounts.id_of(name)).unwrap_or(AccountId::GLOBAL)
}

/// The permissions of the connection that presented `credentials` (which [`verdict`]
/// accepted): a listed user's or nkey's own, else `default_permissions`; `None` means
/// everything is allowed. A token or the single `user` gets none, as in nats-server.
pub fn permissions_for(options: &Options, credentials: &Credentials) -> Option<Permissions> {
    if options.token.is_some() {
        return None;
    }
    let own = match identity(options, credentials)? {
        Identity::User(user) => user.permissions.clone(),
        Identity::Nkey(key) => key.permissions.clone(),
    };
    own.or_else(|| options.default_permissions.clone())
}

/// nats-server's test for a bcrypt hash: `$2a$`, `$2b$`, `$2x$` or `$2y$`, then a
/// two-digit cost and `$`.
pub fn is_bcrypt(secret: &str) -> bool {
    let bytes = secret.as_bytes();
    bytes.len() >= 7
        && bytes.starts_with(b"$2")
        && matches!(bytes[2], b'a' | b'b' | b'x' | b'y')
        && bytes[3] == b'$'
        && bytes[4].is_ascii_digit()
        && bytes[5].is_ascii_digit()
        && bytes[6] == b'$'
}

/// Whether `given` hashes to `hash` (a malformed hash matches nothing).
pub fn bcrypt_matches(hash: &str, given: &str) -> bool {
    bcrypt::verify(given, hash).unwrap_or(false)
}

/// A configured secret against the one presented: plain text in constant time, or a
/// bcrypt hash (settled at once when these credentials already verified against it).
fn secret(expected: &str, given: Option<&str>, credentials: &Credentials) -> Verdict {
    let given = given.unwrap_or("");
    let accepted = if !is_bcrypt(expected) {
        same(given, expected)
    } else if credentials.verified_hash.as_deref() == Some(expected) {
        true
    } else {
        return Verdict::Bcrypt { hash: expected.to_string(), given: given.to_string() };
    };
    match accepted {
        true => Verdict::Accepted,
        false => Verdict::Refused,
    }
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
    use super::super::options::{NkeyUser, User};
    use super::*;

    fn credentials(user: &str, pass: &str) -> Credentials {
        Credentials { user: Some(user.into()), pass: Some(pass.into()), ..Credentials::default() }
    }

    #[test]
    fn token_and_user_password() {
        let mut options = Options { token: Some("s3cret".into()), ..Options::default() };
        let mut connect = ConnectOptions::default();
        let verdict_of =
            |options: &Options, connect: &ConnectOptions| verdict(options, &Credentials::of(connect, None));
        assert_eq!(verdict_of(&options, &connect), Verdict::Refused);
        connect.auth_token = Some("s3cret".into());
        assert_eq!(verdict_of(&options, &connect), Verdict::Accepted);
        connect.auth_token = Some("s3cre".into());
        assert_eq!(verdict_of(&options, &connect), Verdict::Refused);
        options.token = None;
        options.user = Some("alice".into());
        options.pass = Some("pw".into());
        connect.user = Some("alice".into());
        connect.pass = Some("pw".into());
        assert_eq!(verdict_of(&options, &connect), Verdict::Accepted);
        connect.pass = Some("pW".into());
        assert_eq!(verdict_of(&options, &connect), Verdict::Refused);
    }

    #[test]
    fn any_listed_user_with_its_own_password() {
        let user =
            |name: &str, password: &str| User { name: name.into(), password: password.into(), ..User::default() };
        let options = Options { users: vec![user("alice", "one"), user("bob", "two")], ..Options::default() };
        assert!(required(&options));
        assert_eq!(verdict(&options, &credentials("alice", "one")), Verdict::Accepted);
        assert_eq!(verdict(&options, &credentials("bob", "two")), Verdict::Accepted);
        assert_eq!(verdict(&options, &credentials("alice", "two")), Verdict::Refused);
        assert_eq!(verdict(&options, &credentials("carol", "one")), Verdict::Refused);
        assert_eq!(verdict(&options, &Credentials::default()), Verdict::Refused);
        let changed_password = Options { users: vec![user("alice", "uno"), user("bob", "two")], ..Options::default() };
        assert!(changed(&options, &changed_password));
        assert!(!changed(&options, &options.clone()));
    }

    #[test]
    fn a_bcrypt_password_is_compared_as_a_hash_never_as_text() {
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        assert!(is_bcrypt(&hash));
        let options = Options {
            users: vec![User { name: "alice".into(), password: hash.clone(), ..User::default() }],
            ..Options::default()
        };
        // The hash itself as a password is not the password.
        for given in ["s3cret", "wrong", hash.as_str()] {
            let Verdict::Bcrypt { hash: asked, given: presented } = verdict(&options, &credentials("alice", given))
            else {
                panic!("a bcrypt entry needs the comparison");
            };
            assert_eq!(bcrypt_matches(&asked, &presented), given == "s3cret");
        }
        let verified = Credentials { verified_hash: Some(hash.clone()), ..credentials("alice", "s3cret") };
        assert_eq!(verdict(&options, &verified), Verdict::Accepted);
        for text in ["$2a$1$x", "$3a$10$x", "$2c$10$x", "2a$10$abc", "plain"] {
            assert!(!is_bcrypt(text), "{text}");
        }
        assert!(!bcrypt_matches("$2a$10$notahash", "s3cret"));
    }

    #[test]
    fn an_nkey_counts_only_when_listed() {
        let key = "UC6NLCN7AS34YOJVCYD4PJ3QB7QGLYG5B5IMBT25VW5K4TNUJODM7BOX".to_string();
        let options =
            Options { nkeys: vec![NkeyUser { public_key: key.clone(), ..NkeyUser::default() }], ..Options::default() };
        assert!(required(&options) && nonce_required(&options));
        let signed = Credentials { nkey: Some(key.clone()), ..Credentials::default() };
        assert_eq!(verdict(&options, &signed), Verdict::Accepted);
        let other = Credentials { nkey: Some(key.replace('U', "V")), ..Credentials::default() };
        assert_eq!(verdict(&options, &other), Verdict::Refused);
        // A CONNECT with the key but no valid signature of a nonce carries no nkey.
        let connect = ConnectOptions { nkey: Some(key), sig: Some("AAAA".into()), ..ConnectOptions::default() };
        assert_eq!(Credentials::of(&connect, Some("nonce")).nkey, None);
        assert_eq!(Credentials::of(&connect, None).nkey, None);
    }
}
