//! The JSON layout of a [`Summary`]: the one layout 2 has always written, a flat object whose
//! family figures sit among the common ones (`retransmits` and `rtt_us` after the cores, a
//! UDP run's datagram counts and a request/response run's transactions flattened in, the
//! probes, rpm and frames before `flows`). `Written` writes it from a typed summary, byte
//! for byte as the flat struct before families did, so stored records and exports did not
//! change; `Read` reads it, and `TryFrom<Read>` picks the family from the keys present.
//!
//! Invariants: the two structs list the same keys in the same order with the same omission
//! rules (a key written is a key read); `retransmits`, `rtt_us`, `link_speed_bps` and
//! `performance_index` are always written, `null` when absent, as they always were. The
//! family is chosen by key, in this order: `rpm` (an rpm direction), `transactions` (a
//! request/response run), `packets_sent` (a UDP run), else a stream run; a key no run of that
//! family carries (which no version of linerate wrote) is refused by name, never dropped.

use measure::cpu::CoreCpu;
use serde::{Deserialize, Serialize};

use crate::rpm::StoredRpm;
use crate::schema::{CpuSummary, FlowSummary, LatencyUnderLoad, RrSummary, UdpSummary};
use crate::summary::{
    DatagramFamily, Family, RpmFamily, StreamFamily, Summary, TcpFigures, TransactionFamily,
};
use crate::{FrameSummary, LinkSpeedSource};

/// A summary as written: borrowed from the typed one.
#[derive(Serialize)]
pub(crate) struct Written<'a> {
    duration_s: f64,
    interrupted: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    until_stopped: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    incomplete: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_figures_up_to_s: Option<f64>,
    bytes_sent: u64,
    bytes_received: u64,
    bytes_in_flight: u64,
    throughput_bps: f64,
    local_cpu_pct: f64,
    remote_cpu_pct: f64,
    local_cpu: &'a CpuSummary,
    remote_cpu: &'a CpuSummary,
    #[serde(skip_serializing_if = "<[CoreCpu]>::is_empty")]
    local_cores: &'a [CoreCpu],
    #[serde(skip_serializing_if = "<[CoreCpu]>::is_empty")]
    remote_cores: &'a [CoreCpu],
    retransmits: Option<u32>,
    rtt_us: Option<u32>,
    link_speed_bps: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    link_speed_source: Option<&'a LinkSpeedSource>,
    performance_index: Option<f64>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    udp: Option<&'a UdpSummary>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    rr: Option<&'a RrSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_under_load: Option<&'a LatencyUnderLoad>,
    #[serde(skip_serializing_if = "Option::is_none")]
    self_probes: Option<&'a RrSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rpm: Option<&'a StoredRpm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    frames: Option<&'a FrameSummary>,
    flows: &'a [FlowSummary],
}

impl<'a> Written<'a> {
    /// The layout of `s`.
    pub(crate) fn of(s: &'a Summary) -> Written<'a> {
        let tcp = s.tcp().copied().unwrap_or_default();
        Written {
            duration_s: s.duration_s,
            interrupted: s.interrupted,
            until_stopped: s.until_stopped,
            incomplete: s.incomplete.as_deref(),
            server_figures_up_to_s: s.server_figures_up_to_s,
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
            bytes_in_flight: s.bytes_in_flight,
            throughput_bps: s.throughput_bps,
            local_cpu_pct: s.local_cpu_pct,
            remote_cpu_pct: s.remote_cpu_pct,
            local_cpu: &s.local_cpu,
            remote_cpu: &s.remote_cpu,
            local_cores: &s.local_cores,
            remote_cores: &s.remote_cores,
            retransmits: tcp.retransmits,
            rtt_us: tcp.rtt_us,
            link_speed_bps: s.link_speed_bps,
            link_speed_source: s.link_speed_source.as_ref(),
            performance_index: s.performance_index,
            udp: s.udp(),
            rr: s.rr(),
            latency_under_load: s.latency_under_load(),
            self_probes: s.self_probes(),
            rpm: s.rpm(),
            frames: s.frames(),
            flows: &s.flows,
        }
    }
}

/// A summary as read: every key of every family, each optional as the layout has it.
#[derive(Deserialize)]
pub(crate) struct Read {
    duration_s: f64,
    interrupted: bool,
    #[serde(default)]
    until_stopped: bool,
    #[serde(default)]
    incomplete: Option<String>,
    #[serde(default)]
    server_figures_up_to_s: Option<f64>,
    bytes_sent: u64,
    bytes_received: u64,
    bytes_in_flight: u64,
    throughput_bps: f64,
    local_cpu_pct: f64,
    remote_cpu_pct: f64,
    local_cpu: CpuSummary,
    remote_cpu: CpuSummary,
    #[serde(default)]
    local_cores: Vec<CoreCpu>,
    #[serde(default)]
    remote_cores: Vec<CoreCpu>,
    retransmits: Option<u32>,
    rtt_us: Option<u32>,
    link_speed_bps: Option<u64>,
    #[serde(default)]
    link_speed_source: Option<LinkSpeedSource>,
    performance_index: Option<f64>,
    #[serde(flatten, default)]
    udp: Option<UdpSummary>,
    #[serde(flatten, default)]
    rr: Option<RrSummary>,
    #[serde(default)]
    latency_under_load: Option<LatencyUnderLoad>,
    #[serde(default)]
    self_probes: Option<RrSummary>,
    #[serde(default)]
    rpm: Option<Box<StoredRpm>>,
    #[serde(default)]
    frames: Option<FrameSummary>,
    flows: Vec<FlowSummary>,
}

/// A summary whose keys belong to two families.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "summary has `{by}` (a {family} run) and also `{key}`, which no {family} run carries: \
     not a record linerate wrote"
)]
pub struct MixedFamilies {
    /// The family its keys chose.
    pub family: &'static str,
    /// The key that chose it.
    pub by: &'static str,
    /// The key foreign to it.
    pub key: &'static str,
}

impl Read {
    /// The family of these keys, or the first key foreign to it.
    fn family(&mut self) -> Result<Family, MixedFamilies> {
        let tcp = TcpFigures {
            retransmits: self.retransmits,
            rtt_us: self.rtt_us,
        };
        let has_tcp = tcp.retransmits.is_some() || tcp.rtt_us.is_some();
        let (udp, rr, rpm) = (self.udp.take(), self.rr.take(), self.rpm.take());
        let (probes, frames) = (self.self_probes.take(), self.frames.take());
        let loaded = self.latency_under_load.take();
        let present = |keys: &[(bool, &'static str)]| keys.iter().find(|(p, _)| *p).map(|k| k.1);
        let (family, by, foreign) = if let Some(rpm) = rpm {
            let foreign = present(&[
                (udp.is_some(), "packets_sent"),
                (rr.is_some(), "transactions"),
                (loaded.is_some(), "latency_under_load"),
                (probes.is_some(), "self_probes"),
                (frames.is_some(), "frames"),
            ]);
            (Family::Rpm(RpmFamily { rpm, tcp }), "rpm", foreign)
        } else if let Some(rr) = rr {
            let foreign = present(&[
                (udp.is_some(), "packets_sent"),
                (loaded.is_some(), "latency_under_load"),
                (probes.is_some(), "self_probes"),
                (frames.is_some(), "frames"),
            ]);
            let t = TransactionFamily { rr, tcp };
            (Family::Transaction(t), "transactions", foreign)
        } else if let Some(udp) = udp {
            let foreign = present(&[(has_tcp, "retransmits"), (probes.is_some(), "self_probes")]);
            let d = DatagramFamily {
                udp,
                frames,
                latency_under_load: loaded,
            };
            (Family::Datagram(d), "packets_sent", foreign)
        } else {
            let foreign = present(&[(frames.is_some(), "frames")]);
            let s = StreamFamily {
                tcp,
                self_probes: probes,
                latency_under_load: loaded,
            };
            (Family::Stream(s), "retransmits", foreign)
        };
        match foreign {
            Some(key) => Err(MixedFamilies {
                family: family.name(),
                by,
                key,
            }),
            None => Ok(family),
        }
    }
}

impl TryFrom<Read> for Summary {
    type Error = MixedFamilies;

    fn try_from(mut r: Read) -> Result<Summary, MixedFamilies> {
        let family = r.family()?;
        Ok(Summary {
            duration_s: r.duration_s,
            interrupted: r.interrupted,
            until_stopped: r.until_stopped,
            incomplete: r.incomplete,
            server_figures_up_to_s: r.server_figures_up_to_s,
            bytes_sent: r.bytes_sent,
            bytes_received: r.bytes_received,
            bytes_in_flight: r.bytes_in_flight,
            throughput_bps: r.throughput_bps,
            local_cpu_pct: r.local_cpu_pct,
            remote_cpu_pct: r.remote_cpu_pct,
            local_cpu: r.local_cpu,
            remote_cpu: r.remote_cpu,
            local_cores: r.local_cores,
            remote_cores: r.remote_cores,
            link_speed_bps: r.link_speed_bps,
            link_speed_source: r.link_speed_source,
            performance_index: r.performance_index,
            family,
            flows: r.flows,
        })
    }
}
