//! Parse arbitrary bytes as a header block: no panic, consistent lookups, round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| {
    checks::check_headers(data);
});
