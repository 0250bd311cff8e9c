//! The one list of metrics a run is compared, checked, trended and summarized by: [`MetricId`],
//! with each one's row name (what `--metric` takes and tables print) and, for the figures
//! repetitions summarize, its key in base units (the repeat statistics' JSON names,
//! `throughput_bps`). How each is read from a record, its unit and which way is better are the
//! report's metric table (`report::metrics`), one entry per id; which one leads a kind's
//! summary is [`MetricId::headline`].
//!
//! Names are part of the command line and the JSON: never renamed, only added.

use std::fmt;
use std::str::FromStr;

use wire::spec::Headline;
use wire::TestKind;

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

/// (id, row name, summarized key) in row order.
const TABLE: [(MetricId, &str, Option<&str>); 37] = [
    (M::Throughput, "throughput", Some("throughput_bps")),
    (M::ThroughputUp, "throughput c->s", None),
    (M::ThroughputDown, "throughput s->c", None),
    (M::ClientCpu, "client CPU", Some("local_cpu_pct")),
    (M::ServerCpu, "server CPU", Some("remote_cpu_pct")),
    (M::SenderCpu, "sender CPU", None),
    (M::ReceiverCpu, "receiver CPU", None),
    (M::SenderEfficiency, "sender efficiency", None),
    (M::ReceiverEfficiency, "receiver efficiency", None),
    (M::SenderEfficiencyUp, "sender efficiency c->s", None),
    (M::ReceiverEfficiencyUp, "receiver efficiency c->s", None),
    (M::SenderEfficiencyDown, "sender efficiency s->c", None),
    (M::ReceiverEfficiencyDown, "receiver efficiency s->c", None),
    (M::SenderPpsPerCore, "sender pps per core", None),
    (M::ReceiverPpsPerCore, "receiver pps per core", None),
    (M::SenderCpuPerGb, "sender CPU per GB", None),
    (M::ReceiverCpuPerGb, "receiver CPU per GB", None),
    (M::PerformanceIndex, "PI", None),
    (M::Retransmits, "retransmits", Some("retransmits")),
    (M::Rtt, "RTT", None),
    (M::Loss, "loss", Some("loss_pct")),
    (M::Received, "received", Some("pps_received")),
    (M::Jitter, "jitter", None),
    (M::OutOfOrder, "out of order", None),
    (M::Transactions, "transactions", Some("transactions_per_s")),
    (M::Connections, "connections", None),
    (M::LostTransactions, "lost transactions", None),
    (M::LatencyP50, "latency p50", Some("rtt_p50_us")),
    (M::LatencyP90, "latency p90", None),
    (M::LatencyP99, "latency p99", Some("rtt_p99_us")),
    (M::LatencyP999, "latency p99.9", None),
    (M::LatencyP9999, "latency p99.99", None),
    (M::LatencyMax, "latency max", None),
    (
        M::LoadedLatencyP50,
        "loaded latency p50",
        Some("loaded_rtt_p50_us"),
    ),
    (M::Rpm, "rpm", None),
    (M::RpmSelfP50, "rpm self p50", None),
    (M::RpmForeignP50, "rpm foreign p50", None),
];

impl MetricId {
    /// Every metric, in row order.
    pub const ALL: [MetricId; 37] = {
        let mut all = [M::Throughput; 37];
        let mut i = 0;
        while i < TABLE.len() {
            all[i] = TABLE[i].0;
            i += 1;
        }
        all
    };

    fn entry(self) -> &'static (MetricId, &'static str, Option<&'static str>) {
        // Every id has its row: `the_table_holds_every_id_once` says so.
        &TABLE[self as usize]
    }

    /// The row name, as `--metric` takes it (`throughput`, `latency p99`).
    pub fn name(self) -> &'static str {
        self.entry().1
    }

    /// The figure's name in base units where repetitions summarize it (`throughput_bps`).
    pub fn key(self) -> Option<&'static str> {
        self.entry().2
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
        TABLE
            .iter()
            .find(|e| e.1 == s)
            .map(|e| e.0)
            .ok_or_else(|| UnknownMetric(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_every_id_once_at_its_own_index() {
        for (i, e) in TABLE.iter().enumerate() {
            assert_eq!(e.0 as usize, i, "{:?}", e.0);
            assert_eq!(e.1.parse::<MetricId>(), Ok(e.0));
        }
        let names: std::collections::HashSet<_> = TABLE.iter().map(|e| e.1).collect();
        assert_eq!(names.len(), TABLE.len());
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
