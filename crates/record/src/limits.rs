//! What limited a direction of a run, as recorded: the verdict with its evidence
//! ([`LimitedBy`]), and where a UDP direction's lost datagrams went ([`LossCauses`]).
//! METHODOLOGY.md §19 gives the rules that choose a verdict.

use serde::{Deserialize, Serialize};

/// What held a direction's rate down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The sending end's CPU: its data thread, or a core of its host, was saturated.
    SenderCpu,
    /// The receiving end's CPU: its data thread, or a core of its host (often one core's
    /// softirq), was saturated.
    ReceiverCpu,
    /// The receiver's advertised window: the sender waited for it much of the time.
    ReceiveWindow,
    /// The sender's socket buffer: too small to keep the path full.
    SendBuffer,
    /// Losses on the way, without a queue: the congestion control backed off.
    Congestion,
    /// The network delivered all it could: a link or shaper rate on the way.
    Path,
    /// A shaping qdisc on the sending host's interface (tbf, htb, cake, netem's rate): the
    /// direction's goodput sat at its rate (`LimitedBy::shaper` names it).
    Shaper,
    /// linerate's own pacing (`-b`): the direction reached the rate asked for.
    Application,
    /// No rule found enough evidence.
    Unknown,
}

impl Verdict {
    /// The verdict's name in JSON (`sender_cpu`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SenderCpu => "sender_cpu",
            Self::ReceiverCpu => "receiver_cpu",
            Self::ReceiveWindow => "receive_window",
            Self::SendBuffer => "send_buffer",
            Self::Congestion => "congestion",
            Self::Path => "path",
            Self::Shaper => "shaper",
            Self::Application => "application",
            Self::Unknown => "unknown",
        }
    }
}

/// A direction's verdict, the numbers behind it and what to try.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitedBy {
    /// What limited it.
    pub verdict: Verdict,
    /// The figures that support the verdict (for `unknown`, what was checked).
    pub evidence: String,
    /// What to change or look at next; empty when there is nothing to suggest.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hint: String,
    /// `shaper`: the qdisc that held the rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shaper: Option<Shaper>,
}

/// A shaping qdisc that limited a direction, and where it sits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shaper {
    /// The host whose interface holds it (the direction's sender).
    pub end: crate::End,
    /// That interface, e.g. `va0`.
    pub interface: String,
    /// The qdisc's kind, e.g. `tbf`.
    pub kind: String,
    /// Its handle, e.g. `1:`.
    pub handle: String,
    /// The rate it shapes to, bits/s (of packets as the qdisc counts them: IP and link
    /// headers included).
    pub rate_bps: u64,
}

impl Shaper {
    /// `the tbf qdisc at 100 Mbit/s on the client's va0`.
    pub fn words(&self) -> String {
        let end = match self.end {
            crate::End::Client => "client",
            crate::End::Server => "server",
        };
        format!(
            "the {} qdisc at {} on the {end}'s {}",
            self.kind,
            measure::units::format_bits_per_sec(self.rate_bps as f64),
            self.interface
        )
    }
}

/// Where a UDP direction's lost datagrams went: the one loss breakdown of a direction
/// (docs/RESULTS.md, "Datagram accounting"), one list of stages along the path, whatever the
/// engine. The stages always add up to `packets_lost`:
///
/// `sender_host + network + receiver_host + receiver_ip + receiver_socket_buffer = packets_lost`
///
/// The exact per-test figures are taken first (the receiving sockets' drops, the sends the
/// sender's host refused, and with a frame engine the frames at the receiving driver,
/// `at_driver`), then each host's host-wide counters, each at most what is left, then the
/// parts counted in coalesced packets by elimination; the rest is the network's (the socket
/// engine) or the receiving host's (a frame engine: past its driver). A part whose figure is an
/// attribution within a range says so in `bounds`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossCauses {
    /// Dropped at the receiving sockets' full buffers: the sockets' own drop counter (what
    /// `SO_RXQ_OVFL` reports; an `xdp` receiver's AF_XDP sockets' full rings), this test's
    /// sockets only; exact unless the receiver got coalesced (GRO) batches, which the kernel
    /// drops and counts whole: then the datagrams the other counters left, at most what the
    /// batches can hold, and `bounds` gives the range. Where the kernel gives no per-socket
    /// count, the receiving host's `Udp: RcvbufErrors` instead (host-wide; `note` says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_socket_buffer: Option<u64>,
    /// Dropped in the receiving host's IP layer: packets that reached it and were neither
    /// delivered nor forwarded (`IpInReceives − IpInDelivers − IpForwDatagrams`): a firewall
    /// rule (nft, iptables), a discard, a bad header. Host-wide. Under GSO or GRO the counters
    /// count packets of up to `per_batch` datagrams: then an attribution within `bounds`.
    /// Absent in records made before it (their `network` held it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_ip: Option<u64>,
    /// Dropped by the receiving host elsewhere: the socket engine's, its interface's receive
    /// drops (NIC, driver) and its CPUs' input backlog drops (host-wide); a frame engine's, the
    /// frames at its driver that no socket took, less the socket and IP parts (exact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_host: Option<u64>,
    /// Dropped by the sending host: the datagrams of the sends it refused (`ENOBUFS`, counted
    /// by the sender; a frame engine's frames its driver refused: exact, this test only), then
    /// (the socket engine) its host-wide UDP send errors and its interface's transmit drops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_host: Option<u64>,
    /// Lost between the two hosts: the socket engine's, the rest; a frame engine's, the frames
    /// the sending driver accepted that never reached the receiving driver (exact). Absent only
    /// in records from before bounds, when the receiving sockets' count was of coalesced
    /// batches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<u64>,
    /// Not a stage: a frame engine's count of the test's frames at the receiving driver (its
    /// XDP counter), the point between the stages before it (`sender_host`, `network`) and
    /// those after (`receiver_*`). Absent for the socket engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_driver: Option<u64>,
    /// The parts that are attributions within a range rather than counts: the range each one's
    /// true figure lies in. A part not named here is a count.
    #[serde(default, skip_serializing_if = "LossBounds::is_empty")]
    pub bounds: LossBounds,
    /// Which figures count more than this test, and any counter that saw more than was left.
    pub note: String,
}

impl LossCauses {
    /// The stages in the order a datagram meets them, each with its name in JSON and its
    /// bound if it is one; they add up to the direction's `packets_lost`.
    pub fn stages(&self) -> [(&'static str, Option<u64>, Option<LossRange>); 5] {
        let b = &self.bounds;
        [
            ("sender_host", self.sender_host, b.sender_host),
            ("network", self.network, b.network),
            ("receiver_host", self.receiver_host, None),
            ("receiver_ip", self.receiver_ip, b.receiver_ip),
            (
                "receiver_socket_buffer",
                self.receiver_socket_buffer,
                b.receiver_socket_buffer,
            ),
        ]
    }

    /// The sum of the stages that are known.
    pub fn total(&self) -> u64 {
        self.stages().iter().filter_map(|(_, n, _)| *n).sum()
    }
}

/// The range of each `loss_causes` part that is a bound (absent: a count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LossBounds {
    /// See [`LossCauses::receiver_socket_buffer`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_socket_buffer: Option<LossRange>,
    /// See [`LossCauses::receiver_ip`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_ip: Option<LossRange>,
    /// See [`LossCauses::sender_host`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_host: Option<LossRange>,
    /// See [`LossCauses::network`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<LossRange>,
}

impl LossBounds {
    /// Whether every part is a count.
    pub fn is_empty(&self) -> bool {
        self.receiver_socket_buffer.is_none()
            && self.receiver_ip.is_none()
            && self.sender_host.is_none()
            && self.network.is_none()
    }
}

/// Datagrams: at least `at_least`, at most `at_most`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossRange {
    /// The fewest the part can hold.
    pub at_least: u64,
    /// The most the part can hold.
    pub at_most: u64,
}
