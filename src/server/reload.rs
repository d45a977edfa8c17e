//! SIGHUP: read the configuration again (the same command line: the `-c` file, then the
//! flags, which still win) and adopt what can change while running:
//!
//! - authorization (token, user and password, users' permissions, default_permissions):
//!   new connections are checked against the new settings, and so are open ones: a
//!   client whose credentials no longer hold gets `-ERR 'Authorization Violation'` and is
//!   closed, as nats-server's `reloadAuthorization` does; the others stay open under
//!   their user's new permissions, and each subscription those no longer allow is
//!   removed with a `Permissions Violation for Subscription` error. (nats-server 2.15,
//!   checked over the wire, leaves open connections on their old permissions; revoking
//!   a right should take effect, so jetcore applies the new ones.)
//! - logging level (`debug`, `trace`);
//! - lame duck timing (`lame_duck_duration`, `lame_duck_grace_period`);
//! - accounts' service and stream exports and imports, when the accounts themselves
//!   (names, order, JetStream) stay: each shard rebuilds its import tables, so an added
//!   import serves its next request and a removed one none (nats-server reloads them too).
//!
//! Anything else that changed (ports, store directory, shards, limits) is named in the
//! log and keeps its running value until a restart. A file that does not parse is
//! logged and the running configuration stays as it was.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use super::auth;
use super::control::{Control, ControlMessage};
use super::guard::Guard;
use super::interest::Subscription;
use super::monitor::CertificateSlot;
use super::node::Node;
use super::options::{self, Command, Options};
use super::outbound::CloseReason;
use super::permissions;
use super::shard_ops::ConnectionView;

pub struct Reloader {
    command_line: Vec<String>,
    current: Options,
    /// The HTTPS monitor's certificate, when it serves one.
    https_certificate: Option<CertificateSlot>,
}

impl Reloader {
    pub fn new(command_line: Vec<String>, current: Options, https_certificate: Option<CertificateSlot>) -> Reloader {
        Reloader { command_line, current, https_certificate }
    }

    /// Lame duck's duration and grace period as configured now.
    pub fn lame_duck_timing(&self) -> (Duration, Duration) {
        (self.current.lame_duck_duration, self.current.lame_duck_grace_period)
    }

    /// Re-reads the configuration and hands what may change to every shard.
    pub fn reload(&mut self, control: &Control) {
        let mut reloaded = match options::parse_args(self.command_line.clone()) {
            Ok(Command::Run(options)) => *options,
            Ok(_) => return,
            Err(error) => {
                tracing::error!("Failed to reload configuration, keeping the running one: {error}");
                return;
            }
        };
        // The files are read again even when their names did not change: a renewed
        // certificate is the usual reason to reload.
        match reloaded.tls.as_ref().map(super::tls::TlsContext::load).transpose() {
            Ok(context) => reloaded.tls_context = context,
            Err(error) => {
                tracing::error!("Failed to reload configuration, keeping the running one: {error}");
                return;
            }
        }
        if let (Some(slot), Some(context)) = (&self.https_certificate, &reloaded.tls_context) {
            *slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = context.config.clone();
        }
        let (next, changed, ignored) = adopt(&self.current, &reloaded);
        for name in &ignored {
            tracing::warn!("Reload: {name} changed but cannot change while running; restart to apply it");
        }
        if changed.is_empty() {
            tracing::info!("Reloaded: nothing that can change live changed");
            return;
        }
        tracing::info!("Reloaded: {}", changed.join(", "));
        if super::logging::level_for(&next) != super::logging::level_for(&self.current) {
            super::logging::set_level(super::logging::level_for(&next));
        }
        let shared = Arc::new(next.clone());
        control.post_all(|| ControlMessage::Reload(shared.clone()));
        self.current = next;
    }
}

/// The running options with the live-changeable settings of `reloaded`, the names of
/// those that changed, and the names of settings that changed but need a restart.
pub fn adopt(current: &Options, reloaded: &Options) -> (Options, Vec<&'static str>, Vec<&'static str>) {
    let mut next = current.clone();
    let mut changed = Vec::new();
    macro_rules! live {
        ($($field:ident),*) => {$(
            if current.$field != reloaded.$field {
                next.$field = reloaded.$field.clone();
                changed.push(stringify!($field));
            }
        )*};
    }
    live!(
        token,
        user,
        pass,
        users,
        nkeys,
        default_permissions,
        no_auth_user,
        debug,
        trace,
        lame_duck_duration,
        lame_duck_grace_period,
        tls,
        tls_context,
        allow_non_tls
    );
    let mut ignored = Vec::new();
    macro_rules! fixed {
        ($($field:ident),*) => {$(
            if current.$field != reloaded.$field { ignored.push(stringify!($field)); }
        )*};
    }
    // Account ids are fixed while the server runs (the routing tables are keyed by them,
    // JetStream serves one of them): a change to the accounts keeps the running
    // accounts and the users, keys and `no_auth_user` that go with them, until a restart.
    // Exports and imports alone can change.
    if current.accounts != reloaded.accounts && current.accounts.same_but_imports(&reloaded.accounts) {
        next.accounts = reloaded.accounts.clone();
        changed.push("accounts' exports and imports");
    } else if current.accounts != reloaded.accounts {
        ignored.push("accounts");
        next.users = current.users.clone();
        next.nkeys = current.nkeys.clone();
        next.default_permissions = current.default_permissions.clone();
        next.no_auth_user = current.no_auth_user.clone();
        changed.retain(|field| !matches!(*field, "users" | "nkeys" | "default_permissions" | "no_auth_user"));
    }
    // `port` is left out: `-p -1` picks a port at start, so it always "changed".
    fixed!(
        host,
        server_name,
        jetstream,
        store_dir,
        http_port,
        https_port,
        log_file,
        pid_file,
        shards,
        max_payload,
        max_control_line,
        max_pending,
        max_connections,
        max_subscriptions,
        write_deadline,
        auth_timeout,
        ping_interval,
        ping_max_outstanding,
        sync_interval,
        max_memory_store,
        max_file_store
    );
    (next, changed, ignored)
}

/// On a shard: new connections use the reloaded settings, and when authorization
/// changed, open connections whose credentials no longer hold are closed.
pub fn apply_on_shard(node: &Rc<Node>, options: Arc<Options>) {
    let previous = node.ops.live_options();
    node.ops.set_live_options(std::rc::Rc::new((*options).clone()));
    if previous.accounts != options.accounts {
        node.rebuild_imports(&options.accounts);
    }
    if auth::changed(&previous, &options) {
        close_unauthorized(node, &options);
        apply_permissions(node, &options);
    }
}

/// Gives every authenticated connection its user's permissions under `options`, and
/// removes the subscriptions those no longer allow.
fn apply_permissions(node: &Rc<Node>, options: &Options) {
    for view in node.ops.connections() {
        let Some(credentials) = view.credentials.borrow().clone() else { continue };
        if view.outbound.closed().is_some() {
            continue;
        }
        let guard = auth::permissions_for(options, &credentials).map(|permissions| Rc::new(Guard::new(permissions)));
        view.outbound.set_guard(guard.clone());
        let Some(guard) = guard else { continue };
        let refused: Vec<Rc<Subscription>> = view
            .subscriptions
            .borrow()
            .values()
            .filter(|subscription| !guard.may_subscribe(&subscription.subject, subscription.queue.as_deref()))
            .cloned()
            .collect();
        for subscription in refused {
            view.subscriptions.borrow_mut().remove(&subscription.sid);
            node.unsubscribe(&subscription);
            let text = permissions::subscribe_violation(&subscription.subject, subscription.queue.as_deref());
            tracing::info!(client = view.id, "{text} after reload; subscription removed");
            view.outbound.push(|out| crate::protocol::encode_err(out, &text));
        }
    }
}

/// Closes, with `-ERR 'Authorization Violation'`, every authenticated connection whose
/// CONNECT credentials `options` no longer accept. A connection still before CONNECT is
/// checked against the new settings when its CONNECT comes. A changed bcrypt hash is
/// compared on the shard's blocking thread, one task per such connection.
fn close_unauthorized(node: &Node, options: &Options) {
    for view in node.ops.connections() {
        let Some(credentials) = view.credentials.borrow().clone() else { continue };
        match auth::verdict(options, &credentials) {
            auth::Verdict::Accepted => {}
            auth::Verdict::Refused => close_refused(&view),
            auth::Verdict::Bcrypt { hash, given } => {
                glommio::spawn_local(async move {
                    let matches = glommio::executor().spawn_blocking(move || auth::bcrypt_matches(&hash, &given)).await;
                    if !matches {
                        close_refused(&view);
                    }
                })
                .detach();
            }
        }
    }
}

fn close_refused(view: &ConnectionView) {
    let (client, ip, port) = (view.id, &view.ip, view.port);
    tracing::info!(client, %ip, port, "Authorization Violation after reload; closing");
    view.outbound.close_with_error("Authorization Violation", CloseReason::ProtocolError);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_and_levels_change_live_and_ports_do_not() {
        let current = Options { port: None, ..Options::default() };
        let reloaded =
            Options { token: Some("t".into()), debug: true, max_payload: 10, port: Some(4222), ..Options::default() };
        let (next, changed, ignored) = adopt(&current, &reloaded);
        assert_eq!(changed, vec!["token", "debug"]);
        assert_eq!(ignored, vec!["max_payload"]);
        assert_eq!(next.token.as_deref(), Some("t"));
        assert!(next.debug);
        assert_eq!(next.max_payload, current.max_payload);
        assert_eq!(next.port, None);
    }

    #[test]
    fn a_change_of_accounts_keeps_the_running_accounts_and_their_users() {
        let mut current = Options::default();
        super::super::conf::apply("accounts { A { users: [{user: a, password: a}] } }\n", &mut current).unwrap();
        let mut reloaded = Options::default();
        let text = "accounts { A { users: [{user: a, password: a}] }, B { users: [{user: b, password: b}] } }\n";
        super::super::conf::apply(text, &mut reloaded).unwrap();
        let (next, changed, ignored) = adopt(&current, &reloaded);
        assert!(ignored.contains(&"accounts"), "{ignored:?}");
        assert!(!changed.contains(&"users"), "{changed:?}");
        assert_eq!(next.users, current.users);
        assert_eq!(next.accounts, current.accounts);
    }

    #[test]
    fn a_change_of_imports_alone_is_adopted() {
        let text = |imports: &str| {
            format!("accounts {{ A {{ exports: [{{service: \"req.>\"}}] }}, B {{ imports: [{imports}] }} }}\n")
        };
        let mut current = Options { jetstream: false, ..Options::default() };
        super::super::conf::apply(&text(""), &mut current).unwrap();
        let mut reloaded = Options { jetstream: false, ..Options::default() };
        super::super::conf::apply(&text("{service: {account: A, subject: req.x}}"), &mut reloaded).unwrap();
        let (next, changed, ignored) = adopt(&current, &reloaded);
        assert_eq!((changed, ignored), (vec!["accounts' exports and imports"], vec![]));
        assert_eq!(next.accounts, reloaded.accounts);
    }
}
