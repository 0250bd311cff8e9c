//! The run record. Byte counts are exact integers; rates are bits per second over the
//! client-clock window; CPU percentages are of one core unless named `system_`.
//!
//! Invariant: a [`RunRecord`] reads from JSON of any layout version this build knows (an older
//! layout is converted as it is read, see [`crate::layout_v1`]) and is always written in the
//! current one, [`SCHEMA_VERSION`].

use measure::{host::HostFacts, stats::Spread, tcp_info::TcpInfo};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use wire::{msg::ReceiveCounts, msg::ServerInfo, spec::Flow, spec::SendMode, TestKind, TestSpec};

/// Version of this record layout; bumped with every incompatible change. Version 2 split the
/// flat `spec` of version 1 into the fields every test kind has and its kind's own `params`
/// (control protocol version 7).
pub const SCHEMA_VERSION: u32 = 2;

/// The run's summary lives in [`crate::summary`]; named here too, where it always was.
pub use crate::summary::Summary;

/// Which end of the test did something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// The end that ran `linerate tcp …`.
    Client,
    /// The end that ran `linerate serve` (or the in-process server).
    Server,
}

/// One test run, complete or interrupted.
// `remote = "Self"` makes the derives inherent functions, which the trait impls below wrap:
// reading converts an older layout first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct RunRecord {
    /// Test kind, e.g. `tcp_stream`.
    pub kind: TestKind,
    /// Record layout version.
    pub schema_version: u32,
    /// The test as asked for.
    pub spec: TestSpec,
    /// Where the client connected: `HOST:PORT`, `unix:PATH`, or `in-process …`.
    pub target: String,
    /// Wall-clock start, Unix epoch milliseconds (labelling only; durations use a monotonic clock).
    pub started_at_unix_ms: u64,
    /// Facts about the server host.
    pub server: ServerInfo,
    /// Both hosts' facts as each measured them for this run: kernel, CPU, and the interface
    /// the test used with its NIC's facts (`server` absent from servers that do not send it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Hosts>,
    /// The key the test ran under (`--auth-key`), proven to the server and by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Per-interval samples, in order.
    pub intervals: Vec<IntervalSample>,
    /// The summary of the whole run.
    pub summary: Summary,
}

impl Serialize for RunRecord {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        RunRecord::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for RunRecord {
    /// Reads a record of layout 1 or 2; a layout-1 record is converted and reads as layout 2.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut value = serde_json::Value::deserialize(deserializer)?;
        crate::layout_v1::upgrade(&mut value).map_err(D::Error::custom)?;
        RunRecord::deserialize(value).map_err(D::Error::custom)
    }
}

/// One interval on the client's clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalSample {
    /// Interval start, seconds since the test began.
    pub start_s: f64,
    /// Interval end, seconds since the test began.
    pub end_s: f64,
    /// One entry per direction in the test.
    pub flows: Vec<FlowInterval>,
    /// `--latency`: the probe stream's round trips in (about) this interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<RrInterval>,
    /// Both ends' CPU in the interval (absent from records made before it was measured, and
    /// from runs whose far end or client does not report it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<IntervalCpu>,
    /// Within the warm-up (`-O/--omit`): shown, stored, left out of the summary, whose
    /// window starts where these intervals end. Absent: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub omitted: bool,
}

/// Both ends' CPU in one interval, each end's over its own clock (METHODOLOGY.md section 6).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct IntervalCpu {
    /// CPU time (user + system) the client's data threads used in the interval, % of one core
    /// (100 = one core busy throughout; more with several streams).
    pub local_pct: f64,
    /// The same for this session's data threads on the server; `null` when the far end does
    /// not report it (older servers, iperf3).
    pub remote_pct: Option<f64>,
    /// The client host's busy share of all its cores in the interval (/proc/stat), %.
    pub local_host_busy_pct: Option<f64>,
    /// The server host's busy share of all its cores in the interval, %.
    pub remote_host_busy_pct: Option<f64>,
}

/// One direction within one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowInterval {
    /// Direction.
    pub flow: Flow,
    /// Bytes the sending end wrote in the interval.
    pub sender_bytes: u64,
    /// Bytes the receiving end read in the interval.
    pub receiver_bytes: u64,
    /// `receiver_bytes` as bits per second over the interval.
    pub throughput_bps: f64,
    /// Bytes read per stream in the interval, in stream order.
    pub stream_receiver_bytes: Vec<u64>,
    /// UDP: datagram counts in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpInterval>,
    /// Request/response: transactions and round trips in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rr: Option<RrInterval>,
    /// TCP: the senders' TCP state (TCP_INFO) at the interval's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_info: Option<IntervalTcp>,
    /// `tcp --self-probes`: the in-band probes answered in the interval and their round trips
    /// (measured by the client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_probes: Option<RrInterval>,
    /// `tcp --self-probes`: each of those probes' round trip, µs, smallest first (within 0.1 %;
    /// at most [`MAX_PROBE_ROUND_TRIPS`]): what a trimmed mean over several intervals needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub self_probe_round_trips_us: Vec<f64>,
}

/// Round trips one interval lists at most (`FlowInterval::self_probe_round_trips_us`).
pub const MAX_PROBE_ROUND_TRIPS: usize = 10_000;

/// A direction's TCP state in one interval, from its sending sockets' TCP_INFO at the
/// interval's end (measured by the sending end).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct IntervalTcp {
    /// Segments retransmitted in the interval, all the direction's streams.
    pub retransmits: u32,
    /// Congestion windows, summed over the direction's streams, segments.
    pub snd_cwnd_segments: u32,
    /// Smoothed round-trip time, mean over the direction's streams, µs.
    pub rtt_us: u32,
    /// The kernel's latest delivery-rate samples, summed over the streams, bits/s (Linux 4.9+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_rate_bps: Option<u64>,
    /// The kernel's minimum RTT of the connection so far, lowest over the streams, µs (Linux
    /// 4.10+): the path's round trip without queues, as the kernel sees it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<u32>,
}

/// One interval of a request/response test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct RrInterval {
    /// Transactions completed in the interval.
    pub transactions: u64,
    /// `transactions` per second of the interval.
    pub transactions_per_s: f64,
    /// Median round trip in the interval, µs (absent without samples).
    pub p50_us: Option<f64>,
    /// 99th-percentile round trip in the interval, µs.
    pub p99_us: Option<f64>,
}

/// A request/response run's transactions and round-trip latency (measured by the client).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct RrSummary {
    /// Transactions completed after the warm-up, all streams.
    pub transactions: u64,
    /// `transactions / (duration_s - omit_s)`.
    pub transactions_per_s: f64,
    /// Warm-up at the start left out of these figures, seconds.
    #[serde(default)]
    pub omit_s: f64,
    /// `tcp_crr`: connections per second (each transaction is one connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_per_s: Option<f64>,
    /// UDP: requests not answered within 1 s (whole run, warm-up included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_transactions: Option<u64>,
    /// Paced runs (`--tps`, latency probes): schedule slots that passed without a request
    /// because the requester was late by a gap or more (whole run, warm-up included). Slots
    /// taken plus slots missed are the schedule's slots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots_missed: Option<u64>,
    /// Round-trip latency percentiles, µs, with the sample count and precision.
    pub latency_us: Option<measure::latency::LatencySummary>,
}

/// Round-trip latency of a probe stream measured idle (before the load) and under the load
/// (`--latency`), as crusader and flent's RRUL report it. Both phases use the same probe.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyUnderLoad {
    /// The probe's test kind: `udp_rr` or `tcp_rr`.
    pub probe_kind: TestKind,
    /// Probe transactions started per second.
    pub probe_rate_per_s: u64,
    /// Request (and response) bytes of each probe.
    pub probe_bytes: u32,
    /// Length of the idle phase, seconds.
    pub idle_s: f64,
    /// The probes before the load started.
    pub idle: RrSummary,
    /// The probes while the load ran.
    pub loaded: RrSummary,
    /// How long the loaded probes ran, seconds: the bulk test from setup to its last results.
    #[serde(default)]
    pub loaded_s: f64,
    /// Loaded p50 minus idle p50, µs: the latency the load added.
    pub added_p50_us: Option<f64>,
    /// Loaded p99 minus idle p99, µs.
    pub added_p99_us: Option<f64>,
}

/// One direction's datagram counts within one interval (UDP).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct UdpInterval {
    /// Datagrams the sender sent in the interval.
    pub packets_sent: u64,
    /// Distinct datagrams the receiver got in the interval.
    pub packets_received: u64,
    /// Change in open sequence gaps over the interval (negative when late datagrams filled gaps).
    pub packets_lost: i64,
    /// Datagrams that arrived out of order in the interval.
    pub packets_out_of_order: u64,
    /// Duplicate datagrams in the interval.
    pub packets_duplicate: u64,
    /// Datagrams too old to classify (beyond the reordering window) in the interval.
    #[serde(default)]
    pub packets_late: u64,
    /// RFC 3550 jitter at the interval's end, µs (mean over streams).
    #[serde(default)]
    pub jitter_us: f64,
    /// Sender datagrams per second over the interval.
    pub pps_sent: f64,
    /// Receiver distinct datagrams per second over the interval.
    pub pps_received: f64,
}

/// A direction's (or the run's) datagram accounting (UDP). Exact: `packets_sent ==
/// packets_received + packets_lost`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct UdpSummary {
    /// Datagrams the sender sent (its own count).
    pub packets_sent: u64,
    /// Distinct datagrams the receiver got, after draining (duplicates excluded).
    pub packets_received: u64,
    /// `packets_sent - packets_received`: never arrived, or arrived too late to classify.
    pub packets_lost: u64,
    /// `packets_lost` as a percentage of `packets_sent`.
    pub loss_pct: f64,
    /// Datagrams that arrived after a higher sequence number (RFC 4737 reordered).
    pub packets_out_of_order: u64,
    /// Datagrams received more than once (extra copies).
    pub packets_duplicate: u64,
    /// Datagrams older than the receiver's reordering window (counted as lost).
    pub packets_late: u64,
    /// RFC 3550 interarrival jitter at the end of the run, µs (mean over streams).
    pub jitter_us: f64,
    /// `packets_sent / duration_s`.
    pub pps_sent: f64,
    /// Distinct datagrams received within the receiver's window / that window.
    pub pps_received: f64,
}

/// CPU used by one end.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct CpuSummary {
    /// User + system CPU of the end's data threads, % of one core.
    pub threads_pct: f64,
    /// Of which user mode, %.
    pub user_pct: f64,
    /// Of which kernel mode, %.
    pub sys_pct: f64,
    /// User + system CPU of the end's whole process, % of one core (includes the other end
    /// when the server runs in-process).
    pub process_pct: f64,
    /// Machine-wide busy share of all cores on that end's host, %.
    pub system_busy_pct: Option<f64>,
}

/// One data connection's totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamSummary {
    /// Stream index.
    pub stream: u16,
    /// Bytes the sender wrote.
    pub bytes_sent: u64,
    /// Bytes the receiver had read when the test time ended.
    pub bytes_received: u64,
    /// Receiver goodput over the test window, bits/s.
    pub throughput_bps: f64,
    /// TCP_INFO of the sending socket, at the end.
    pub tcp_info: Option<TcpInfo>,
    /// UDP: this stream's datagram accounting.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpSummary>,
    /// Error that ended this stream early, from whichever end saw it.
    pub error: Option<String>,
    /// `tcp_stream`: how the receiver took its bytes from the kernel (`--rx-mode`): the mode
    /// that ran and the bytes copied, discarded and mapped (absent from older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive: Option<ReceiveCounts>,
    /// `tcp_stream`: the send mode that ran on this stream's sender (`--send-mode auto`
    /// resolved; absent from older records and older servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_mode: Option<SendMode>,
}

/// One direction's totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowSummary {
    /// Direction.
    pub flow: Flow,
    /// Which end sent.
    pub sender: End,
    /// Bytes written by the sender over the test.
    pub bytes_sent: u64,
    /// Bytes read by the receiver within the test window.
    pub bytes_received: u64,
    /// Bytes written but not yet read when the window closed (`bytes_sent - bytes_received`).
    pub bytes_in_flight: u64,
    /// Bytes the receiver read after draining the connections; equals `bytes_sent` when every
    /// stream closed cleanly.
    pub bytes_received_after_drain: u64,
    /// Whether `bytes_received_after_drain == bytes_sent`.
    pub reconciled: bool,
    /// Receiver goodput: `bytes_received * 8 / window_s`.
    pub throughput_bps: f64,
    /// Sender rate: `bytes_sent * 8 / duration_s`.
    pub sender_throughput_bps: f64,
    /// Spread of per-interval receiver throughput, bits/s.
    pub interval_throughput_bps: Spread,
    /// CPU of the sending end's data threads, % of one core.
    pub sender_cpu_pct: f64,
    /// CPU of the receiving end's data threads, % of one core.
    pub receiver_cpu_pct: f64,
    /// Service demand of the sending host: µs of its machine-wide CPU per KB (1,024 bytes) of
    /// all the bytes that end moved, as netperf defines it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_service_demand_us_per_kb: Option<f64>,
    /// Service demand of the receiving host, the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_service_demand_us_per_kb: Option<f64>,
    /// Stream kinds: goodput per busy core and CPU s/GB of each end (absent where neither
    /// end's CPU is known, and from records made before it was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<crate::Efficiency>,
    /// Retransmitted segments, summed over streams (sender's TCP_INFO).
    pub retransmits: Option<u32>,
    /// Smoothed RTT, mean over streams, µs (sender's TCP_INFO).
    pub rtt_us: Option<u32>,
    /// UDP: datagram accounting of this direction.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpSummary>,
    /// TCP: where the senders' time went, from their TCP_INFO at the end (Linux 4.10+; absent
    /// where the kernel does not keep these figures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_time: Option<TcpTime>,
    /// What limited this direction, with the evidence (stream kinds; METHODOLOGY §19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited_by: Option<crate::LimitedBy>,
    /// UDP: where the lost datagrams went, from the kernel's counters on both hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_causes: Option<crate::LossCauses>,
    /// The receiver's window, seconds: the client's `duration_s` when the client receives,
    /// the server's (the test duration from `Begin` by its clock) when the server does.
    #[serde(default)]
    pub window_s: f64,
    /// How evenly the streams shared this direction (two streams or more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_spread: Option<StreamSpread>,
    /// `tcp_stream`: the receive figures of the streams, summed (the first stream's mode,
    /// refusal and MSS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive: Option<ReceiveCounts>,
    /// `tcp_stream`: the send mode that ran, when every stream that says ran the same one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_mode: Option<SendMode>,
    /// `udp_stream`: the frames the two ends' interfaces counted over the test, beside the
    /// datagrams at the sockets (absent: not read, or a record made before the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_frames: Option<crate::InterfaceFrames>,
    /// Per-stream totals.
    pub streams: Vec<StreamSummary>,
}

impl FlowSummary {
    /// Whether its senders handed the kernel pages instead of copying (splice, sendfile): by the
    /// mode that ran, or by the spec's for records and servers that do not say.
    pub fn sent_zero_copy(&self, spec: &TestSpec) -> bool {
        match self.send_mode {
            Some(ran) => ran != SendMode::Write,
            None => spec.stream().is_some_and(|p| {
                p.transport == wire::spec::Transport::Tcp && p.send_mode != SendMode::Write
            }),
        }
    }

    /// The send mode the streams ran, when they all say the same one.
    pub fn send_mode_of(streams: &[StreamSummary]) -> Option<SendMode> {
        let mut modes = streams.iter().filter_map(|s| s.send_mode);
        let first = modes.next()?;
        modes.all(|m| m == first).then_some(first)
    }

    /// The streams' receive figures, summed; `None` when no stream has any.
    pub fn receive_of(streams: &[StreamSummary]) -> Option<ReceiveCounts> {
        streams
            .iter()
            .filter_map(|s| s.receive)
            .reduce(|mut sum, r| {
                sum.add(&r);
                sum
            })
    }
}

/// How evenly a direction's parallel streams shared it: their goodput's minimum, median and
/// maximum, which stream was slowest, and Jain's fairness index (1 when all are equal, 1/n
/// when one stream carried everything).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StreamSpread {
    /// Streams counted.
    pub streams: u16,
    /// Slowest stream's goodput, bits/s.
    pub min_bps: f64,
    /// Median stream goodput, bits/s (the mean of the middle two for an even count).
    pub median_bps: f64,
    /// Fastest stream's goodput, bits/s.
    pub max_bps: f64,
    /// Index of the slowest stream.
    pub slowest: u16,
    /// Jain's fairness index, (Σx)² / (n·Σx²).
    pub fairness: f64,
}

/// The facts of both ends of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Hosts {
    /// The client's host and the interface its control connection left from.
    pub client: HostFacts,
    /// The server's host and the interface its control connection arrived at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<HostFacts>,
}

impl Hosts {
    /// The host whose end sends `flow`'s data: the client's for client → server.
    pub fn sender(&self, flow: Flow) -> Option<&HostFacts> {
        match flow {
            Flow::ClientToServer => Some(&self.client),
            Flow::ServerToClient => self.server.as_ref(),
        }
    }

    /// The TCP congestion control `flow`'s senders ran: the one `-C` chose on both ends, else
    /// the sending host's default (`HostFacts::tcp_congestion`), when known.
    pub fn congestion_of<'a>(&'a self, spec: &'a TestSpec, flow: Flow) -> Option<&'a str> {
        spec.tcp()
            .and_then(|t| t.congestion.as_deref())
            .or_else(|| self.sender(flow)?.tcp_congestion.as_deref())
    }
}

/// A direction's TCP senders over the whole run, from the kernel's "chrono" times and their
/// last TCP_INFO (measured by the sending end).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct TcpTime {
    /// Time with data in flight or waiting to go, % of the sender's window, mean over streams.
    pub busy_pct: f64,
    /// Of the busy time, % limited by the receiver's advertised window (`tcpi_rwnd_limited`).
    pub rwnd_limited_pct: f64,
    /// Of the busy time, % limited by the sender's socket buffer (`tcpi_sndbuf_limited`).
    pub sndbuf_limited_pct: f64,
    /// Lowest round-trip time any stream saw, µs (`tcpi_min_rtt`).
    pub min_rtt_us: Option<u32>,
    /// Pacing rates at the end, summed over streams, bits/s (`tcpi_pacing_rate`).
    pub pacing_rate_bps: Option<u64>,
    /// Bytes written but not yet sent at the end, summed (`tcpi_notsent_bytes`).
    pub notsent_bytes: Option<u64>,
}

/// One cell of a `linerate pps` matrix: a frame size and flow count, and the run that measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpsCell {
    /// Ethernet frame size, FCS included, bytes.
    pub frame_bytes: u32,
    /// UDP payload per datagram, bytes (`frame_bytes` − 46 for IPv4, − 66 for IPv6).
    pub payload_bytes: u32,
    /// Source ports per stream.
    pub flows: u32,
    /// `link_speed_bps / 8 / (frame_bytes + 20)`, when a link speed was given.
    pub line_rate_pps: Option<f64>,
    /// Distinct frames received per second over the window at the test's receiving sockets:
    /// the run's `pps_received`, its one received count (a cell sends one datagram per frame;
    /// a frame engine's frames at the receiver's driver are a stage of its loss).
    pub pps_received: f64,
    /// Frames sent per second (one datagram each).
    pub pps_sent: f64,
    /// Lost frames, % of sent: the run's `loss_pct`, whose stages (`loss_causes`) say where.
    pub loss_pct: f64,
    /// `pps_received / line_rate_pps`.
    pub line_rate_ratio: Option<f64>,
    /// The full run.
    pub run: RunRecord,
}
