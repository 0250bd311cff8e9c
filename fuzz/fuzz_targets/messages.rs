//! `cargo fuzz run messages`: see `wire::fuzzing::messages` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wire::fuzzing::messages(data));
