//! The one table of metrics a run is compared, checked, trended and summarized by: [`MetricId`]
//! names each, and its row in the table ([`metric`], `table.rs`) holds the rest: its row name
//! (what `--metric` takes and tables print), for the figures repetitions summarize its key in
//! base units (the repeat statistics' JSON names, `throughput_bps`), its unit, which way is
//! better, which kinds of test have it, and how it is read from a record. What a row is,
//! [`Metric`], is here with the lookups; the rows and their readers are `table.rs`. Which one leads a kind's summary is
//! [`MetricId::headline`].
//!
//! Names are part of the command line and the JSON: never renamed, only added.

use std::fmt;
use std::str::FromStr;

use wire::spec::Headline;
use wire::TestKind;

mod table;

use record::RunRecord;
use serde::{Deserialize, Serialize};
use table::{METRICS, TABLE};
use wire::spec::{DataPath, FamilyId, KindRow, Loss, KINDS};

/// A comparable figure of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricId {
    /// Receiver goodput, both directions summed.
    Throughput,
    /// Goodput client → server (bidirectional runs).
    ThroughputUp,
    /// Goodput server → client (bidirectional runs).
    ThroughputDown,
    /// The client host's CPU.
    ClientCpu,
    /// The server host's CPU.
    ServerCpu,
    /// The sending end's CPU (one direction).
    SenderCpu,
    /// The receiving end's CPU (one direction).
    ReceiverCpu,
    /// Sender goodput per core.
    SenderEfficiency,
    /// Receiver goodput per core.
    ReceiverEfficiency,
    /// Sender goodput per core, client → server.
    SenderEfficiencyUp,
    /// Receiver goodput per core, client → server.
    ReceiverEfficiencyUp,
    /// Sender goodput per core, server → client.
    SenderEfficiencyDown,
    /// Receiver goodput per core, server → client.
    ReceiverEfficiencyDown,
    /// Sender packets per second per core.
    SenderPpsPerCore,
    /// Receiver packets per second per core.
    ReceiverPpsPerCore,
    /// Sender CPU seconds per GB moved.
    SenderCpuPerGb,
    /// Receiver CPU seconds per GB moved.
    ReceiverCpuPerGb,
    /// The performance index (throughput over CPU and latency).
    PerformanceIndex,
    /// TCP retransmitted segments.
    Retransmits,
    /// TCP's smoothed round trip.
    Rtt,
    /// UDP datagrams lost, percent of sent.
    Loss,
    /// UDP datagrams received per second.
    Received,
    /// UDP jitter.
    Jitter,
    /// UDP datagrams out of order.
    OutOfOrder,
    /// Request/response transactions per second.
    Transactions,
    /// Connections per second (crr, cc).
    Connections,
    /// Transactions lost (udp_rr).
    LostTransactions,
    /// Round-trip latency percentiles and maximum.
    LatencyP50,
    /// p90.
    LatencyP90,
    /// p99.
    LatencyP99,
    /// p99.9.
    LatencyP999,
    /// p99.99.
    LatencyP9999,
    /// The largest round trip.
    LatencyMax,
    /// The latency probe's median under load.
    LoadedLatencyP50,
    /// Round trips per minute under working conditions (`linerate rpm`).
    Rpm,
    /// rpm's self probes' median.
    RpmSelfP50,
    /// rpm's foreign probes' median.
    RpmForeignP50,
}

use MetricId as M;

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
    /// Which kinds of test have it, by their rows: a named metric a kind lacks is refused
    /// for its runs (`check`, `trend`), where reading it would give nothing. A run of a kind
    /// that has it may still lack it (an older record, a direction it did not run).
    pub kinds: fn(&KindRow) -> bool,
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

    /// Whether runs of `kind` have it.
    pub fn applies(&self, kind: TestKind) -> bool {
        (self.kinds)(kind.row())
    }

    /// The kinds that have it, for messages: `udp_stream`.
    pub fn kinds_having(&self) -> String {
        let names: Vec<&str> = (KINDS.iter())
            .filter(|row| (self.kinds)(row))
            .map(|row| row.name)
            .collect();
        names.join(", ")
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

/// Which kinds have a metric, read from their rows.
const ANY: fn(&KindRow) -> bool = |_| true;
/// Kinds that run both ways at once (`--bidir`): the per-direction rows.
const BIDIR: fn(&KindRow) -> bool = |k| k.directions.bidir;
/// The streaming kinds, not request/response (`tcp_stream`, `udp_stream`): goodput per core
/// and CPU per GB (`cost.rs`), the performance index (`link.rs`) and the loaded-latency probes
/// that run beside them are theirs.
const STREAMING: fn(&KindRow) -> bool = |k| k.family != FamilyId::Transaction;
/// Bytes in a stream (`tcp_stream`; `linerate rpm` stores its directions as such runs).
const STREAM: fn(&KindRow) -> bool = |k| k.family == FamilyId::Stream;
/// Datagrams counted by the receiver (`udp_stream`).
const DATAGRAMS: fn(&KindRow) -> bool = |k| k.loss == Loss::Datagrams;
/// Kinds over TCP (retransmits, round trip).
const TCP: fn(&KindRow) -> bool = |k| k.path == DataPath::Tcp;
/// Request/response kinds: transactions and their round trips.
const TRANSACTIONS: fn(&KindRow) -> bool = |k| k.family == FamilyId::Transaction;
/// Kinds whose transaction is a new connection.
const CONNECTIONS: fn(&KindRow) -> bool = |k| k.connects;
/// Kinds that count unanswered requests (`udp_rr`).
const LOST_TRANSACTIONS: fn(&KindRow) -> bool = |k| k.loss == Loss::Transactions;

impl MetricId {
    /// Every metric, in row order.
    pub const ALL: [MetricId; 37] = {
        let mut all = [M::Throughput; 37];
        let mut i = 0;
        while i < TABLE.len() {
            all[i] = TABLE[i].id;
            i += 1;
        }
        all
    };

    /// The row name, as `--metric` takes it (`throughput`, `latency p99`).
    pub fn name(self) -> &'static str {
        metric(self).name
    }

    /// The figure's name in base units where repetitions summarize it (`throughput_bps`).
    pub fn key(self) -> Option<&'static str> {
        metric(self).key
    }

    /// The metric that leads a kind's summary, decides `--until-ci` and a trend's default:
    /// transactions for request/response kinds, goodput otherwise. A kind whose transaction
    /// is a connection has as many transactions as connections a second, and its series were
    /// stored and compared by transactions, so they stay so.
    pub fn headline(kind: TestKind) -> MetricId {
        match kind.row().headline {
            Headline::Throughput => M::Throughput,
            Headline::Transactions | Headline::Connections => M::Transactions,
        }
    }
}

impl fmt::Display for MetricId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A `--metric` name that is none of [`MetricId::ALL`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no metric named {0:?}")]
pub struct UnknownMetric(pub String);

impl FromStr for MetricId {
    type Err = UnknownMetric;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        metrics()
            .iter()
            .find(|m| m.name == s)
            .map(|m| m.id)
            .ok_or_else(|| UnknownMetric(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_every_id_once_at_its_own_index() {
        for (i, m) in metrics().iter().enumerate() {
            assert_eq!(m.id as usize, i, "{:?}", m.id);
            assert_eq!(m.name.parse::<MetricId>(), Ok(m.id));
        }
        let names: std::collections::HashSet<_> = metrics().iter().map(|m| m.name).collect();
        assert_eq!(names.len(), metrics().len());
        assert_eq!(MetricId::ALL[36], M::RpmForeignP50);
        assert!("speed".parse::<MetricId>().is_err());
    }

    #[test]
    fn request_response_kinds_lead_with_transactions_the_rest_with_goodput() {
        assert_eq!(MetricId::headline(TestKind::TcpRr), M::Transactions);
        assert_eq!(MetricId::headline(TestKind::TcpStream), M::Throughput);
        for kind in TestKind::ALL {
            assert!(
                MetricId::headline(kind).key().is_some(),
                "{kind:?}: summarized"
            );
        }
    }
}
