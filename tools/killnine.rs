//! The long kill -9 run (reliability matrix row 1): at least `--cycles` SIGKILL/restart
//! cycles and at least `--acked` acknowledged messages, then the Jepsen-style check.
//! The harness is tests/common/killnine/ (shared with tests/crash_kill9.rs).
//!
//! ```text
//! cargo build --release --bin jetcore --example killnine
//! ulimit -l unlimited
//! target/release/examples/killnine --cycles 200 --acked 1000000 [--seed N]
//!     [--producers 4] [--in-flight 64] [--payload 128] [--kill-ms 100-5000]
//!     [--shards N] [--quiet]
//! ```
//! The server binary is `JETCORE_BIN` or `jetcore` next to this example's directory.
//! Exit status 1 on any violation.

#[path = "../tests/common/killnine/mod.rs"]
mod killnine;

use std::path::PathBuf;
use std::time::Duration;

fn main() {
    let mut settings = killnine::Settings {
        binary: default_binary(),
        seed: killnine::seed_from_env(),
        cycles: 200,
        acked_min: 1_000_000,
        producers: 4,
        in_flight: 64,
        payload_bytes: 128,
        kill_after: (Duration::from_millis(100), Duration::from_millis(5000)),
        server_args: Vec::new(),
        verbose: true,
        failpoint: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--cycles" => settings.cycles = value().parse().expect("--cycles N"),
            "--acked" => settings.acked_min = value().parse().expect("--acked N"),
            "--seed" => settings.seed = value().parse().expect("--seed N"),
            "--producers" => settings.producers = value().parse().expect("--producers N"),
            "--in-flight" => settings.in_flight = value().parse().expect("--in-flight N"),
            "--payload" => settings.payload_bytes = value().parse().expect("--payload BYTES"),
            "--kill-ms" => settings.kill_after = kill_range(&value()),
            "--shards" => settings.server_args.extend(["--shards".to_string(), value()]),
            "--quiet" => settings.verbose = false,
            other => panic!("unknown flag {other}"),
        }
    }
    println!("killnine seed {} (JETCORE_SEED or --seed reproduces the schedule): {settings:?}", settings.seed);
    let outcome = killnine::run(&settings);
    println!("seed {}, {:?}:\n{}", settings.seed, outcome.elapsed, outcome.verdict);
    println!(
        "hung starts {} | unprompted exits {} | panics logged {}",
        outcome.hung_starts, outcome.crashes, outcome.panics
    );
    let violations = outcome.violations();
    if !violations.is_empty() {
        eprintln!("VIOLATIONS: {violations:#?}\nserver log tail:\n{}", outcome.log_tail);
        std::process::exit(1);
    }
    println!("PASS");
}

fn default_binary() -> PathBuf {
    if let Some(binary) = std::env::var_os("JETCORE_BIN") {
        return binary.into();
    }
    let me = std::env::current_exe().expect("current exe");
    me.parent().and_then(|examples| examples.parent()).expect("target dir").join("jetcore")
}

/// `LOW-HIGH` in milliseconds.
fn kill_range(text: &str) -> (Duration, Duration) {
    let (low, high) = text.split_once('-').expect("--kill-ms LOW-HIGH");
    let ms = |v: &str| Duration::from_millis(v.parse().expect("milliseconds"));
    (ms(low), ms(high))
}
