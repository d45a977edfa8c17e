//! `verify_and_map`: the connection's user is the configured user the client
//! certificate names, tried in nats-server's order (`checkClientTLSCertSubject`): a user
//! named as one of its e-mail addresses, DNS names or URIs; then a user whose name is a
//! distinguished name equal to the subject's (attribute types without case), then one
//! with the same RDNs in another order; then the subject as Go writes it, with its
//! domain components (`…,DC=example,DC=com`) and then without.

use rustls::ServerConnection;

use super::der::{self, CertificateNames};
use super::distinguished_name::DistinguishedName;
use crate::server::options::{Options, User};

/// The names of the client's certificate (the first of its chain), if it sent one.
pub fn peer_names(session: &ServerConnection) -> Option<CertificateNames> {
    let certificate = session.peer_certificates()?.first()?;
    der::names(certificate)
}

/// The user `names` maps to under `options`, if any.
pub fn mapped_user<'a>(options: &'a Options, names: &CertificateNames) -> Option<&'a User> {
    let named = |name: &str| options.users.iter().find(|user| !name.is_empty() && user.name == name);
    names
        .alternative_names()
        .find_map(named)
        .or_else(|| {
            let subject = names.subject_dn.as_ref()?;
            let users: Vec<(&User, DistinguishedName)> =
                options.users.iter().filter_map(|user| Some((user, DistinguishedName::parse(&user.name)?))).collect();
            let equal = users.iter().find(|(_, name)| name.equals(subject));
            equal.or_else(|| users.iter().find(|(_, name)| name.same_rdns(subject))).map(|(user, _)| *user)
        })
        .or_else(|| names.subject_with_dcs.as_deref().and_then(named))
        .or_else(|| named(&names.subject))
}

/// The credentials a `verify_and_map` client authenticates with: its mapped user's.
/// `None`: no certificate, or no user of that name.
pub fn credentials(options: &Options, names: Option<&CertificateNames>) -> Option<crate::server::auth::Credentials> {
    let user = mapped_user(options, names?)?;
    tracing::debug!("Using certificate name for auth [{:?}]", user.name);
    // The certificate stands in for the password: a bcrypt entry counts as verified.
    let verified_hash = crate::server::auth::is_bcrypt(&user.password).then(|| user.password.clone());
    Some(crate::server::auth::Credentials {
        user: Some(user.name.clone()),
        pass: Some(user.password.clone()),
        verified_hash,
        ..Default::default()
    })
}
