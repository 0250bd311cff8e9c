//! The statements of the PostgreSQL store and the conversions between its rows and results'
//! types. The columns are the SQLite store's (`results::store`), in PostgreSQL's types.

use postgres::types::{FromSql, ToSql};
use postgres::Row;
use record::bounds::MAX_RECORD_BYTES;
use record::{parse_kind, RunId, RunRecord, RunRow, RunShape};
use results::store::{
    parse_tags, BadRow, Figures, Filter, RawStored, RowFault, Stored, ROW_LABELS, STORED_LABELS,
};

/// Inserts a run, returning its id.
pub(crate) const INSERT_RUN: &str = concat!(
    "INSERT INTO runs (",
    results::insert_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
    $18::text::jsonb, $19) RETURNING id"
);

/// Inserts one tag of a run.
pub(crate) const INSERT_TAG: &str = "INSERT INTO run_tags (run_id, key, value) VALUES ($1, $2, $3)";

/// Columns read into a [`RunRow`], in the SQLite store's order (`results::store`): the
/// figures, hostname, tags, the pieces of the record the shape is read from, then what judges
/// the row first (the stored lengths, whether its JSON is JSON, its layout). `$1` is
/// [`MAX_RECORD_BYTES`]: no record over it is parsed. A record that is not JSON fails the
/// whole statement (PostgreSQL before 16 cannot test it in a query): the store then lists
/// row by row (`PgStore::list`), so that it fails only itself.
pub(crate) const ROW_COLUMNS: &str = concat!(
    "id, started_at_unix_ms, kind, target, interrupted, ",
    results::figure_columns!(),
    ", coalesce(host_json->>'hostname', ''), \
    (SELECT json_object_agg(key, value)::text FROM run_tags WHERE run_id = runs.id), \
    CASE WHEN octet_length(record_json)::bigint <= $1 THEN \
    (SELECT jsonb_build_array(j->'schema_version', j->'spec', j#>'{summary,interrupted}', \
        j#>'{summary,incomplete}', \
        jsonb_path_exists(j, '$.summary.flows[*].streams[*].error ? (@.type() == \"string\")'), \
        j#>'{summary,until_stopped}')::text \
     FROM (SELECT record_json::jsonb AS j) AS rec) END, \
    octet_length(record_json)::bigint, octet_length(host_json::text)::bigint, true, \
    record_schema_version, true"
);

/// Columns read into a [`RawStored`]: the JSON only when its stored length is at most `$1`
/// ([`MAX_RECORD_BYTES`]; PostgreSQL reads a text's length without detoasting it).
pub(crate) const STORED_COLUMNS: &str = "id, stored_at_unix_ms, \
    CASE WHEN octet_length(host_json::text)::bigint <= $1 THEN host_json::text END, \
    CASE WHEN octet_length(record_json)::bigint <= $1 THEN record_json END, \
    (SELECT json_object_agg(key, value)::text FROM run_tags WHERE run_id = runs.id), \
    octet_length(host_json::text)::bigint, octet_length(record_json)::bigint, \
    record_schema_version";

/// `$1` of a bounded statement.
pub(crate) const LIMIT: i64 = MAX_RECORD_BYTES as i64;

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

/// `WHERE …` for a filter, with `$n` placeholders, and its parameters; `bounded`: after
/// [`LIMIT`] as `$1`.
pub(crate) fn where_clause(filter: &Filter, bounded: bool) -> (String, Params) {
    let mut conds = Vec::new();
    let mut params: Vec<Box<dyn ToSql + Sync>> = Vec::new();
    if bounded {
        params.push(Box::new(LIMIT));
    }
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

/// Column `i` of a row, or what is wrong with it, named by `labels[i]`.
fn cell<'a, T: FromSql<'a>>(r: &'a Row, i: usize, labels: &[&'static str]) -> Result<T, RowFault> {
    r.try_get(i).map_err(|e| RowFault::Column {
        column: labels.get(i).copied().unwrap_or("?"),
        detail: e.to_string(),
    })
}

/// A row of [`ROW_COLUMNS`]: the run, or why it cannot be listed.
pub(crate) fn run_row(r: &Row) -> Result<RunRow, BadRow> {
    let id = RunId(r.get(0));
    row_of(r, id).map_err(|fault| BadRow { id, fault })
}

fn row_of(r: &Row, id: RunId) -> Result<RunRow, RowFault> {
    let l = &ROW_LABELS;
    let stored = Stored {
        record_bytes: cell(r, 19, l)?,
        host_bytes: cell(r, 20, l)?,
        layout: cell(r, 22, l)?,
    };
    stored.check(id).map_err(|bad| bad.fault)?;
    let kind: String = cell(r, 2, l)?;
    let kind = parse_kind(&kind).map_err(|e| RowFault::Column {
        column: "kind",
        detail: e.to_string(),
    })?;
    let tags: Option<String> = cell(r, 17, l)?;
    let shape: Option<String> = cell(r, 18, l)?;
    let shape = RunShape::from_extract(shape.as_deref().unwrap_or("[]"));
    Ok(RunRow {
        id,
        started_at_unix_ms: to_u64(cell(r, 1, l)?),
        kind,
        target: cell(r, 3, l)?,
        interrupted: cell(r, 4, l)?,
        direction: shape.direction,
        streams: shape.streams,
        status: shape.status,
        duration_s: cell(r, 5, l)?,
        throughput_bps: cell(r, 6, l)?,
        local_cpu_pct: cell(r, 7, l)?,
        remote_cpu_pct: cell(r, 8, l)?,
        retransmits: cell::<Option<i64>>(r, 9, l)?.map(to_u64),
        rtt_us: cell::<Option<i64>>(r, 10, l)?.map(to_u64),
        transactions_per_s: cell(r, 11, l)?,
        p50_us: cell(r, 12, l)?,
        p99_us: cell(r, 13, l)?,
        loss_pct: cell(r, 14, l)?,
        pps_received: cell(r, 15, l)?,
        hostname: cell(r, 16, l)?,
        tags: parse_tags(tags.as_deref()),
    })
}

/// A row of [`STORED_COLUMNS`], or why it cannot be read.
pub(crate) fn raw_stored(r: &Row) -> Result<RawStored, BadRow> {
    let id = RunId(r.get(0));
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
    raw().map_err(|fault| BadRow { id, fault })
}
