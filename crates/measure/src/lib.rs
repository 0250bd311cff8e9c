//! Measuring without formatting: units, CPU accounting, TCP_INFO and interval statistics,
//! and the stop [`signal::Signal`] every measuring loop checks.
//!
//! Everything here is a value type or a reader of kernel counters. Nothing prints. Units live
//! in names and types: `_us` microseconds, `_bps` bits per second, `_bytes` bytes.

pub mod clock;
pub mod cpu;
pub mod drops;
pub mod host;
pub mod latency;
pub mod line_rate;
pub mod link_counts;
#[cfg(target_os = "linux")]
pub mod netlink;
pub mod nic;
pub mod qdisc;
pub mod signal;
pub mod stats;
pub mod tcp_info;
pub mod udp_stats;
pub mod units;

pub use units::UnitError;
