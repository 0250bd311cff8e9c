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

/// Where a UDP direction's lost datagrams went, from the counters the kernel keeps. The parts
/// add up to `packets_lost`: the exact per-socket figure first, then each host's counters, each
/// at most what is left, and the rest is the network's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossCauses {
    /// Dropped at the receiving sockets' full buffers: the sockets' own drop counter (what
    /// `SO_RXQ_OVFL` reports), this test's sockets only. Where the kernel does not give it,
    /// the receiving host's `Udp: RcvbufErrors` instead (host-wide; `note` says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_socket_buffer: Option<u64>,
    /// Dropped by the receiving host before any socket: its interface's receive drops (NIC,
    /// driver) and its CPUs' input backlog drops. Host-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_host: Option<u64>,
    /// Dropped by the sending host: UDP send errors (no buffer, or a qdisc dropped them) and its
    /// interface's transmit drops. Host-wide; a dropped GSO batch counts once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_host: Option<u64>,
    /// The rest: lost between the two hosts. Absent when the receiving sockets' count is of
    /// coalesced batches (GRO), not datagrams, so the rest cannot be told (`note` says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<u64>,
    /// Which figures count more than this test, and any counter that saw more than was lost.
    pub note: String,
}
