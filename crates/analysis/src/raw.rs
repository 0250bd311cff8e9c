//! Everything one run measured, before summarising: both ends' counters, reports and CPU
//! figures, as the client collected them. Plain data; [`crate::summarize()`] reads it.

use std::time::Duration;

use measure::cpu::{CoreCpu, CpuTime, SystemCpu};
use measure::drops::HostDrops;
use measure::latency::Latency;
use measure::link_counts::LinkCounts;
use measure::tcp_info::TcpInfo;
use wire::msg::{ServerResults, StreamCounts};
use wire::TestSpec;

/// What a client worker reported when its connection was done: the figures of the engine's
/// stream report that a summary reads. The binary fills it from `engine::StreamReport`, so
/// this crate does not depend on the data plane.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkerReport {
    /// CPU time of the worker thread while it ran.
    pub cpu: CpuTime,
    /// TCP_INFO taken at the end, on the sending side of a TCP connection.
    pub tcp_info: Option<TcpInfo>,
    /// A TCP sender's retransmitted segments as its end reported them without TCP_INFO (a
    /// stock iperf3 client's results); `tcp_info`'s figure is preferred.
    pub retransmits: Option<u32>,
    /// Final counters (UDP: datagrams, and a receiver's sequence accounting).
    pub counts: StreamCounts,
    /// Request/response requesters: every round trip.
    pub latency: Option<Latency>,
    /// UDP request/response requesters: requests never answered.
    pub lost_transactions: u64,
    /// Paced requesters: schedule slots that passed without a request.
    pub slots_missed: u64,
    /// A frame engine's sender: how its frames reached the driver.
    pub frame_path: Option<wire::spec::FramePath>,
    /// Why that is not the path the engine would have taken (the kernel refused it).
    pub frame_fallback: Option<String>,
}

/// The client's end of one data connection.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalStream {
    /// Counters when the window closed.
    pub at_stop: StreamCounts,
    /// Counters when the worker was last seen (after draining, or when it was given up on).
    pub now: StreamCounts,
    /// The worker's report, or why it failed; `None` if it never finished.
    pub result: Option<Result<WorkerReport, StreamFailure>>,
    /// The worker thread's CPU time from its start to its end, whatever the result: what a
    /// stream that failed (its peer gone) used. A report's own figure is preferred.
    pub cpu: CpuTime,
}

/// Why a stream failed, in its end's own words (the local worker's error as the engine gave
/// it). A record keeps only this text, as it keeps the server's `StreamEnd.error`, so the
/// summary treats both ends' failures alike.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StreamFailure(pub String);

/// Everything measured in one run, before summarising.
#[derive(Debug, Clone)]
pub struct RawRun {
    /// The test.
    pub spec: TestSpec,
    /// Begin → Stop on the client's clock (the summary's window, less any warm-up).
    pub window: Duration,
    /// Whether the user cut the run short.
    pub interrupted: bool,
    /// Begin → the client's last worker ended.
    pub local_wall: Duration,
    /// Client ends, in stream order.
    pub local_streams: Vec<LocalStream>,
    /// Client process CPU over `local_wall`.
    pub local_process_cpu: CpuTime,
    /// Client host CPU over `local_wall`.
    pub local_system_cpu: Option<SystemCpu>,
    /// Each of the client host's cores over `local_wall`.
    pub local_cores: Vec<CoreCpu>,
    /// UDP stream tests: what the client host's drop counters added over `local_wall`.
    pub local_drops: Option<HostDrops>,
    /// UDP stream tests: what the client's interface for the test counted over `local_wall`:
    /// its frames, all traffic (`None`: not read).
    pub local_link: Option<LinkCounts>,
    /// The server's figures; when it went away (`server_lost`), those of its last answered
    /// poll (`partial::server_results_up_to`), or none.
    pub server: ServerResults,
    /// Where the summary's window starts, with `-O`: both ends' counters at the warm-up's
    /// end (`None`: at `Begin`, from zero).
    pub window_start: Option<crate::window::WindowStart>,
    /// Why the server's figures are missing: the control connection failed mid-test (the
    /// server was killed, or the path went black). `None` for a run with both ends' figures.
    pub server_lost: Option<String>,
}
