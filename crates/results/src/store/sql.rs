//! Between rows and values: the `WHERE` clause of a filter, `runs` rows into [`RunRow`]s and
//! [`StoredRun`]s, and the indexed copies of a record's headline figures.

use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::types::Value;
use rusqlite::Row;

use record::{parse_kind, RunId, RunRecord, RunRow, RunShape, StoredRun, Tags, TestKind};

use super::{Filter, StoreError};

/// `WHERE …` for a filter, and its parameters.
pub(super) fn where_clause(filter: &Filter) -> (String, Vec<Value>) {
    let mut conds = Vec::new();
    let mut values = Vec::new();
    if let Some(kind) = filter.kind {
        conds.push("kind = ?".to_string());
        values.push(Value::Text(kind.as_str().to_string()));
    }
    if let Some(since) = filter.since_unix_ms {
        conds.push("started_at_unix_ms >= ?".to_string());
        values.push(Value::Integer(to_i64(since)));
    }
    for (k, v) in filter.tags.iter() {
        conds.push("id IN (SELECT run_id FROM run_tags WHERE key = ? AND value = ?)".to_string());
        values.push(Value::Text(k.to_string()));
        values.push(Value::Text(v.to_string()));
    }
    if let Some(last) = filter.last {
        // The newest `last` of the runs the other conditions pass, by the listing's order.
        let inner = if conds.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conds.join(" AND "))
        };
        conds = vec![format!(
            "id IN (SELECT id FROM runs{inner} ORDER BY started_at_unix_ms DESC, id DESC LIMIT ?)"
        )];
        values.push(Value::Integer(i64::try_from(last).unwrap_or(i64::MAX)));
    }
    if conds.is_empty() {
        (String::new(), values)
    } else {
        (format!(" WHERE {}", conds.join(" AND ")), values)
    }
}

pub(super) fn read_row(r: &Row<'_>) -> rusqlite::Result<RunRow> {
    let tags: Option<String> = r.get(17)?;
    let shape: Option<String> = r.get(18)?;
    let shape = RunShape::from_extract(shape.as_deref().unwrap_or("[]"));
    Ok(RunRow {
        id: RunId(r.get(0)?),
        started_at_unix_ms: to_u64(r.get(1)?),
        kind: read_kind(r, 2)?,
        target: r.get(3)?,
        interrupted: r.get(4)?,
        direction: shape.direction,
        streams: shape.streams,
        status: shape.status,
        duration_s: r.get(5)?,
        throughput_bps: r.get(6)?,
        local_cpu_pct: r.get(7)?,
        remote_cpu_pct: r.get(8)?,
        retransmits: r.get::<_, Option<i64>>(9)?.map(to_u64),
        rtt_us: r.get::<_, Option<i64>>(10)?.map(to_u64),
        transactions_per_s: r.get(11)?,
        p50_us: r.get(12)?,
        p99_us: r.get(13)?,
        loss_pct: r.get(14)?,
        pps_received: r.get(15)?,
        hostname: r.get(16)?,
        tags: parse_tags(tags.as_deref()),
    })
}

/// The kind column: a name this linerate knows (it wrote it).
fn read_kind(r: &Row<'_>, column: usize) -> rusqlite::Result<TestKind> {
    let name: String = r.get(column)?;
    parse_kind(&name).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, Box::new(e))
    })
}

/// A `runs` row as read, before its JSON is decoded (every store keeps these columns).
#[derive(Debug, Clone)]
pub struct RawStored {
    /// The run's id.
    pub id: RunId,
    /// When it was stored, Unix epoch ms.
    pub stored_at_unix_ms: u64,
    /// The host facts as stored (JSON).
    pub host_json: String,
    /// The record as stored (JSON).
    pub record_json: String,
    /// The tags as one JSON object, `None` without tags.
    pub tags_json: Option<String>,
}

impl RawStored {
    pub(super) fn read(r: &Row<'_>) -> rusqlite::Result<RawStored> {
        Ok(RawStored {
            id: RunId(r.get(0)?),
            stored_at_unix_ms: to_u64(r.get(1)?),
            host_json: r.get(2)?,
            record_json: r.get(3)?,
            tags_json: r.get(4)?,
        })
    }

    /// The run, its JSON decoded (an older record layout converted).
    pub fn decode(self) -> Result<StoredRun, StoreError> {
        let bad = |what| {
            move |source| StoreError::BadRecord {
                id: self.id,
                what,
                source,
            }
        };
        Ok(StoredRun {
            id: self.id,
            stored_at_unix_ms: self.stored_at_unix_ms,
            tags: parse_tags(self.tags_json.as_deref()),
            host: serde_json::from_str(&self.host_json).map_err(bad("host facts"))?,
            record: serde_json::from_str(&self.record_json).map_err(bad("record"))?,
        })
    }
}

/// Tags from one JSON object (keys were validated when stored).
pub fn parse_tags(json: Option<&str>) -> Tags {
    json.and_then(|j| serde_json::from_str::<Tags>(j).ok())
        .unwrap_or_default()
}

/// The indexed copies of a record's headline figures.
/// The headline figures every store keeps as columns beside the record, for `linerate runs`
/// to list and filter without decoding records; each `None` where it does not apply or is not
/// finite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    /// Test window, s.
    pub duration_s: Option<f64>,
    /// Receiver goodput, bit/s.
    pub throughput_bps: Option<f64>,
    /// Client CPU, % of one core.
    pub local_cpu_pct: Option<f64>,
    /// Server CPU, % of one core.
    pub remote_cpu_pct: Option<f64>,
    /// TCP retransmits.
    pub retransmits: Option<u32>,
    /// TCP smoothed RTT, µs.
    pub rtt_us: Option<u32>,
    /// Transactions per second.
    pub transactions_per_s: Option<f64>,
    /// Median round trip, µs (a `linerate rpm` direction's: its self probes').
    pub p50_us: Option<f64>,
    /// 99th-percentile round trip, µs (the same).
    pub p99_us: Option<f64>,
    /// UDP loss, % of sent.
    pub loss_pct: Option<f64>,
    /// UDP datagrams received per second.
    pub pps_received: Option<f64>,
}

impl Figures {
    /// The figures of `r`.
    pub fn of(r: &RunRecord) -> Figures {
        let s = &r.summary;
        // SQLite stores NaN as NULL anyway; say so explicitly for every non-finite figure.
        let fin = |x: f64| x.is_finite().then_some(x);
        // (p50, p99) round trips, µs: a request/response run's, else a `linerate rpm`
        // direction's self probes (its round trips, ms).
        let latency = s.rr().and_then(|rr| rr.latency_us).map(|l| (l.p50, l.p99));
        let self_probes = (r.as_rpm())
            .map(|r| r.direction.self_ms)
            .filter(|m| m.samples > 0)
            .map(|m| (m.p50 * 1000.0, m.p99 * 1000.0));
        let round_trips = latency.or(self_probes);
        Figures {
            duration_s: fin(s.duration_s),
            throughput_bps: fin(s.throughput_bps),
            local_cpu_pct: fin(s.local_cpu_pct),
            remote_cpu_pct: fin(s.remote_cpu_pct),
            retransmits: s.retransmits(),
            rtt_us: s.rtt_us(),
            transactions_per_s: s.rr().and_then(|rr| fin(rr.transactions_per_s)),
            p50_us: round_trips.and_then(|(p50, _)| fin(p50)),
            p99_us: round_trips.and_then(|(_, p99)| fin(p99)),
            loss_pct: s.udp().and_then(|u| fin(u.loss_pct)),
            pps_received: s.udp().and_then(|u| fin(u.pps_received)),
        }
    }
}

/// Now, Unix epoch ms (when a run is stored).
pub fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub(super) fn to_i64(x: u64) -> i64 {
    i64::try_from(x).unwrap_or(i64::MAX)
}

pub(super) fn to_u64(x: i64) -> u64 {
    u64::try_from(x).unwrap_or(0)
}
