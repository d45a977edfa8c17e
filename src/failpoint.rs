//! Named crash points (reliability matrix row 2): the process aborts at the N-th time it
//! reaches the point named in `JETCORE_FAILPOINT=name[:N[:COUNT]]` (N defaults to 1; a
//! failing point fails COUNT times in a row from there, default 1). Unset, each
//! point costs one load of an initialised `OnceLock`. `tests/crash_failpoints.rs` arms
//! each point in turn and checks that nothing acknowledged is lost when the process dies
//! exactly there.
//!
//! Points (where they sit):
//! - `after_write_before_fsync`: a group's data is written, its fdatasync not yet issued
//!   (store/flush.rs);
//! - `after_fsync_before_ack`: the fdatasync (or a small group's durable write) returned,
//!   no publisher has its ack yet;
//! - `mid_segment_roll`: a new segment file exists but is neither preallocated nor in the
//!   directory's synced entries (store/log.rs);
//! - `mid_segment_drop`: a retired front segment is closed but not yet unlinked, and
//!   `after_segment_unlink`: unlinked, directory not yet synced (retention);
//! - `mid_checkpoint_write`, `mid_consumer_state_write`, `mid_meta_write`: the new file
//!   is written to its temporary name, not yet renamed over the old one; and
//!   `after_meta_rename`: renamed, directory not yet synced (store/meta_file.rs; the name
//!   says which file: a stream checkpoint, a consumer's state, anything else).
//!
//! One point fails instead of aborting ([`fails`]): `fdatasync_error` makes the N-th
//! fdatasync of a stream's log (store/flush.rs) return EIO, so a test can see a running
//! server fail-stop that stream (`tests/monitor_health.rs`). Run with
//! `JETCORE_DURABLE_WRITE=fdatasync` so small groups are synced by fdatasync too.
//! `write_no_space` makes the N-th write of a stream's log (store/flush.rs) find the disk
//! full (ENOSPC, nothing written), so a test can see the stream refuse and go on, and the
//! `OUT_OF_STORAGE` advisory (`tests/advisory_out_of_storage.rs`).
//! `health_snapshot_stall` makes the N-th shard asked for its stream conditions never
//! answer, so `/healthz` meets a shard that does not answer in time.
//! `startup_stall` makes the N-th shard to start wait 3 s before it opens its streams,
//! so `/healthz` meets a server still starting (server/run.rs).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The environment variable that arms a point.
pub const ENV: &str = "JETCORE_FAILPOINT";

struct Armed {
    name: String,
    at_hit: u64,
    /// How many hits in a row from `at_hit` fail (a failing point; aborts stop at one).
    failing_hits: u64,
    hits: AtomicU64,
}

fn armed() -> Option<&'static Armed> {
    static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
    ARMED
        .get_or_init(|| {
            let value = std::env::var(ENV).ok()?;
            let mut parts = value.split(':');
            let name = parts.next().unwrap_or_default();
            let at_hit = parts.next().and_then(|n| n.parse().ok()).unwrap_or(1u64).max(1);
            let failing_hits = parts.next().and_then(|n| n.parse().ok()).unwrap_or(1u64).max(1);
            Some(Armed { name: name.to_string(), at_hit, failing_hits, hits: AtomicU64::new(0) })
        })
        .as_ref()
}

/// Whether this point is armed and reached for the N-th time: the caller then fails the
/// operation as the disk would have.
#[inline]
pub fn fails(name: &str) -> bool {
    let Some(armed) = armed() else { return false };
    if armed.name != name {
        return false;
    }
    let hit = armed.hits.fetch_add(1, Ordering::Relaxed) + 1;
    (armed.at_hit..armed.at_hit + armed.failing_hits).contains(&hit)
}

/// Aborts the process here when this point is armed and reached for the N-th time.
#[inline]
pub fn hit(name: &str) {
    let Some(armed) = armed() else { return };
    if armed.name == name && armed.hits.fetch_add(1, Ordering::Relaxed) + 1 == armed.at_hit {
        eprintln!("failpoint {name}: aborting at hit {}", armed.at_hit);
        std::process::abort();
    }
}
