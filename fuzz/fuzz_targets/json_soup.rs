//! `cargo fuzz run json_soup`: see `wire::fuzzing::json_soup` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wire::fuzzing::json_soup(data));
