//! Returning a shard's freed memory to the OS once its connections stop closing.
//!
//! The allocator (mimalloc in the binary) frees whole pages to the OS only after a delay,
//! and only when it is next called: a shard that goes quiet right after a burst of closes
//! (a storm of 3 000 connections dropping at once, a connect/close loop that ends) keeps
//! every page the closed connections used, counted in RSS, for as long as it stays quiet
//! (68 MiB against a 25 MiB start 5 s after the storm, perf/limits.md 2026-12-02). Purging
//! at once on every free instead cost pubsub throughput. So each shard checks once per
//! `MEMORY_RELEASE_CHECK_INTERVAL`: once connections closed since the last check and none
//! since, it calls the release the binary installed, once per quiet spell.

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

/// Runs for the shard's life (detached).
pub async fn release_after_closes(node: Rc<Node>) {
    let Some(release) = RELEASE.get().copied() else { return };
    let mut closed_seen = node.ops.stats.connections_closed.get();
    let mut owed = false;
    loop {
        glommio::timer::sleep(limits::MEMORY_RELEASE_CHECK_INTERVAL).await;
        let closed = node.ops.stats.connections_closed.get();
        if closed != closed_seen {
            closed_seen = closed;
            owed = true;
        } else if owed {
            owed = false;
            release();
        }
    }
}
