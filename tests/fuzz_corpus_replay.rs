//! Replays every input under `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/`
//! through the fuzz target's own check (`jetcore::fuzzing`), so what the fuzzers hold
//! is held on stable by `cargo test`, and every crash the fuzzers found stays fixed.

use std::fs;
use std::path::{Path, PathBuf};

use jetcore::fuzzing;

/// Files of `fuzz/<kind>/<target>/`, sorted; none when the directory does not exist.
fn files(kind: &str, target: &str) -> Vec<PathBuf> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz").join(kind).join(target);
    let Ok(entries) = fs::read_dir(&directory) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> =
        entries.map(|entry| entry.expect("corpus entry").path()).filter(|path| path.is_file()).collect();
    files.sort();
    files
}

/// Runs `check` on every corpus and regression input of `target`.
fn replay(target: &str, check: fn(&[u8])) {
    let corpus = files("corpus", target);
    assert!(!corpus.is_empty(), "no corpus for fuzz target {target}");
    for path in corpus.iter().chain(&files("regressions", target)) {
        let data = fs::read(path).expect("read input");
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(outcome.is_ok(), "fuzz target {target} fails on {}", path.display());
    }
}

#[test]
fn parse_corpus_gives_the_same_ops_however_split() {
    replay("parse", fuzzing::parse::check);
}

#[test]
fn headers_corpus_parses_without_panic_and_round_trips() {
    replay("headers", fuzzing::headers::check);
}

#[test]
fn jetstream_api_corpus_decodes_and_accepted_configs_round_trip() {
    replay("jetstream_api", fuzzing::jetstream_api::check);
}

#[test]
fn record_corpus_decodes_and_recovers_only_valid_records() {
    replay("record", fuzzing::record::check);
}

#[test]
fn checkpoint_corpus_decodes_and_round_trips() {
    replay("checkpoint", fuzzing::checkpoint::check);
}

#[test]
fn backup_archive_corpus_reads_the_same_however_split_and_round_trips() {
    replay("backup_archive", fuzzing::backup_archive::check);
}

#[test]
fn split_feeding_detects_a_different_outcome() {
    // The check must be able to fail: two different streams give different outcomes.
    let first = fuzzing::parse::feed(&[b"PUB a 1\r\nx\r\n"]);
    let second = fuzzing::parse::feed(&[b"PUB a 1\r\ny\r\n"]);
    assert_ne!(first, second);
    assert_eq!(first.ops.len(), 1);
}
