//! The shard timer wheel against a brute-force model on random schedules, cancels and
//! advances, including deadlines far beyond one revolution and in the past.

#[path = "consumer_fixture.rs"]
mod fixture;

use std::collections::BTreeMap;

use fixture::{seeds, Rng};
use jetcore::consumer::{Tick, TimerId, TimerWheel};

/// A deadline offset from `now`: mostly near, some far (beyond every level), some past.
fn random_offset(rng: &mut Rng) -> i64 {
    match rng.below(10) {
        0 => -(rng.below(50) as i64),
        1..=5 => rng.below(200) as i64,
        6 | 7 => rng.below(300_000) as i64,
        8 => rng.below(1 << 40) as i64,
        _ => (1i64 << 36) + rng.below(1 << 38) as i64,
    }
}

fn run(seed: u64) {
    let mut rng = Rng::new(seed);
    let start = rng.below(1 << 40);
    let mut wheel: TimerWheel<u64> = TimerWheel::new(Tick(start));
    let mut model: BTreeMap<u64, (u64, TimerId)> = BTreeMap::new();
    let mut now = start;
    let mut next_key = 0u64;
    let mut expired = Vec::new();
    for step in 0..4_000 {
        match rng.below(10) {
            0..=4 => {
                let deadline = (now as i64 + random_offset(&mut rng)).max(0) as u64;
                let id = wheel.schedule(Tick(deadline), next_key);
                model.insert(next_key, (deadline, id));
                next_key += 1;
            }
            5 | 6 if !model.is_empty() => {
                let nth = rng.below(model.len() as u64) as usize;
                let key = *model.keys().nth(nth).unwrap();
                let (_, id) = model.remove(&key).unwrap();
                assert_eq!(wheel.cancel(id), Some(key), "seed {seed} step {step}: cancel");
                assert_eq!(wheel.cancel(id), None, "seed {seed} step {step}: second cancel");
            }
            _ => {
                let jump = match rng.below(4) {
                    0 => rng.below(3),
                    1 => rng.below(5_000),
                    2 => rng.below(1 << 30),
                    _ => rng.below(1 << 39),
                };
                now += jump;
                expired.clear();
                wheel.advance(Tick(now), &mut expired);
                let fired: Vec<(u64, u64)> = expired.iter().map(|e| (e.deadline.get(), e.key)).collect();
                assert!(
                    fired.windows(2).all(|pair| pair[0].0 <= pair[1].0),
                    "seed {seed} step {step}: not in deadline order: {fired:?}"
                );
                let mut fired_sorted = fired.clone();
                fired_sorted.sort_by_key(|&(deadline, key)| (deadline, key));
                let mut expected: Vec<(u64, u64)> = model
                    .iter()
                    .filter(|(_, (deadline, _))| *deadline <= now)
                    .map(|(key, (deadline, _))| (*deadline, *key))
                    .collect();
                expected.sort();
                assert_eq!(fired_sorted, expected, "seed {seed} step {step}: fired set at {now}");
                for (_, key) in &expected {
                    model.remove(key);
                }
            }
        }
        assert_eq!(wheel.len(), model.len(), "seed {seed} step {step}: len");
        if let (Some(wake), Some(earliest)) = (wheel.next_wake(), model.values().map(|v| v.0).min()) {
            assert!(wake.get() <= earliest.max(now), "seed {seed} step {step}: wake after a deadline");
        }
    }
}

#[test]
fn wheel_matches_brute_force_model() {
    for seed in seeds(40) {
        run(seed);
    }
}

#[test]
fn deadline_order_within_one_advance_across_levels() {
    let mut wheel = TimerWheel::new(Tick(0));
    for (index, deadline) in [70_000u64, 5, 4_096, 64, 1 << 37, 63, 262_144].iter().enumerate() {
        wheel.schedule(Tick(*deadline), index);
    }
    let mut expired = Vec::new();
    wheel.advance(Tick(1 << 38), &mut expired);
    let deadlines: Vec<u64> = expired.iter().map(|e| e.deadline.get()).collect();
    assert_eq!(deadlines, vec![5, 63, 64, 4_096, 70_000, 262_144, 1 << 37]);
}
