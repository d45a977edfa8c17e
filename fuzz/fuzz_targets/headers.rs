//! Arbitrary bytes as a header block: no panic, consistent lookups, round trip.
//! The body is `jetcore::fuzzing::headers::check`, which `tests/fuzz_corpus_replay.rs` replays.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    jetcore::fuzzing::headers::check(data);
});
