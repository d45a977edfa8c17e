//! Starting the shards: one pinned glommio `LocalExecutor` per shard, wired into the mesh.
//!
//! CONTRACT: `Runtime::builder().shards(n).start(shard_main)` runs the start-up probe, builds
//! the mesh, and spawns `n` threads, shard `i` pinned to the `i % c`-th CPU this process may
//! run on (`c` CPUs in its affinity mask; more shards than CPUs share CPUs, which is only
//! useful for tests). Each runs `shard_main(ShardContext)` to completion on its executor.
//! `join()` waits for all shards and returns their outputs in shard order.
//!
//! Executor settings, and why:
//! - `io_memory` = `limits::SHARD_IO_MEMORY_BYTES` (8 MiB; glommio's default is 10 MiB):
//!   registered DMA memory for the shard's O_DIRECT writes, sized for group commit; it is
//!   charged 3x against RLIMIT_MEMLOCK per shard unless CAP_IPC_LOCK (see `probe`).
//! - `ring_depth` = `limits::SHARD_RING_DEPTH` (128, glommio's default): enough I/O in flight
//!   for a few streams' segment writes and reads per shard.
//! - `preempt_timer` = `limits::SHARD_PREEMPT_TIMER_MICROS` (100 ms, glommio's default): 1 ms
//!   would make `yield_if_needed()` in a long scan yield sooner, but with it glommio 0.9's
//!   sleep/wake path hangs under the mesh stress test (see `limits`). Tasks that loop long
//!   should `glommio::yield_now()` every N items rather than rely on preemption.
//! - `spin_before_park`: off (the server sets none either). glommio spins after every
//!   burst of work, also when what the shard waits for is the disk (100+ µs away): with a
//!   100 µs spin on two shards, one-in-flight durable publishing cost 450-800 µs of CPU
//!   per message, 15 % of it `clock_gettime` in the spin loop, and the spinning shard
//!   kept the io-wq worker that runs its fdatasync (pinned to the shard's CPU) waiting.
//!   Measured without it in the same run (perf/latency.md, "CPU per publish"): less CPU
//!   per publish and core pub→sub no slower on a loaded 2-CPU machine. Turn it on
//!   (`spin_before_park`, or `JETCORE_SPIN_BEFORE_PARK_US` for a benchmark) on dedicated
//!   hardware when cross-shard latency matters more than CPU. The spin follows work: an
//!   idle shard, woken by nothing, never spins.
//!
//! What wakes an idle shard: nothing on a timer. glommio arms its preempt timer only while
//! a task queue runs, and before sleeping it arms only the nearest user timer; a shard's
//! own timers are armed only while they have work (the consumer pump until its wheel's next
//! deadline, the state writer while a durable is dirty, stream maintenance until the next
//! expiry or interval sync, a connection's pinger per `ping_interval`). Other shards and
//! plain threads wake it through its doorbell (`wake.rs`). `tests/shard_idle_wake.rs`
//! counts the wake-ups; `tools/idlebench.py` measures them beside nats-server.
//! - One task queue per shard, the default `Latency::NotImportant`: DESIGN §9 measured a
//!   hang with `Latency::Matters` queues woken from another thread.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use std::{fmt, io};

use glommio::{LocalExecutorBuilder, Placement};

use super::mesh::{self, ShardContext};
use super::probe::{self, ProbeError};
use super::ShardId;
use crate::limits;

/// Entry point: `Runtime::builder()`.
pub struct Runtime;

impl Runtime {
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            shards: None,
            io_memory_bytes: limits::SHARD_IO_MEMORY_BYTES,
            ring_depth: limits::SHARD_RING_DEPTH,
            preempt_timer: Duration::from_micros(limits::SHARD_PREEMPT_TIMER_MICROS),
            spin_before_park: None,
            mesh_ring_capacity: limits::MESH_RING_CAPACITY,
        }
    }
}

/// Configuration of a runtime; every setting has the default documented in the module doc.
#[derive(Debug, Clone)]
pub struct RuntimeBuilder {
    shards: Option<u16>,
    io_memory_bytes: usize,
    ring_depth: usize,
    preempt_timer: Duration,
    spin_before_park: Option<Duration>,
    mesh_ring_capacity: usize,
}

/// Why the runtime could not start or a shard failed.
#[derive(Debug)]
pub enum RuntimeError {
    /// The start-up probe failed: io_uring or locked memory. Display says what to fix.
    Probe(ProbeError),
    /// `shards(n)` outside `1..=limits::SHARD_COUNT_MAX`.
    ShardCount { requested: usize },
    /// The CPUs this process may run on could not be read.
    Cpus(io::Error),
    /// The mesh's doorbell sockets could not be created (file descriptor limit?).
    Mesh(io::Error),
    /// The shard's thread or executor could not be created (already started shards keep
    /// running detached).
    Spawn { shard: ShardId, message: String },
    /// The shard's executor failed or its code panicked.
    Shard { shard: ShardId, message: String },
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::Probe(error) => write!(f, "{error}"),
            RuntimeError::ShardCount { requested } => {
                write!(f, "shard count {requested} is outside 1..={}", limits::SHARD_COUNT_MAX)
            }
            RuntimeError::Cpus(error) => {
                write!(f, "cannot read the CPUs jetcore may run on: {error}")
            }
            RuntimeError::Mesh(error) => {
                write!(f, "cannot create the shard mesh's doorbells: {error}")
            }
            RuntimeError::Spawn { shard, message } => write!(f, "cannot start {shard}: {message}"),
            RuntimeError::Shard { shard, message } => write!(f, "{shard} failed: {message}"),
        }
    }
}

impl std::error::Error for RuntimeError {}

impl RuntimeBuilder {
    /// Number of shards; default: one per CPU this process may run on.
    pub fn shards(mut self, shard_count: u16) -> Self {
        self.shards = Some(shard_count);
        self
    }

    /// Registered I/O memory per shard (see the module doc).
    pub fn io_memory_bytes(mut self, bytes: usize) -> Self {
        self.io_memory_bytes = bytes;
        self
    }

    /// io_uring submission depth per ring.
    pub fn ring_depth(mut self, depth: usize) -> Self {
        assert!(depth > 0, "ring depth must be positive");
        self.ring_depth = depth;
        self
    }

    /// glommio preemption interval.
    pub fn preempt_timer(mut self, interval: Duration) -> Self {
        self.preempt_timer = interval;
        self
    }

    /// Spin this long before an idle shard sleeps (off by default).
    pub fn spin_before_park(mut self, spin: Duration) -> Self {
        self.spin_before_park = Some(spin);
        self
    }

    /// Envelopes each mesh ring holds; a power of two.
    pub fn mesh_ring_capacity(mut self, capacity: usize) -> Self {
        assert!(capacity.is_power_of_two(), "mesh ring capacity must be a power of two");
        self.mesh_ring_capacity = capacity;
        self
    }

    /// Probes, wires the mesh and starts every shard running `shard_main`.
    pub fn start<E, F, Fut, T>(self, shard_main: F) -> Result<RuntimeHandle<T>, RuntimeError>
    where
        E: Send + 'static,
        F: Fn(ShardContext<E>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = T> + 'static,
        T: Send + 'static,
    {
        let cpus = super::available_cpus();
        if cpus.is_empty() {
            return Err(RuntimeError::Cpus(io::Error::other("empty CPU affinity mask")));
        }
        let shard_count = self.shards.unwrap_or(cpus.len().min(usize::from(limits::SHARD_COUNT_MAX)) as u16);
        if shard_count == 0 || shard_count > limits::SHARD_COUNT_MAX {
            return Err(RuntimeError::ShardCount { requested: usize::from(shard_count) });
        }
        probe::check_for(usize::from(shard_count), self.io_memory_bytes).map_err(RuntimeError::Probe)?;
        let shard_main = Arc::new(shard_main);
        let endpoints = mesh::build::<E>(shard_count, self.mesh_ring_capacity).map_err(RuntimeError::Mesh)?;
        let mut executors = Vec::with_capacity(endpoints.len());
        for (index, endpoint) in endpoints.into_iter().enumerate() {
            let shard = ShardId(index as u16);
            let shard_main = shard_main.clone();
            let executor = self
                .executor_builder(shard, cpus[index % cpus.len()])
                .spawn(move || async move { shard_main(ShardContext::new(endpoint)).await })
                .map_err(|error| RuntimeError::Spawn { shard, message: error.to_string() })?;
            executors.push((shard, executor));
        }
        Ok(RuntimeHandle { executors })
    }

    fn executor_builder(&self, shard: ShardId, cpu: usize) -> LocalExecutorBuilder {
        let builder = LocalExecutorBuilder::new(Placement::Fixed(cpu))
            .name(&format!("jetcore-shard-{}", shard.0))
            .io_memory(self.io_memory_bytes)
            .ring_depth(self.ring_depth)
            .preempt_timer(self.preempt_timer);
        match spin_before_park_from_env().unwrap_or(self.spin_before_park) {
            Some(spin) => builder.spin_before_park(spin),
            None => builder,
        }
    }
}

/// `JETCORE_SPIN_BEFORE_PARK_US=N` overrides the builder's spin (0: none), so a benchmark
/// can compare both on one binary (`perf/latency --jetcore-variant`).
fn spin_before_park_from_env() -> Option<Option<Duration>> {
    let micros: u64 = std::env::var(SPIN_BEFORE_PARK_ENV).ok()?.parse().ok()?;
    Some((micros > 0).then(|| Duration::from_micros(micros)))
}

const SPIN_BEFORE_PARK_ENV: &str = "JETCORE_SPIN_BEFORE_PARK_US";

/// Running shards; `join` to wait for them.
pub struct RuntimeHandle<T: Send + 'static> {
    executors: Vec<(ShardId, glommio::ExecutorJoinHandle<T>)>,
}

impl<T: Send + 'static> RuntimeHandle<T> {
    /// Number of shards started.
    pub fn shard_count(&self) -> u16 {
        self.executors.len() as u16
    }

    /// Waits for every shard's `shard_main` to return; outputs in shard order. Waits for all
    /// shards even when one fails, then reports the first failure.
    pub fn join(self) -> Result<Vec<T>, RuntimeError> {
        let mut outputs = Vec::with_capacity(self.executors.len());
        let mut first_error = None;
        for (shard, executor) in self.executors {
            match executor.join() {
                Ok(output) => outputs.push(output),
                Err(error) => {
                    first_error.get_or_insert(RuntimeError::Shard { shard, message: error.to_string() });
                }
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(outputs),
        }
    }
}
