//! The shard timer wheel at 1M timers: schedule, cancel, and advance tick by tick
//! through 30 s of 1 ms ticks (ack deadlines spread like a busy shard's).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use jetcore::consumer::{Expired, Tick, TimerWheel};

const TIMERS: u64 = 1_000_000;
const SPREAD_TICKS: u64 = 30_000;

/// Deterministic deadlines spread over `SPREAD_TICKS` (SplitMix64).
fn deadlines() -> Vec<u64> {
    let mut state = 0x5EED_u64;
    (0..TIMERS)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            1 + (z ^ (z >> 31)) % SPREAD_TICKS
        })
        .collect()
}

fn wheel_benches(c: &mut Criterion) {
    let deadlines = deadlines();
    let mut group = c.benchmark_group("timer_wheel_1m");
    group.sample_size(10);
    group.throughput(Throughput::Elements(TIMERS));

    group.bench_function("schedule_then_cancel_all", |b| {
        b.iter_batched(
            || TimerWheel::<u64>::new(Tick(0)),
            |mut wheel| {
                let ids: Vec<_> =
                    deadlines.iter().enumerate().map(|(k, d)| wheel.schedule(Tick(*d), k as u64)).collect();
                for id in ids {
                    black_box(wheel.cancel(id));
                }
                wheel
            },
            BatchSize::LargeInput,
        )
    });

    group.bench_function("schedule_cancel_half_advance_by_tick", |b| {
        b.iter_batched(
            || TimerWheel::<u64>::new(Tick(0)),
            |mut wheel| {
                let ids: Vec<_> =
                    deadlines.iter().enumerate().map(|(k, d)| wheel.schedule(Tick(*d), k as u64)).collect();
                for id in ids.iter().step_by(2) {
                    wheel.cancel(*id);
                }
                let mut expired: Vec<Expired<u64>> = Vec::with_capacity(1024);
                let mut fired = 0;
                for tick in 1..=SPREAD_TICKS {
                    expired.clear();
                    wheel.advance(Tick(tick), &mut expired);
                    fired += expired.len();
                }
                assert_eq!(fired as u64, TIMERS / 2);
                wheel
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, wheel_benches);
criterion_main!(benches);
