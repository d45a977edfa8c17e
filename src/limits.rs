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
/// Spacing of the sparse sequence→offset index inside a segment.
pub const SPARSE_INDEX_INTERVAL_BYTES: u64 = 32 * 1024;
/// Buffers kept in a shard's write-buffer pool when idle (the rest are freed).
pub const WRITE_BUFFER_POOL_IDLE_MAX: usize = 8;
/// Size of one read during recovery scans.
pub const RECOVERY_READ_BYTES: usize = 1024 * 1024;
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
