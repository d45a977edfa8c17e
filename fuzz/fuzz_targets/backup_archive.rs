//! An S2-framed NATSARC1 backup upload: same entries however split, entries round-trip.
//! The body is `jetcore::fuzzing::backup_archive::check`, which `tests/fuzz_corpus_replay.rs` replays.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    jetcore::fuzzing::backup_archive::check(data);
});
