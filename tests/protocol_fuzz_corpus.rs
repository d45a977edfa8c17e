//! Replays every seed under fuzz/corpus/<target>/ through the fuzz targets' checks, so
//! the invariants the fuzzers look for are held on stable by `cargo test`.

#[path = "../fuzz/checks.rs"]
mod checks;

use std::fs;
use std::path::{Path, PathBuf};

fn corpus_files(target: &str) -> Vec<PathBuf> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = fs::read_dir(&directory)
        .unwrap_or_else(|error| panic!("reading {}: {error}", directory.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seeds in {}", directory.display());
    files
}

#[test]
fn parse_corpus_holds_split_and_prefix_invariants() {
    for path in corpus_files("parse") {
        let data = fs::read(&path).expect("read seed");
        println!("seed {}", path.display());
        checks::check_parse(&data);
    }
}

#[test]
fn headers_corpus_parses_without_panic_and_round_trips() {
    for path in corpus_files("headers") {
        let data = fs::read(&path).expect("read seed");
        println!("seed {}", path.display());
        checks::check_headers(&data);
    }
}

#[test]
fn split_feeding_detects_a_different_outcome() {
    // The check must be able to fail: two different streams give different outcomes.
    let first = checks::feed(&[b"PUB a 1\r\nx\r\n"]);
    let second = checks::feed(&[b"PUB a 1\r\ny\r\n"]);
    assert_ne!(first, second);
    assert_eq!(first.ops.len(), 1);
}
