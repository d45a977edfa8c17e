//! Record encode/decode throughput (the codec is on every publish and every read).

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use jetcore::store::record::{decode, encode_into, Record, RecordKind, StreamId};

fn record(payload: &[u8]) -> Record<'_> {
    Record {
        kind: RecordKind::Message,
        stream_id: StreamId(42),
        seq: 1_000_000,
        timestamp_ns: 1_700_000_000_000_000_000,
        subject: b"telemetry.eu.sensor-0042",
        headers: b"NATS/1.0\r\nNats-Msg-Id: 0123456789\r\n\r\n",
        payload,
    }
}

fn codec(c: &mut Criterion) {
    let mut group = c.benchmark_group("record");
    for size in [128usize, 1024] {
        let payload = vec![7u8; size];
        let mut buffer = Vec::with_capacity(4096);
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_with_input(BenchmarkId::new("encode", size), &payload, |b, payload| {
            b.iter(|| {
                buffer.clear();
                encode_into(&record(black_box(payload)), &mut buffer);
            })
        });
        let mut encoded = Vec::new();
        encode_into(&record(&payload), &mut encoded);
        group.bench_with_input(BenchmarkId::new("decode", size), &encoded, |b, encoded| {
            b.iter(|| decode(black_box(encoded), StreamId(42)).expect("valid"))
        });
    }
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
