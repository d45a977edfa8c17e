//! `verify_and_map`: the connection's user is the configured user whose name is one of
//! the client certificate's names, tried in nats-server's order
//! (`checkClientTLSCertSubject`): e-mail addresses, DNS names, URIs, then the subject.

use rustls::ServerConnection;

use super::der::{self, CertificateNames};
use crate::server::options::{Options, User};

/// The names of the client's certificate (the first of its chain), if it sent one.
pub fn peer_names(session: &ServerConnection) -> Option<CertificateNames> {
    let certificate = session.peer_certificates()?.first()?;
    der::names(certificate)
}

/// The user `names` maps to under `options`, if any.
pub fn mapped_user<'a>(options: &'a Options, names: &CertificateNames) -> Option<&'a User> {
    names.in_order().find_map(|name| options.users.iter().find(|user| !name.is_empty() && user.name == name))
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
