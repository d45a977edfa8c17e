//! Hot paths of every publish: parsing PUB/HPUB from a read buffer, encoding MSG,
//! matching a subject in the subscription trie, and routing a reply (a pub ack) through
//! the interest table's match cache.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use jetcore::consumer::{AckNumbers, AckSubjectBuilder, ConsumerSeq, StreamSeq};
use jetcore::protocol::{encode_msg, parse, Parsed};
use jetcore::server::interest::Interest;
use jetcore::shard::ShardId;
use jetcore::subject::SubjectTrie;
use std::hint::black_box;

const MAX_PAYLOAD: usize = 1024 * 1024;
const PIPELINED_OPS: usize = 1000;

fn pub_wire(payload_bytes: usize) -> Vec<u8> {
    let mut wire = format!("PUB telemetry.eu.sensor.42 {payload_bytes}\r\n").into_bytes();
    wire.resize(wire.len() + payload_bytes, b'x');
    wire.extend_from_slice(b"\r\n");
    wire
}

fn parse_all(buf: &[u8]) -> usize {
    let mut rest = buf;
    let mut count = 0;
    while let Ok(Parsed::Op { consumed, .. }) = parse(rest, MAX_PAYLOAD) {
        rest = &rest[consumed..];
        count += 1;
    }
    count
}

fn bench_parse(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("parse");
    let one = pub_wire(128);
    let pipelined: Vec<u8> = one.repeat(PIPELINED_OPS);
    group.throughput(Throughput::Elements(PIPELINED_OPS as u64));
    group.bench_function("pub_128b_x1000", |bencher| bencher.iter(|| parse_all(black_box(&pipelined))));
    let headers = b"NATS/1.0\r\nNats-Msg-Id: 0123456789abcdef\r\n\r\n";
    let mut hpub = format!("HPUB orders.eu.1 _INBOX.abc.1 {} {}\r\n", headers.len(), headers.len() + 128).into_bytes();
    hpub.extend_from_slice(headers);
    hpub.resize(hpub.len() + 128, b'y');
    hpub.extend_from_slice(b"\r\n");
    let pipelined_hpub = hpub.repeat(PIPELINED_OPS);
    group.bench_function("hpub_128b_x1000", |bencher| bencher.iter(|| parse_all(black_box(&pipelined_hpub))));
    group.finish();
}

fn bench_encode(criterion: &mut Criterion) {
    let payload = vec![b'z'; 128];
    criterion.bench_function("encode_msg_128b", |bencher| {
        bencher.iter_batched_ref(
            || Vec::with_capacity(256),
            |out| encode_msg(out, b"telemetry.eu.sensor.42", b"17", None, black_box(&payload)),
            BatchSize::SmallInput,
        )
    });
    // One per delivered message: five numbers, one of them a 19-digit timestamp.
    let acks = AckSubjectBuilder::new("ORDERS", "C1");
    let ack = AckNumbers {
        delivery_count: 1,
        stream_seq: StreamSeq(1_234_567),
        consumer_seq: ConsumerSeq(1_234_000),
        timestamp_nanos: 1_796_384_194_227_306_402,
        pending: 987_654,
    };
    let mut reply = Vec::new();
    criterion.bench_function("ack_subject", |bencher| {
        bencher.iter(|| {
            reply.clear();
            black_box(ack).write(acks.prefix(), &mut reply);
            black_box(reply.len())
        })
    });
}

/// 10 000 subscriptions: literal per-sensor subjects plus a few wildcards, as a
/// telemetry deployment might hold.
fn telemetry_trie() -> SubjectTrie<u32> {
    let mut trie = SubjectTrie::new();
    let mut id = 0;
    for region in ["eu", "us", "ap", "sa"] {
        for sensor in 0..2500 {
            trie.insert(format!("telemetry.{region}.sensor.{sensor}").as_bytes(), id).unwrap();
            id += 1;
        }
    }
    for pattern in ["telemetry.>", "telemetry.*.sensor.42", "telemetry.eu.>", "_INBOX.*.*"] {
        trie.insert(pattern.as_bytes(), id).unwrap();
        id += 1;
    }
    trie
}

fn bench_trie(criterion: &mut Criterion) {
    let trie = telemetry_trie();
    let mut group = criterion.benchmark_group("trie_10k");
    group.bench_function("match_literal_and_wildcards", |bencher| {
        bencher.iter(|| {
            let mut count = 0u32;
            trie.for_each_match(black_box(b"telemetry.eu.sensor.42"), |_| count += 1);
            count
        })
    });
    group.bench_function("match_none", |bencher| {
        bencher.iter(|| {
            let mut count = 0u32;
            trie.for_each_match(black_box(b"orders.new.7"), |_| count += 1);
            count
        })
    });
    group.finish();
}

/// Replies to one client inbox (`_INBOX.<id>.<n>`, every one new), as pub acks are
/// routed: the interest table holds the telemetry trie's patterns and the inbox's
/// `_INBOX.<id>.*`, all on another shard. `named_inbox`: a subscription also names one
/// reply token, so every reply is matched through the tries.
fn bench_reply_routing(criterion: &mut Criterion) {
    const REPLIES: usize = 1 << 16;
    let replies: Vec<Vec<u8>> = (0..REPLIES).map(|n| format!("_INBOX.Qx7bF2kPz9.{n}").into_bytes()).collect();
    let mut group = criterion.benchmark_group("reply_routing");
    for named in [false, true] {
        let mut interest = Interest::default();
        for region in ["eu", "us", "ap", "sa"] {
            for sensor in 0..2500 {
                interest.add_remote(ShardId(1), format!("telemetry.{region}.sensor.{sensor}").as_bytes(), None);
            }
        }
        interest.add_remote(ShardId(1), b"_INBOX.Qx7bF2kPz9.*", None);
        if named {
            interest.add_remote(ShardId(1), b"_INBOX.Qx7bF2kPz9.named", None);
        }
        let mut next = 0;
        let name = if named { "named_inbox" } else { "inbox" };
        group.bench_function(name, |bencher| {
            bencher.iter(|| {
                next = (next + 1) % REPLIES;
                interest.matches_of(black_box(&replies[next])).remote.len()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_parse, bench_encode, bench_trie, bench_reply_routing);
criterion_main!(benches);
