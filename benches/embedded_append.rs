//! Durable append (fdatasync before every ack), embedded against through the wire, in one
//! run, beside the disk's own floor:
//!
//! - `engine`: `Engine::publish` on the engine's shard (the loop runs there; no thread hop);
//! - `handle`: `EngineHandle::publish` from a plain thread (a request into the shard and
//!   the reply back: the cost a tokio or threaded program pays per call);
//! - `wire`: a JetStream publish with async-nats to an in-process `jetcore::Server` over
//!   loopback TCP, waiting for the pub ack;
//! - `embedded_call`: a request that does nothing through `EngineHandle`, there and back
//!   (blocking, and awaited on tokio): the handle's own cost per call;
//! - `disk`: O_DIRECT writes and fdatasync on a file in the same directory, no jetcore:
//!   one 4 KiB write + fdatasync (the floor of one append in flight) and, for a window,
//!   one write of the window's bytes rounded up to 4 KiB + fdatasync (what group commit
//!   at best turns a window into).
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
use jetcore::engine::EngineHandle;
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
    let mut disk = DirectFile::create(&dir.path().join("disk.floor")).expect("O_DIRECT file");

    let mut group = c.benchmark_group("embedded_append");
    group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    for size in PAYLOADS {
        for in_flight in [1, WINDOW] {
            let parameter = format!("{size}B/{in_flight}");
            group.throughput(Throughput::Bytes(size as u64 * in_flight));
            let payload = vec![b'x'; size];

            let engine_payload = payload.clone();
            group.bench_function(BenchmarkId::new("engine", &parameter), |b| {
                b.iter_custom(|rounds| on_shard(&engine, engine_payload.clone(), rounds, in_flight))
            });
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
    interleaved_against_the_floor(&engine, &mut disk);
    drop(js);
    server.shutdown().expect("server shutdown");
    engine.close().expect("engine close");
}

/// Every publish's subject.
const SUBJECT: &str = "bench.a";

/// `rounds` rounds of `in_flight` publishes, timed on the engine's shard.
fn on_shard(engine: &EngineHandle, payload: Vec<u8>, rounds: u64, in_flight: u64) -> Duration {
    engine
        .call(move |engine| async move {
            let started = Instant::now();
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

/// Operations that alternate between the engine and the disk floor, one for one, so both
/// see the same disk state (the shared disk's fdatasync cost moves by 10x within a minute):
/// the medians the targets in perf/embedding.md compare. Printed, not a criterion group.
fn interleaved_against_the_floor(engine: &EngineHandle, disk: &mut DirectFile) {
    const ROUNDS: usize = 101;
    for (size, in_flight) in [(128, 1), (1024, 1), (1024, WINDOW)] {
        let record_bytes = jetcore::store::record::RECORD_HEADER_BYTES + SUBJECT.len() + size;
        let write_bytes = (record_bytes * in_flight as usize).div_ceil(PAGE) * PAGE;
        let (mut appends, mut floors) = (Vec::with_capacity(ROUNDS), Vec::with_capacity(ROUNDS));
        for _ in 0..ROUNDS {
            appends.push(on_shard(engine, vec![b'x'; size], 1, in_flight));
            let started = Instant::now();
            disk.write_and_sync(write_bytes).expect("disk write");
            floors.push(started.elapsed());
        }
        appends.sort_unstable();
        floors.sort_unstable();
        let (append, floor) = (appends[ROUNDS / 2], floors[ROUNDS / 2]);
        let mib_s = |time: Duration| (size as u64 * in_flight) as f64 / time.as_secs_f64() / f64::from(1 << 20);
        println!(
            "interleaved {size}B/{in_flight}: engine p50 {:.0} µs ({:.1} MiB/s), disk floor p50 {:.0} µs ({:.1} MiB/s), ratio {:.2}",
            append.as_secs_f64() * 1e6,
            mib_s(append),
            floor.as_secs_f64() * 1e6,
            mib_s(floor),
            floor.as_secs_f64() / append.as_secs_f64(),
        );
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

/// A file written with O_DIRECT, appended to and fdatasynced as a log segment is.
struct DirectFile {
    file: std::fs::File,
    buffer: *mut u8,
    capacity: usize,
    offset: u64,
}

/// Written through once at creation and then rewritten in a circle, so every measured
/// write lands on blocks already written: the disk's best case (see `store/flush.rs`'s
/// zero-ahead), the strictest floor.
const DIRECT_FILE_BYTES: u64 = 64 << 20;
const DIRECT_BUFFER_BYTES: usize = 1 << 20;

impl DirectFile {
    fn create(path: &Path) -> io::Result<DirectFile> {
        let file = OpenOptions::new().read(true).write(true).create(true).custom_flags(libc::O_DIRECT).open(path)?;
        let layout = Layout::from_size_align(DIRECT_BUFFER_BYTES, PAGE).map_err(io::Error::other)?;
        // SAFETY: the layout has a non-zero size.
        let buffer = unsafe { alloc_zeroed(layout) };
        if buffer.is_null() {
            return Err(io::Error::other("out of memory"));
        }
        let mut direct = DirectFile { file, buffer, capacity: DIRECT_BUFFER_BYTES, offset: 0 };
        while direct.offset < DIRECT_FILE_BYTES {
            direct.write_and_sync(DIRECT_BUFFER_BYTES)?;
        }
        direct.offset = 0;
        Ok(direct)
    }

    fn write_and_sync(&mut self, bytes: usize) -> io::Result<()> {
        assert!(bytes <= self.capacity && bytes % PAGE == 0);
        if self.offset + bytes as u64 > DIRECT_FILE_BYTES && self.offset > 0 {
            self.offset = 0;
        }
        // SAFETY: `buffer` holds `capacity` >= `bytes` initialised bytes, aligned to a page.
        let written =
            unsafe { libc::pwrite(self.file.as_raw_fd(), self.buffer.cast(), bytes, self.offset as libc::off_t) };
        if written != bytes as isize {
            return Err(io::Error::last_os_error());
        }
        self.offset += bytes as u64;
        // SAFETY: fdatasync only reads the descriptor.
        if unsafe { libc::fdatasync(self.file.as_raw_fd()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
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
