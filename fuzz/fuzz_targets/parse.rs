//! Client protocol bytes parsed whole, in two or three reads at every split, and byte by byte: no panic, same ops.
//! The body is `jetcore::fuzzing::parse::check`, which `tests/fuzz_corpus_replay.rs` replays.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    jetcore::fuzzing::parse::check(data);
});
