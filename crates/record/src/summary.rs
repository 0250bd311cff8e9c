//! A run's [`Summary`]: the figures every run has (window, bytes, goodput, CPU, link speed),
//! its per-direction [`FlowSummary`]s, and its kind family's own figures ([`Family`]), so the
//! type says what a run of each family carries and a reader matches once instead of checking
//! a bag of `Option`s.
//!
//! Invariants: a summary has exactly one family: a `tcp_stream` run is [`Family::Stream`], a
//! `udp_stream` run [`Family::Datagram`], a request/response run (`tcp_rr`, `udp_rr`,
//! `tcp_crr`, `tcp_cc`) [`Family::Transaction`], a `linerate rpm` direction [`Family::Rpm`].
//! The JSON is the one layout 2 has always had (the family's fields sit among the common
//! ones, UDP and request/response figures flattened in): [`crate::summary_layout`] writes and
//! reads it, picking the family from the keys present.

use measure::cpu::CoreCpu;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use wire::spec::FamilyId;
use wire::TestKind;

use crate::rpm::StoredRpm;
use crate::schema::{CpuSummary, FlowSummary, LatencyUnderLoad, RrSummary, UdpSummary};
use crate::FrameSummary;

/// The run's summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Test window on the client's clock, seconds.
    pub duration_s: f64,
    /// Whether the user interrupted the run (the figures cover what ran).
    pub interrupted: bool,
    /// Whether the run was asked to last until stopped (`-t 0`, as iperf3's): a Ctrl-C is then
    /// its planned end, not a cut, so the run's status is `ok` though `interrupted` says how
    /// it ended. Absent: false (a timed run; records made before the field).
    pub until_stopped: bool,
    /// Set when the server went away mid-test (killed, or the path went black): why. The
    /// client's figures run to the end of its window; what only the server measures (bytes
    /// received on client-to-server flows, what it sent, its CPU) comes from its last
    /// answered poll (`server_figures_up_to_s`).
    pub incomplete: Option<String>,
    /// Set with `incomplete`: the server's figures (what it received, what it sent, its data
    /// threads' CPU) are those of its last answered interval poll, this many seconds into the
    /// test on the client's clock (0: no poll was answered, so they are missing and read 0);
    /// the client's own figures run to `duration_s`. Renderers mark them "up to" this time.
    pub server_figures_up_to_s: Option<f64>,
    /// Bytes written, all directions.
    pub bytes_sent: u64,
    /// Bytes read within the window, all directions.
    pub bytes_received: u64,
    /// Bytes in flight when the window closed, all directions.
    pub bytes_in_flight: u64,
    /// Receiver goodput, all directions, bits/s.
    pub throughput_bps: f64,
    /// Client data-thread CPU, % of one core.
    pub local_cpu_pct: f64,
    /// Server data-thread CPU, % of one core.
    pub remote_cpu_pct: f64,
    /// Client CPU detail.
    pub local_cpu: CpuSummary,
    /// Server CPU detail.
    pub remote_cpu: CpuSummary,
    /// Each of the client host's cores over the client's wall time.
    pub local_cores: Vec<CoreCpu>,
    /// Each of the server host's cores over the server's wall time.
    pub remote_cores: Vec<CoreCpu>,
    /// Link speed, bits/s: `--link-speed`, or else the slower of the two ends' interfaces as
    /// their drivers report it (`link_speed_source` says which).
    pub link_speed_bps: Option<u64>,
    /// Where `link_speed_bps` came from: `--link-speed`, or the interface it was read from
    /// (stored as those words).
    pub link_speed_source: Option<crate::LinkSpeedSource>,
    /// Performance Index `T/C × T/L` (T Mbit/s, C the busier end's CPU %, L link Mbit/s).
    pub performance_index: Option<f64>,
    /// What the run's kind family measured beyond the figures every run has.
    pub family: Family,
    /// Per-direction figures.
    pub flows: Vec<FlowSummary>,
}

/// A run's kind family and the figures only that family has.
#[derive(Debug, Clone, PartialEq)]
pub enum Family {
    /// `tcp_stream` (TCP or a Unix stream socket): bulk transfer.
    Stream(StreamFamily),
    /// `udp_stream`: datagrams at a rate, with their accounting.
    Datagram(DatagramFamily),
    /// The request/response kinds: `tcp_rr`, `udp_rr`, `tcp_crr`, `tcp_cc`.
    Transaction(TransactionFamily),
    /// One direction of `linerate rpm`, stored as a `tcp_stream` run without intervals.
    Rpm(RpmFamily),
}

/// A TCP run's senders over the whole run, from their TCP_INFO (absent where there is none:
/// a Unix socket, a UDP request/response test, a peer that does not report it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpFigures {
    /// Retransmitted segments, all TCP streams.
    pub retransmits: Option<u32>,
    /// Smoothed RTT, mean over all TCP streams, µs.
    pub rtt_us: Option<u32>,
}

/// A bulk stream run's own figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamFamily {
    /// The senders' TCP figures.
    pub tcp: TcpFigures,
    /// `tcp --self-probes`: the in-band probes over the run, as a request/response test's
    /// transactions (each probe one; measured by the client).
    pub self_probes: Option<RrSummary>,
    /// `--latency`: round trips of a low-rate probe stream before and during the load.
    pub latency_under_load: Option<LatencyUnderLoad>,
}

/// A datagram run's own figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DatagramFamily {
    /// Datagram accounting over all directions.
    pub udp: UdpSummary,
    /// A frame engine's run: its frames as both drivers counted them.
    pub frames: Option<FrameSummary>,
    /// `--latency`: round trips of a low-rate probe stream before and during the load.
    pub latency_under_load: Option<LatencyUnderLoad>,
}

/// A request/response run's own figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TransactionFamily {
    /// Transactions and latency.
    pub rr: RrSummary,
    /// The TCP kinds' TCP figures (none for `udp_rr`).
    pub tcp: TcpFigures,
}

/// A `linerate rpm` direction's own figures.
#[derive(Debug, Clone, PartialEq)]
pub struct RpmFamily {
    /// The direction's responsiveness, its idle path and its timeline.
    pub rpm: Box<StoredRpm>,
    /// Its load connections' TCP figures, merged.
    pub tcp: TcpFigures,
}

/// A figure set on a run whose family does not carry it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a {family} run has no {field}: it belongs to {belongs}")]
pub struct NotCarried {
    /// The run's family (`stream`, `datagram`, `transaction`, `rpm`).
    pub family: &'static str,
    /// The summary key.
    pub field: &'static str,
    /// The runs that carry it, in words.
    pub belongs: &'static str,
}

impl Family {
    /// Whether a run of `kind` has this family: an rpm direction is a `tcp_stream` run.
    pub fn fits(&self, kind: TestKind) -> bool {
        self.id() == kind.row().family
    }

    /// Which of the kind table's families this is (an rpm direction's is `Stream`).
    pub fn id(&self) -> FamilyId {
        match self {
            Family::Stream(_) | Family::Rpm(_) => FamilyId::Stream,
            Family::Datagram(_) => FamilyId::Datagram,
            Family::Transaction(_) => FamilyId::Transaction,
        }
    }

    /// The family's name, as messages say it: `stream`, `datagram`, `transaction`, `rpm`.
    pub fn name(&self) -> &'static str {
        match self {
            Family::Rpm(_) => "rpm",
            Family::Stream(_) | Family::Datagram(_) | Family::Transaction(_) => self.id().as_str(),
        }
    }
}

impl Summary {
    /// The run's TCP figures: a stream, transaction or rpm run's (a datagram run has none).
    pub fn tcp(&self) -> Option<&TcpFigures> {
        match &self.family {
            Family::Stream(s) => Some(&s.tcp),
            Family::Transaction(t) => Some(&t.tcp),
            Family::Rpm(r) => Some(&r.tcp),
            Family::Datagram(_) => None,
        }
    }

    /// Retransmitted segments, all TCP streams (none without TCP figures).
    pub fn retransmits(&self) -> Option<u32> {
        self.tcp().and_then(|t| t.retransmits)
    }

    /// Smoothed RTT, mean over all TCP streams, µs.
    pub fn rtt_us(&self) -> Option<u32> {
        self.tcp().and_then(|t| t.rtt_us)
    }

    /// A datagram run's accounting over all directions.
    pub fn udp(&self) -> Option<&UdpSummary> {
        match &self.family {
            Family::Datagram(d) => Some(&d.udp),
            _ => None,
        }
    }

    /// A request/response run's transactions and latency.
    pub fn rr(&self) -> Option<&RrSummary> {
        match &self.family {
            Family::Transaction(t) => Some(&t.rr),
            _ => None,
        }
    }

    /// A stream run's in-band probes (`tcp --self-probes`).
    pub fn self_probes(&self) -> Option<&RrSummary> {
        match &self.family {
            Family::Stream(s) => s.self_probes.as_ref(),
            _ => None,
        }
    }

    /// A stream or datagram run's latency under load (`--latency`).
    pub fn latency_under_load(&self) -> Option<&LatencyUnderLoad> {
        match &self.family {
            Family::Stream(s) => s.latency_under_load.as_ref(),
            Family::Datagram(d) => d.latency_under_load.as_ref(),
            _ => None,
        }
    }

    /// Sets the latency under load of a stream or datagram run (the runs `--latency` loads);
    /// any other family refuses it.
    pub fn set_latency_under_load(&mut self, l: LatencyUnderLoad) -> Result<(), NotCarried> {
        match &mut self.family {
            Family::Stream(s) => s.latency_under_load = Some(l),
            Family::Datagram(d) => d.latency_under_load = Some(l),
            other => {
                return Err(NotCarried {
                    family: other.name(),
                    field: "latency_under_load",
                    belongs: "tcp and udp runs (--latency)",
                })
            }
        }
        Ok(())
    }

    /// An rpm direction's figures.
    pub fn rpm(&self) -> Option<&StoredRpm> {
        match &self.family {
            Family::Rpm(r) => Some(&r.rpm),
            _ => None,
        }
    }

    /// A frame engine's frames at both drivers (datagram runs of `--engine packet|xdp`).
    pub fn frames(&self) -> Option<&FrameSummary> {
        match &self.family {
            Family::Datagram(d) => d.frames.as_ref(),
            _ => None,
        }
    }
}

/// Edits of a family's own figures in place (a pass that refines them, a test); none changes
/// the family.
impl Summary {
    /// The run's TCP figures, to edit.
    pub fn tcp_mut(&mut self) -> Option<&mut TcpFigures> {
        match &mut self.family {
            Family::Stream(s) => Some(&mut s.tcp),
            Family::Transaction(t) => Some(&mut t.tcp),
            Family::Rpm(r) => Some(&mut r.tcp),
            Family::Datagram(_) => None,
        }
    }

    /// A datagram run's accounting, to edit.
    pub fn udp_mut(&mut self) -> Option<&mut UdpSummary> {
        match &mut self.family {
            Family::Datagram(d) => Some(&mut d.udp),
            _ => None,
        }
    }

    /// A request/response run's transactions, to edit.
    pub fn rr_mut(&mut self) -> Option<&mut RrSummary> {
        match &mut self.family {
            Family::Transaction(t) => Some(&mut t.rr),
            _ => None,
        }
    }

    /// An rpm direction's figures, to edit.
    pub fn rpm_mut(&mut self) -> Option<&mut StoredRpm> {
        match &mut self.family {
            Family::Rpm(r) => Some(&mut r.rpm),
            _ => None,
        }
    }
}

impl Serialize for Summary {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        crate::summary_layout::Written::of(self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Summary {
    /// Reads the layout every version wrote; the family is the one whose keys are present,
    /// and a summary mixing two families' keys is refused by name.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let read = crate::summary_layout::Read::deserialize(deserializer)?;
        Summary::try_from(read).map_err(D::Error::custom)
    }
}
