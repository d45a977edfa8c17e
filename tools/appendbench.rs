//! appendbench: embedded append throughput and latency of jetcore's storage engine, read as
//! a fraction of the disk's own O_DIRECT sequential write bandwidth measured in the same run.
//!
//! ```text
//! cargo run --release --bin appendbench -- [--dir DIR] [--seconds S] [--raw-mib N] [--reopen-mib N] [--idle-streams N] [--only KEY] [--shards N]
//! ```
//!
//! Scenarios: message sizes 128 B and 1 KiB × sync `always` and `interval(10ms)` × 1, 2 and
//! 16 streams × a window of 1, 64 or 256 publishes in flight per producer, with 16 concurrent
//! producers. Streams are spread over `--shards` shards (default 1), each a glommio
//! executor pinned to its own CPU with its own engine, as the server's shards own streams;
//! a producer runs on the shard of its stream. Latency is per publish, from issue to ack. Also: the
//! raw O_DIRECT bandwidth (1 MiB writes, 4 in flight, one fdatasync at the end; and again
//! with an fdatasync after every 4 MiB, the disk's durable bandwidth), the cost of a
//! durability point (4 KiB write + fdatasync vs an O_DSYNC write), and the time to reopen a
//! stream after a clean stop and after an unclean one; resident memory per idle stream.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};

use glommio::io::OpenOptions;
use hdrhistogram::Histogram;
use jetcore::engine::Engine;
use jetcore::store::SyncPolicy;
use jetcore::stream::{ShardId, StreamConfig};

const PRODUCERS: usize = 16;
const RAW_CHUNK_BYTES: usize = 1024 * 1024;
const RAW_IN_FLIGHT: usize = 4;
/// Raw measurements per run; the best is what ratios are taken against.
const RAW_REPEATS: usize = 3;
const DURABILITY_SAMPLES: usize = 200;
/// Publishes each producer keeps in flight (like an async client's publish window; nats.go's
/// default for async JetStream publishes is 4 000, `defaultAsyncPubAckInflight`).
const WINDOWS: [usize; 3] = [1, 64, 256];
/// Streams the producers publish to. With `--shards 2`, 2 streams put one stream on each
/// shard: every append of a shard goes to one log, one write and one fdatasync per round,
/// which is the I/O a log shared by a shard's streams would do, measured through the engine.
const STREAM_COUNTS: [usize; 3] = [1, 2, 16];

struct Options {
    dir: PathBuf,
    seconds: f64,
    raw_mib: usize,
    reopen_mib: usize,
    idle_streams: usize,
    /// Run only scenarios whose key (`size-sync-streams-window`, e.g. `1024-always-1-64`) contains this.
    only: String,
    /// Shards (executors, one per CPU from CPU 0) the scenarios' streams are spread over.
    shards: usize,
}

fn parse_options() -> Options {
    let mut options = Options {
        dir: PathBuf::from("appendbench-data"),
        seconds: 2.0,
        raw_mib: 256,
        reopen_mib: 64,
        idle_streams: 1000,
        only: String::new(),
        shards: 1,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).cloned().unwrap_or_default();
        match pair[0].as_str() {
            "--dir" => options.dir = PathBuf::from(value),
            "--seconds" => options.seconds = value.parse().expect("--seconds takes a number"),
            "--raw-mib" => options.raw_mib = value.parse().expect("--raw-mib takes a number"),
            "--reopen-mib" => options.reopen_mib = value.parse().expect("--reopen-mib takes a number"),
            "--only" => options.only = value,
            "--shards" => options.shards = value.parse().expect("--shards takes a number"),
            "--idle-streams" => options.idle_streams = value.parse().expect("--idle-streams takes a number"),
            other => panic!("unknown option {other}"),
        }
    }
    options
}

fn main() {
    let options = parse_options();
    let limit = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: setrlimit with a valid pointer; failure only means glommio uses less locked memory.
    unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &limit) };
    std::fs::create_dir_all(&options.dir).expect("create bench dir");
    glommio::LocalExecutorBuilder::new(glommio::Placement::Fixed(0))
        .spawn(move || async move { run(options).await })
        .expect("executor")
        .join()
        .expect("join");
}

async fn run(options: Options) {
    idle_stream_memory(&options).await;
    // The disk's figure varies ±20 % run to run here (the host's cache): take the best of
    // three, so ratios against it are the lowest the run supports.
    let mut raws = Vec::new();
    let mut synceds = Vec::new();
    for _ in 0..RAW_REPEATS {
        raws.push(raw_bandwidth(&options.dir, options.raw_mib, false).await);
        synceds.push(raw_bandwidth(&options.dir, options.raw_mib, true).await);
    }
    let best = |figures: &[f64]| figures.iter().copied().fold(0.0, f64::max);
    let listed = |figures: &[f64]| figures.iter().map(|f| format!("{f:.0}")).collect::<Vec<_>>().join(", ");
    let (raw, synced) = (best(&raws), best(&synceds));
    println!(
        "raw O_DIRECT sequential write: {raw:.1} MiB/s, best of {} ({} MiB each, 1 MiB writes, {RAW_IN_FLIGHT} in flight, one fdatasync at the end)",
        listed(&raws),
        options.raw_mib
    );
    println!(
        "raw O_DIRECT sequential write, synced: {synced:.1} MiB/s, best of {} (the same, with an fdatasync after every {RAW_IN_FLIGHT} MiB)",
        listed(&synceds)
    );
    let raw = RawFigures { raw, synced };
    for group_kib in [64usize, 256] {
        let mib = per_stream_pattern(&options.dir, group_kib * 1024, options.seconds).await;
        println!(
            "raw, the 16-stream pattern with no engine: {PRODUCERS} fresh preallocated files, each a loop of a {group_kib} KiB write then fdatasync, all at once: {mib:.1} MiB/s ({:.2} × raw, {:.2} × synced raw)",
            mib / raw.raw,
            mib / raw.synced
        );
    }
    durability_point_costs(&options.dir).await;
    println!("\nshards: {} (one executor per CPU from CPU 0)", options.shards);
    println!("\n| size | sync | streams | window | appends/s | payload MiB/s | × raw | × synced raw | p50 µs | p99 µs | p99.9 µs |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for size in [128usize, 1024] {
        for sync in [SyncPolicy::Always, SyncPolicy::Interval(Duration::from_millis(10))] {
            for streams in STREAM_COUNTS {
                for window in WINDOWS {
                    let key = format!("{size}-{}-{streams}-{window}", sync_label(sync).replace(' ', ""));
                    if !key.contains(&options.only) {
                        continue;
                    }
                    scenario(&options, size, sync, streams, window, raw).await;
                }
            }
        }
    }
    reopen_times(&options).await;
    let _ = std::fs::remove_dir_all(&options.dir);
}

/// The disk's own figures for sequential O_DIRECT writes (MiB/s).
#[derive(Clone, Copy)]
struct RawFigures {
    /// One fdatasync at the end: on this project's VM the host absorbs the writes in its
    /// cache, so this is far above what the disk makes durable.
    raw: f64,
    /// An fdatasync after every batch of writes in flight: the disk's durable bandwidth
    /// with 4 MiB commits, what sync `always` is up against.
    synced: f64,
}

/// Sequential O_DIRECT writes of 1 MiB, several in flight, one fdatasync at the end (or,
/// with `sync_each_batch`, one after every batch); MiB/s.
async fn raw_bandwidth(dir: &Path, mib: usize, sync_each_batch: bool) -> f64 {
    let path = dir.join("raw.bin");
    let file =
        Rc::new(OpenOptions::new().write(true).create(true).truncate(true).dma_open(&path).await.expect("open raw"));
    file.pre_allocate((mib * RAW_CHUNK_BYTES) as u64, false).await.expect("preallocate");
    let started = Instant::now();
    let chunks = mib;
    let mut next = 0usize;
    while next < chunks {
        let batch: Vec<_> = (next..(next + RAW_IN_FLIGHT).min(chunks))
            .map(|chunk| {
                let file = file.clone();
                glommio::spawn_local(async move {
                    let mut buffer = file.alloc_dma_buffer(RAW_CHUNK_BYTES);
                    buffer.as_bytes_mut().fill(0x5A);
                    file.write_at(buffer, (chunk * RAW_CHUNK_BYTES) as u64).await.expect("raw write");
                })
            })
            .collect();
        next += batch.len();
        for task in batch {
            task.await;
        }
        if sync_each_batch {
            file.fdatasync().await.expect("fdatasync");
        }
    }
    file.fdatasync().await.expect("fdatasync");
    let elapsed = started.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    mib as f64 / elapsed
}

/// What the disk gives the 16-stream scenarios' I/O pattern with no engine in the way:
/// one fresh preallocated file per stream (as a new segment), each a loop of one
/// `write_bytes` O_DIRECT write (a group of window × 1 KiB) and an fdatasync, all files at
/// once for `seconds`; MiB/s. The engine does better than this plain loop only by
/// overlapping a group's write with the previous group's fdatasync (`store/flush.rs`).
async fn per_stream_pattern(dir: &Path, write_bytes: usize, seconds: f64) -> f64 {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let loops: Vec<_> = (0..PRODUCERS)
        .map(|index| {
            let path = dir.join(format!("pattern-{index}.bin"));
            glommio::spawn_local(async move {
                let file = OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .dma_open(&path)
                    .await
                    .expect("open pattern file");
                let capacity = 256 * RAW_CHUNK_BYTES;
                file.pre_allocate(capacity as u64, false).await.expect("preallocate");
                let mut written = 0usize;
                while Instant::now() < deadline {
                    let mut buffer = file.alloc_dma_buffer(write_bytes);
                    buffer.as_bytes_mut().fill(0x5A);
                    file.write_at(buffer, (written % capacity) as u64).await.expect("pattern write");
                    file.fdatasync().await.expect("fdatasync");
                    written += write_bytes;
                }
                file.close().await.expect("close");
                let _ = std::fs::remove_file(&path);
                written
            })
        })
        .collect();
    let mut bytes = 0usize;
    for task in loops {
        bytes += task.await;
    }
    bytes as f64 / (1024.0 * 1024.0) / started.elapsed().as_secs_f64()
}

/// Compares durability points: write + fdatasync into fallocated (unwritten) blocks, into
/// blocks already written once (zeroed), and a write on an O_DSYNC file.
async fn durability_point_costs(dir: &Path) {
    let path = dir.join("durability.bin");
    let cases = [
        ("4 KiB write + fdatasync, fallocated blocks", 0, false),
        ("4 KiB write + fdatasync, pre-written blocks", 0, true),
        ("4 KiB write, O_DSYNC, fallocated blocks", libc::O_DSYNC, false),
    ];
    for (label, flags, prewrite) in cases {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(flags)
            .dma_open(&path)
            .await
            .expect("open");
        file.pre_allocate((DURABILITY_SAMPLES * 4096) as u64, false).await.expect("preallocate");
        if prewrite {
            let zeros = file.alloc_dma_buffer(DURABILITY_SAMPLES * 4096);
            file.write_at(zeros, 0).await.expect("prewrite");
            file.fdatasync().await.expect("fdatasync");
        }
        let mut histogram = Histogram::<u64>::new(3).expect("histogram");
        for sample in 0..DURABILITY_SAMPLES {
            let started = Instant::now();
            let buffer = file.alloc_dma_buffer(4096);
            file.write_at(buffer, (sample * 4096) as u64).await.expect("write");
            if flags == 0 {
                file.fdatasync().await.expect("fdatasync");
            }
            histogram.record(started.elapsed().as_micros() as u64).expect("record");
        }
        println!(
            "durability point, {label}: p50 {} µs, p99 {} µs",
            histogram.value_at_quantile(0.5),
            histogram.value_at_quantile(0.99)
        );
        file.close().await.expect("close");
    }
    let _ = std::fs::remove_file(&path);
}

fn sync_label(sync: SyncPolicy) -> String {
    match sync {
        SyncPolicy::Always => "always".into(),
        SyncPolicy::Interval(period) => format!("interval {}ms", period.as_millis()),
    }
}

async fn scenario(options: &Options, size: usize, sync: SyncPolicy, streams: usize, window: usize, raw: RawFigures) {
    let dir = options.dir.join(format!("scenario-{size}-{}-{streams}", sync_label(sync).replace(' ', "")));
    let shards = options.shards.clamp(1, streams);
    let ready = std::sync::Arc::new(std::sync::Barrier::new(shards));
    let seconds = options.seconds;
    // Blocking joins here only park this (idle) executor's thread while the shards run.
    let runs: Vec<_> = (0..shards)
        .map(|shard| {
            let (dir, ready) = (dir.join(format!("shard-{shard}")), ready.clone());
            glommio::LocalExecutorBuilder::new(glommio::Placement::Fixed(shard))
                .spawn(move || async move {
                    shard_part(&dir, shard, shards, size, sync, streams, window, seconds, &ready).await
                })
                .expect("shard executor")
        })
        .collect();
    let mut histogram = Histogram::<u64>::new(3).expect("histogram");
    let (mut appends, mut elapsed) = (0u64, 0f64);
    for run in runs {
        let (count, latencies, seconds) = run.join().expect("shard");
        appends += count;
        elapsed = elapsed.max(seconds);
        histogram.add(latencies).expect("merge");
    }
    let rate = appends as f64 / elapsed;
    let mib = rate * size as f64 / (1024.0 * 1024.0);
    println!(
        "| {size} B | {} | {streams} | {window} | {rate:.0} | {mib:.1} | {:.2} | {:.2} | {} | {} | {} |",
        sync_label(sync),
        mib / raw.raw,
        mib / raw.synced,
        histogram.value_at_quantile(0.5),
        histogram.value_at_quantile(0.99),
        histogram.value_at_quantile(0.999),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// One shard's part of a scenario: its own engine, the streams `index % shards == shard`
/// and the producers of those streams. Returns appends, latencies and seconds taken.
#[allow(clippy::too_many_arguments)]
async fn shard_part(
    dir: &Path,
    shard: usize,
    shards: usize,
    size: usize,
    sync: SyncPolicy,
    streams: usize,
    window: usize,
    seconds: f64,
    ready: &std::sync::Barrier,
) -> (u64, Histogram<u64>, f64) {
    let engine = Rc::new(Engine::open(dir).await.expect("open engine"));
    for index in (0..streams).filter(|index| index % shards == shard) {
        let mut config = StreamConfig::new(format!("S{index}"), &[&format!("s{index}.>")]);
        config.sync = sync;
        engine.create_stream(config, ShardId(0)).await.expect("create stream");
    }
    ready.wait();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let producers: Vec<_> = (0..PRODUCERS)
        .filter(|producer| (producer % streams) % shards == shard)
        .map(|producer| {
            let engine = engine.clone();
            glommio::spawn_local(async move { produce(&engine, producer % streams, size, window, deadline).await })
        })
        .collect();
    let mut histogram = Histogram::<u64>::new(3).expect("histogram");
    let mut appends = 0u64;
    for producer in producers {
        let (count, latencies) = producer.await;
        appends += count;
        histogram.add(latencies).expect("merge");
    }
    let elapsed = started.elapsed().as_secs_f64();
    print_group_commit(shard, &engine.flush_counts(jetcore::stream::StorageKind::File), elapsed);
    if let Ok(engine) = Rc::try_unwrap(engine) {
        engine.close().await.expect("close");
    }
    (appends, histogram, elapsed)
}

/// One producer: `window` publishes in flight at all times, as an async client keeps its
/// publish window full (a slot issues its next publish as soon as its ack arrives). Each
/// slot is a task of its own. (Until 2026-11-30 a producer issued `window` publishes,
/// waited for all of them, then issued the next batch: the log idled while the slowest
/// ack of a batch came back, and moving 64 publish futures into boxes per batch was 15 %
/// of the profile, charged to the engine.)
async fn produce(
    engine: &Rc<Engine>,
    stream: usize,
    size: usize,
    window: usize,
    deadline: Instant,
) -> (u64, Histogram<u64>) {
    let name: Rc<str> = format!("S{stream}").into();
    let subject: Rc<str> = format!("s{stream}.data").into();
    let payload: Rc<[u8]> = vec![0xABu8; size].into();
    // One histogram for the producer's slots: one each (1 024 per shard) made recording
    // 12 % of the profile, in cache misses.
    let histogram = Rc::new(std::cell::RefCell::new(Histogram::<u64>::new(3).expect("histogram")));
    let slots: Vec<_> = (0..window)
        .map(|_| {
            let (engine, name, subject, payload) = (engine.clone(), name.clone(), subject.clone(), payload.clone());
            let histogram = histogram.clone();
            glommio::spawn_local(async move {
                let mut count = 0u64;
                let mut started = Instant::now();
                while started < deadline {
                    engine.publish(&name, &subject, b"", &payload).await.expect("publish");
                    let now = Instant::now();
                    histogram.borrow_mut().record((now - started).as_micros() as u64).expect("record");
                    count += 1;
                    started = now;
                }
                count
            })
        })
        .collect();
    let mut count = 0;
    for slot in slots {
        count += slot.await;
    }
    let histogram = histogram.borrow().clone();
    (count, histogram)
}

/// What group commit did on one shard: groups per second, mean records per group, mean
/// write and fdatasync times. Printed before the table row (stderr), to read the row by.
fn print_group_commit(shard: usize, counts: &jetcore::store::FlushCounts, seconds: f64) {
    let total = |counts: &jetcore::store::Pow2Counts| counts.buckets.iter().sum::<u64>() + counts.overflow;
    let mean = |counts: &jetcore::store::Pow2Counts| counts.sum as f64 / total(counts).max(1) as f64;
    eprintln!(
        "shard {shard}: {:.0} groups/s, {:.1} records and {:.0} B per group, write {:.0} µs, fdatasync {:.0} µs ({:.0}/s)",
        total(&counts.group_records) as f64 / seconds,
        mean(&counts.group_records),
        mean(&counts.group_bytes),
        mean(&counts.write_nanos) / 1e3,
        mean(&counts.sync_nanos) / 1e3,
        total(&counts.sync_nanos) as f64 / seconds,
    );
}

/// Fills one stream with `reopen_mib` MiB, then times reopening after a clean and an unclean stop.
async fn reopen_times(options: &Options) {
    let dir = options.dir.join("reopen");
    let engine = Rc::new(Engine::open(&dir).await.expect("open"));
    let mut config = StreamConfig::new("R", &["r"]);
    config.sync = SyncPolicy::Interval(Duration::from_millis(50));
    engine.create_stream(config, ShardId(0)).await.expect("create");
    let payload = vec![1u8; 4096 - 64];
    let messages = options.reopen_mib * 256;
    let batch = 64;
    for _ in 0..messages / batch {
        let publishes = (0..batch).map(|_| engine.publish("R", "r", b"", &payload));
        for ack in futures_join(publishes).await {
            ack.expect("publish");
        }
    }
    let Ok(engine) = Rc::try_unwrap(engine) else {
        return;
    };
    engine.close().await.expect("close");
    let started = Instant::now();
    let engine = Engine::open(&dir).await.expect("reopen");
    let clean = started.elapsed();
    let messages_after = engine.state("R").expect("state").messages;
    drop(engine.stream("R").expect("stream"));
    std::fs::remove_file(dir.join("streams/R/checkpoint.bin")).expect("drop checkpoint (as after kill -9)");
    drop(engine);
    let started = Instant::now();
    let engine = Engine::open(&dir).await.expect("reopen unclean");
    let unclean = started.elapsed();
    assert_eq!(engine.state("R").expect("state").messages, messages_after);
    println!(
        "\nreopen of a {} MiB stream ({messages_after} messages): clean {:.1} ms, without checkpoint {:.1} ms",
        options.reopen_mib,
        clean.as_secs_f64() * 1e3,
        unclean.as_secs_f64() * 1e3
    );
}

async fn futures_join<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let tasks: Vec<F> = futures.collect();
    let mut outputs = Vec::with_capacity(tasks.len());
    let mut pinned: Vec<std::pin::Pin<Box<F>>> = tasks.into_iter().map(Box::pin).collect();
    let mut done: Vec<Option<F::Output>> = (0..pinned.len()).map(|_| None).collect();
    futures_lite::future::poll_fn(|context| {
        let mut pending = false;
        for (index, task) in pinned.iter_mut().enumerate() {
            if done[index].is_none() {
                match task.as_mut().poll(context) {
                    std::task::Poll::Ready(output) => done[index] = Some(output),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.extend(done.into_iter().map(|output| output.expect("completed")));
    outputs
}

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// RSS growth per stream for streams holding one message each and then sitting idle.
async fn idle_stream_memory(options: &Options) {
    let dir = options.dir.join("idle");
    let engine = Engine::open(&dir).await.expect("open");
    let before = resident_bytes();
    for index in 0..options.idle_streams {
        let mut config = StreamConfig::new(format!("IDLE{index}"), &[&format!("idle{index}")]);
        config.segment_size_bytes = jetcore::limits::SEGMENT_SIZE_BYTES_MIN;
        config.sync = SyncPolicy::Interval(Duration::from_secs(1));
        engine.create_stream(config, ShardId(0)).await.expect("create");
        engine.publish(&format!("IDLE{index}"), &format!("idle{index}"), b"", b"hello").await.expect("publish");
    }
    let growth = resident_bytes().saturating_sub(before);
    println!(
        "idle streams: {} streams with one message each: RSS +{:.1} MiB, {:.1} KiB per stream",
        options.idle_streams,
        growth as f64 / (1024.0 * 1024.0),
        growth as f64 / 1024.0 / options.idle_streams.max(1) as f64
    );
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
}
