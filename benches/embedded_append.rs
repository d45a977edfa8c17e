//! Durable append (fdatasync before every ack), embedded against through the wire, in one
//! run, beside the disk's own floor:
//!
//! - `engine`: `Engine::publish` on the engine's shard (the loop runs there; no thread hop),
//!   a window's publishes joined before the next window; `engine_many`: the window as one
//!   `Engine::publish_many`; `engine_sliding`: the window kept full, each ack's slot taken
//!   by the next publish at once (a producer with a publish window open);
//! - `handle`: `EngineHandle::publish` from a plain thread (a request into the shard and
//!   the reply back: the cost a tokio or threaded program pays per call);
//! - `wire`: a JetStream publish with async-nats to an in-process `jetcore::Server` over
//!   loopback TCP, waiting for the pub ack;
//! - `embedded_call`: a request that does nothing through `EngineHandle`, there and back
//!   (blocking, and awaited on tokio): the handle's own cost per call;
//! - `disk`: O_DIRECT writes and fdatasync on a file in the same directory, no jetcore:
//!   one 4 KiB write + fdatasync (the floor of one append in flight) and, for a window,
//!   one write of the window's bytes rounded up to 4 KiB + fdatasync (what group commit
//!   at best turns a window into), in the pattern the engine writes such a group
//!   (`DirectFile`). Run from a thread pinned to the engine shard's CPU:
//!   a thread waiting on the disk is woken on its own CPU, and on a VM whose disk
//!   interrupts all land on one CPU that wake costs tens of µs more on the others
//!   (perf/embedding.md, "Which CPU waits"). The interleaved pass also measures the
//!   floor on every other CPU.
//!
//! Each at one in flight and with a window of 256 in flight, 128 B and 1 KiB payloads.
//! Throughput is in payload bytes. `JETCORE_BENCH_DIR` picks the disk (default: a temp
//! directory under the current one, so the disk is the repository's, not tmpfs).
//! Figures and method: perf/embedding.md.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fs::OpenOptions;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use jetcore::engine::{EngineHandle, Outgoing};
use jetcore::stream::StreamConfig;

const WINDOW: u64 = 256;
const PAYLOADS: [usize; 2] = [128, 1024];
const PAGE: usize = 4096;

fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var("JETCORE_BENCH_DIR").unwrap_or_else(|_| ".".to_string());
    tempfile::tempdir_in(base).expect("bench directory")
}

fn embedded_append(c: &mut Criterion) {
    let dir = bench_dir();
    let engine = EngineHandle::open(dir.path().join("engine")).expect("engine");
    engine.create_stream(StreamConfig::new("BENCH", &["bench.>"])).wait().expect("stream");
    let server = jetcore::Server::builder().port(0).store_dir(dir.path().join("server")).shards(1);
    let server = server.start().expect("server");
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("tokio");
    let js = tokio.block_on(async {
        let js = jetstream::new(async_nats::connect(server.client_url()).await.expect("connect"));
        let subjects = vec!["bench.>".into()];
        let config = jetstream::stream::Config { name: "BENCH".into(), subjects, ..Default::default() };
        js.create_stream(config).await.expect("stream");
        js
    });
    let mut disk = DirectFile::create(dir.path()).expect("O_DIRECT files");
    let shard_cpu = engine.call(|_| async { Ok(current_cpu()) }).wait().expect("shard CPU");

    let mut group = c.benchmark_group("embedded_append");
    group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    for size in PAYLOADS {
        for in_flight in [1, WINDOW] {
            let parameter = format!("{size}B/{in_flight}");
            group.throughput(Throughput::Bytes(size as u64 * in_flight));
            let payload = vec![b'x'; size];

            let engine_payload = payload.clone();
            group.bench_function(BenchmarkId::new("engine", &parameter), |b| {
                b.iter_custom(|rounds| on_shard(&engine, engine_payload.clone(), rounds, in_flight).wall)
            });
            if in_flight > 1 {
                let many_payload = payload.clone();
                group.bench_function(BenchmarkId::new("engine_many", &parameter), |b| {
                    b.iter_custom(|rounds| on_shard_many(&engine, many_payload.clone(), rounds, in_flight).wall)
                });
                let sliding_payload = payload.clone();
                group.bench_function(BenchmarkId::new("engine_sliding", &parameter), |b| {
                    b.iter_custom(|rounds| on_shard_sliding(&engine, sliding_payload.clone(), rounds, in_flight).wall)
                });
            }
            group.bench_function(BenchmarkId::new("handle", &parameter), |b| {
                b.iter(|| {
                    let replies: Vec<_> = (0..in_flight).map(|_| engine.publish("BENCH", SUBJECT, &payload)).collect();
                    for reply in replies {
                        reply.wait().expect("ack");
                    }
                })
            });
            group.bench_function(BenchmarkId::new("wire", &parameter), |b| {
                b.iter(|| {
                    tokio.block_on(async {
                        let mut acks = Vec::with_capacity(in_flight as usize);
                        for _ in 0..in_flight {
                            acks.push(js.publish(SUBJECT, payload.clone().into()).await.expect("publish"));
                        }
                        for ack in acks {
                            ack.await.expect("ack");
                        }
                    })
                })
            });
            // What group commit can at best make of the window: its bytes in one write.
            let record_bytes = jetcore::store::record::RECORD_HEADER_BYTES + SUBJECT.len() + size;
            let write_bytes = (record_bytes * in_flight as usize).div_ceil(PAGE) * PAGE;
            group.bench_function(BenchmarkId::new("disk", &parameter), |b| {
                let _pinned = Pinned::to(shard_cpu);
                b.iter(|| disk.write_and_sync(write_bytes).expect("disk write"))
            });
        }
    }
    group.finish();

    // The handle's own cost per call: a request that does nothing, there and back.
    let mut group = c.benchmark_group("embedded_call");
    group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    group.bench_function("handle_wait", |b| b.iter(|| engine.call(|_| async { Ok(()) }).wait().expect("call")));
    group.bench_function("handle_await_tokio", |b| {
        b.iter(|| tokio.block_on(async { engine.call(|_| async { Ok(()) }).await.expect("call") }))
    });
    group.finish();
    interleaved_against_the_floor(&engine, &mut disk, shard_cpu);
    drop(js);
    server.shutdown().expect("server shutdown");
    engine.close().expect("engine close");
}

/// Every publish's subject.
const SUBJECT: &str = "bench.a";

/// `rounds` rounds of `in_flight` publishes, timed on the engine's shard.
fn on_shard(engine: &EngineHandle, payload: Vec<u8>, rounds: u64, in_flight: u64) -> Timed {
    engine
        .call(move |engine| async move {
            let started = Timed::start();
            for _ in 0..rounds {
                let publishes = (0..in_flight).map(|_| engine.publish("BENCH", SUBJECT, b"", &payload));
                for ack in futures::future::join_all(publishes).await {
                    ack?;
                }
            }
            Ok(started.elapsed())
        })
        .wait()
        .expect("appends")
}

/// `rounds` × `in_flight` publishes with `in_flight` always outstanding: each ack frees
/// a slot that the next publish takes at once, as a producer keeping a publish window
/// open does (rather than waiting for the whole window, as `on_shard` does).
fn on_shard_sliding(engine: &EngineHandle, payload: Vec<u8>, rounds: u64, in_flight: u64) -> Timed {
    use futures::stream::{FuturesUnordered, StreamExt};
    engine
        .call(move |engine| async move {
            let total = rounds * in_flight;
            let started = Timed::start();
            let mut pending = FuturesUnordered::new();
            let mut issued = 0;
            while issued < in_flight.min(total) {
                pending.push(engine.publish("BENCH", SUBJECT, b"", &payload));
                issued += 1;
            }
            while let Some(ack) = pending.next().await {
                ack?;
                if issued < total {
                    pending.push(engine.publish("BENCH", SUBJECT, b"", &payload));
                    issued += 1;
                }
            }
            Ok(started.elapsed())
        })
        .wait()
        .expect("appends")
}

/// `on_shard` with each round's window as one `Engine::publish_many` call.
fn on_shard_many(engine: &EngineHandle, payload: Vec<u8>, rounds: u64, in_flight: u64) -> Timed {
    engine
        .call(move |engine| async move {
            let window = vec![Outgoing::new(SUBJECT, &payload); in_flight as usize];
            let started = Timed::start();
            for _ in 0..rounds {
                for ack in engine.publish_many("BENCH", &window).await? {
                    ack?;
                }
            }
            Ok(started.elapsed())
        })
        .wait()
        .expect("appends")
}

/// Wall time, and the shard thread's own CPU time over it (user and system, io_uring
/// submission included; io-wq workers and interrupts not). The wall time of a lockstep
/// window is the disk's plus the shard's CPU, and the disk's moves by tens of per cent
/// between minutes on a shared VM: the CPU is the figure a change to the append path
/// shows in.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Timed {
    wall: Duration,
    cpu: Duration,
}

/// When a [`Timed`] measurement started.
struct Started {
    at: Instant,
    cpu: Duration,
}

impl Timed {
    fn start() -> Started {
        Started { at: Instant::now(), cpu: thread_cpu() }
    }
}

impl Started {
    fn elapsed(&self) -> Timed {
        Timed { wall: self.at.elapsed(), cpu: thread_cpu().saturating_sub(self.cpu) }
    }
}

/// This thread's CPU time.
fn thread_cpu() -> Duration {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// How the interleaved pass publishes a window.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `on_shard`: the window's publishes joined, then the next window.
    Each,
    /// `on_shard_many`: the window as one `publish_many` call.
    Many,
    /// `on_shard_sliding`: the window kept full, [`SLIDING_WINDOWS`] windows' worth of
    /// publishes per measurement (times are per window).
    Sliding,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Each => "engine",
            Mode::Many => "engine_many",
            Mode::Sliding => "engine_sliding",
        }
    }
}

/// Windows' worth of publishes per sliding measurement: enough for the window to be in
/// its steady state, where slots freed by one group refill the next.
const SLIDING_WINDOWS: u64 = 8;

/// Operations that alternate between the engine and the disk floor, one for one, so both
/// see the same disk state (the shared disk's fdatasync cost moves by 10x within a minute):
/// the medians the targets in perf/embedding.md compare. The floor runs pinned to the
/// shard's CPU first (like for like), then to each other CPU. Printed, not a criterion
/// group.
fn interleaved_against_the_floor(engine: &EngineHandle, disk: &mut DirectFile, shard_cpu: usize) {
    const ROUNDS: usize = 101;
    let mut cpus = jetcore::shard::available_cpus();
    cpus.retain(|cpu| *cpu != shard_cpu);
    cpus.insert(0, shard_cpu);
    for floor_cpu in cpus {
        let _pinned = Pinned::to(floor_cpu);
        let window = |mode| (1024, WINDOW, mode);
        let runs = [
            (128, 1, Mode::Each),
            (1024, 1, Mode::Each),
            window(Mode::Each),
            window(Mode::Many),
            window(Mode::Sliding),
        ];
        for (size, in_flight, mode) in runs {
            let record_bytes = jetcore::store::record::RECORD_HEADER_BYTES + SUBJECT.len() + size;
            let write_bytes = (record_bytes * in_flight as usize).div_ceil(PAGE) * PAGE;
            let (mut appends, mut floors) = (Vec::with_capacity(ROUNDS), Vec::with_capacity(ROUNDS));
            let mut shard_cpu_times = Vec::with_capacity(ROUNDS);
            for _ in 0..ROUNDS {
                let windows = if mode == Mode::Sliding { SLIDING_WINDOWS } else { 1 };
                let append = match mode {
                    Mode::Each => on_shard,
                    Mode::Many => on_shard_many,
                    Mode::Sliding => on_shard_sliding,
                };
                let timed = append(engine, vec![b'x'; size], windows, in_flight);
                appends.push(timed.wall / windows as u32);
                shard_cpu_times.push(timed.cpu / windows as u32);
                let started = Instant::now();
                for _ in 0..windows {
                    disk.write_and_sync(write_bytes).expect("disk write");
                }
                floors.push(started.elapsed() / windows as u32);
            }
            appends.sort_unstable();
            floors.sort_unstable();
            shard_cpu_times.sort_unstable();
            let (append, floor) = (appends[ROUNDS / 2], floors[ROUNDS / 2]);
            let shard_busy = shard_cpu_times[ROUNDS / 2];
            let mib_s = |time: Duration| (size as u64 * in_flight) as f64 / time.as_secs_f64() / f64::from(1 << 20);
            println!(
                "interleaved {size}B/{in_flight}: {} (CPU {shard_cpu}) p50 {:.0} µs ({:.1} MiB/s, shard CPU {:.0} µs), disk floor (CPU {floor_cpu}) p50 {:.0} µs ({:.1} MiB/s), ratio {:.2}",
                mode.name(),
                append.as_secs_f64() * 1e6,
                mib_s(append),
                shard_busy.as_secs_f64() * 1e6,
                floor.as_secs_f64() * 1e6,
                mib_s(floor),
                floor.as_secs_f64() / append.as_secs_f64(),
            );
        }
    }
    let counts = engine
        .call(|engine| async move { Ok(engine.flush_counts(jetcore::stream::StorageKind::File)) })
        .wait()
        .expect("flush counts");
    let (syncs, writes) = (counts.sync_nanos.count(), counts.write_nanos.count());
    println!(
        "engine flushes: {syncs} fdatasyncs (mean {:.0} µs), {writes} writes (mean {:.0} µs), {} records",
        counts.sync_nanos.sum as f64 / syncs.max(1) as f64 / 1e3,
        counts.write_nanos.sum as f64 / writes.max(1) as f64 / 1e3,
        counts.group_records.sum,
    );
}

/// The CPU the calling thread runs on.
fn current_cpu() -> usize {
    // SAFETY: no arguments; returns -1 only where the kernel lacks getcpu.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).expect("sched_getcpu")
}

/// The calling thread pinned to one CPU until dropped, then back on its former set.
struct Pinned {
    former: libc::cpu_set_t,
}

impl Pinned {
    fn to(cpu: usize) -> Pinned {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: cpu_set_t is plain bits; both calls get a set of exactly `size` bytes.
        unsafe {
            let mut former: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(libc::sched_getaffinity(0, size, &mut former), 0, "sched_getaffinity");
            let mut only: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut only);
            assert_eq!(libc::sched_setaffinity(0, size, &only), 0, "sched_setaffinity");
            Pinned { former }
        }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: restores the set read in `to`.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.former) };
    }
}

/// Files written with O_DIRECT and fdatasynced as a log segment is, in the pattern the
/// engine writes a group of the same size:
/// - up to `ZERO_AHEAD_GROUP_BYTES_MAX`, the engine writes into blocks its zero-ahead has
///   already written, so the floor rewrites a circle of written blocks (`written`);
/// - above it there is no zero-ahead: each group lands on fallocated blocks never written
///   before, whose first write changes extent metadata (the fdatasync commits the journal)
///   and, on a VM, makes the host allocate. The floor marches forward through a
///   fallocated file (`fresh`), large enough for a run (8 GiB; past its end it starts
///   over on written blocks: no punching, which on a `discard` mount takes minutes).
///   Rewriting written blocks instead flatters the disk 2-3x for these sizes
///   (perf/embedding.md, "The floor's write pattern").
struct DirectFile {
    written: Region,
    fresh: Region,
    buffer: *mut u8,
    capacity: usize,
}

/// One file and where the next write goes.
struct Region {
    file: std::fs::File,
    bytes: u64,
    offset: u64,
}

const WRITTEN_FILE_BYTES: u64 = 64 << 20;
const FRESH_FILE_BYTES: u64 = 8 << 30;
const DIRECT_BUFFER_BYTES: usize = 1 << 20;

impl DirectFile {
    fn create(dir: &Path) -> io::Result<DirectFile> {
        let open = |name: &str| {
            OpenOptions::new().read(true).write(true).create(true).custom_flags(libc::O_DIRECT).open(dir.join(name))
        };
        let layout = Layout::from_size_align(DIRECT_BUFFER_BYTES, PAGE).map_err(io::Error::other)?;
        // SAFETY: the layout has a non-zero size.
        let buffer = unsafe { alloc_zeroed(layout) };
        if buffer.is_null() {
            return Err(io::Error::other("out of memory"));
        }
        let written = Region { file: open("floor.written")?, bytes: WRITTEN_FILE_BYTES, offset: 0 };
        let fresh = Region { file: open("floor.fresh")?, bytes: FRESH_FILE_BYTES, offset: 0 };
        let mut direct = DirectFile { written, fresh, buffer, capacity: DIRECT_BUFFER_BYTES };
        while direct.written.offset < WRITTEN_FILE_BYTES {
            direct.written.write_and_sync(direct.buffer, DIRECT_BUFFER_BYTES)?;
        }
        direct.written.offset = 0;
        allocate(&direct.fresh.file, FRESH_FILE_BYTES)?;
        Ok(direct)
    }

    fn write_and_sync(&mut self, bytes: usize) -> io::Result<()> {
        assert!(bytes <= self.capacity && bytes % PAGE == 0);
        if bytes > jetcore::limits::ZERO_AHEAD_GROUP_BYTES_MAX {
            self.fresh.write_and_sync(self.buffer, bytes)
        } else {
            self.written.write_and_sync(self.buffer, bytes)
        }
    }
}

impl Region {
    /// Writes `bytes` of `buffer` at the next offset and fdatasyncs. `buffer` must hold
    /// at least `bytes` initialised bytes, aligned to a page.
    fn write_and_sync(&mut self, buffer: *const u8, bytes: usize) -> io::Result<()> {
        if self.offset + bytes as u64 > self.bytes {
            self.offset = 0;
        }
        let fd = self.file.as_raw_fd();
        // SAFETY: per the contract above.
        let written = unsafe { libc::pwrite(fd, buffer.cast(), bytes, self.offset as libc::off_t) };
        if written != bytes as isize {
            return Err(io::Error::last_os_error());
        }
        self.offset += bytes as u64;
        // SAFETY: fdatasync only reads the descriptor.
        if unsafe { libc::fdatasync(fd) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Preallocates `bytes` as unwritten extents, as a segment is (the size set too).
fn allocate(file: &std::fs::File, bytes: u64) -> io::Result<()> {
    // SAFETY: fallocate only reads the descriptor.
    match unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, bytes as libc::off_t) } {
        0 => file.sync_all(),
        _ => Err(io::Error::last_os_error()),
    }
}

impl Drop for DirectFile {
    fn drop(&mut self) {
        if let Ok(layout) = Layout::from_size_align(self.capacity, PAGE) {
            // SAFETY: allocated in `create` with this layout.
            unsafe { dealloc(self.buffer, layout) };
        }
    }
}

criterion_group!(benches, embedded_append);
criterion_main!(benches);
