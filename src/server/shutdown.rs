//! Graceful shutdown and lame duck.
//!
//! Shutdown (SIGTERM, SIGINT, or the end of lame duck) runs three steps on every shard,
//! each only after every shard finished the previous one:
//!
//! 1. **Stop intake**: listeners stop accepting; connection readers stop reading. Nothing
//!    new enters the server. Connections stay open so that what is owed can be written.
//! 2. **Settle stores**: a mesh barrier (a call to every peer) makes sure every store and
//!    ack sent before step 1 has arrived; then the shard waits until every store handed to
//!    its streams has reached disk (group commit and fdatasync) and its pub ack is sent;
//!    every waiting pull request is answered `409 Server Shutdown`.
//! 3. **Persist and close**: another barrier lets acks and pub acks reach their shards;
//!    then every durable consumer's state is written and streams are checkpointed
//!    (`StreamService::checkpoint`), and every connection is closed after its queued
//!    bytes are written.
//!
//! The process then exits 0. Each step has `SHUTDOWN_STEP_TIMEOUT`; a second signal
//! exits at once. Neither path can lose an acknowledged message: a pub ack is only ever
//! sent after its record is durable, so what the steps add is that in-flight publishes
//! get their acks and consumers' last acks are on disk.

use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::control::{Control, ControlMessage, ShutdownStep};
use super::envelope::ShardCall;
use super::node::Node;
use super::outbound::CloseReason;
use super::shard_ops::Phase;
use crate::limits;
use crate::shard::ShardId;

/// Runs the three steps across all shards (from a plain thread). Returns false when a
/// step timed out.
pub fn shut_down(control: &Control) -> bool {
    let steps = [ShutdownStep::StopIntake, ShutdownStep::SettleStores, ShutdownStep::PersistAndClose];
    for step in steps {
        let started = Instant::now();
        let (done, finished) = mpsc::channel();
        control.post_all(|| ControlMessage::Shutdown { step, done: done.clone() });
        drop(done);
        let mut waiting: Vec<ShardId> = (0..control.shard_count()).map(ShardId).collect();
        while !waiting.is_empty() {
            let left = limits::SHUTDOWN_STEP_TIMEOUT.saturating_sub(started.elapsed());
            match finished.recv_timeout(left) {
                Ok(shard) => waiting.retain(|s| *s != shard),
                Err(_) => {
                    tracing::error!("shutdown step {step:?} did not finish on {waiting:?} in time");
                    return false;
                }
            }
        }
        tracing::debug!("shutdown step {step:?} done in {:?}", started.elapsed());
    }
    true
}

/// Lame duck (from a plain thread): refuse new connections, tell clients, wait the grace
/// period, close clients spread over the rest of the duration, then shut down.
pub fn lame_duck(control: &Control, connections: &AtomicUsize, duration: Duration, grace: Duration) -> bool {
    tracing::info!("Entering lame duck mode, stop accepting new clients");
    control.post_all(|| ControlMessage::LameDuck);
    let grace = grace.min(duration);
    let started = Instant::now();
    if !wait_for_no_connections(connections, grace) {
        let spread = duration.saturating_sub(grace);
        tracing::info!("Closing existing clients over {spread:?}");
        control.post_all(|| ControlMessage::CloseConnections { over: spread });
        wait_for_no_connections(connections, spread + Duration::from_secs(1));
    }
    tracing::info!("Lame duck mode over after {:?}", started.elapsed());
    shut_down(control)
}

/// Waits up to `wait` for every client to be gone; true if they are.
fn wait_for_no_connections(connections: &AtomicUsize, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        if connections.load(Ordering::Relaxed) == 0 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20).min(deadline.saturating_duration_since(Instant::now())));
    }
    connections.load(Ordering::Relaxed) == 0
}

/// One shutdown step on this shard.
pub async fn run_step(node: &Rc<Node>, step: ShutdownStep) {
    match step {
        ShutdownStep::StopIntake => node.ops.advance(Phase::Stopping),
        ShutdownStep::SettleStores => {
            barrier(node).await;
            node.ops.stores_settled().await;
            for (_, service) in node.jetstream.iter() {
                // Here, not in the last step: the statuses may go to clients of other
                // shards, and the next step's barrier lets them arrive before any
                // connection closes.
                service.answer_waiting_pulls_for_shutdown();
                service.run_consumers().await;
            }
            node.flush_batches();
        }
        ShutdownStep::PersistAndClose => {
            barrier(node).await;
            for (_, service) in node.jetstream.iter() {
                // Acks already applied may still wait in the consumers' effect queue as
                // state changes; carry them out so the forced persist sees them dirty.
                service.run_consumers().await;
                service.checkpoint().await;
            }
            node.flush_batches();
            node.ops.advance(Phase::Closing);
            node.ops.close_all(CloseReason::ServerShutdown);
            wait_until_closed(node).await;
        }
    }
}

/// A call to every peer and back: everything a peer sent this shard before answering
/// has been applied here once it returns (each ring is first in, first out).
async fn barrier(node: &Rc<Node>) {
    let peers: Vec<ShardId> = node.peers().collect();
    for peer in peers {
        node.call(peer, ShardCall::Barrier).await;
    }
}

/// Waits (bounded) for this shard's connections to finish writing and close.
async fn wait_until_closed(node: &Rc<Node>) {
    let deadline = Instant::now() + limits::SHUTDOWN_STEP_TIMEOUT / 2;
    while node.ops.connection_count() > 0 && Instant::now() < deadline {
        glommio::timer::sleep(Duration::from_millis(5)).await;
    }
}

/// Lame duck on this shard: no more accepts; each client gets `INFO {"ldm":true}` so
/// clients that understand it reconnect elsewhere.
pub fn enter_lame_duck(node: &Rc<Node>) {
    node.ops.advance(Phase::LameDuck);
    for view in node.ops.connections() {
        view.outbound.push(|out| super::info::encode_lame_duck(out, node));
    }
}

/// Closes this shard's connections one at a time, evenly over `over`.
pub async fn close_spread(node: Rc<Node>, over: Duration) {
    let connections = node.ops.connections();
    if connections.is_empty() {
        return;
    }
    let pause = over / connections.len() as u32;
    for view in connections {
        view.outbound.close(CloseReason::ServerShutdown);
        glommio::timer::sleep(pause).await;
    }
}
