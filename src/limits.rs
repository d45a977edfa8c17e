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

/// Default maximum number of client connections (nats-server's default).
pub const CONNECTIONS_MAX_DEFAULT: usize = 64 * 1024;
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
/// A connection's read buffer; grows for one larger frame, then shrinks back.
pub const READ_BUFFER_BYTES: usize = 64 * 1024;
/// A writer keeps its spare buffer unless it grew past this.
pub const WRITE_BUFFER_KEEP_BYTES_MAX: usize = 4 * 1024 * 1024;
/// Most decimal digits accepted in a PUB/HPUB size or an UNSUB max (nats-server's
/// `parseSize` refuses longer numbers), so a size never overflows a `usize`.
pub const SIZE_DIGITS_MAX: usize = 9;

const _: () = assert!(PAYLOAD_BYTES_DEFAULT < 1_000_000_000);
const _: () = assert!(SIZE_DIGITS_MAX <= 18);
