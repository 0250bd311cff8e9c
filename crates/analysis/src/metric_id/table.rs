//! The metrics a comparison lines up, each read from one [`RunRecord`] in the unit it names.
//!
//! A metric that does not apply to a run (loss of a TCP run, latency of a bulk run) reads
//! `None`; a comparison drops the rows where every column is `None`. Per-direction rows read
//! only bidirectional runs, and sender/receiver CPU, pps per core and CPU per GB only
//! one-direction runs (efficiency, goodput per core, reads both: per direction in bidir runs,
//! `flows[].efficiency`); a comparison also
//! drops sender/receiver CPU when it only repeats client/server CPU (runs where the client
//! sends), so a figure does not show twice under two names. The `rpm` rows read a `linerate
//! rpm` direction's stored run (`summary.rpm`) only.

use super::MetricId;
use record::{FlowSummary, RunRecord};
use serde::{Deserialize, Serialize};
use wire::spec::Flow;

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// More is better (throughput, transactions/s).
    Higher,
    /// Less is better (CPU, loss, latency).
    Lower,
}

/// One comparable figure of a run: how [`MetricId`] reads and shows.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// Which metric.
    pub id: MetricId,
    /// Its row name, as `--metric` takes it and tables print it (`throughput`, `latency
    /// p99`): never renamed, only added.
    pub name: &'static str,
    /// The figure's name in base units where repetitions summarize it (`throughput_bps`, the
    /// repeat statistics' JSON names); `None` where they do not.
    pub key: Option<&'static str>,
    /// Unit of the value, e.g. `Mbit/s`.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// Reads the figure from a run in its base unit (bit/s, %, µs, 1/s); `None` when it does
    /// not apply. [`Metric::value`] gives it in `unit`.
    pub base: fn(&RunRecord) -> Option<f64>,
    /// Base units per `unit` (1e6 for Mbit/s over bit/s, else 1).
    pub per_unit: f64,
    /// Earlier metrics this one may only repeat: a comparison leaves this row out when its
    /// values equal one of theirs in every column.
    pub repeats: &'static [MetricId],
}

impl Metric {
    /// Its row name, e.g. `throughput`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The figure's name in base units where repetitions summarize it (`throughput_bps`,
    /// `rtt_p50_us`: the names of the repeat statistics' JSON); `None` where they do not.
    pub fn key(&self) -> Option<&'static str> {
        self.key
    }

    /// The figure of `r` in `unit`; `None` when it does not apply.
    pub fn value(&self, r: &RunRecord) -> Option<f64> {
        (self.base)(r).map(|v| v / self.per_unit)
    }
}

/// Every metric, in row order ([`MetricId::ALL`]'s).
pub fn metrics() -> &'static [Metric] {
    &METRICS
}

/// How `id` reads and shows.
pub fn metric(id: MetricId) -> &'static Metric {
    // METRICS is in MetricId order: `the_table_is_in_metric_id_order` holds it.
    &METRICS[id as usize]
}

/// The figures of `r` that repetitions summarize, by key and in base units, in row order; a
/// figure the run does not have (no retransmits over UDP) is left out.
pub fn summarized_figures(r: &RunRecord) -> Vec<(&'static str, f64)> {
    METRICS
        .iter()
        .filter_map(|m| Some((m.key()?, (m.base)(r)?)))
        .collect()
}

const MBIT: f64 = 1e6;

fn flow(r: &RunRecord, which: Flow) -> Option<&FlowSummary> {
    if r.summary.flows.len() < 2 {
        return None;
    }
    r.summary.flows.iter().find(|f| f.flow == which)
}

fn only_flow(r: &RunRecord) -> Option<&FlowSummary> {
    match r.summary.flows.as_slice() {
        [f] => Some(f),
        _ => None,
    }
}

/// A `linerate rpm` direction's figures (`summary.rpm`), absent from every other run.
fn rpm(r: &RunRecord) -> Option<&record::rpm::RpmDirection> {
    r.as_rpm().map(|s| &s.direction)
}

/// A median of a `linerate rpm` direction's probes, ms; `None` without samples.
fn rpm_p50(s: &record::rpm::Spread) -> Option<f64> {
    (s.samples > 0).then_some(s.p50)
}

fn latency(r: &RunRecord) -> Option<measure::latency::LatencySummary> {
    r.summary.rr()?.latency_us
}

/// A direction's efficiency figures (`flows[].efficiency`), when it has them.
fn efficiency(f: Option<&FlowSummary>) -> Option<record::Efficiency> {
    f?.efficiency
}

use Better::{Higher, Lower};
use MetricId as M;

/// An efficiency figure's unit, which way is better, and base units per unit.
type EfficiencyUnit = (&'static str, Better, f64);
const GBIT_PER_CORE: EfficiencyUnit = ("Gbit/s per core", Higher, 1e9);
const MDATAGRAMS_PER_CORE: EfficiencyUnit = ("M datagrams/s per core", Higher, 1e6);
const CPU_S_PER_GB: EfficiencyUnit = ("CPU s/GB", Lower, 1.0);

/// One end's efficiency row (`efficiency`), not summarized over repetitions.
const fn per_end(
    id: MetricId,
    name: &'static str,
    (unit, better, per_unit): EfficiencyUnit,
    base: fn(&RunRecord) -> Option<f64>,
) -> Metric {
    Metric {
        id,
        name,
        key: None,
        unit,
        better,
        base,
        per_unit,
        repeats: &[],
    }
}

/// The table, in [`MetricId`]'s order: [`MetricId::ALL`] is its ids.
pub(super) const TABLE: [Metric; 37] = [
    Metric {
        id: M::Throughput,
        name: "throughput",
        key: Some("throughput_bps"),
        unit: "Mbit/s",
        better: Higher,
        base: |r| Some(r.summary.throughput_bps),
        per_unit: MBIT,
        repeats: &[],
    },
    Metric {
        id: M::ThroughputUp,
        name: "throughput c->s",
        key: None,
        unit: "Mbit/s",
        better: Higher,
        base: |r| flow(r, Flow::ClientToServer).map(|f| f.throughput_bps),
        per_unit: MBIT,
        repeats: &[],
    },
    Metric {
        id: M::ThroughputDown,
        name: "throughput s->c",
        key: None,
        unit: "Mbit/s",
        better: Higher,
        base: |r| flow(r, Flow::ServerToClient).map(|f| f.throughput_bps),
        per_unit: MBIT,
        repeats: &[],
    },
    Metric {
        id: M::ClientCpu,
        name: "client CPU",
        key: Some("local_cpu_pct"),
        unit: "%",
        better: Lower,
        base: |r| Some(r.summary.local_cpu_pct),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::ServerCpu,
        name: "server CPU",
        key: Some("remote_cpu_pct"),
        unit: "%",
        better: Lower,
        base: |r| Some(r.summary.remote_cpu_pct),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::SenderCpu,
        name: "sender CPU",
        key: None,
        unit: "%",
        better: Lower,
        base: |r| only_flow(r).map(|f| f.sender_cpu_pct),
        per_unit: 1.0,
        repeats: &[M::ClientCpu, M::ServerCpu],
    },
    Metric {
        id: M::ReceiverCpu,
        name: "receiver CPU",
        key: None,
        unit: "%",
        better: Lower,
        base: |r| only_flow(r).map(|f| f.receiver_cpu_pct),
        per_unit: 1.0,
        repeats: &[M::ClientCpu, M::ServerCpu],
    },
    per_end(
        M::SenderEfficiency,
        "sender efficiency",
        GBIT_PER_CORE,
        |r| efficiency(only_flow(r))?.sender_goodput_bps_per_core,
    ),
    per_end(
        M::ReceiverEfficiency,
        "receiver efficiency",
        GBIT_PER_CORE,
        |r| efficiency(only_flow(r))?.receiver_goodput_bps_per_core,
    ),
    per_end(
        M::SenderEfficiencyUp,
        "sender efficiency c->s",
        GBIT_PER_CORE,
        |r| efficiency(flow(r, Flow::ClientToServer))?.sender_goodput_bps_per_core,
    ),
    per_end(
        M::ReceiverEfficiencyUp,
        "receiver efficiency c->s",
        GBIT_PER_CORE,
        |r| efficiency(flow(r, Flow::ClientToServer))?.receiver_goodput_bps_per_core,
    ),
    per_end(
        M::SenderEfficiencyDown,
        "sender efficiency s->c",
        GBIT_PER_CORE,
        |r| efficiency(flow(r, Flow::ServerToClient))?.sender_goodput_bps_per_core,
    ),
    per_end(
        M::ReceiverEfficiencyDown,
        "receiver efficiency s->c",
        GBIT_PER_CORE,
        |r| efficiency(flow(r, Flow::ServerToClient))?.receiver_goodput_bps_per_core,
    ),
    per_end(
        M::SenderPpsPerCore,
        "sender pps per core",
        MDATAGRAMS_PER_CORE,
        |r| efficiency(only_flow(r))?.sender_pps_per_core,
    ),
    per_end(
        M::ReceiverPpsPerCore,
        "receiver pps per core",
        MDATAGRAMS_PER_CORE,
        |r| efficiency(only_flow(r))?.receiver_pps_per_core,
    ),
    per_end(M::SenderCpuPerGb, "sender CPU per GB", CPU_S_PER_GB, |r| {
        efficiency(only_flow(r))?.sender_cpu_s_per_gb
    }),
    per_end(
        M::ReceiverCpuPerGb,
        "receiver CPU per GB",
        CPU_S_PER_GB,
        |r| efficiency(only_flow(r))?.receiver_cpu_s_per_gb,
    ),
    Metric {
        id: M::PerformanceIndex,
        name: "PI",
        key: None,
        unit: "T/C×T/L",
        better: Higher,
        base: |r| r.summary.performance_index,
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::Retransmits,
        name: "retransmits",
        key: Some("retransmits"),
        unit: "segments",
        better: Lower,
        base: |r| r.summary.retransmits().map(f64::from),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::Rtt,
        name: "RTT",
        key: None,
        unit: "µs",
        better: Lower,
        base: |r| r.summary.rtt_us().map(f64::from),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::Loss,
        name: "loss",
        key: Some("loss_pct"),
        unit: "%",
        better: Lower,
        base: |r| r.summary.udp().map(|u| u.loss_pct),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::Received,
        name: "received",
        key: Some("pps_received"),
        unit: "datagrams/s",
        better: Higher,
        base: |r| r.summary.udp().map(|u| u.pps_received),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::Jitter,
        name: "jitter",
        key: None,
        unit: "µs",
        better: Lower,
        base: |r| r.summary.udp().map(|u| u.jitter_us),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::OutOfOrder,
        name: "out of order",
        key: None,
        unit: "datagrams",
        better: Lower,
        base: |r| r.summary.udp().map(|u| u.packets_out_of_order as f64),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::Transactions,
        name: "transactions",
        key: Some("transactions_per_s"),
        unit: "1/s",
        better: Higher,
        base: |r| r.summary.rr().map(|rr| rr.transactions_per_s),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::Connections,
        name: "connections",
        key: None,
        unit: "1/s",
        better: Higher,
        base: |r| r.summary.rr().and_then(|rr| rr.connections_per_s),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::LostTransactions,
        name: "lost transactions",
        key: None,
        unit: "transactions",
        better: Lower,
        base: |r| {
            r.summary
                .rr()
                .and_then(|rr| rr.lost_transactions)
                .map(|n| n as f64)
        },
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::LatencyP50,
        name: "latency p50",
        key: Some("rtt_p50_us"),
        unit: "µs",
        better: Lower,
        base: |r| latency(r).map(|l| l.p50),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::LatencyP90,
        name: "latency p90",
        key: None,
        unit: "µs",
        better: Lower,
        base: |r| latency(r).map(|l| l.p90),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::LatencyP99,
        name: "latency p99",
        key: Some("rtt_p99_us"),
        unit: "µs",
        better: Lower,
        base: |r| latency(r).map(|l| l.p99),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::LatencyP999,
        name: "latency p99.9",
        key: None,
        unit: "µs",
        better: Lower,
        base: |r| latency(r).map(|l| l.p999),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::LatencyP9999,
        name: "latency p99.99",
        key: None,
        unit: "µs",
        better: Lower,
        base: |r| latency(r).map(|l| l.p9999),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::LatencyMax,
        name: "latency max",
        key: None,
        unit: "µs",
        better: Lower,
        base: |r| latency(r).map(|l| l.max),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::LoadedLatencyP50,
        name: "loaded latency p50",
        key: Some("loaded_rtt_p50_us"),
        unit: "µs",
        better: Lower,
        base: |r| {
            r.summary
                .latency_under_load()
                .and_then(|l| l.loaded.latency_us)
                .map(|l| l.p50)
        },
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::Rpm,
        name: "rpm",
        key: None,
        unit: "round trips/min",
        better: Higher,
        base: |r| rpm(r)?.responsiveness.map(|x| x.rpm),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::RpmSelfP50,
        name: "rpm self p50",
        key: None,
        unit: "ms",
        better: Lower,
        base: |r| rpm_p50(&rpm(r)?.self_ms),
        per_unit: 1.0,
        repeats: &[],
    },
    Metric {
        id: M::RpmForeignP50,
        name: "rpm foreign p50",
        key: None,
        unit: "ms",
        better: Lower,
        base: |r| rpm_p50(&rpm(r)?.foreign_rr_ms),
        per_unit: 1.0,
        repeats: &[],
    },
];

static METRICS: [Metric; 37] = TABLE;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_metric_id_order() {
        let ids: Vec<MetricId> = metrics().iter().map(|m| m.id).collect();
        assert_eq!(ids, MetricId::ALL);
    }

    fn value(name: &str, r: &RunRecord) -> Option<f64> {
        metric(name.parse().ok()?).value(r)
    }

    #[test]
    fn efficiency_rows_read_each_ends_figures_in_their_units() {
        let runs: Vec<RunRecord> =
            serde_json::from_str(include_str!("../../../report/tests/fixtures/tcp_runs.json"))
                .unwrap();
        let mut r = runs[0].clone();
        assert_eq!(value("sender efficiency", &r), None, "older record: no row");
        r.summary.flows[0].efficiency = Some(record::Efficiency {
            sender_goodput_bps_per_core: Some(48.1e9),
            receiver_goodput_bps_per_core: Some(31e9),
            sender_cpu_s_per_gb: Some(0.166),
            receiver_pps_per_core: Some(2.5e6),
            ..Default::default()
        });
        assert_eq!(value("sender efficiency", &r), Some(48.1));
        assert_eq!(value("receiver efficiency", &r), Some(31.0));
        assert_eq!(value("sender CPU per GB", &r), Some(0.166));
        assert_eq!(value("receiver CPU per GB", &r), None);
        assert_eq!(value("receiver pps per core", &r), Some(2.5));
        assert_eq!(value("sender efficiency c->s", &r), None, "one direction");
        let m = |name: &str| metric(name.parse().unwrap());
        assert_eq!(m("sender efficiency").unit, "Gbit/s per core");
        assert_eq!(m("sender efficiency").better, Higher);
        assert_eq!(m("receiver CPU per GB").better, Lower);
        let mut back = r.summary.flows[0].clone();
        back.flow = Flow::ServerToClient;
        back.efficiency = Some(record::Efficiency {
            receiver_goodput_bps_per_core: Some(20e9),
            ..Default::default()
        });
        r.summary.flows.push(back);
        assert_eq!(value("sender efficiency c->s", &r), Some(48.1));
        assert_eq!(value("receiver efficiency s->c", &r), Some(20.0));
        assert_eq!(value("sender efficiency", &r), None, "bidir: per direction");
    }

    #[test]
    fn rpm_metrics_read_an_rpm_direction_only() {
        let rpm: RunRecord =
            serde_json::from_str(include_str!("../../../report/tests/fixtures/rpm_run.json"))
                .unwrap();
        let d = &rpm.summary.rpm().unwrap().direction;
        let expected = [
            ("rpm", d.responsiveness.map(|r| r.rpm)),
            ("rpm self p50", Some(d.self_ms.p50)),
            ("rpm foreign p50", Some(d.foreign_rr_ms.p50)),
        ];
        for (name, want) in expected {
            assert!(want.is_some_and(|v| v > 0.0), "{name}: fixture has it");
            assert_eq!(value(name, &rpm), want, "{name}");
        }
        let m = |name: &str| metric(name.parse().unwrap());
        assert_eq!(m("rpm").better, Higher);
        assert_eq!(m("rpm self p50").better, Lower);
        assert_eq!(m("rpm foreign p50").unit, "ms");
        let tcp: Vec<RunRecord> =
            serde_json::from_str(include_str!("../../../report/tests/fixtures/tcp_runs.json"))
                .unwrap();
        for name in ["rpm", "rpm self p50", "rpm foreign p50"] {
            assert_eq!(value(name, &tcp[0]), None, "{name} of a tcp run");
        }
        let mut no_probes = rpm.clone();
        if let Some(s) = no_probes.summary.rpm_mut() {
            s.direction.self_ms = record::rpm::Spread::default();
        }
        assert_eq!(
            value("rpm self p50", &no_probes),
            None,
            "no samples: absent"
        );
    }
}
