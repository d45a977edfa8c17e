//! Append path cost without the disk: publish through a stream over the in-memory disk
//! (encode, limits, group commit bookkeeping), one at a time and 16 concurrent.

use std::path::Path;
use std::rc::Rc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use futures_lite::future::block_on;
use jetcore::engine::Engine;
use jetcore::store::{Disk, SimDisk};
use jetcore::stream::{ShardId, StorageKind, StreamConfig, SystemClock};

fn engine() -> Engine {
    let disk: Rc<dyn Disk> = Rc::new(SimDisk::volatile());
    let engine = block_on(Engine::open_with(disk, Path::new("/bench"), Rc::new(SystemClock))).expect("engine");
    let mut config = StreamConfig::new("BENCH", &["bench.>"]);
    config.storage = StorageKind::Memory;
    config.max_msgs = Some(100_000);
    block_on(engine.create_stream(config, ShardId(0))).expect("stream");
    engine
}

fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("segment_append");
    for size in [128usize, 1024] {
        let payload = vec![1u8; size];
        let engine = engine();
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(BenchmarkId::new("single", size), &payload, |b, payload| {
            b.iter(|| block_on(engine.publish("BENCH", "bench.a", b"", payload)).expect("publish"))
        });
        group.throughput(Throughput::Elements(16));
        group.bench_with_input(BenchmarkId::new("concurrent16", size), &payload, |b, payload| {
            b.iter(|| {
                let publishes = (0..16).map(|_| engine.publish("BENCH", "bench.a", b"", payload));
                block_on(futures::future::join_all(publishes))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, append);
criterion_main!(benches);
