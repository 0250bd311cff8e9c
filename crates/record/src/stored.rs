//! What a results store hands out besides records: run ids, the rows of `linerate runs` and
//! whole stored runs (record, tags, host facts). Plain data: the stores (`results::store`,
//! `pgstore`) fill them; reports and the web UI read them without a database crate.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use wire::spec::Direction;
use wire::spec::KINDS;
use wire::TestKind;

use measure::host::HostFacts;

use crate::schema::RunRecord;
use crate::status::RunStatus;
use crate::tags::Tags;

/// A stored run's id: a positive integer, shown as `#12`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(pub i64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A run id that is not `12` or `#12`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}: a run id is a positive number such as 12 or #12")]
pub struct RunIdError(pub String);

impl FromStr for RunId {
    type Err = RunIdError;

    fn from_str(s: &str) -> Result<RunId, RunIdError> {
        let digits = s.trim().strip_prefix('#').unwrap_or(s.trim());
        match digits.parse::<i64>() {
            Ok(n) if n > 0 && digits.bytes().all(|b| b.is_ascii_digit()) => Ok(RunId(n)),
            _ => Err(RunIdError(s.to_string())),
        }
    }
}

/// A test kind name that is not one of linerate's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input}: not a test kind; {expected}")]
pub struct KindError {
    /// What was given.
    pub input: String,
    /// The accepted names.
    pub expected: String,
}

/// Parses a test kind as stored (`tcp_stream`, `udp_rr`, …).
pub fn parse_kind(s: &str) -> Result<TestKind, KindError> {
    TestKind::of_name(s).ok_or_else(|| {
        let names: Vec<String> = KINDS.iter().map(|r| format!("`{}`", r.name)).collect();
        KindError {
            input: s.to_string(),
            expected: format!("expected one of {}", names.join(", ")),
        }
    })
}

/// One line of `linerate runs`: a run's identity, tags and headline figures (from the indexed
/// columns; the full record is the store's `get`). Figures that do not apply to the run's kind,
/// or were not finite, are `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    /// The id.
    pub id: RunId,
    /// Wall-clock start, Unix epoch ms.
    pub started_at_unix_ms: u64,
    /// Test kind.
    pub kind: TestKind,
    /// Where the client connected.
    pub target: String,
    /// The run's tags.
    pub tags: Tags,
    /// Whether the user interrupted the run.
    pub interrupted: bool,
    /// Which way the data flowed: stream kinds only (absent from rows listed before the field
    /// existed, as from request/response runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// Parallel streams per direction (0: not known).
    #[serde(default)]
    pub streams: u16,
    /// How the run ended, derived from its record ([`RunStatus::of`]).
    #[serde(default)]
    pub status: RunStatus,
    /// The client host's name.
    pub hostname: String,
    /// Test window, seconds.
    pub duration_s: Option<f64>,
    /// Receiver goodput, all directions, bits/s.
    pub throughput_bps: Option<f64>,
    /// Client data-thread CPU, % of one core.
    pub local_cpu_pct: Option<f64>,
    /// Server data-thread CPU, % of one core.
    pub remote_cpu_pct: Option<f64>,
    /// Retransmitted segments (TCP).
    pub retransmits: Option<u64>,
    /// Smoothed RTT, µs (TCP).
    pub rtt_us: Option<u64>,
    /// Transactions per second (request/response).
    pub transactions_per_s: Option<f64>,
    /// Median round trip, µs (request/response; a `linerate rpm` direction: its self probes).
    pub p50_us: Option<f64>,
    /// 99th-percentile round trip, µs (the same).
    pub p99_us: Option<f64>,
    /// Lost datagrams, % of sent (UDP).
    pub loss_pct: Option<f64>,
    /// Distinct datagrams received per second (UDP).
    pub pps_received: Option<f64>,
}

/// One run as stored: everything `linerate show` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRun {
    /// The id.
    pub id: RunId,
    /// When it was stored, Unix epoch ms.
    pub stored_at_unix_ms: u64,
    /// Its tags.
    pub tags: Tags,
    /// The client host's facts.
    pub host: HostFacts,
    /// The full record.
    pub record: RunRecord,
}

impl StoredRun {
    /// The record, with the client's facts stored beside it as its hosts where the record
    /// predates carrying both hosts' facts (`hosts` absent).
    pub fn record_with_hosts(&self) -> RunRecord {
        let mut record = self.record.clone();
        if record.hosts.is_none() && self.host != HostFacts::default() {
            record.hosts = Some(crate::Hosts {
                client: self.host.clone(),
                server: None,
            });
        }
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_parse_with_or_without_hash() {
        assert_eq!("12".parse::<RunId>(), Ok(RunId(12)));
        assert_eq!("#12".parse::<RunId>(), Ok(RunId(12)));
        assert_eq!(RunId(12).to_string(), "#12");
        for bad in ["", "#", "0", "-3", "+3", "12a", "##12", "1.5"] {
            assert_eq!(
                bad.parse::<RunId>(),
                Err(RunIdError(bad.to_string())),
                "{bad}"
            );
        }
        assert_eq!(
            RunIdError("x".into()).to_string(),
            "x: a run id is a positive number such as 12 or #12"
        );
    }

    #[test]
    fn kinds_parse_as_stored() {
        assert_eq!(parse_kind("tcp_stream"), Ok(TestKind::TcpStream));
        assert_eq!(parse_kind("udp_rr"), Ok(TestKind::UdpRr));
        let err = parse_kind("tcp").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("tcp: not a test kind; expected one of"),
            "{err}"
        );
        assert!(err.to_string().contains("`tcp_crr`"), "{err}");
    }
}
