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

/// Most decimal digits accepted in a PUB/HPUB size or an UNSUB max (nats-server's
/// `parseSize` refuses longer numbers), so a size never overflows a `usize`.
pub const SIZE_DIGITS_MAX: usize = 9;

const _: () = assert!(PAYLOAD_BYTES_DEFAULT < 1_000_000_000);
const _: () = assert!(SIZE_DIGITS_MAX <= 18);
