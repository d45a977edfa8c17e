//! Per-core runtime: pinned glommio executors, the cross-shard mesh, placement, probe.
//!
//! CONTRACT: `ShardId(u16)`; `probe::check() -> Result<(), ProbeError>` (Display says what to fix);
//! `Runtime::builder().shards(n).start(|ctx: ShardContext<E>| async move { .. })` runs one closure per
//! shard on its pinned LocalExecutor and `join()`s; `ShardContext` gives `id()`, `shard_count()` and the
//! mesh endpoint: `try_send(to, E) -> Result<(), E>`, `send(to, E).await` (waits for ring room),
//! `recv().await -> (ShardId, E)` and `try_recv()`, and for monitoring `ring_depths()` (each
//! outgoing ring's fill level, lock-free) and `ring_capacity()`;
//! `placement::shard_for(name, shard_count) -> ShardId`.
//!
//! Files: `runtime` starts the executors; `mesh` wires the rings and is each shard's endpoint;
//! `ring` is the SPSC ring; `wake` the park/wake handshake and doorbell; `signal` a wake-up
//! between two tasks of one shard; `socket_wait` a blocking wait for one socket on a shard
//! that has nothing else to serve; `placement` and `probe` as named.
//!
//! A shard's main loop: spawn the connection tasks (each a glommio task on the same executor;
//! the SO_REUSEPORT listener's accept loop too) and one mesh task that loops on
//! `ctx.recv().await` and dispatches envelopes; share the context between them with
//! `Rc<ShardContext<E>>`. Only the mesh task receives (a second concurrent `recv` panics);
//! any task may send. Prefer `try_send` and treat `Err` as backpressure (e.g. stop reading
//! that client's socket) over `send().await` from a connection task. `ShardContext::new`
//! spawns a small task that answers the shard's doorbell, so it must run inside the shard's
//! executor, which `Runtime::start` guarantees. A task that loops for long without awaiting
//! should call `glommio::yield_if_needed().await` so the mesh task gets its turn.

pub mod mesh;
pub mod placement;
pub mod probe;
pub mod ring;
pub mod runtime;
pub mod signal;
pub mod socket_wait;
mod wake;
pub mod work;

use std::fmt;

pub use mesh::{RecvFuture, SendFuture, ShardContext};
pub use probe::ProbeError;
pub use runtime::{Runtime, RuntimeBuilder, RuntimeError, RuntimeHandle};
pub use signal::LocalSignal;
pub use wake::ForeignSignal;

/// Lets the executor poll its rings before the calling task goes on: socket reads and
/// writes completed meanwhile are reaped, and the tasks they wake get their turn. A long
/// loop (a client flooding SUBs, a backlog of mesh envelopes) calls it every so many items.
///
/// `yield_task_queue_now` is not enough: with one task queue that stays runnable, glommio
/// runs it again and polls its rings only when the preempt timer (100 ms) fires. Measured
/// with 1 M SUBs on one connection: PINGs from another client took ~100 ms, again and
/// again. A timer parks the task until the reactor has run.
pub async fn yield_to_io() {
    glommio::timer::sleep(std::time::Duration::from_micros(1)).await;
}

/// For a hot loop that yields every so many items: [`yield_to_io`] once
/// [`IO_YIELD_INTERVAL`](crate::limits::IO_YIELD_INTERVAL) has passed since the last one,
/// a cheap task-queue yield otherwise. A reactor turn per 1024 publishes cost a quarter
/// of core publish throughput (11.2 → 8.3 M msgs/s, `perf/compare`); once per interval
/// it is noise, and a PING still waits at most about that long.
pub struct Yielder {
    last_io: std::time::Instant,
}

impl Default for Yielder {
    fn default() -> Self {
        Yielder { last_io: std::time::Instant::now() }
    }
}

impl Yielder {
    pub async fn yield_now(&mut self) {
        if self.last_io.elapsed() >= crate::limits::IO_YIELD_INTERVAL {
            yield_to_io().await;
            self.last_io = std::time::Instant::now();
        } else {
            glommio::executor().yield_task_queue_now().await;
        }
    }
}

/// Index of a shard: `0..shard_count`. Shard `i` runs on the `i`-th CPU of the process's
/// affinity mask (modulo its size).
/// Recorded in a stream's metadata as its placement.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ShardId(pub u16);

impl fmt::Display for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shard {}", self.0)
    }
}

/// CPU ids this process may run on (its affinity mask), ascending.
pub fn available_cpus() -> Vec<usize> {
    let mut cpus: Vec<usize> =
        core_affinity::get_core_ids().unwrap_or_default().into_iter().map(|core| core.id).collect();
    cpus.sort_unstable();
    cpus
}
