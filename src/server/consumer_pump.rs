//! The shard's consumer pump: one task that drives the shard's consumer timer wheel and
//! carries out what consumers decided (deliveries, statuses, advisories), in order.
//! Durable consumers' state files are written by a second task beside it.
//! It sleeps until the wheel's next deadline or until a consumer call wakes it, never on a
//! fixed period (DESIGN §5: one wheel per shard; ticks are milliseconds of a monotonic clock).

use std::rc::{Rc, Weak};
use std::time::Duration;

use super::account::AccountId;
use super::node::Node;
use crate::jetstream::service::{LocalFuture, Outlet, StreamService};

/// The service's view of the server: interest and publishing on this shard's node, in
/// the service's account.
struct NodeOutlet(Weak<Node>, AccountId);

impl Outlet for NodeOutlet {
    fn has_interest(&self, subject: &str) -> bool {
        self.0.upgrade().is_some_and(|node| node.has_interest(self.1, subject.as_bytes()))
    }

    fn publish(&self, to: &str, subject: &[u8], reply: Option<&[u8]>, headers: Option<&[u8]>, payload: &[u8]) {
        if let Some(node) = self.0.upgrade() {
            if reply.is_some_and(|reply| reply.starts_with(b"$JS.ACK.")) {
                let deliveries = &node.ops.stats.jetstream_deliveries;
                deliveries.set(deliveries.get() + 1);
            }
            node.publish_internal_in(self.1, to.as_bytes(), subject, reply, headers, payload);
        }
    }

    fn republish<'a>(&'a self, subject: &'a str, headers: &'a [u8], payload: &'a [u8]) -> LocalFuture<'a> {
        let node = self.0.upgrade();
        Box::pin(async move {
            if let Some(node) = node {
                node.publish_republished(self.1, subject.as_bytes(), headers, payload).await;
            }
        })
    }

    fn stored(&self, ok: bool, latency: Duration) {
        if let Some(node) = self.0.upgrade() {
            node.ops.store_finished(ok, latency);
        }
    }
}

/// Connects the consumers of `account`'s service to `node`, restores durable consumers
/// and starts the pump. Call once per service, before clients connect.
pub async fn start(node: &Rc<Node>, account: AccountId, service: Rc<StreamService>) {
    service.attach_outlet(Rc::new(NodeOutlet(Rc::downgrade(node), account)));
    tracing::debug!(shard = node.shard.0, "restoring durable consumers");
    service.load_consumers().await;
    tracing::debug!(shard = node.shard.0, "durable consumers restored");
    glommio::spawn_local(Rc::clone(&service).run_persister()).detach();
    glommio::spawn_local(run(service)).detach();
}

/// Sleeps until the wheel's next deadline, or with no timer armed until a consumer call
/// wakes it: an idle shard's pump arms no timer. Arming a timer always wakes the pump
/// (`ConsumerRegistry::enqueue`), so a deadline sooner than the one slept for is not missed.
async fn run(service: Rc<StreamService>) {
    loop {
        service.run_consumers().await;
        let now = service.consumers_now();
        match service.consumers_next_wake() {
            Some(wake) => {
                // At least one tick: the wheel has just advanced to `now`.
                let sleep = Duration::from_millis(wake.since(now)).max(Duration::from_millis(1));
                futures_lite::future::or(service.consumers_notified(), glommio::timer::sleep(sleep)).await;
            }
            None => service.consumers_notified().await,
        }
    }
}

impl Node {
    /// Interest in `pattern` appeared or went away on some shard: consumers of this
    /// shard's streams that deliver there re-check it.
    /// `key`: a routing key whose interest changed; the consumers of its account re-check.
    pub(super) fn consumer_interest_changed(&self, key: &[u8]) {
        let (account, pattern) = super::account::key_account(key);
        if let Some(service) = self.jetstream.get(account) {
            service.consumer_interest_changed(pattern);
        }
    }
}
