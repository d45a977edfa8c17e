//! Returning a shard's freed memory to the OS once its connections stop closing.
//!
//! The allocator (mimalloc in the binary) frees whole pages to the OS only after a delay,
//! and only when it is next called: a shard that goes quiet right after a burst of closes
//! (a storm of 3 000 connections dropping at once, a connect/close loop that ends) keeps
//! every page the closed connections used, counted in RSS, for as long as it stays quiet
//! (68 MiB against a 25 MiB start 5 s after the storm, perf/limits.md 2026-12-02). Purging
//! at once on every free instead cost pubsub throughput. So after a close each shard checks
//! once per `MEMORY_RELEASE_CHECK_INTERVAL`: once no connection closed in an interval, it
//! calls the release the binary installed, once per quiet spell, and sleeps until the next
//! close (no timer while nothing closes: issue 28's idle shard stays asleep).

use std::rc::Rc;
use std::sync::OnceLock;

use super::node::Node;
use crate::limits;

static RELEASE: OnceLock<fn()> = OnceLock::new();

/// Installs what a shard calls once its connections stop closing (the binary passes
/// mimalloc's `mi_collect(false)`); the first call wins. Without one, nothing is called.
pub fn set_release(release: fn()) {
    let _ = RELEASE.set(release);
}

/// Runs for the shard's life (detached). Asleep until a connection closes, so an idle
/// shard is never woken by it; then it checks once per interval until closes stop.
pub async fn release_after_closes(node: Rc<Node>) {
    let Some(release) = RELEASE.get().copied() else { return };
    let stats = &node.ops.stats;
    loop {
        stats.connection_closed.notified().await;
        let mut closed_seen = stats.connections_closed.get();
        loop {
            glommio::timer::sleep(limits::MEMORY_RELEASE_CHECK_INTERVAL).await;
            let closed = stats.connections_closed.get();
            if closed == closed_seen {
                break;
            }
            closed_seen = closed;
        }
        // Closes during the intervals left the signal set: one more quiet interval and a
        // second release follow, then the wait holds.
        release();
    }
}
