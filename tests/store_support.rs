//! Shared helpers for the storage tests (included with `#[path]`; also a tiny test target).
#![allow(dead_code)]

use std::future::Future;
use std::path::Path;
use std::rc::Rc;

use jetcore::engine::Engine;
use jetcore::store::{Disk, SimDisk};
use jetcore::stream::{ManualClock, StreamConfig};

/// glommio registers I/O memory against RLIMIT_MEMLOCK; tests run as root, so lift it.
pub fn raise_memlock() {
    let limit = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: setrlimit with a valid pointer to an initialised struct.
    unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &limit) };
}

/// Runs `make()`'s future to completion on a fresh glommio executor.
pub fn run<F, Fut>(make: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + 'static,
{
    raise_memlock();
    glommio::LocalExecutorBuilder::default().spawn(make).expect("executor").join().expect("join");
}

/// An engine over `disk` at `/data` with a manual clock.
pub async fn sim_engine(disk: &SimDisk, clock: &Rc<ManualClock>) -> Engine {
    let disk: Rc<dyn Disk> = Rc::new(disk.clone());
    Engine::open_with(disk, Path::new("/data"), clock.clone()).await.expect("open engine")
}

/// Loses what `disk` did not sync, reopens it, and checks that `stream` holds
/// `payload_for(seq, len)` at every sequence of `seqs` (what was acknowledged).
pub async fn crash_and_read_back(
    disk: &SimDisk,
    clock: &Rc<ManualClock>,
    stream: &str,
    seqs: std::ops::RangeInclusive<u64>,
    len: usize,
) {
    disk.crash(jetcore::store::CrashMode::DropUnsynced);
    let engine = sim_engine(disk, clock).await;
    for seq in seqs {
        let message = engine.get(stream, seq).await.expect("an acked message survives");
        assert_eq!(&message.payload[..], &payload_for(seq, len)[..], "seq {seq}");
    }
}

/// A stream config with small segments so tests roll segments quickly.
pub fn small_config(name: &str, subjects: &[&str]) -> StreamConfig {
    let mut config = StreamConfig::new(name, subjects);
    config.segment_size_bytes = 64 * 1024;
    config
}

/// An engine on `dir` with stream `name` capturing `subjects` on shard 0, in segments of
/// `segment_bytes` ([`small_config`]'s when `None`).
pub async fn engine_with_stream(dir: &Path, name: &str, subjects: &[&str], segment_bytes: Option<u64>) -> Engine {
    let engine = Engine::open(dir).await.expect("open");
    let mut config = small_config(name, subjects);
    if let Some(bytes) = segment_bytes {
        config.segment_size_bytes = bytes;
    }
    engine.create_stream(config, jetcore::stream::ShardId(0)).await.expect("create");
    engine
}

/// A payload that names its sequence, so reads can be checked.
pub fn payload_for(seq: u64, len: usize) -> Vec<u8> {
    let mut payload = format!("message-{seq}-").into_bytes();
    payload.resize(len.max(payload.len()), b'x');
    payload
}

/// A tiny deterministic generator for seeded tests.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound.max(1)
    }
}

#[test]
fn rng_is_deterministic() {
    let (mut a, mut b) = (Rng(7), Rng(7));
    assert_eq!(a.next_u64(), b.next_u64());
}
