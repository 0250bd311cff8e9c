//! The metrics a comparison lines up, each read from one [`RunRecord`] in the unit it names.
//!
//! A metric that does not apply to a run (loss of a TCP run, latency of a bulk run) reads
//! `None`; a comparison drops the rows where every column is `None`. Per-direction rows read
//! only bidirectional runs, and sender/receiver CPU only one-direction runs; a comparison also
//! drops sender/receiver CPU when it only repeats client/server CPU (runs where the client
//! sends), so a figure does not show twice under two names.

use results::{FlowSummary, RunRecord};
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

/// One comparable figure of a run.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// Row name, e.g. `throughput`.
    pub name: &'static str,
    /// Unit of the value, e.g. `Mbit/s`.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// Reads the value from a run, in `unit`; `None` when it does not apply.
    pub value: fn(&RunRecord) -> Option<f64>,
    /// Earlier metrics this one may only repeat: a comparison leaves this row out when its
    /// values equal one of theirs in every column.
    pub repeats: &'static [&'static str],
}

/// Every metric, in row order.
pub fn metrics() -> &'static [Metric] {
    &METRICS
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

fn latency(r: &RunRecord) -> Option<measure::latency::LatencySummary> {
    r.summary.rr.as_ref()?.latency_us
}

use Better::{Higher, Lower};

static METRICS: [Metric; 23] = [
    Metric {
        name: "throughput",
        unit: "Mbit/s",
        better: Higher,
        value: |r| Some(r.summary.throughput_bps / MBIT),
        repeats: &[],
    },
    Metric {
        name: "throughput c->s",
        unit: "Mbit/s",
        better: Higher,
        value: |r| flow(r, Flow::ClientToServer).map(|f| f.throughput_bps / MBIT),
        repeats: &[],
    },
    Metric {
        name: "throughput s->c",
        unit: "Mbit/s",
        better: Higher,
        value: |r| flow(r, Flow::ServerToClient).map(|f| f.throughput_bps / MBIT),
        repeats: &[],
    },
    Metric {
        name: "client CPU",
        unit: "%",
        better: Lower,
        value: |r| Some(r.summary.local_cpu_pct),
        repeats: &[],
    },
    Metric {
        name: "server CPU",
        unit: "%",
        better: Lower,
        value: |r| Some(r.summary.remote_cpu_pct),
        repeats: &[],
    },
    Metric {
        name: "sender CPU",
        unit: "%",
        better: Lower,
        value: |r| only_flow(r).map(|f| f.sender_cpu_pct),
        repeats: &["client CPU", "server CPU"],
    },
    Metric {
        name: "receiver CPU",
        unit: "%",
        better: Lower,
        value: |r| only_flow(r).map(|f| f.receiver_cpu_pct),
        repeats: &["client CPU", "server CPU"],
    },
    Metric {
        name: "PI",
        unit: "T/C×T/L",
        better: Higher,
        value: |r| r.summary.performance_index,
        repeats: &[],
    },
    Metric {
        name: "retransmits",
        unit: "segments",
        better: Lower,
        value: |r| r.summary.retransmits.map(f64::from),
        repeats: &[],
    },
    Metric {
        name: "RTT",
        unit: "µs",
        better: Lower,
        value: |r| r.summary.rtt_us.map(f64::from),
        repeats: &[],
    },
    Metric {
        name: "loss",
        unit: "%",
        better: Lower,
        value: |r| r.summary.udp.map(|u| u.loss_pct),
        repeats: &[],
    },
    Metric {
        name: "received",
        unit: "packets/s",
        better: Higher,
        value: |r| r.summary.udp.map(|u| u.pps_received),
        repeats: &[],
    },
    Metric {
        name: "jitter",
        unit: "µs",
        better: Lower,
        value: |r| r.summary.udp.map(|u| u.jitter_us),
        repeats: &[],
    },
    Metric {
        name: "out of order",
        unit: "packets",
        better: Lower,
        value: |r| r.summary.udp.map(|u| u.packets_out_of_order as f64),
        repeats: &[],
    },
    Metric {
        name: "transactions",
        unit: "1/s",
        better: Higher,
        value: |r| r.summary.rr.map(|rr| rr.transactions_per_s),
        repeats: &[],
    },
    Metric {
        name: "connections",
        unit: "1/s",
        better: Higher,
        value: |r| r.summary.rr.and_then(|rr| rr.connections_per_s),
        repeats: &[],
    },
    Metric {
        name: "lost transactions",
        unit: "transactions",
        better: Lower,
        value: |r| {
            r.summary
                .rr
                .and_then(|rr| rr.lost_transactions)
                .map(|n| n as f64)
        },
        repeats: &[],
    },
    Metric {
        name: "latency p50",
        unit: "µs",
        better: Lower,
        value: |r| latency(r).map(|l| l.p50),
        repeats: &[],
    },
    Metric {
        name: "latency p90",
        unit: "µs",
        better: Lower,
        value: |r| latency(r).map(|l| l.p90),
        repeats: &[],
    },
    Metric {
        name: "latency p99",
        unit: "µs",
        better: Lower,
        value: |r| latency(r).map(|l| l.p99),
        repeats: &[],
    },
    Metric {
        name: "latency p99.9",
        unit: "µs",
        better: Lower,
        value: |r| latency(r).map(|l| l.p999),
        repeats: &[],
    },
    Metric {
        name: "latency p99.99",
        unit: "µs",
        better: Lower,
        value: |r| latency(r).map(|l| l.p9999),
        repeats: &[],
    },
    Metric {
        name: "latency max",
        unit: "µs",
        better: Lower,
        value: |r| latency(r).map(|l| l.max),
        repeats: &[],
    },
];
