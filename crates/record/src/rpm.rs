//! `linerate rpm --json`: responsiveness under working conditions, per direction (docs/RESULTS.md,
//! "`linerate rpm --json`"). Every time is in milliseconds, on the client's clock; every rate in
//! bits per second. The formulas are `analysis::rpm`'s (the IETF draft named in [`RpmResult::draft`]).
//! Each direction is also stored as a run whose `summary.rpm` is a [`StoredRpm`].

use serde::{Deserialize, Serialize};

/// The document's `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RpmDocument {
    /// `rpm`.
    #[default]
    Rpm,
}

/// How sure a figure is (the draft's "confidence score").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Fewer than MAD intervals ran: the moving average never spanned its window.
    Low,
    /// MAD intervals ran but the figure did not become stable within the time limit.
    Medium,
    /// The figure became stable.
    High,
}

/// The draft's figures from one window of probes (its TCP-only case).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Responsiveness {
    /// TM(tcp_f): the foreign probes' connect, trimmed mean, ms.
    pub connect_ms: f64,
    /// TM(http_f): the foreign probes' request on their new connection, ms.
    pub foreign_rr_ms: f64,
    /// TM(http_l): the self probes, in band on the loaded connections, ms.
    pub self_ms: f64,
    /// 60000 / ((TM(tcp_f) + TM(http_f)) / 2).
    pub foreign_rpm: f64,
    /// 60000 / TM(http_l).
    pub loaded_rpm: f64,
    /// (foreign + loaded) / 2: round trips per minute.
    pub rpm: f64,
}

/// The run's one figure (docs/METHODOLOGY.md section 20): the draft's TCP-only formula over the
/// directions measured, each trimmed mean the mean of the directions' (each direction weighs
/// the same, however many probes it had), with the lowest of their confidences.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpmOverall {
    /// The directions combined, in order.
    pub directions: Vec<RpmWay>,
    /// The figures.
    pub responsiveness: Responsiveness,
    /// The lowest of the directions' `rpm_confidence`.
    pub confidence: Confidence,
}

/// Why a direction's measurement ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RpmEnd {
    /// The responsiveness became stable: the draft's end.
    Stable,
    /// Its share of the run's time limit (`-t`) ran out first.
    #[default]
    TimeLimit,
    /// Ctrl-C.
    Interrupted,
}

/// A distribution's sample count and percentiles, ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Spread {
    /// Samples.
    pub samples: u64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// The draft's parameters as used.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RpmParams {
    /// MAD: intervals in a moving average.
    pub moving_average_intervals: usize,
    /// ID: seconds per interval (the draft's default is 5; linerate's 1).
    pub interval_s: f64,
    /// TMP: the share of samples a trimmed mean keeps (the lowest).
    pub trimmed_keep: f64,
    /// SDT: the stability tolerance, a share of the latest moving average.
    pub stability_tolerance: f64,
    /// MNP: load-generating connections at most.
    pub max_connections: u16,
    /// Foreign probes launched a second at the start (lowered later for a slow path).
    pub probes_per_s: f64,
    /// Self probes a second on each load connection started before any lowering.
    #[serde(default)]
    pub self_probes_per_connection: u32,
}

/// The idle path, measured before the load: foreign probes only.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct IdleBaseline {
    /// Connects.
    pub connect_ms: Spread,
    /// Requests on the new connections: the idle round trip.
    pub rr_ms: Spread,
    /// The idle RPM: 60000 / the trimmed mean of the requests.
    pub rpm: Option<f64>,
}

/// One interval of a direction's run (the time series aligned with the ramp).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct RpmTick {
    /// End of the interval, seconds since the direction began (client clock).
    pub t_s: f64,
    /// Load-generating connections running.
    pub connections: u16,
    /// Goodput of all of them in the interval, bits/s: `received_bytes` × 8 / the interval.
    pub goodput_bps: f64,
    /// Bytes the load connections' receivers read in the interval (every connection's
    /// intervals fall on the direction's one grid of ID seconds); 0 in documents written
    /// before it was kept.
    #[serde(default)]
    pub received_bytes: u64,
    /// Its moving average over MAD intervals.
    pub moving_average_bps: f64,
    /// Self probes' median in the interval, ms.
    pub self_p50_ms: Option<f64>,
    /// Foreign probes' request median in the interval, ms.
    pub foreign_p50_ms: Option<f64>,
    /// The loaded connections' smoothed RTT (TCP_INFO of their senders), mean, ms.
    pub kernel_rtt_ms: Option<f64>,
    /// The responsiveness over the last MAD intervals, once goodput was stable.
    pub rpm: Option<f64>,
}

/// Up (client → server) or down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RpmWay {
    /// The client sends the load.
    Up,
    /// The server sends the load.
    Down,
}

impl RpmWay {
    /// The name, as serialized: `up` or `down`.
    pub fn as_str(self) -> &'static str {
        match self {
            RpmWay::Up => "up",
            RpmWay::Down => "down",
        }
    }
}

/// One direction's responsiveness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpmDirection {
    /// Which way the load went.
    pub direction: RpmWay,
    /// The goodput's last moving average, bits/s: `received_bytes` × 8 / `window_s`, the
    /// bytes read in the last MAD intervals over their length.
    pub goodput_bps: f64,
    /// The goodput's window, seconds: the last MAD intervals (fewer when fewer ran); 0 in
    /// documents written before it was kept.
    #[serde(default)]
    pub window_s: f64,
    /// Bytes the load connections' receivers read in the window.
    #[serde(default)]
    pub received_bytes: u64,
    /// Bytes the load connections' senders wrote in the window.
    #[serde(default)]
    pub sent_bytes: u64,
    /// Load-generating connections at the end.
    pub connections: u16,
    /// Seconds from the direction's start until goodput was stable (absent: never).
    pub goodput_stable_s: Option<f64>,
    /// Confidence in the goodput.
    pub goodput_confidence: Confidence,
    /// Confidence in the responsiveness: the direction's one confidence (the draft's for the
    /// responsiveness stage, which begins once the goodput is stable; low when it never began).
    pub rpm_confidence: Confidence,
    /// Seconds from the direction's start until the responsiveness was stable (absent: never).
    #[serde(default)]
    pub rpm_stable_s: Option<f64>,
    /// Intervals of the responsiveness stage that ran (after the goodput was stable).
    #[serde(default)]
    pub rpm_intervals: usize,
    /// Why the direction ended.
    #[serde(default)]
    pub ended: RpmEnd,
    /// The draft's figures over the last MAD intervals (absent without probes of every kind).
    pub responsiveness: Option<Responsiveness>,
    /// Foreign probes' connects over the measurement window.
    pub foreign_connect_ms: Spread,
    /// Foreign probes' requests.
    pub foreign_rr_ms: Spread,
    /// Self probes.
    pub self_ms: Spread,
    /// The loaded connections' smoothed RTT, one reading per connection and interval.
    pub kernel_rtt_ms: Spread,
    /// Where the self probes' delay sat: their median minus the kernel's (the sending socket's
    /// unsent bytes and the receiver's unread ones).
    pub in_socket_buffers_ms: Option<f64>,
    /// The kernel's median RTT loaded minus the idle round trip: the network's queues.
    pub in_network_queues_ms: Option<f64>,
    /// The self probes' median minus the idle round trip: all the delay the load added.
    pub loaded_minus_idle_ms: Option<f64>,
    /// CPU of the load's data threads, % of one core: the client's, the server's (means over
    /// the connections' intervals, summed over connections).
    pub local_cpu_pct: Option<f64>,
    /// The server's.
    pub remote_cpu_pct: Option<f64>,
    /// Interval by interval.
    pub timeline: Vec<RpmTick>,
    /// What to know about this direction's figures (not stable in time, a refused connection).
    pub notes: Vec<String>,
}

/// `linerate rpm`'s document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpmResult {
    /// `rpm`.
    pub kind: RpmDocument,
    /// The draft the formulas follow.
    pub draft: String,
    /// The server.
    pub target: String,
    /// When it began, Unix ms (client clock).
    pub started_at_unix_ms: u64,
    /// The parameters used.
    pub params: RpmParams,
    /// The run's time limit (`-t`), seconds: idle path and directions together.
    #[serde(default)]
    pub time_limit_s: f64,
    /// How long it took, seconds, from the command's start to the last direction's end.
    #[serde(default)]
    pub duration_s: f64,
    /// The idle path.
    pub idle: IdleBaseline,
    /// The run's one figure over its directions (absent: no direction had probes of every
    /// kind, or only the idle path was measured).
    #[serde(default)]
    pub overall: Option<RpmOverall>,
    /// Each direction measured, in order.
    pub directions: Vec<RpmDirection>,
    /// Ctrl-C cut it short.
    pub interrupted: bool,
    /// The run each direction was stored as, one entry per direction in `directions` order
    /// (`None`: that direction was not stored, having no finished load connection or a store
    /// that refused it); empty when none was (`--no-store`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_ids: Vec<Option<u64>>,
}

/// One direction of a `linerate rpm` as its stored run keeps it (`summary.rpm` of the
/// `tcp_stream` record stored per direction): what the direction's figures need beside the
/// record's own totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRpm {
    /// The draft the formulas follow.
    pub draft: String,
    /// The parameters used.
    pub params: RpmParams,
    /// The idle path, measured once before the first direction.
    pub idle: IdleBaseline,
    /// The rpm run's one figure over all its directions (each direction's stored run has it).
    #[serde(default)]
    pub overall: Option<RpmOverall>,
    /// The direction, with its timeline.
    pub direction: RpmDirection,
}
