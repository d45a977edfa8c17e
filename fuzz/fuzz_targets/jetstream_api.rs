//! A $JS.API request (subject line, body) decoded and validated as the server does.
//! The body is `jetcore::fuzzing::jetstream_api::check`, which `tests/fuzz_corpus_replay.rs` replays.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    jetcore::fuzzing::jetstream_api::check(data);
});
