//! Parse arbitrary bytes whole and split at every point: no panic, same result.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| {
    checks::check_parse(data);
});
