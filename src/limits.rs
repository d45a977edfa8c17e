//! Every quantity jetcore bounds is declared here once (STYLE habit 2).
//! Relations between limits are checked at compile time below.

/// Longest control line a client may send (nats-server `MAX_CONTROL_LINE_SIZE`).
pub const CONTROL_LINE_BYTES_MAX: usize = 4096;
/// Default largest message payload (headers + body), advertised in INFO.
pub const PAYLOAD_BYTES_DEFAULT: usize = 1024 * 1024;
/// Default bytes queued for one connection before it is a slow consumer.
pub const CONNECTION_PENDING_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Alignment required by O_DIRECT reads and writes (buffers, offsets, lengths).
pub const DIRECT_IO_ALIGNMENT: usize = 4096;
/// Default segment size before a roll.
pub const SEGMENT_SIZE_BYTES_DEFAULT: u64 = 64 * 1024 * 1024;

/// Capacity (entries) of each single-producer single-consumer ring in the shard mesh.
pub const MESH_RING_CAPACITY: usize = 4096;

const _: () = assert!(SEGMENT_SIZE_BYTES_DEFAULT % DIRECT_IO_ALIGNMENT as u64 == 0);
const _: () = assert!(MESH_RING_CAPACITY.is_power_of_two());
const _: () = assert!(PAYLOAD_BYTES_DEFAULT < CONNECTION_PENDING_BYTES_MAX);

// ---- shard runtime (src/shard) ----

/// Most shards a runtime may start. The mesh has `n * (n - 1)` rings of
/// `MESH_RING_CAPACITY` envelopes each, so memory grows with the square of this.
pub const SHARD_COUNT_MAX: u16 = 256;
/// I/O memory each shard's glommio executor preallocates and registers with io_uring, for
/// DMA (O_DIRECT) buffers: room for 16 in-flight 512 KiB group-commit writes. Larger
/// buffers still work, from the ordinary allocator. glommio's default is 10 MiB.
pub const SHARD_IO_MEMORY_BYTES: usize = 8 * 1024 * 1024;
/// Submission depth of each of a shard's io_uring rings (glommio's default): bounds I/O in
/// flight per shard per ring.
pub const SHARD_RING_DEPTH: usize = 128;
/// How long a task queue may run before glommio preempts it for another. glommio's default
/// (100 ms), on purpose: with 1 ms, a two-shard mesh stress test hung in 5 of 5 runs on this
/// project's machine (glommio 0.9, Linux 6.18; both executors asleep with work queued), and
/// with 20 ms it crawled. Keep one task queue per shard and yield in long loops instead.
pub const SHARD_PREEMPT_TIMER_MICROS: u64 = 100_000;
/// glommio refuses to start an executor if RLIMIT_MEMLOCK is below this (sys/uring.rs).
pub const GLOMMIO_MEMLOCK_FLOOR_BYTES: usize = 512 * 1024;
/// glommio registers its I/O memory with each of this many rings (main, latency, poll).
pub const GLOMMIO_RINGS_PER_EXECUTOR: usize = 3;
/// Locked memory allowed per shard beyond registered I/O memory (ring buffers on kernels
/// that charge them, other io_uring users in the process).
pub const SHARD_MEMLOCK_MARGIN_BYTES: usize = 1024 * 1024;
/// Entries of the throwaway ring the start-up probe creates.
pub const PROBE_RING_ENTRIES: u32 = 4;

const _: () = assert!(SHARD_IO_MEMORY_BYTES % DIRECT_IO_ALIGNMENT == 0);
const _: () = assert!(SHARD_IO_MEMORY_BYTES >= 64 * 1024); // glommio's own floor.
const _: () = assert!(SHARD_RING_DEPTH > 0 && PROBE_RING_ENTRIES.is_power_of_two());
