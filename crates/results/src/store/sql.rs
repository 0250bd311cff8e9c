//! Between rows and values: the `WHERE` clause of a filter, `runs` rows into [`RunRow`]s and
//! [`StoredRun`]s, and the indexed copies of a record's headline figures.

use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::types::{FromSql, Value};
use rusqlite::Row;

use record::{parse_kind, RunId, RunRecord, RunRow, RunShape, StoredRun, Tags};

use super::{BadRow, Filter, RowFault, Stored};

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

/// A run's figures as the `runs` table holds them, in [`Figures`]' order, so a listing reads them
/// without decoding a record: one list for the statements of both stores (this one and
/// `pgstore`), whose SQL differs only where their dialects do.
#[macro_export]
macro_rules! figure_columns {
    () => {
        "duration_s, throughput_bps, local_cpu_pct, remote_cpu_pct, retransmits, rtt_us, \
         transactions_per_s, p50_us, p99_us, loss_pct, pps_received"
    };
}

/// The columns a run is stored with, in the order both stores bind them: when, the run's own,
/// its figures ([`figure_columns!`]), its host facts and its record.
#[macro_export]
macro_rules! insert_columns {
    () => {
        concat!(
            "stored_at_unix_ms, started_at_unix_ms, kind, target, interrupted, \
             record_schema_version, ",
            $crate::figure_columns!(),
            ", host_json, record_json"
        )
    };
}

/// What each of the columns a `runs` listing reads holds, for a message naming one that does
/// not (every store reads these columns in this order).
pub const ROW_LABELS: [&str; 24] = [
    "id",
    "started_at_unix_ms",
    "kind",
    "target",
    "interrupted",
    "duration_s",
    "throughput_bps",
    "local_cpu_pct",
    "remote_cpu_pct",
    "retransmits",
    "rtt_us",
    "transactions_per_s",
    "p50_us",
    "p99_us",
    "loss_pct",
    "pps_received",
    "host_json",
    "run_tags",
    "record_json",
    "record_json",
    "host_json",
    "record_json",
    "record_schema_version",
    "host_json",
];

/// Column `i` of a row, or what is wrong with it, named by `labels[i]`.
fn cell<T: FromSql>(r: &Row<'_>, i: usize, labels: &[&'static str]) -> Result<T, RowFault> {
    r.get(i).map_err(|e| RowFault::Column {
        column: labels.get(i).copied().unwrap_or("?"),
        detail: e.to_string(),
    })
}

/// A row of [`super::ROW_COLUMNS`]: the run, or why it cannot be listed (only a failure of the
/// database itself is the query's error).
pub(super) fn read_row(r: &Row<'_>) -> rusqlite::Result<Result<RunRow, BadRow>> {
    let id = RunId(r.get(0)?);
    Ok(row_of(r, id).map_err(|fault| BadRow { id, fault }))
}

fn row_of(r: &Row<'_>, id: RunId) -> Result<RunRow, RowFault> {
    let get = |i| cell(r, i, &ROW_LABELS);
    let opt = |i| cell::<Option<f64>>(r, i, &ROW_LABELS);
    let int = |i| cell::<Option<i64>>(r, i, &ROW_LABELS).map(|x| x.map(to_u64));
    let text = |i| cell::<Option<String>>(r, i, &ROW_LABELS);
    let stored = Stored {
        record_bytes: get(19)?,
        host_bytes: get(20)?,
        layout: get(22)?,
    };
    stored.check(id).map_err(|bad| bad.fault)?;
    for (i, what) in [(21, "record"), (23, "host facts")] {
        if cell::<Option<bool>>(r, i, &ROW_LABELS)? != Some(true) {
            let detail = "not JSON text".to_string();
            return Err(RowFault::Malformed { what, detail });
        }
    }
    let shape = RunShape::from_extract(text(18)?.as_deref().unwrap_or("[]"));
    let kind: String = cell(r, 2, &ROW_LABELS)?;
    let kind = parse_kind(&kind).map_err(|e| RowFault::Column {
        column: "kind",
        detail: e.to_string(),
    })?;
    Ok(RunRow {
        id,
        started_at_unix_ms: to_u64(get(1)?),
        kind,
        target: cell(r, 3, &ROW_LABELS)?,
        interrupted: cell(r, 4, &ROW_LABELS)?,
        direction: shape.direction,
        streams: shape.streams,
        status: shape.status,
        duration_s: opt(5)?,
        throughput_bps: opt(6)?,
        local_cpu_pct: opt(7)?,
        remote_cpu_pct: opt(8)?,
        retransmits: int(9)?,
        rtt_us: int(10)?,
        transactions_per_s: opt(11)?,
        p50_us: opt(12)?,
        p99_us: opt(13)?,
        loss_pct: opt(14)?,
        pps_received: opt(15)?,
        hostname: cell(r, 16, &ROW_LABELS)?,
        tags: parse_tags(text(17)?.as_deref()),
    })
}

/// What each of the columns read into a [`RawStored`] holds, for a message naming one that does not.
pub const STORED_LABELS: [&str; 8] = [
    "id",
    "stored_at_unix_ms",
    "host_json",
    "record_json",
    "run_tags",
    "host_json",
    "record_json",
    "record_schema_version",
];

/// A `runs` row as read, before its JSON is decoded (every store keeps these columns): what
/// the store says of its lengths and layout, and its JSON unless that is over the limit.
#[derive(Debug, Clone)]
pub struct RawStored {
    /// The run's id.
    pub id: RunId,
    /// When it was stored, Unix epoch ms.
    pub stored_at_unix_ms: u64,
    /// The host facts as stored (JSON); `None` when over the limit (left unread).
    pub host_json: Option<String>,
    /// The record as stored (JSON); `None` when over the limit (left unread).
    pub record_json: Option<String>,
    /// The tags as one JSON object, `None` without tags.
    pub tags_json: Option<String>,
    /// The stored lengths and layout, judged before anything is decoded.
    pub stored: Stored,
}

impl RawStored {
    /// A row of [`super::STORED_COLUMNS`], or why it cannot be read.
    pub(super) fn read(r: &Row<'_>) -> rusqlite::Result<Result<RawStored, BadRow>> {
        let id = RunId(r.get(0)?);
        let l = &STORED_LABELS;
        let raw = || -> Result<RawStored, RowFault> {
            Ok(RawStored {
                id,
                stored_at_unix_ms: to_u64(cell(r, 1, l)?),
                host_json: cell(r, 2, l)?,
                record_json: cell(r, 3, l)?,
                tags_json: cell(r, 4, l)?,
                stored: Stored {
                    host_bytes: cell(r, 5, l)?,
                    record_bytes: cell(r, 6, l)?,
                    layout: cell(r, 7, l)?,
                },
            })
        };
        Ok(raw().map_err(|fault| BadRow { id, fault }))
    }

    /// The run, its JSON decoded (an older record layout converted), unless its stored length
    /// or layout says it cannot be: then, without decoding, why.
    pub fn decode(self) -> Result<StoredRun, BadRow> {
        let id = self.id;
        self.stored.check(id)?;
        let bad = |what| {
            move |detail: String| BadRow {
                id,
                fault: RowFault::Malformed { what, detail },
            }
        };
        let text = |json: Option<String>, what| json.ok_or_else(|| bad(what)("missing".into()));
        let host = text(self.host_json, "host facts")?;
        let record = text(self.record_json, "record")?;
        Ok(StoredRun {
            id,
            stored_at_unix_ms: self.stored_at_unix_ms,
            tags: parse_tags(self.tags_json.as_deref()),
            host: serde_json::from_str(&host).map_err(|e| bad("host facts")(e.to_string()))?,
            record: serde_json::from_str(&record).map_err(|e| bad("record")(e.to_string()))?,
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
