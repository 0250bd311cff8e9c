//! Structure-aware fuzzing on stable Rust: a million inputs through the wire crate's fuzz
//! targets (`wire::fuzzing`), from a seeded generator, so a failure repeats with its seed
//! (`LINERATE_FUZZ_SEED`). `fuzz/` runs the same targets under libFuzzer for longer.

use std::time::Instant;

/// xorshift64*: fast, seeded, good enough to spread bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// 0 to `max` random bytes, short inputs more often than long ones.
    fn bytes(&mut self, buf: &mut Vec<u8>, max: usize) {
        let len = (self.next() as usize % max) >> (self.next() % 4);
        buf.clear();
        while buf.len() < len {
            buf.extend_from_slice(&self.next().to_le_bytes());
        }
        buf.truncate(len);
    }
}

fn seed() -> u64 {
    std::env::var("LINERATE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x6c69_6e65_7261_7465)
}

/// Runs `target` on `count` inputs of up to `max` bytes; the seed is printed for a rerun.
fn fuzz(name: &str, count: usize, max: usize, target: fn(&[u8])) {
    let seed = seed();
    let mut rng = Rng(seed ^ name.len() as u64 ^ 0x9e37_79b9_7f4a_7c15);
    let mut buf = Vec::with_capacity(max);
    let started = Instant::now();
    for i in 0..count {
        rng.bytes(&mut buf, max);
        let input = buf.clone();
        if std::panic::catch_unwind(|| target(&input)).is_err() {
            panic!("{name}: input {i} (seed {seed}) failed: {input:02x?}");
        }
    }
    println!(
        "{name}: {count} inputs in {:?} (seed {seed})",
        started.elapsed()
    );
}

#[test]
fn structured_messages_mutated_never_break_the_decoder() {
    fuzz("messages", 400_000, 1024, wire::fuzzing::messages);
}

#[test]
fn raw_frames_hellos_and_greetings_never_panic() {
    fuzz("raw_frame", 200_000, 256, wire::fuzzing::raw_frame);
}

#[test]
fn json_of_the_protocols_own_words_never_panics() {
    fuzz("json_soup", 300_000, 128, wire::fuzzing::json_soup);
}

#[test]
fn datagram_headers_parse_and_round_trip() {
    fuzz("datagram", 100_000, 64, wire::fuzzing::datagram);
}
