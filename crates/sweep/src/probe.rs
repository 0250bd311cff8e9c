//! The latency probes a run may carry (`--latency`): a low-rate request/response stream
//! measured idle, then beside the load. Only the plan lives here, where sweep points and
//! rfc2544 latency runs can carry it; running the probes is the binary's (`probe.rs`).

use std::time::Duration;

use wire::spec::TestKind;

/// A validated `--latency` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbePlan {
    /// `udp_rr` or `tcp_rr`.
    pub kind: TestKind,
    /// Probes started per second.
    pub rate_per_s: u64,
    /// Request and response bytes.
    pub bytes: u32,
    /// Length of the idle phase.
    pub idle: Duration,
}
