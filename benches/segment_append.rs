//! Append path cost without the disk: publish through a memory stream (encode, limits,
//! group commit bookkeeping), one at a time and 16 concurrent. The loop runs on the
//! engine's shard (`EngineHandle::call`), timed there: the engine needs its glommio
//! executor, for the flusher task and the group's DMA memory.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use jetcore::engine::EngineHandle;
use jetcore::stream::{StorageKind, StreamConfig};

fn engine(dir: &tempfile::TempDir) -> EngineHandle {
    let engine = EngineHandle::open(dir.path()).expect("engine");
    let mut config = StreamConfig::new("BENCH", &["bench.>"]);
    config.storage = StorageKind::Memory;
    config.max_msgs = Some(100_000);
    engine.create_stream(config).wait().expect("stream");
    engine
}

/// `rounds` rounds of `concurrent` publishes joined, timed on the engine's shard.
fn publish(engine: &EngineHandle, payload: &[u8], rounds: u64, concurrent: usize) -> Duration {
    let payload = payload.to_vec();
    engine
        .call(move |engine| async move {
            let started = Instant::now();
            for _ in 0..rounds {
                let publishes = (0..concurrent).map(|_| engine.publish("BENCH", "bench.a", b"", &payload));
                for ack in futures::future::join_all(publishes).await {
                    ack?;
                }
            }
            Ok(started.elapsed())
        })
        .wait()
        .expect("publishes")
}

fn append(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("directory");
    let engine = engine(&dir);
    let mut group = c.benchmark_group("segment_append");
    for size in [128usize, 1024] {
        let payload = vec![1u8; size];
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(BenchmarkId::new("single", size), &payload, |b, payload| {
            b.iter_custom(|rounds| publish(&engine, payload, rounds, 1))
        });
        group.throughput(Throughput::Elements(16));
        group.bench_with_input(BenchmarkId::new("concurrent16", size), &payload, |b, payload| {
            b.iter_custom(|rounds| publish(&engine, payload, rounds, 16))
        });
    }
    group.finish();
    engine.close().expect("close");
}

criterion_group!(benches, append);
criterion_main!(benches);
