//! The one table of metrics a run is compared, checked, trended and summarized by: [`MetricId`]
//! names each, and its row in the table ([`metric`], `table.rs`) holds the rest: its row name
//! (what `--metric` takes and tables print), for the figures repetitions summarize its key in
//! base units (the repeat statistics' JSON names, `throughput_bps`), its unit, which way is
//! better, and how it is read from a record. Which one leads a kind's summary is
//! [`MetricId::headline`].
//!
//! Names are part of the command line and the JSON: never renamed, only added.

use std::fmt;
use std::str::FromStr;

use wire::spec::Headline;
use wire::TestKind;

mod table;

use table::TABLE;
pub use table::{metric, metrics, summarized_figures, Better, Metric};

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
