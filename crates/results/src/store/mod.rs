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
//! an older layout is converted as it is read ([`record::layout_v1`]), so a record layout
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

mod backend;
mod bounded;
mod error;
mod filter;
mod item;
mod location;
pub mod migrations;
mod open;
mod select;
mod sql;
mod stored_lines;

use std::fmt;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};

pub use backend::{has_password, redact, ResultStore, StoreLocation};
pub use bounded::{encode_bounded, json_len, Listing, Stored};
pub(crate) use error::classify;
pub use error::{BadRow, RowFault, StoreError, BUSY_TIMEOUT_S};
pub use filter::Filter;
pub use item::{Item, ItemError};
use migrations::{probe, Verdict};
pub use migrations::{APPLICATION_ID, STORE_VERSION};
use open::{check_header, enable_wal, newer, open_conn, refuse_unless_ours};
use record::{HostFacts, RunId, RunRecord, RunRow, StoredRun, Tags};
pub use select::{distinct, grouped, select, Grouped, SelectError, Selection};
pub use sql::{now_unix_ms, parse_tags, Figures, RawStored, ROW_LABELS, STORED_LABELS};
use sql::{read_row, to_i64, where_clause};
pub use stored_lines::{read_stored, LineError, MAX_LINE_BYTES};

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

/// Columns of `runs` read into a [`RunRow`] (tags and hostname appended by the query; then
/// the pieces of the record [`record::RunShape::from_extract`] reads, decoded by SQLite so the
/// listing never decodes whole records; then what judges the row first: the stored lengths,
/// whether the JSON is JSON, the layout). `?1` is [`record::bounds::MAX_RECORD_BYTES`]: no JSON function runs
/// on a value over it, or on one that is not JSON text, so one bad row fails only itself.
const ROW_COLUMNS: &str = concat!(
    "id, started_at_unix_ms, kind, target, interrupted, ",
    crate::figure_columns!(),
    ", coalesce(CASE WHEN octet_length(host_json) <= ?1 AND typeof(host_json) = 'text' \
        AND json_valid(host_json) THEN json_extract(host_json, '$.hostname') END, ''), \
    (SELECT json_group_object(key, value) FROM run_tags WHERE run_id = runs.id), \
    CASE WHEN octet_length(record_json) <= ?1 AND typeof(record_json) = 'text' \
        AND json_valid(record_json) THEN json_array( \
        json_extract(record_json, '$.schema_version'), \
        json(json_extract(record_json, '$.spec')), \
        json_extract(record_json, '$.summary.interrupted'), \
        json_extract(record_json, '$.summary.incomplete'), \
        EXISTS (SELECT 1 FROM json_each(record_json, '$.summary.flows') AS f, \
            json_each(f.value, '$.streams') AS s \
            WHERE json_type(s.value, '$.error') = 'text'), \
        json_extract(record_json, '$.summary.until_stopped')) END, \
    octet_length(record_json), octet_length(host_json), \
    CASE WHEN octet_length(record_json) <= ?1 AND typeof(record_json) = 'text' \
        THEN json_valid(record_json) END, \
    record_schema_version, \
    CASE WHEN octet_length(host_json) <= ?1 AND typeof(host_json) = 'text' \
        THEN json_valid(host_json) END"
);

/// Columns of `runs` read into a [`StoredRun`]: the JSON only when its stored length is at
/// most `?1` ([`record::bounds::MAX_RECORD_BYTES`]); SQLite reads that length without loading the value.
const STORED_COLUMNS: &str = "id, stored_at_unix_ms, \
    CASE WHEN octet_length(host_json) <= ?1 THEN host_json END, \
    CASE WHEN octet_length(record_json) <= ?1 THEN record_json END, \
    (SELECT json_group_object(key, value) FROM run_tags WHERE run_id = runs.id), \
    octet_length(host_json), octet_length(record_json), record_schema_version";

/// A query's parameters: the limit (`?1`), then `rest`.
fn bounded(rest: Vec<rusqlite::types::Value>) -> Vec<rusqlite::types::Value> {
    let limit = rusqlite::types::Value::Integer(bounded::LIMIT_PARAM);
    std::iter::once(limit).chain(rest).collect()
}

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
        self.insert_at(record, tags, host, now_unix_ms())
    }

    /// [`Store::insert`] with the time it was first stored (an imported run keeps its own).
    pub fn insert_at(
        &mut self,
        record: &RunRecord,
        tags: &Tags,
        host: &HostFacts,
        stored_at_unix_ms: u64,
    ) -> Result<RunId, StoreError> {
        if !self.writable {
            return Err(StoreError::ReadOnly {
                path: self.path.clone(),
            });
        }
        let record_json = encode_bounded(record, "record")?;
        let host_json = encode_bounded(host, "host facts")?;
        let f = Figures::of(record);
        let path = self.path.clone();
        let sql = |e| classify(&path, e);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql)?;
        tx.execute(
            concat!(
                "INSERT INTO runs (",
                crate::insert_columns!(),
                ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
             ?18, ?19)"
            ),
            params![
                to_i64(stored_at_unix_ms),
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

    /// The full stored run `id`; a run over the limit, of a newer layout or that does not
    /// decode is [`StoreError::BadRow`], judged before its JSON is loaded.
    pub fn get(&self, id: RunId) -> Result<StoredRun, StoreError> {
        let sql = |e| classify(&self.path, e);
        let raw = self
            .conn
            .query_row(
                &format!("SELECT {STORED_COLUMNS} FROM runs WHERE id = ?2"),
                params![bounded::LIMIT_PARAM, id.0],
                RawStored::read,
            )
            .optional()
            .map_err(sql)?;
        match raw {
            Some(raw) => Ok(raw?.decode()?),
            None => Err(StoreError::UnknownRun {
                id,
                location: self.path.display().to_string(),
            }),
        }
    }

    /// The runs that match `filter`, oldest first, and those that cannot be listed.
    pub fn list(&self, filter: &Filter) -> Result<Listing<RunRow>, StoreError> {
        let (clause, values) = where_clause(filter);
        let sql = |e| classify(&self.path, e);
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {ROW_COLUMNS} FROM runs{clause} ORDER BY started_at_unix_ms, id"
            ))
            .map_err(sql)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(bounded(values)), read_row)
            .map_err(sql)?;
        Listing::gather(rows).map_err(sql)
    }

    /// Every run that carries all of `tags` (with the same values), full records, oldest
    /// first: the groups a comparison puts side by side; and those that cannot be read.
    pub fn find(&self, tags: &Tags) -> Result<Listing<StoredRun>, StoreError> {
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
            .query_map(rusqlite::params_from_iter(bounded(values)), RawStored::read)
            .map_err(sql)?;
        // Each run decoded as it is read: a bad one is skipped, and only one is held as JSON.
        Listing::gather(raws.map(|raw| raw.map(|raw| raw.and_then(RawStored::decode)))).map_err(sql)
    }
}

/// Opens a connection with linerate's settings: busy timeout, foreign keys.
#[cfg(test)]
mod tests;
