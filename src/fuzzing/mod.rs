//! The bodies of the fuzz targets in `fuzz/fuzz_targets/`, one function per target, kept
//! in the library so `tests/fuzz_corpus_replay.rs` replays every corpus and regression
//! input through exactly what the fuzzers ran (on stable, as part of `cargo test`).
//!
//! Each `check` takes arbitrary bytes, must never panic on them, and asserts the
//! contract of the code it drives (same result however a stream is split, CRC failures
//! are errors, accepted configs round-trip). A panic here is a bug: either in the code
//! under test or in the stated contract. Not part of the public API.

pub mod backup_archive;
pub mod checkpoint;
pub mod headers;
pub mod jetstream_api;
pub mod parse;
pub mod record;
