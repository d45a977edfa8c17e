//! kill -9 at random moments (reliability matrix row 1), short enough for CI: 4 producers
//! publish uniquely numbered messages at full rate (64 acks in flight each, sync always)
//! while a durable pull consumer double-acks three messages in four; the server gets
//! SIGKILL at a uniform-random 0.1-2 s after each restart, 20 times, then a new consumer
//! drains the stream. Pass: 0 acknowledged messages lost, 0 unexpected, no sequence
//! reused, last_seq never backwards, no confirmed consumer ack redelivered, no hung start,
//! no panic. The harness is tests/common/killnine/; tools/killnine.rs is the long run.
//! Reproduce a schedule with `JETCORE_SEED=<seed> cargo test --release --test crash_kill9`
//! (the seed fixes the kill times; thread interleavings still vary between runs).

#[path = "common/killnine/mod.rs"]
mod killnine;

use std::time::Duration;

const CYCLES: usize = 20;

#[test]
fn acknowledged_messages_survive_repeated_kill_9() {
    let seed = killnine::seed_from_env();
    println!("kill -9 seed {seed} (JETCORE_SEED={seed} reproduces the schedule)");
    let binary = std::env::var_os("JETCORE_BIN").map_or_else(|| env!("CARGO_BIN_EXE_jetcore").into(), Into::into);
    let settings = killnine::Settings {
        binary,
        seed,
        cycles: CYCLES,
        acked_min: 0,
        producers: 4,
        in_flight: 64,
        payload_bytes: 128,
        kill_after: (Duration::from_millis(100), Duration::from_millis(2000)),
        server_args: Vec::new(),
        verbose: true,
        failpoint: None,
    };
    let outcome = killnine::run(&settings);
    println!("seed {seed}, {:?}:\n{}", outcome.elapsed, outcome.verdict);
    let violations = outcome.violations();
    assert!(violations.is_empty(), "seed {seed}: {violations:#?}\nserver log tail:\n{}", outcome.log_tail);
    assert_eq!(outcome.failpoint_fired, 0, "seed {seed}: no failpoint was armed");
    assert!(outcome.verdict.acked > 0, "seed {seed}: nothing was acknowledged at all");
    assert!(outcome.verdict.consumer_acked > 0, "seed {seed}: the consumer never acked");
}
