//! eBPF without a compiler: [`asm`] builds programs instruction by instruction from Rust, and
//! [`sys`] loads them and their maps with the raw `bpf(2)` system call.
//!
//! Why no compiler: the program must ship inside linerate's binary and load on a machine with no
//! clang, no bindgen and no BTF tooling; a few dozen hand-written instructions, reviewed like any
//! other code and checked by the kernel's verifier at load, do that.

pub mod asm;
#[cfg(target_os = "linux")]
pub mod sys;
