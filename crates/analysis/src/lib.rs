//! Analysis of linerate measurements, as pure functions over plain data: nothing here opens a
//! socket, runs a test, reads a clock or prints, so every formula is unit-tested.
//!
//! - [`raw`]: everything one run measured, as the client collected it;
//! - [`intervals`]: successive counter snapshots into interval samples, kept by
//!   [`BoundedIntervals`], at most a fixed number, adjacent pairs merged
//!   ([`intervals_merge`]) when full;
//! - [`summarize()`]: the one entry from what a run measured to its summary, which runs
//!   [`summary`] (goodput, reconciliation, CPU, TCP_INFO, the performance index; the datagram
//!   and request/response parts in `udp_rr`), [`link`] and [`verdict`] in turn;
//! - [`window`]: where the summary's window starts (the warm-up, `-O`) and how long it is;
//! - [`cost`]: service demand, CPU per byte moved; [`link`]: the link speed from the hosts;
//! - [`partial`]: an incomplete run's server figures, from its last answered poll;
//! - [`frames`]: a frame engine's run, its frames at both drivers and the loss split;
//! - [`loss`]: where a UDP test's lost datagrams went, from the kernel's drop counters;
//! - [`metric_id`]: the one list of metrics (`MetricId`): names, summarized keys, headlines;
//! - [`tcp_time`]: where TCP senders' time went (the kernel's chrono figures);
//! - [`streams`]: how evenly parallel streams shared a direction;
//! - [`verdict`]: what limited each direction, with the evidence;
//! - [`repeat`]: statistics over repeated runs, Student-t confidence intervals and the
//!   `--until-ci` stopping rule;
//! - [`rpm`]: responsiveness under working conditions (the IETF draft's RPM, stability and
//!   confidence rules), [`rpm_window`]: one direction of `linerate rpm` interval by interval,
//!   and [`rpm_record`]: that direction as a stored run over its load connections' records.
//!
//! Depends on `wire`, `measure` and `record` only (no store, so no database driver): the
//! engine's reports reach it as [`raw::WorkerReport`], so the data plane and the analysis can
//! change apart.

pub mod ab;
pub mod change_points;
pub mod cost;
mod family;
pub mod frames;
pub mod interface_frames;
pub mod intervals;
mod intervals_bounded;
#[cfg(test)]
mod intervals_bounded_tests;
pub mod intervals_merge;
pub mod link;
pub mod loss;
pub mod metric_id;
pub mod partial;
pub mod raw;
pub mod repeat;
pub mod rpm;
pub mod rpm_record;
pub mod rpm_window;
pub mod stats;
pub mod streams;
mod summarize;
pub mod summary;
pub mod tcp_time;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod udp_rr;
pub mod verdict;
pub mod window;

pub use intervals::{add_latency, IntervalTracker};
pub use intervals_bounded::BoundedIntervals;
pub use link::performance_index;
pub use partial::LastPoll;
pub use raw::{LocalStream, RawRun, StreamFailure, WorkerReport};
pub use summarize::summarize;
pub use verdict::Client;
pub use window::WindowStart;

/// `count` per second over `secs`; 0 for an empty window.
fn per_sec(count: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        count as f64 / secs
    } else {
        0.0
    }
}
