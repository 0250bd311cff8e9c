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

use super::{Better, Metric, MetricId};
use super::{ANY, BIDIR, CONNECTIONS, DATAGRAMS, LOST_TRANSACTIONS, STREAM, STREAMING};
use super::{TCP, TRANSACTIONS};
use record::{FlowSummary, RunRecord};
use wire::spec::{Flow, KindRow};

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
    kinds: fn(&KindRow) -> bool,
    (unit, better, per_unit): EfficiencyUnit,
    base: fn(&RunRecord) -> Option<f64>,
) -> Metric {
    Metric {
        id,
        name,
        key: None,
        kinds,
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
        kinds: ANY,
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
        kinds: BIDIR,
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
        kinds: BIDIR,
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
        kinds: ANY,
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
        kinds: ANY,
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
        kinds: ANY,
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
        kinds: ANY,
        unit: "%",
        better: Lower,
        base: |r| only_flow(r).map(|f| f.receiver_cpu_pct),
        per_unit: 1.0,
        repeats: &[M::ClientCpu, M::ServerCpu],
    },
    per_end(
        M::SenderEfficiency,
        "sender efficiency",
        STREAMING,
        GBIT_PER_CORE,
        |r| efficiency(only_flow(r))?.sender_goodput_bps_per_core,
    ),
    per_end(
        M::ReceiverEfficiency,
        "receiver efficiency",
        STREAMING,
        GBIT_PER_CORE,
        |r| efficiency(only_flow(r))?.receiver_goodput_bps_per_core,
    ),
    per_end(
        M::SenderEfficiencyUp,
        "sender efficiency c->s",
        BIDIR,
        GBIT_PER_CORE,
        |r| efficiency(flow(r, Flow::ClientToServer))?.sender_goodput_bps_per_core,
    ),
    per_end(
        M::ReceiverEfficiencyUp,
        "receiver efficiency c->s",
        BIDIR,
        GBIT_PER_CORE,
        |r| efficiency(flow(r, Flow::ClientToServer))?.receiver_goodput_bps_per_core,
    ),
    per_end(
        M::SenderEfficiencyDown,
        "sender efficiency s->c",
        BIDIR,
        GBIT_PER_CORE,
        |r| efficiency(flow(r, Flow::ServerToClient))?.sender_goodput_bps_per_core,
    ),
    per_end(
        M::ReceiverEfficiencyDown,
        "receiver efficiency s->c",
        BIDIR,
        GBIT_PER_CORE,
        |r| efficiency(flow(r, Flow::ServerToClient))?.receiver_goodput_bps_per_core,
    ),
    per_end(
        M::SenderPpsPerCore,
        "sender pps per core",
        DATAGRAMS,
        MDATAGRAMS_PER_CORE,
        |r| efficiency(only_flow(r))?.sender_pps_per_core,
    ),
    per_end(
        M::ReceiverPpsPerCore,
        "receiver pps per core",
        DATAGRAMS,
        MDATAGRAMS_PER_CORE,
        |r| efficiency(only_flow(r))?.receiver_pps_per_core,
    ),
    per_end(
        M::SenderCpuPerGb,
        "sender CPU per GB",
        STREAMING,
        CPU_S_PER_GB,
        |r| efficiency(only_flow(r))?.sender_cpu_s_per_gb,
    ),
    per_end(
        M::ReceiverCpuPerGb,
        "receiver CPU per GB",
        STREAMING,
        CPU_S_PER_GB,
        |r| efficiency(only_flow(r))?.receiver_cpu_s_per_gb,
    ),
    Metric {
        id: M::PerformanceIndex,
        name: "PI",
        key: None,
        kinds: STREAMING,
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
        kinds: TCP,
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
        kinds: TCP,
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
        kinds: DATAGRAMS,
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
        kinds: DATAGRAMS,
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
        kinds: DATAGRAMS,
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
        kinds: DATAGRAMS,
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
        kinds: TRANSACTIONS,
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
        kinds: CONNECTIONS,
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
        kinds: LOST_TRANSACTIONS,
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
        kinds: TRANSACTIONS,
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
        kinds: TRANSACTIONS,
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
        kinds: TRANSACTIONS,
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
        kinds: TRANSACTIONS,
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
        kinds: TRANSACTIONS,
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
        kinds: TRANSACTIONS,
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
        kinds: STREAMING,
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
        kinds: STREAM,
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
        kinds: STREAM,
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
        kinds: STREAM,
        unit: "ms",
        better: Lower,
        base: |r| rpm_p50(&rpm(r)?.foreign_rr_ms),
        per_unit: 1.0,
        repeats: &[],
    },
];

pub(super) static METRICS: [Metric; 37] = TABLE;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric_id::{metric, metrics};
    use wire::TestKind;

    #[test]
    fn the_table_is_in_metric_id_order() {
        let ids: Vec<MetricId> = metrics().iter().map(|m| m.id).collect();
        assert_eq!(ids, MetricId::ALL);
    }

    fn value(name: &str, r: &RunRecord) -> Option<f64> {
        metric(name.parse().ok()?).value(r)
    }

    /// A kind's metrics never hide a figure its runs have: every metric a fixture run reads
    /// applies to the run's kind, and every kind has its headline and its CPU.
    #[test]
    fn a_metric_applies_to_every_kind_whose_runs_have_it() {
        let lists = [
            include_str!("../../../report/tests/fixtures/tcp_runs.json"),
            include_str!("../../../report/tests/fixtures/rr_runs.json"),
            include_str!("../../../report/tests/fixtures/msg_size_runs.json"),
        ];
        let ones = [
            include_str!("../../../report/tests/fixtures/udp_run.json"),
            include_str!("../../../report/tests/fixtures/rpm_run.json"),
            include_str!("../../../results/tests/fixtures/tcp.json"),
            include_str!("../../../results/tests/fixtures/udp.json"),
            include_str!("../../../results/tests/fixtures/rr.json"),
        ];
        let mut runs: Vec<RunRecord> = lists
            .iter()
            .flat_map(|t| serde_json::from_str::<Vec<RunRecord>>(t).unwrap())
            .collect();
        runs.extend(ones.iter().map(|t| serde_json::from_str(t).unwrap()));
        for r in &runs {
            for m in metrics().iter().filter(|m| m.value(r).is_some()) {
                assert!(m.applies(r.kind), "{} of a {} run", m.name, r.kind.as_str());
            }
        }
        for kind in TestKind::ALL {
            for id in [MetricId::headline(kind), M::ClientCpu, M::ServerCpu] {
                assert!(metric(id).applies(kind), "{kind:?} {id}");
            }
        }
        assert_eq!(metric(M::Loss).kinds_having(), "udp_stream");
        // What analysis fills for the streaming kinds only (cost.rs's efficiency, link.rs's
        // performance index) is not offered for request/response runs.
        for id in [
            M::SenderEfficiency,
            M::ReceiverCpuPerGb,
            M::PerformanceIndex,
        ] {
            assert_eq!(metric(id).kinds_having(), "tcp_stream, udp_stream", "{id}");
        }
        assert_eq!(metric(M::Connections).kinds_having(), "tcp_crr, tcp_cc");
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
