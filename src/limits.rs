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
/// A stream's first segment; each next one doubles, up to the stream's segment size.
pub const SEGMENT_BYTES_FIRST: u64 = 1024 * 1024;
const _: () = assert!(SEGMENT_BYTES_FIRST % DIRECT_IO_ALIGNMENT as u64 == 0);

/// Capacity (entries) of each single-producer single-consumer ring in the shard mesh.
pub const MESH_RING_CAPACITY: usize = 4096;

const _: () = assert!(SEGMENT_SIZE_BYTES_DEFAULT % DIRECT_IO_ALIGNMENT as u64 == 0);
const _: () = assert!(MESH_RING_CAPACITY.is_power_of_two());
const _: () = assert!(PAYLOAD_BYTES_DEFAULT < CONNECTION_PENDING_BYTES_MAX);

/// Default maximum number of client connections (nats-server's default).
pub const CONNECTIONS_MAX_DEFAULT: usize = 64 * 1024;
/// Connections the kernel queues on the client port before a shard accepts them (what
/// glommio's own `TcpListener::bind` asks for).
pub const CLIENT_LISTEN_BACKLOG: i32 = 1024;
/// How long a start waits for the client port to be released when it is in use: a server
/// killed just before still holds its listening socket for a few milliseconds after it is
/// gone (its io_uring, with an accept in flight, is torn down after the process). A port
/// a live process holds is refused after this wait.
pub const CLIENT_PORT_RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// How often the port is tried again within `CLIENT_PORT_RELEASE_WAIT`.
pub const CLIENT_PORT_RETRY_INTERVAL: std::time::Duration = std::time::Duration::from_millis(20);
/// How long a write to a client may block before it is a slow consumer (nats-server: 10 s).
pub const WRITE_DEADLINE_DEFAULT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a client has to send CONNECT when authentication is required (nats-server: 2 s).
pub const AUTH_TIMEOUT_DEFAULT: std::time::Duration = std::time::Duration::from_secs(2);
/// Interval of server-initiated PINGs (nats-server: 2 min).
pub const PING_INTERVAL_DEFAULT: std::time::Duration = std::time::Duration::from_secs(120);
/// Unanswered server PINGs before a connection is stale (nats-server: 2).
pub const PINGS_OUTSTANDING_MAX: u32 = 2;
/// Lame-duck mode spreads closing connections over this duration (nats-server: 2 min).
pub const LAME_DUCK_DURATION_DEFAULT: std::time::Duration = std::time::Duration::from_secs(120);
/// Envelopes a shard queues for one peer beyond its full ring before publishers wait.
pub const MESH_OVERFLOW_ENVELOPES_MAX: usize = 16 * 1024;
/// Envelopes a shard's mesh task applies before it yields to the shard's other tasks.
pub const MESH_ENVELOPES_PER_YIELD: usize = 256;
/// Operations one connection's reader handles (or subscriptions it removes on close)
/// before it yields to the shard's other tasks.
pub const CONNECTION_OPS_PER_YIELD: usize = 1024;
/// Publishes in a row stored by one other shard's streams before a connection moves to
/// that shard (`server/handoff.rs`): enough that a connection publishing to streams of
/// several shards does not move back and forth, few against any steady publisher.
pub const HANDOFF_AFTER_DEFAULT: u32 = 32;
/// Each move of a connection doubles the streak its next move needs, up to this many
/// doublings (32 × 2^10: a move per 32 768 operations at most, for a connection that
/// alternates between streams of two shards).
pub const HANDOFF_BACKOFF_DOUBLINGS_MAX: u32 = 10;
/// A connection with more subscriptions stays where it is: moving them is a table
/// update on every shard.
pub const HANDOFF_SUBSCRIPTIONS_MAX: usize = 1024;
/// A connection's read buffer; grows for one larger frame, then shrinks back.
pub const READ_BUFFER_BYTES: usize = 64 * 1024;
/// A connection's first read buffer: enough for a handshake, so a connection that never
/// authenticates, or idles after it, costs a few KiB. It doubles towards
/// `READ_BUFFER_BYTES` once the client's reads fill it (and grows for a longer frame).
pub const READ_BUFFER_BYTES_UNCONNECTED: usize = 2 * 1024;
const _: () = assert!(READ_BUFFER_BYTES_UNCONNECTED <= READ_BUFFER_BYTES);
/// A connection's outbound queue is a list of chunks of this size (a larger message gets
/// a chunk of its own size); each is written with one write and freed once written.
pub const OUTBOUND_CHUNK_BYTES: usize = 64 * 1024;
/// A TLS writer keeps its ciphertext buffer between writes unless one write grew it past
/// this (a message larger than a chunk); an ordinary chunk's records fit well inside it.
pub const TLS_CIPHERTEXT_KEEP_BYTES_MAX: usize = 2 * OUTBOUND_CHUNK_BYTES;
/// Most decimal digits accepted in a PUB/HPUB size or an UNSUB max (nats-server's
/// `parseSize` refuses longer numbers), so a size never overflows a `usize`.
pub const SIZE_DIGITS_MAX: usize = 9;

const _: () = assert!(PAYLOAD_BYTES_DEFAULT < 1_000_000_000);
const _: () = assert!(SIZE_DIGITS_MAX <= 18);
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
// ---- storage engine (store/, stream/, engine) ----

/// Longest stream name (nats-server's limit), in bytes.
pub const STREAM_NAME_BYTES_MAX: usize = 255;
/// Longest subject a record can carry (the record header stores it in a u16).
pub const SUBJECT_BYTES_MAX: usize = u16::MAX as usize;
/// Largest record (header + subject + headers + payload) the store accepts.
pub const RECORD_BYTES_MAX: usize = 8 * 1024 * 1024;
/// Smallest segment size a stream may configure (a stream's largest record must also fit).
pub const SEGMENT_SIZE_BYTES_MIN: u64 = 64 * 1024;
/// A group is sealed and a new one started once it holds this many bytes.
pub const GROUP_COMMIT_BYTES_MAX: usize = 1024 * 1024;
/// How often a hot loop lets the reactor poll its rings (`shard::Yielder`).
pub const IO_YIELD_INTERVAL: std::time::Duration = std::time::Duration::from_millis(2);
/// Longest a client's blocking read wait holds its shard (`server/connection/read_wait.rs`)
/// when the client sends nothing; a client still sending gets a reactor turn every
/// `IO_YIELD_INTERVAL` regardless. Longer than the kernel's tick (4 ms at `HZ=250`): a
/// shorter timeout is the CPU's earliest timer, so each wait programs the timer hardware
/// and, in a VM, exits to the hypervisor for it. Measured with the durable stand-in
/// (perf/latency.md, "2026-12-06 (evening)"): `ppoll` with 200 µs or 1 ms timeouts cost one-in-flight
/// publishes 10–25 % of their rate against a plain blocking read; 4 and 10 ms cost nothing.
pub const READ_WAIT_MAX: std::time::Duration = std::time::Duration::from_millis(5);
/// Most other connections a shard may serve while a client's reader waits in a blocking
/// call: each wait polls their sockets too.
pub const READ_WAIT_CONNECTIONS_MAX: usize = 16;
/// Entries a `SplitMap` (`subject/split_map.rs`) holds in one map before it splits.
pub const SPLIT_MAP_ONE_PART_MAX: usize = 32 * 1024;
/// Maps a `SplitMap` splits into.
pub const SPLIT_MAP_PARTS: usize = 64;
/// A shard's cache of messages for gets by sequence (`stream/record_cache.rs`).
pub const RECORD_CACHE_BYTES: usize = 8 * 1024 * 1024;
/// Largest message that cache takes (subject, headers and payload).
pub const RECORD_CACHE_ENTRY_BYTES_MAX: usize = 16 * 1024;
const _: () = assert!(RECORD_CACHE_ENTRY_BYTES_MAX < RECORD_CACHE_BYTES);
/// Spacing of the sparse sequence→offset index inside a segment.
pub const SPARSE_INDEX_INTERVAL_BYTES: u64 = 32 * 1024;
/// Size of one read when reading on from the end of the last one (recovery scans, a
/// consumer reading forward).
pub const RECOVERY_READ_BYTES: usize = 1024 * 1024;
/// Size of a read that does not continue the last one (a get by sequence or subject, a
/// KV get): one sparse-index interval and then some, not a megabyte (an O_DIRECT read of
/// 1 MiB took ~300 µs here and made every KV get that slow).
pub const RANDOM_READ_BYTES: usize = 2 * SPARSE_INDEX_INTERVAL_BYTES as usize;
/// Largest metadata or checkpoint file the store will read back.
pub const METADATA_FILE_BYTES_MAX: usize = 512 * 1024 * 1024;
/// A stream is checkpointed on the shard's tick once this much was appended since the last
/// checkpoint, bounding the scan after a crash (≈ 50 ms per 64 MiB measured here).
pub const CHECKPOINT_INTERVAL_BYTES: u64 = 256 * 1024 * 1024;
/// Default Nats-Msg-Id duplicate window (nats-server's default: two minutes).
pub const DUPLICATE_WINDOW_NANOS_DEFAULT: u64 = 120 * 1_000_000_000;

const _: () = assert!(SEGMENT_SIZE_BYTES_MIN % DIRECT_IO_ALIGNMENT as u64 == 0);
const _: () = assert!(RECORD_BYTES_MAX as u64 <= SEGMENT_SIZE_BYTES_DEFAULT / 2);
const _: () = assert!(GROUP_COMMIT_BYTES_MAX % DIRECT_IO_ALIGNMENT == 0);
const _: () = assert!(PAYLOAD_BYTES_DEFAULT + SUBJECT_BYTES_MAX < RECORD_BYTES_MAX);
/// Lost sequences a stream info lists per damaged range (the range is always logged whole).
pub const LOST_SEQUENCES_REPORTED_MAX: u64 = 10_000;
/// Most subjects one stream info reply lists (nats-server pages at 100 000).
pub const STREAM_INFO_SUBJECTS_MAX: u64 = 100_000;
/// Stream names per `STREAM.NAMES` page (nats-server's JSApiNamesLimit).
pub const STREAM_NAMES_PAGE: u64 = 1024;
/// Stream infos per `STREAM.LIST` page (nats-server's JSApiListLimit).
pub const STREAM_LIST_PAGE: u64 = 256;
/// Shortest time between two of a shard's stream maintenance passes (interval syncs, age
/// and TTL expiry, checkpoints): an interval sync policy is honoured to within this, and
/// a burst of writes costs one pass per interval. An idle shard runs none.
pub const STREAM_MAINTENANCE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);
/// Nanoseconds in a second (TTLs are whole seconds on the wire).
pub const NANOS_PER_SECOND: u64 = 1_000_000_000;
/// Shortest per-message TTL (`Nats-TTL`) nats-server accepts, in seconds.
pub const MESSAGE_TTL_SECONDS_MIN: u64 = 1;
/// Messages one maintenance pass expires by TTL per stream (each logs a tombstone); the
/// rest wait for the next pass, so one pass never blocks the shard for long.
pub const TTL_EXPIRIES_PER_PASS_MAX: usize = 256;
/// Entries of removed messages the TTL index may hold beyond twice the live count
/// before it is pruned (pruning is a pass over the index: amortised by this slack).
pub const TTL_INDEX_STALE_ENTRIES_MAX: u64 = 1024;
/// A subscriber's queued bytes beyond which its publishers wait (at most
/// `STALL_DURATION_MAX` per publish) instead of queueing more.
pub const STALL_THRESHOLD_BYTES_MAX: usize = 4 * 1024 * 1024;
/// Longest a publisher waits for one congested subscriber (nats-server caps stalls too).
pub const STALL_DURATION_MAX: std::time::Duration = std::time::Duration::from_millis(10);

// ---- consumers (src/consumer) ----

/// Length of one tick of a shard's consumer timer wheel. Ack deadlines, pull expiries and
/// heartbeats are rounded up to whole ticks, so none fires early.
pub const CONSUMER_TICK_NANOS: u64 = 1_000_000;
/// Consumers a stream may have unless its `max_consumers` says otherwise (nats-server
/// 2.15's `default_max_consumers`: 1000, against runaway consumer creation).
pub const CONSUMERS_PER_STREAM_DEFAULT_MAX: usize = 1000;
/// Consumer names per `CONSUMER.NAMES` page and infos per `CONSUMER.LIST` page (Go's).
pub const CONSUMER_NAMES_PAGE: u64 = 1024;
pub const CONSUMER_LIST_PAGE: u64 = 256;
/// Length of a server-chosen ephemeral consumer name (nats-server: 8).
pub const CONSUMER_NAME_GENERATED_BYTES: usize = 8;
/// A durable consumer's state is written at most this often (ms) unless a double ack
/// needs it on disk first.
pub const CONSUMER_STATE_PERSIST_INTERVAL_TICKS: u64 = 5;
/// ...but waits for the disk (fdatasync, directory fsync) at most this often (ms); the
/// writes in between stop at the page cache (see `persist_consumer`).
pub const CONSUMER_STATE_SYNC_INTERVAL_TICKS: u64 = 1_000;
/// A `persist_mode: async` stream's fdatasync period: its pub acks wait for the write, not
/// the sync, so power loss may take back up to this much of what was acknowledged (the
/// server's `sync_interval`, when set, is used instead).
pub const PERSIST_ASYNC_SYNC_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
/// Bits of the tick covered by each level of the hierarchical timer wheel (64 slots).
pub const TIMER_WHEEL_LEVEL_BITS: u32 = 6;
/// Levels of the timer wheel: 6 levels of 64 slots cover 2^36 ticks (≈ 2.2 years of
/// 1 ms ticks); later deadlines wait in an overflow list.
pub const TIMER_WHEEL_LEVELS: usize = 6;
/// Most timers one wheel holds (slot indices are `u32`).
pub const TIMER_WHEEL_TIMERS_MAX: usize = u32::MAX as usize - 1;
/// Push flow control: the largest window of unconfirmed bytes (nats-server's 32 MiB
/// pending-bytes limit); delivery pauses when the window is full until the client
/// answers the outstanding `100 FlowControl Request`.
pub const FLOW_CONTROL_WINDOW_BYTES_MAX: u64 = 32 * 1024 * 1024;
/// Push flow control starts with this window and doubles it on each answer (slow start,
/// as nats-server's `maxpb = limit / 16`).
pub const FLOW_CONTROL_WINDOW_BYTES_INITIAL: u64 = FLOW_CONTROL_WINDOW_BYTES_MAX / 16;
/// Replay `original` sleeps only for gaps longer than this (nats-server: 1 ms).
pub const REPLAY_GAP_NANOS_MIN: i64 = 1_000_000;
/// A pull consumer with an `inactive_threshold` is deleted this much later than the
/// threshold plus up to `PULL_INACTIVE_JITTER_NANOS` more (nats-server 2.15's
/// `updateInactiveThreshold`: 100 ms + a random 0-900 ms, so that many consumers do not
/// go at once). jetcore takes the jitter from the consumer's name, not a random number.
pub const PULL_INACTIVE_GRACE_NANOS: i64 = 100_000_000;
pub const PULL_INACTIVE_JITTER_NANOS: u64 = 900_000_000;
/// nats-server measures a pull request's `expires` from when it parsed the request and
/// checks it when the consumer serves it, some tens of µs later (2.15.1 measured: 10 µs
/// always over, 100 µs always served). jetcore's 1 ms tick cannot see that, so an
/// `expires` shorter than this is over on arrival: `408 Request Timeout`.
pub const PULL_EXPIRES_SERVABLE_MIN_NANOS: i64 = 30_000;
/// Longest stream or consumer name accepted in an ack subject token.
pub const ACK_SUBJECT_BYTES_MAX: usize = 1024;

const _: () = assert!(CONSUMER_TICK_NANOS > 0);
const _: () = assert!((PULL_EXPIRES_SERVABLE_MIN_NANOS as u64) < CONSUMER_TICK_NANOS);
const _: () = assert!(PULL_INACTIVE_GRACE_NANOS > 0 && PULL_INACTIVE_JITTER_NANOS > 0);
const _: () = assert!((TIMER_WHEEL_LEVEL_BITS as usize) * TIMER_WHEEL_LEVELS < 64);
const _: () = assert!(1u64 << TIMER_WHEEL_LEVEL_BITS == 64); // one u64 occupancy mask per level
const _: () = assert!(FLOW_CONTROL_WINDOW_BYTES_INITIAL > 0);
const _: () = assert!(FLOW_CONTROL_WINDOW_BYTES_INITIAL <= FLOW_CONTROL_WINDOW_BYTES_MAX);
/// A cross-shard delivery batch is sent once it holds this many bytes...
pub const MESH_BATCH_BYTES_MAX: usize = 64 * 1024;
/// ...or this many messages (and always before its shard awaits anything).
pub const MESH_BATCH_MESSAGES_MAX: usize = 1024;
/// First allocation of a batch's buffer.
pub const MESH_BATCH_BYTES_INITIAL: usize = 16 * 1024;
/// Subjects whose subscription matches a shard remembers (`server/match_cache.rs`);
/// reaching it empties the cache.
pub const MATCH_CACHE_SUBJECTS_MAX: usize = 4096;

// Operating the server: shutdown, lame duck, control messages, metrics.

/// Lame duck waits this long before it starts closing clients (nats-server: 10 s).
pub const LAME_DUCK_GRACE_PERIOD_DEFAULT: std::time::Duration = std::time::Duration::from_secs(10);
/// Each step of a graceful shutdown (stop intake, settle stores, persist and close) gets
/// this long on every shard; past it the server logs what is stuck and exits non-zero.
pub const SHUTDOWN_STEP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// While an `EngineHandle` closes, how often it looks whether the requests still running
/// have answered (only then; an open handle's shard sleeps until a request comes).
pub const ENGINE_HANDLE_CLOSE_POLL: std::time::Duration = std::time::Duration::from_millis(1);
/// Messages one fetch of an embedded consumer returns at most (a larger ask is cut to
/// it): a fetch holds its messages in memory until it returns.
pub const ENGINE_CONSUMER_FETCH_MAX: usize = 10_000;
/// How long the monitor waits for the shards' answer before replying 503.
pub const MONITOR_GATHER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// How long `/healthz` waits for every shard's stream checks before it answers 503: a
/// shard that does not answer in this time is not serving JetStream.
pub const MONITOR_HEALTH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);
const _: () = assert!(MONITOR_HEALTH_TIMEOUT.as_millis() <= MONITOR_GATHER_TIMEOUT.as_millis());
/// Upper bound of the latency histograms (60 s in µs); longer samples are clamped.
pub const LATENCY_HISTOGRAM_MICROS_MAX: u64 = 60_000_000;
/// `/connz` and `/subsz` page size when the request names none (nats-server: 1024).
pub const MONITOR_PAGE_DEFAULT: usize = 1024;
const _: () = assert!(LAME_DUCK_GRACE_PERIOD_DEFAULT.as_secs() < LAME_DUCK_DURATION_DEFAULT.as_secs());
/// Monitoring requests answered at once (each on its own thread); more get 503.
pub const MONITOR_REQUESTS_IN_FLIGHT_MAX: usize = 16;

/// Closed connections each shard remembers for `/connz?state=closed` (nats-server's
/// `max_closed_clients` default; the oldest is forgotten first).
pub const CLOSED_CONNECTIONS_KEPT: usize = 10_000;

/// How often a shard checks whether its connections stopped closing, to hand freed pages
/// back to the OS (`server::memory_release`). Not shorter than mimalloc's purge delay
/// (1 s), so the pages freed before the last check are due by the next one.
pub const MEMORY_RELEASE_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);
/// A segment log keeps at least this much written (with zeros) past its data, in chunks
/// of up to twice this (see `store/flush.rs`, `zero_ahead`).
pub const ZERO_AHEAD_BYTES: u64 = 512 * 1024;
const _: () = assert!(ZERO_AHEAD_BYTES % DIRECT_IO_ALIGNMENT as u64 == 0);
/// After a group of one block (one publish in flight), zeros go in chunks of at most
/// this: a 0.5 MiB zero write takes the disk ~250 µs here, so the next publish's durable
/// write queued behind it, and those collisions were 70 % of the slowest 1 % of writes
/// (block-layer trace; perf/latency.md, ninth session). A 64 KiB chunk is done before
/// the next publish arrives: one in flight, 8 alternating rounds, p99 342 against 440 µs,
/// same rate. Bigger groups keep the big chunks: with 64 KiB chunks for them too,
/// pipelined publishes (~30 KiB groups) lost 7 % (352 against 377 k/s, 7 rounds).
pub const ZERO_AHEAD_ONE_BLOCK_CHUNK_BYTES: u64 = 64 * 1024;
const _: () = assert!(ZERO_AHEAD_ONE_BLOCK_CHUNK_BYTES % DIRECT_IO_ALIGNMENT as u64 == 0);
/// Zero-ahead follows only groups up to this size. `appendbench`, 1 KiB sync `always`, 2
/// shards, same run: 16 streams with window 256 (groups ~270 KiB) 1.22 M appends/s zeroing
/// after every group against 1.74 M with this bound; 1 stream with window 1 (groups of
/// 1-16 records) keeps zeroing, p50 151-173 µs against 211 µs without (perf/storage.md).
pub const ZERO_AHEAD_GROUP_BYTES_MAX: usize = 32 * 1024;
/// A spare segment (`store/spare_segment.rs`) is zeroed in stretches of this size, each
/// written all at once (writes of [`SPARE_ZERO_CHUNK_BYTES`] in flight together). The disk
/// serves one request at a time, so a publish that arrives meanwhile waits for the whole
/// stretch, once per stretch: at one publish in flight (~400 bytes of log each) one
/// publish in ~10 000 waits ~10 ms. Zeroed 1 MiB after 1 MiB, one in ~2 600 waited
/// ~1.5 ms and the p99.9 was worse in 6 of 6 rounds; 8 MiB stretches gave the same p99
/// and p99.9 as 4 MiB with a worse maximum, 18 against 12 ms (perf/latency.md, 2026-12-07).
pub const SPARE_ZERO_BATCH_BYTES: u64 = 4 * 1024 * 1024;
const _: () = assert!(SPARE_ZERO_BATCH_BYTES % DIRECT_IO_ALIGNMENT as u64 == 0);
/// The writes a spare's zeros go in: each from one shared buffer of zeros.
pub const SPARE_ZERO_CHUNK_BYTES: u64 = 1024 * 1024;
const _: () = assert!(SPARE_ZERO_CHUNK_BYTES % DIRECT_IO_ALIGNMENT as u64 == 0);
/// Under sync `always`, a group up to this size may be written durably in one operation
/// (O_DSYNC: the disk's write and cache flush without a return to the shard between them),
/// when the shard has measured that to be faster (`store/durable_choice.rs`); a bigger one
/// is written, then fdatasynced, so that the next group's write can overlap the sync
/// (`store/flush.rs`), unless [`BLOCKING_GROUP_BYTES_MAX`] lets it block. Small groups
/// are light load, where one group's latency is what counts; big ones are
/// bandwidth-bound, where overlap counts (perf/latency.md).
pub const DURABLE_WRITE_BYTES_MAX: usize = 16 * 1024;
const _: () = assert!(DURABLE_WRITE_BYTES_MAX % DIRECT_IO_ALIGNMENT == 0);
/// Under sync `always`, a bigger group up to this size is written in one blocking O_DSYNC
/// write too, when the shard is idle but for it and its last write was to the same log
/// (`store/blocking_write.rs`): a pipelined publisher's groups. Measured on this
/// project's VM (async-nats, window 256, 128 B: groups of ~28 KiB): publish 106-108 k/s
/// through io_uring, 116-125 k/s this way. A cap of 1 MiB lost at 4 KiB messages
/// (groups of ~500 KiB: 34-39 k/s against 41-48 k/s), where the next group's write
/// overlapping this one's fdatasync counts (perf/shards.md, "2026-12-07 (evening)").
pub const BLOCKING_GROUP_BYTES_MAX: usize = 64 * 1024;
const _: () = assert!(BLOCKING_GROUP_BYTES_MAX % DIRECT_IO_ALIGNMENT == 0);

// ---- authorization (src/server/permissions.rs, guard.rs) ----

/// Publish (and delivery) verdicts one connection caches before emptying the cache
/// (nats-server's `maxPermCacheSize`).
pub const PERMISSION_CACHE_ENTRIES_MAX: usize = 128;
/// Reply subjects one connection may hold grants for under `allow_responses`
/// (nats-server's `replyPermLimit`; past it, expired grants go, then the oldest).
pub const RESPONSE_GRANTS_MAX: usize = 4096;

/// How long a TLS handshake may take before the connection is closed (`tls { timeout }`,
/// nats-server's TLS_TIMEOUT).
pub const TLS_TIMEOUT_DEFAULT: std::time::Duration = std::time::Duration::from_secs(2);
/// `handshake_first: auto`: how long the server waits for a ClientHello before it sends the
/// plaintext INFO instead (nats-server's DEFAULT_TLS_HANDSHAKE_FIRST_FALLBACK_DELAY).
pub const TLS_HANDSHAKE_FIRST_FALLBACK_DEFAULT: std::time::Duration = std::time::Duration::from_millis(50);
/// Ciphertext read from a TLS socket at once during the handshake: one largest TLS record
/// (16 KiB of plaintext plus its header, padding and tag) fits.
pub const TLS_READ_BUFFER_BYTES: usize = 16 * 1024 + 512;
/// After the handshake the ciphertext buffer starts at this and doubles each time a read
/// fills it (rustls keeps a partial record itself, so any size works), so an idle TLS
/// client costs little and a busy one reads as much per syscall as a plaintext one.
pub const TLS_READ_BUFFER_BYTES_MAX: usize = 256 * 1024;

/// The hub's leafnode port when a remote's URL names none (nats-server's default).
pub const LEAF_PORT_DEFAULT: u16 = 7422;
/// Wait between attempts to reach a leaf remote (`leafnodes { reconnect }`, nats-server's
/// default); each wait gets up to `LEAF_RECONNECT_JITTER_PERCENT` more, at random.
pub const LEAF_RECONNECT_INTERVAL_DEFAULT: std::time::Duration = std::time::Duration::from_secs(1);
pub const LEAF_RECONNECT_JITTER_PERCENT: u32 = 50;
/// After a loop was detected, the leaf waits this long before dialing again (nats-server).
pub const LEAF_LOOP_RECONNECT_DELAY: std::time::Duration = std::time::Duration::from_secs(30);
/// The hub's INFO and its answer to CONNECT must arrive within this.
pub const LEAF_HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a service request's reply mapping waits for a response unless the export
/// sets `response_threshold` (nats-server's `DEFAULT_SERVICE_EXPORT_RESPONSE_THRESHOLD`).
pub const SERVICE_RESPONSE_THRESHOLD_DEFAULT: std::time::Duration = std::time::Duration::from_secs(120);
/// Reply mappings one shard keeps for service requests awaiting responses; past it the
/// oldest is dropped (its requester then times out, as after the threshold).
pub const SERVICE_RESPONSE_MAPPINGS_MAX: usize = 1 << 20;
/// Shards a service reply token can name (two base-62 characters).
pub const SERVICE_REPLY_SHARDS_MAX: usize = 62 * 62;
const _: () = assert!(SHARD_COUNT_MAX as usize <= SERVICE_REPLY_SHARDS_MAX);
/// Service imports one request may cross in a chain (A imports from B what B imports
/// from C, ...). The configuration refuses cycles as nats-server does; this bounds the
/// routing's recursion whatever the configuration (nats-server bounds its cycle search
/// at 1024 accounts and its routing by the cycle check alone).
pub const SERVICE_IMPORT_HOPS_MAX: usize = 64;
