//! The statements of the PostgreSQL store and the conversions between its rows and results'
//! types. The columns are the SQLite store's (`results::store`), in PostgreSQL's types.

use postgres::types::ToSql;
use postgres::Row;
use record::{parse_kind, RunId, RunRecord, RunRow, RunShape};
use results::store::{parse_tags, Figures, Filter, RawStored, StoreError};

/// Inserts a run, returning its id.
pub(crate) const INSERT_RUN: &str = "INSERT INTO runs (stored_at_unix_ms, started_at_unix_ms, \
    kind, target, interrupted, record_schema_version, duration_s, throughput_bps, \
    local_cpu_pct, remote_cpu_pct, retransmits, rtt_us, transactions_per_s, p50_us, p99_us, \
    loss_pct, pps_received, host_json, record_json) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
    $18::text::jsonb, $19) RETURNING id";

/// Inserts one tag of a run.
pub(crate) const INSERT_TAG: &str = "INSERT INTO run_tags (run_id, key, value) VALUES ($1, $2, $3)";

/// Columns read into a [`RunRow`].
pub(crate) const ROW_COLUMNS: &str = "id, started_at_unix_ms, kind, target, interrupted, \
    duration_s, throughput_bps, local_cpu_pct, remote_cpu_pct, retransmits, rtt_us, \
    transactions_per_s, p50_us, p99_us, loss_pct, pps_received, \
    coalesce(host_json->>'hostname', ''), \
    (SELECT json_object_agg(key, value)::text FROM run_tags WHERE run_id = runs.id), \
    (SELECT jsonb_build_array(j->'schema_version', j->'spec', j#>'{summary,interrupted}', \
        j#>'{summary,incomplete}', \
        jsonb_path_exists(j, '$.summary.flows[*].streams[*].error ? (@.type() == \"string\")'), \
        j#>'{summary,until_stopped}')::text \
     FROM (SELECT record_json::jsonb AS j) AS rec)";

/// Columns read into a [`RawStored`].
pub(crate) const STORED_COLUMNS: &str = "id, stored_at_unix_ms, host_json::text, record_json, \
    (SELECT json_object_agg(key, value)::text FROM run_tags WHERE run_id = runs.id)";

/// Owned statement parameters.
pub(crate) struct Params(Vec<Box<dyn ToSql + Sync>>);

impl Params {
    /// As the client takes them.
    pub(crate) fn as_refs(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.0.iter().map(|p| p.as_ref()).collect()
    }
}

fn to_i64(x: u64) -> i64 {
    i64::try_from(x).unwrap_or(i64::MAX)
}

fn to_u64(x: i64) -> u64 {
    u64::try_from(x).unwrap_or(0)
}

/// The parameters of [`INSERT_RUN`].
pub(crate) fn run_params(
    r: &RunRecord,
    f: &Figures,
    host_json: &str,
    record_json: &str,
    now_ms: u64,
) -> Params {
    let int = |x: Option<u32>| x.map(i64::from);
    Params(vec![
        Box::new(to_i64(now_ms)),
        Box::new(to_i64(r.started_at_unix_ms)),
        Box::new(r.kind.as_str().to_string()),
        Box::new(r.target.clone()),
        Box::new(r.summary.interrupted),
        Box::new(i64::from(r.schema_version)),
        Box::new(f.duration_s),
        Box::new(f.throughput_bps),
        Box::new(f.local_cpu_pct),
        Box::new(f.remote_cpu_pct),
        Box::new(int(f.retransmits)),
        Box::new(int(f.rtt_us)),
        Box::new(f.transactions_per_s),
        Box::new(f.p50_us),
        Box::new(f.p99_us),
        Box::new(f.loss_pct),
        Box::new(f.pps_received),
        Box::new(host_json.to_string()),
        Box::new(record_json.to_string()),
    ])
}

/// `WHERE …` for a filter, with `$n` placeholders, and its parameters.
pub(crate) fn where_clause(filter: &Filter) -> (String, Params) {
    let mut conds = Vec::new();
    let mut params: Vec<Box<dyn ToSql + Sync>> = Vec::new();
    if let Some(kind) = filter.kind {
        params.push(Box::new(kind.as_str().to_string()));
        conds.push(format!("kind = ${}", params.len()));
    }
    if let Some(since) = filter.since_unix_ms {
        params.push(Box::new(to_i64(since)));
        conds.push(format!("started_at_unix_ms >= ${}", params.len()));
    }
    for (k, v) in filter.tags.iter() {
        params.push(Box::new(k.to_string()));
        params.push(Box::new(v.to_string()));
        let (a, b) = (params.len() - 1, params.len());
        conds.push(format!(
            "id IN (SELECT run_id FROM run_tags WHERE key = ${a} AND value = ${b})"
        ));
    }
    if let Some(last) = filter.last {
        // The newest `last` of the runs the other conditions pass, by the listing's order.
        let inner = if conds.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conds.join(" AND "))
        };
        params.push(Box::new(i64::try_from(last).unwrap_or(i64::MAX)));
        conds = vec![format!(
            "id IN (SELECT id FROM runs{inner} ORDER BY started_at_unix_ms DESC, id DESC LIMIT ${})",
            params.len()
        )];
    }
    let clause = if conds.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conds.join(" AND "))
    };
    (clause, Params(params))
}

/// A row of [`ROW_COLUMNS`].
pub(crate) fn run_row(r: &Row, location: &str) -> Result<RunRow, StoreError> {
    let kind: String = r.get(2);
    let kind = parse_kind(&kind).map_err(|e| StoreError::Server {
        location: location.to_string(),
        detail: e.to_string(),
    })?;
    let tags: Option<String> = r.get(17);
    let shape: Option<String> = r.get(18);
    let shape = RunShape::from_extract(shape.as_deref().unwrap_or("[]"));
    Ok(RunRow {
        id: RunId(r.get(0)),
        started_at_unix_ms: to_u64(r.get(1)),
        kind,
        target: r.get(3),
        interrupted: r.get(4),
        direction: shape.direction,
        streams: shape.streams,
        status: shape.status,
        duration_s: r.get(5),
        throughput_bps: r.get(6),
        local_cpu_pct: r.get(7),
        remote_cpu_pct: r.get(8),
        retransmits: r.get::<_, Option<i64>>(9).map(to_u64),
        rtt_us: r.get::<_, Option<i64>>(10).map(to_u64),
        transactions_per_s: r.get(11),
        p50_us: r.get(12),
        p99_us: r.get(13),
        loss_pct: r.get(14),
        pps_received: r.get(15),
        hostname: r.get(16),
        tags: parse_tags(tags.as_deref()),
    })
}

/// A row of [`STORED_COLUMNS`].
pub(crate) fn raw_stored(r: &Row) -> RawStored {
    RawStored {
        id: RunId(r.get(0)),
        stored_at_unix_ms: to_u64(r.get(1)),
        host_json: r.get(2),
        record_json: r.get(3),
        tags_json: r.get(4),
    }
}
