//! `cargo fuzz run raw_frame`: see `wire::fuzzing::raw_frame` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wire::fuzzing::raw_frame(data));
