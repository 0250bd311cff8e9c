//! The embedded results database: every finished (or interrupted) run, with its tags and the
//! facts of the host it ran on, in one SQLite file.
//!
//! Layout (schema version 1, see [`migrations`]): a `runs` row per run holds the whole
//! [`RunRecord`] as JSON (spec, both ends' summaries, every interval — so nothing is lost, and
//! optional fields added to the record later survive), the [`HostFacts`] as JSON, and copies of
//! the figures `linerate runs` filters and lists on (kind, start, throughput, CPU, loss,
//! latency) as indexed columns. Tags live in `run_tags`. Intervals stay inside the record JSON:
//! they are only ever read whole, with their run, and SQLite's `json_each` reaches them for ad
//! hoc queries. A row keeps the record layout it was written with (`record_schema_version`);
//! an older layout is converted as it is read ([`crate::layout_v1`]), so a record layout
//! change needs no migration here.
//!
//! Invariants:
//! - a run is written in one transaction (`BEGIN IMMEDIATE`): a crash, a kill or Ctrl-C leaves
//!   either the whole run or none of it, never a damaged file (WAL journal, `synchronous=FULL`);
//! - several processes may write at once: each waits up to [`BUSY_TIMEOUT_S`] s for the
//!   others' transactions;
//! - a file is judged before anything is written to it: a database from a newer linerate,
//!   another program's database, a file that is not a database, or a read-only file is refused
//!   and left byte-for-byte as it was.

mod error;
pub mod migrations;
mod tags;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::types::Value;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior};
use serde::{Deserialize, Serialize};
use wire::TestKind;

use crate::schema::RunRecord;
pub(crate) use error::classify;
pub use error::{StoreError, BUSY_TIMEOUT_S};
pub use measure::host::HostFacts;
use migrations::{judge, probe, Verdict};
pub use migrations::{APPLICATION_ID, STORE_VERSION};
pub use tags::{Tag, TagError, Tags};

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
    use serde::de::IntoDeserializer;
    let de: serde::de::value::StrDeserializer<'_, serde::de::value::Error> = s.into_deserializer();
    TestKind::deserialize(de).map_err(|e| {
        let e = e.to_string();
        KindError {
            input: s.to_string(),
            expected: e.find("expected").map_or(e.clone(), |i| e[i..].to_string()),
        }
    })
}

/// Which runs [`Store::list`] returns: all conditions must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Every one of these tags, with these values.
    pub tags: Tags,
    /// Only this kind.
    pub kind: Option<TestKind>,
    /// Only runs started at or after this instant, Unix epoch ms.
    pub since_unix_ms: Option<u64>,
}

/// One line of `linerate runs`: a run's identity, tags and headline figures (from the indexed
/// columns; the full record is [`Store::get`]'s). Figures that do not apply to the run's kind,
/// or were not finite, are `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    /// The id.
    pub id: RunId,
    /// Wall-clock start, Unix epoch ms.
    pub started_at_unix_ms: u64,
    /// Test kind as stored, e.g. `tcp_stream`.
    pub kind: String,
    /// Where the client connected.
    pub target: String,
    /// The run's tags.
    pub tags: Tags,
    /// Whether the user interrupted the run.
    pub interrupted: bool,
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
    /// Median round trip, µs (request/response).
    pub p50_us: Option<f64>,
    /// 99th-percentile round trip, µs (request/response).
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

/// An open results database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    writable: bool,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("writable", &self.writable)
            .finish()
    }
}

/// Columns of `runs` read into a [`RunRow`] (tags and hostname appended by the query).
const ROW_COLUMNS: &str = "id, started_at_unix_ms, kind, target, interrupted, duration_s, \
    throughput_bps, local_cpu_pct, remote_cpu_pct, retransmits, rtt_us, transactions_per_s, \
    p50_us, p99_us, loss_pct, pps_received, \
    coalesce(json_extract(host_json, '$.hostname'), ''), \
    (SELECT json_group_object(key, value) FROM run_tags WHERE run_id = runs.id)";

/// Columns of `runs` read into a [`StoredRun`].
const STORED_COLUMNS: &str = "id, stored_at_unix_ms, host_json, record_json, \
    (SELECT json_group_object(key, value) FROM run_tags WHERE run_id = runs.id)";

impl Store {
    /// Opens the database at `path` for writing, creating it (and its directory) if missing and
    /// bringing its schema to [`STORE_VERSION`]. Refuses, without writing anything, a file that
    /// is not a linerate database, one from a newer linerate, and a read-only one.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let io = |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        match std::fs::metadata(path) {
            Ok(_) if !path.is_file() => {
                return Err(StoreError::NotADatabase {
                    path: path.to_path_buf(),
                })
            }
            Ok(meta) => {
                // Judge the file by its header before SQLite opens it: nothing below may
                // write to (or leave files beside) a file we are going to refuse.
                check_header(path)?;
                // Permission bits, not access(2): root may write anywhere, but a results file
                // someone made read-only is meant to stay as it is.
                if meta.permissions().readonly() {
                    return Err(StoreError::ReadOnly {
                        path: path.to_path_buf(),
                    });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                        path: dir.to_path_buf(),
                        source,
                    })?;
                }
            }
            Err(e) => return Err(io(e)),
        }
        let mut conn = open_conn(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
        )?;
        let sql = |e| classify(path, e);
        // SQLite falls back to read-only when the OS refuses write access.
        if conn.is_readonly(rusqlite::MAIN_DB).map_err(sql)? {
            return Err(StoreError::ReadOnly {
                path: path.to_path_buf(),
            });
        }
        // The header passed; now the catalogue (an SQLite file with another program's tables
        // but no application id), still without writing: the WAL switch below writes.
        refuse_unless_ours(path, &conn)?;
        enable_wal(&conn).map_err(sql)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(sql)?;
        match migrations::migrate(&mut conn, STORE_VERSION).map_err(sql)? {
            Verdict::Newer(found) => Err(newer(path, found)),
            Verdict::Foreign => Err(StoreError::Foreign {
                path: path.to_path_buf(),
            }),
            Verdict::Fresh | Verdict::Older(_) | Verdict::Current => Ok(Store {
                conn,
                path: path.to_path_buf(),
                writable: true,
            }),
        }
    }

    /// Opens an existing database for reading (`linerate runs`, `linerate show`). A writable
    /// file is opened as by [`Store::open`] (so an older schema is upgraded); a read-only one is
    /// read as it is, if it is at this version.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        match Store::open(path) {
            Err(StoreError::ReadOnly { .. }) => {}
            other => return other,
        }
        let conn = open_conn(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        match refuse_unless_ours(path, &conn)? {
            Verdict::Current => Ok(Store {
                conn,
                path: path.to_path_buf(),
                writable: false,
            }),
            Verdict::Older(found) => Err(StoreError::ReadOnlyNeedsUpgrade {
                path: path.to_path_buf(),
                found,
                supported: STORE_VERSION,
            }),
            // An empty read-only file: version 0, nothing stored.
            _ => Err(StoreError::ReadOnlyNeedsUpgrade {
                path: path.to_path_buf(),
                found: 0,
                supported: STORE_VERSION,
            }),
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database.
    pub fn version(&self) -> Result<u32, StoreError> {
        probe(&self.conn)
            .map(|p| p.user_version)
            .map_err(|e| classify(&self.path, e))
    }

    /// Stores one run, its tags and its host's facts, in one transaction.
    pub fn insert(
        &mut self,
        record: &RunRecord,
        tags: &Tags,
        host: &HostFacts,
    ) -> Result<RunId, StoreError> {
        if !self.writable {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
            });
        }
        let record_json = serde_json::to_string(record).map_err(StoreError::Encode)?;
        let host_json = serde_json::to_string(host).map_err(StoreError::Encode)?;
        let f = Figures::of(record);
        let path = self.path.clone();
        let sql = |e| classify(&path, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        tx.execute(
            "INSERT INTO runs (stored_at_unix_ms, started_at_unix_ms, kind, target, interrupted, \
             record_schema_version, duration_s, throughput_bps, local_cpu_pct, remote_cpu_pct, \
             retransmits, rtt_us, transactions_per_s, p50_us, p99_us, loss_pct, pps_received, \
             host_json, record_json) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
             ?18, ?19)",
            params![
                to_i64(now_unix_ms()),
                to_i64(record.started_at_unix_ms),
                record.kind.as_str(),
                record.target,
                record.summary.interrupted,
                record.schema_version,
                f.duration_s,
                f.throughput_bps,
                f.local_cpu_pct,
                f.remote_cpu_pct,
                f.retransmits,
                f.rtt_us,
                f.transactions_per_s,
                f.p50_us,
                f.p99_us,
                f.loss_pct,
                f.pps_received,
                host_json,
                record_json,
            ],
        )
        .map_err(sql)?;
        let id = tx.last_insert_rowid();
        {
            let mut stmt = tx
                .prepare("INSERT INTO run_tags (run_id, key, value) VALUES (?1, ?2, ?3)")
                .map_err(sql)?;
            for (k, v) in tags.iter() {
                stmt.execute(params![id, k, v]).map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)?;
        Ok(RunId(id))
    }

    /// The full stored run `id`.
    pub fn get(&self, id: RunId) -> Result<StoredRun, StoreError> {
        let sql = |e| classify(&self.path, e);
        let raw = self
            .conn
            .query_row(
                &format!("SELECT {STORED_COLUMNS} FROM runs WHERE id = ?1"),
                [id.0],
                RawStored::read,
            )
            .optional()
            .map_err(sql)?;
        match raw {
            Some(raw) => raw.decode(),
            None => Err(StoreError::UnknownRun {
                id,
                path: self.path.clone(),
            }),
        }
    }

    /// The runs that match `filter`, oldest first.
    pub fn list(&self, filter: &Filter) -> Result<Vec<RunRow>, StoreError> {
        let (clause, values) = where_clause(filter);
        let sql = |e| classify(&self.path, e);
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {ROW_COLUMNS} FROM runs{clause} ORDER BY started_at_unix_ms, id"
            ))
            .map_err(sql)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(values), read_row)
            .map_err(sql)?;
        rows.collect::<Result<_, _>>().map_err(sql)
    }

    /// Every run that carries all of `tags` (with the same values), full records, oldest
    /// first: the groups a comparison puts side by side.
    pub fn find(&self, tags: &Tags) -> Result<Vec<StoredRun>, StoreError> {
        let filter = Filter {
            tags: tags.clone(),
            ..Filter::default()
        };
        let (clause, values) = where_clause(&filter);
        let sql = |e| classify(&self.path, e);
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {STORED_COLUMNS} FROM runs{clause} ORDER BY started_at_unix_ms, id"
            ))
            .map_err(sql)?;
        let raws = stmt
            .query_map(rusqlite::params_from_iter(values), RawStored::read)
            .map_err(sql)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql)?;
        raws.into_iter().map(RawStored::decode).collect()
    }
}

/// Opens a connection with linerate's settings: busy timeout, foreign keys.
fn open_conn(path: &Path, flags: OpenFlags) -> Result<Connection, StoreError> {
    let sql = |e| classify(path, e);
    let conn =
        Connection::open_with_flags(path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(sql)?;
    conn.busy_timeout(Duration::from_secs(BUSY_TIMEOUT_S))
        .map_err(sql)?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(sql)?;
    Ok(conn)
}

/// Probes an existing file and refuses anything but a linerate database this build can use.
fn refuse_unless_ours(path: &Path, conn: &Connection) -> Result<Verdict, StoreError> {
    let sql = |e| classify(path, e);
    // One read transaction, so the three reads see one snapshot even while another process
    // is creating the schema.
    let tx = conn.unchecked_transaction().map_err(sql)?;
    let verdict = judge(probe(&tx).map_err(sql)?);
    tx.finish().map_err(sql)?;
    match verdict {
        Verdict::Newer(found) => Err(newer(path, found)),
        Verdict::Foreign => Err(StoreError::Foreign {
            path: path.to_path_buf(),
        }),
        v => Ok(v),
    }
}

/// Judges a file by its 100-byte SQLite header alone: refuses a file that is not SQLite and a
/// linerate database from a newer linerate. An empty file passes (SQLite treats it as an empty
/// database).
fn check_header(path: &Path) -> Result<(), StoreError> {
    use std::io::Read;
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut header = Vec::with_capacity(100);
    std::fs::File::open(path)
        .map_err(io)?
        .take(100)
        .read_to_end(&mut header)
        .map_err(io)?;
    if header.is_empty() {
        return Ok(());
    }
    if header.len() < 100 || !header.starts_with(b"SQLite format 3\0") {
        return Err(StoreError::NotADatabase {
            path: path.to_path_buf(),
        });
    }
    let word = |at: usize| [header[at], header[at + 1], header[at + 2], header[at + 3]];
    let probe = migrations::Probe {
        user_version: u32::from_be_bytes(word(60)),
        application_id: i32::from_be_bytes(word(68)),
        // Unknown until SQLite reads the catalogue; `refuse_unless_ours` checks it.
        objects: 0,
    };
    // Only "newer" is decided here. "Foreign" waits for `refuse_unless_ours`, which reads the
    // header and catalogue in one snapshot: a read racing another process's first checkpoint
    // could see half of its header.
    match judge(probe) {
        Verdict::Newer(found) => Err(newer(path, found)),
        _ => Ok(()),
    }
}

fn newer(path: &Path, found: u32) -> StoreError {
    StoreError::NewerSchema {
        path: path.to_path_buf(),
        found,
        supported: STORE_VERSION,
    }
}

/// Switches to the WAL journal (readers never block the writer, and a crash mid-write leaves
/// the last commit intact). Another process switching at the same moment can make the pragma
/// return busy without waiting, so it is retried for up to the busy timeout.
fn enable_wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(BUSY_TIMEOUT_S);
    loop {
        let mode: rusqlite::Result<String> =
            conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0));
        match mode {
            Ok(_) => return Ok(()),
            Err(e)
                if matches!(
                    e.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e),
        }
    }
}

/// `WHERE …` for a filter, and its parameters.
fn where_clause(filter: &Filter) -> (String, Vec<Value>) {
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
    if conds.is_empty() {
        (String::new(), values)
    } else {
        (format!(" WHERE {}", conds.join(" AND ")), values)
    }
}

fn read_row(r: &Row<'_>) -> rusqlite::Result<RunRow> {
    let tags: Option<String> = r.get(17)?;
    Ok(RunRow {
        id: RunId(r.get(0)?),
        started_at_unix_ms: to_u64(r.get(1)?),
        kind: r.get(2)?,
        target: r.get(3)?,
        interrupted: r.get(4)?,
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

/// A `runs` row as read, before its JSON is decoded.
struct RawStored {
    id: RunId,
    stored_at_unix_ms: u64,
    host_json: String,
    record_json: String,
    tags_json: Option<String>,
}

impl RawStored {
    fn read(r: &Row<'_>) -> rusqlite::Result<RawStored> {
        Ok(RawStored {
            id: RunId(r.get(0)?),
            stored_at_unix_ms: to_u64(r.get(1)?),
            host_json: r.get(2)?,
            record_json: r.get(3)?,
            tags_json: r.get(4)?,
        })
    }

    fn decode(self) -> Result<StoredRun, StoreError> {
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

/// Tags from `json_group_object` (keys were validated when stored).
fn parse_tags(json: Option<&str>) -> Tags {
    json.and_then(|j| serde_json::from_str(j).ok())
        .map(Tags::from_map)
        .unwrap_or_default()
}

/// The indexed copies of a record's headline figures.
struct Figures {
    duration_s: Option<f64>,
    throughput_bps: Option<f64>,
    local_cpu_pct: Option<f64>,
    remote_cpu_pct: Option<f64>,
    retransmits: Option<u32>,
    rtt_us: Option<u32>,
    transactions_per_s: Option<f64>,
    p50_us: Option<f64>,
    p99_us: Option<f64>,
    loss_pct: Option<f64>,
    pps_received: Option<f64>,
}

impl Figures {
    fn of(r: &RunRecord) -> Figures {
        let s = &r.summary;
        // SQLite stores NaN as NULL anyway; say so explicitly for every non-finite figure.
        let fin = |x: f64| x.is_finite().then_some(x);
        let latency = s.rr.and_then(|rr| rr.latency_us);
        Figures {
            duration_s: fin(s.duration_s),
            throughput_bps: fin(s.throughput_bps),
            local_cpu_pct: fin(s.local_cpu_pct),
            remote_cpu_pct: fin(s.remote_cpu_pct),
            retransmits: s.retransmits,
            rtt_us: s.rtt_us,
            transactions_per_s: s.rr.and_then(|rr| fin(rr.transactions_per_s)),
            p50_us: latency.and_then(|l| fin(l.p50)),
            p99_us: latency.and_then(|l| fin(l.p99)),
            loss_pct: s.udp.and_then(|u| fin(u.loss_pct)),
            pps_received: s.udp.and_then(|u| fin(u.pps_received)),
        }
    }
}

fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn to_i64(x: u64) -> i64 {
    i64::try_from(x).unwrap_or(i64::MAX)
}

fn to_u64(x: i64) -> u64 {
    u64::try_from(x).unwrap_or(0)
}

#[cfg(test)]
mod tests;
