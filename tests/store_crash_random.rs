//! Seeded crash simulation (reliability rows 3, 4, 9): random concurrent publishes, random
//! fsync/write EIO faults, crashes that drop unsynced writes or tear the last sector with
//! garbage or old data, then recovery. Oracle: every acknowledged message is present with
//! its payload (0 lost), nothing unattempted appears, no damage is reported for torn
//! never-acknowledged tails, and sequences never go backwards.
//! Reproduce one seed with `JETCORE_SEED=<n> cargo test --test store_crash_random`.

#[path = "store_support.rs"]
mod support;

use std::collections::{BTreeMap, HashSet};
use std::rc::Rc;

use futures::future::join_all;
use jetcore::engine::Engine;
use jetcore::store::{CrashMode, SimDisk, SimOp};
use jetcore::stream::{ManualClock, ShardId};
use support::{run, sim_engine, small_config, Rng};

const SEEDS: u64 = 24;
const CYCLES_PER_SEED: u64 = 6;

struct Oracle {
    acked: BTreeMap<u64, Vec<u8>>,
    attempted: HashSet<Vec<u8>>,
    last_seq_seen: u64,
}

fn payload(seed: u64, counter: u64, rng: &mut Rng) -> Vec<u8> {
    let mut bytes = format!("{seed}:{counter}:").into_bytes();
    bytes.resize(bytes.len() + rng.below(2500) as usize, b'p');
    bytes
}

async fn publish_batch(
    engine: &Engine,
    rng: &mut Rng,
    oracle: &mut Oracle,
    seed: u64,
    counter: &mut u64,
) {
    let payloads: Vec<Vec<u8>> = (0..1 + rng.below(24))
        .map(|_| {
            *counter += 1;
            payload(seed, *counter, rng)
        })
        .collect();
    oracle.attempted.extend(payloads.iter().cloned());
    let acks = join_all(
        payloads
            .iter()
            .map(|body| engine.publish("C", "c.x", b"", body)),
    )
    .await;
    for (body, ack) in payloads.iter().zip(acks) {
        if let Ok(ack) = ack {
            assert!(!ack.duplicate);
            assert!(
                oracle.acked.insert(ack.seq, body.clone()).is_none(),
                "seed {seed}: sequence {} acked twice",
                ack.seq
            );
        }
    }
}

async fn verify(engine: &Engine, oracle: &mut Oracle, seed: u64, cycle: u64) {
    let context = format!("seed {seed} cycle {cycle}");
    let state = engine
        .state("C")
        .unwrap_or_else(|e| panic!("{context}: {e:?} {:?}", engine.failed_to_open()));
    assert!(
        state.lost.is_empty(),
        "{context}: damage reported for a torn tail: {:?}",
        state.lost
    );
    assert!(
        state.last_seq
            >= oracle
                .last_seq_seen
                .max(oracle.acked.keys().last().copied().unwrap_or(0)),
        "{context}: last_seq went backwards"
    );
    for (seq, body) in &oracle.acked {
        let message = engine
            .get("C", *seq)
            .await
            .unwrap_or_else(|e| panic!("{context}: acked seq {seq} lost: {e:?}"));
        assert_eq!(
            &message.payload[..],
            &body[..],
            "{context}: seq {seq} has other data"
        );
    }
    let mut next = 1;
    let stream = engine.stream("C").expect("stream");
    while let Some(seq) = stream.next_seq(next, None) {
        let message = engine
            .get("C", seq)
            .await
            .unwrap_or_else(|e| panic!("{context}: seq {seq} unreadable: {e:?}"));
        assert!(
            oracle.attempted.contains(&message.payload[..]),
            "{context}: unexpected message at {seq}"
        );
        // A recovered, never-acked message is now part of the stream: hold it to that.
        oracle
            .acked
            .entry(seq)
            .or_insert_with(|| message.payload.to_vec());
        next = seq + 1;
    }
    oracle.last_seq_seen = state.last_seq;
}

fn inject_fault(disk: &SimDisk, rng: &mut Rng) {
    let op = if rng.below(2) == 0 {
        SimOp::Sync
    } else {
        SimOp::Write
    };
    disk.fail_nth(op, 1 + rng.below(4), libc::EIO, rng.below(3) == 0);
}

fn crash_mode(rng: &mut Rng) -> CrashMode {
    match rng.below(3) {
        0 => CrashMode::DropUnsynced,
        1 => CrashMode::TearLastSector { garbage: true },
        _ => CrashMode::TearLastSector { garbage: false },
    }
}

async fn run_seed(seed: u64) {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let clock = Rc::new(ManualClock::new(1));
    let disk = SimDisk::new();
    let mut oracle = Oracle {
        acked: BTreeMap::new(),
        attempted: HashSet::new(),
        last_seq_seen: 0,
    };
    let mut counter = 0;
    sim_engine(&disk, &clock)
        .await
        .create_stream(small_config("C", &["c.*"]), ShardId(0))
        .await
        .expect("create");
    for cycle in 0..CYCLES_PER_SEED {
        let engine = sim_engine(&disk, &clock).await;
        verify(&engine, &mut oracle, seed, cycle).await;
        for _ in 0..1 + rng.below(5) {
            if rng.below(4) == 0 {
                inject_fault(&disk, &mut rng);
            }
            publish_batch(&engine, &mut rng, &mut oracle, seed, &mut counter).await;
        }
        if rng.below(3) == 0 {
            // Leave unsynced bytes behind: the next group's fdatasync fails.
            disk.fail_nth(SimOp::Sync, 1, libc::EIO, true);
            publish_batch(&engine, &mut rng, &mut oracle, seed, &mut counter).await;
        }
        drop(engine);
        disk.crash(crash_mode(&mut rng));
    }
    let engine = sim_engine(&disk, &clock).await;
    verify(&engine, &mut oracle, seed, CYCLES_PER_SEED).await;
}

#[test]
fn acknowledged_messages_survive_random_crashes_and_faults() {
    let seeds: Vec<u64> = match std::env::var("JETCORE_SEED") {
        Ok(seed) => vec![seed.parse().expect("JETCORE_SEED is a number")],
        Err(_) => (1..=SEEDS).collect(),
    };
    run(move || async move {
        for seed in seeds {
            println!("seed {seed}");
            run_seed(seed).await;
        }
    });
}
