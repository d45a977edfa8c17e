//! Pins down the memlock figure the start-up probe asks for: each glommio executor registers
//! its I/O memory once per io_uring ring, and the kernel counts every registration as pinned
//! memory (VmPin), which is what RLIMIT_MEMLOCK limits for users without CAP_IPC_LOCK.

use jetcore::limits;
use jetcore::shard::{Runtime, ShardContext};

fn pinned_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("procfs");
    let line = status.lines().find(|line| line.starts_with("VmPin:")).expect("VmPin line");
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("VmPin value")
}

#[test]
fn one_shard_pins_its_io_memory_once_per_ring() {
    let io_memory_bytes = 4 * 1024 * 1024;
    let before_kib = pinned_kib();
    let pinned = Runtime::builder()
        .shards(1)
        .io_memory_bytes(io_memory_bytes)
        .start(|_: ShardContext<()>| async { pinned_kib() })
        .expect("runtime starts")
        .join()
        .expect("shard finishes")[0];
    let expected_kib = (limits::GLOMMIO_RINGS_PER_EXECUTOR * io_memory_bytes / 1024) as u64;
    assert_eq!(pinned - before_kib, expected_kib, "VmPin grew by {} KiB", pinned - before_kib);
}
