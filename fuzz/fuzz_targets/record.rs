//! Segment bytes as a record, a segment image and a recovered log: no panic, CRC enforced.
//! The body is `jetcore::fuzzing::record::check`, which `tests/fuzz_corpus_replay.rs` replays.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    jetcore::fuzzing::record::check(data);
});
