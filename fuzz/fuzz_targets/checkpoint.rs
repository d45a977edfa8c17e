//! Stream checkpoints, consumer state and metadata files as read at start-up.
//! The body is `jetcore::fuzzing::checkpoint::check`, which `tests/fuzz_corpus_replay.rs` replays.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    jetcore::fuzzing::checkpoint::check(data);
});
