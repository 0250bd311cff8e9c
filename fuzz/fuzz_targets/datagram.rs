//! `cargo fuzz run datagram`: see `wire::fuzzing::datagram` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wire::fuzzing::datagram(data));
