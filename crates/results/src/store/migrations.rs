//! The store's schema versions, as an ordered list of SQL steps.
//!
//! The version lives in SQLite's header (`PRAGMA user_version`): version N means the first N
//! steps of `MIGRATIONS` have been applied. The first step also sets `PRAGMA application_id`
//! to [`APPLICATION_ID`], which is how a linerate database is told from another program's.
//!
//! Invariants:
//! - steps are only ever appended; a released step is never edited (a fixture database per past
//!   version, `tests/fixtures/store-vN.sqlite`, is opened by the tests to hold us to it);
//! - every step runs inside the same `BEGIN IMMEDIATE` transaction as the version bump, so a
//!   crash mid-migration leaves the previous version intact, and of two processes opening an
//!   old database at once, one migrates and the other then finds it current;
//! - a database whose version is newer than [`STORE_VERSION`] is never written to.

use rusqlite::{Connection, TransactionBehavior};

/// `PRAGMA application_id` of a linerate results database: "LRDB" in ASCII.
pub const APPLICATION_ID: i32 = 0x4C52_4442;

/// One schema step: from version `to_version - 1` to `to_version`.
pub(crate) struct Migration {
    /// The version after this step.
    pub to_version: u32,
    /// The SQL, run as one batch.
    pub sql: &'static str,
}

/// Every step, in order. Append only.
pub(crate) const MIGRATIONS: &[Migration] = &[Migration {
    to_version: 1,
    // Version 1: one row per run with the whole record as JSON (intervals included) and the
    // figures that `linerate runs` shows and filters on as columns; tags in their own table.
    sql: r#"
        PRAGMA application_id = 1280459842;
        CREATE TABLE runs (
            id                    INTEGER PRIMARY KEY AUTOINCREMENT,
            stored_at_unix_ms     INTEGER NOT NULL,
            started_at_unix_ms    INTEGER NOT NULL,
            kind                  TEXT    NOT NULL,
            target                TEXT    NOT NULL,
            interrupted           INTEGER NOT NULL CHECK (interrupted IN (0, 1)),
            record_schema_version INTEGER NOT NULL,
            duration_s            REAL,
            throughput_bps        REAL,
            local_cpu_pct         REAL,
            remote_cpu_pct        REAL,
            retransmits           INTEGER,
            rtt_us                INTEGER,
            transactions_per_s    REAL,
            p50_us                REAL,
            p99_us                REAL,
            loss_pct              REAL,
            pps_received          REAL,
            host_json             TEXT    NOT NULL,
            record_json           TEXT    NOT NULL
        );
        CREATE INDEX runs_by_start ON runs (started_at_unix_ms);
        CREATE INDEX runs_by_kind ON runs (kind, started_at_unix_ms);
        CREATE TABLE run_tags (
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            key    TEXT    NOT NULL,
            value  TEXT    NOT NULL,
            PRIMARY KEY (run_id, key)
        ) WITHOUT ROWID;
        CREATE INDEX run_tags_by_pair ON run_tags (key, value);
    "#,
}];

/// The schema version this build writes and reads.
pub const STORE_VERSION: u32 = MIGRATIONS.len() as u32;

/// What a database's header and catalogue say about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Probe {
    /// `PRAGMA application_id`.
    pub application_id: i32,
    /// `PRAGMA user_version`.
    pub user_version: u32,
    /// Tables, indexes, views and triggers in the file.
    pub objects: u32,
}

/// What to do with a database, judged from its [`Probe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Empty: create the schema.
    Fresh,
    /// A linerate database at an older version: migrate.
    Older(u32),
    /// A linerate database at this version.
    Current,
    /// A linerate database from a newer linerate: refuse.
    Newer(u32),
    /// Another program's database: refuse.
    Foreign,
}

/// Reads the header fields and counts the schema objects (fails on a file that is not a
/// database).
pub(crate) fn probe(conn: &Connection) -> rusqlite::Result<Probe> {
    let application_id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let user_version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let objects: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;
    Ok(Probe {
        application_id,
        // A negative version is not one we wrote: treat it as foreign below.
        user_version: u32::try_from(user_version).unwrap_or(u32::MAX),
        objects: u32::try_from(objects).unwrap_or(u32::MAX),
    })
}

/// Judges a probed database against this build's [`STORE_VERSION`].
pub(crate) fn judge(p: Probe) -> Verdict {
    match (p.application_id, p.user_version) {
        (0, 0) if p.objects == 0 => Verdict::Fresh,
        (APPLICATION_ID, v) if v > STORE_VERSION => Verdict::Newer(v),
        (APPLICATION_ID, v) if v == STORE_VERSION => Verdict::Current,
        (APPLICATION_ID, v) if v >= 1 => Verdict::Older(v),
        _ => Verdict::Foreign,
    }
}

/// Brings the database to `target` (at most [`STORE_VERSION`]) inside one immediate
/// transaction, re-judging it under the write lock first. Returns the verdict it acted on;
/// `Newer` and `Foreign` are returned without writing anything.
pub(crate) fn migrate(conn: &mut Connection, target: u32) -> rusqlite::Result<Verdict> {
    let target = target.min(STORE_VERSION);
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let verdict = judge(probe(&tx)?);
    let from = match verdict {
        Verdict::Fresh => 0,
        Verdict::Older(v) => v,
        Verdict::Current | Verdict::Newer(_) | Verdict::Foreign => return Ok(verdict),
    };
    for step in MIGRATIONS
        .iter()
        .filter(|m| m.to_version > from && m.to_version <= target)
    {
        tx.execute_batch(step.sql)?;
        tx.pragma_update(None, "user_version", step.to_version)?;
    }
    tx.commit()?;
    Ok(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(conn: &Connection) -> Vec<String> {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
            .unwrap();
        let names = stmt.query_map([], |r| r.get(0)).unwrap();
        names.collect::<Result<_, _>>().unwrap()
    }

    #[test]
    fn steps_are_numbered_in_order() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.to_version as usize, i + 1);
        }
        assert_eq!(
            format!("{:x}", APPLICATION_ID),
            "4c524442",
            "application id must stay 'LRDB'"
        );
        assert!(MIGRATIONS[0]
            .sql
            .contains(&format!("application_id = {APPLICATION_ID};")));
    }

    #[test]
    fn applies_step_by_step() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(judge(probe(&conn).unwrap()), Verdict::Fresh);
        for v in 1..=STORE_VERSION {
            let before = judge(probe(&conn).unwrap());
            let acted = migrate(&mut conn, v).unwrap();
            assert_eq!(acted, before);
            let p = probe(&conn).unwrap();
            assert_eq!((p.application_id, p.user_version), (APPLICATION_ID, v));
        }
        assert_eq!(judge(probe(&conn).unwrap()), Verdict::Current);
        assert_eq!(migrate(&mut conn, STORE_VERSION).unwrap(), Verdict::Current);
        assert!(tables(&conn).contains(&"runs".to_string()));
        assert!(tables(&conn).contains(&"run_tags".to_string()));
    }

    #[test]
    fn judges_foreign_and_newer() {
        let p = |application_id, user_version, objects| Probe {
            application_id,
            user_version,
            objects,
        };
        assert_eq!(judge(p(0, 0, 3)), Verdict::Foreign);
        assert_eq!(judge(p(0, 1, 3)), Verdict::Foreign);
        assert_eq!(judge(p(42, 0, 0)), Verdict::Foreign);
        assert_eq!(judge(p(APPLICATION_ID, 0, 0)), Verdict::Foreign);
        assert_eq!(
            judge(p(APPLICATION_ID, STORE_VERSION + 1, 3)),
            Verdict::Newer(STORE_VERSION + 1)
        );
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE other (x)").unwrap();
        assert_eq!(migrate(&mut conn, STORE_VERSION).unwrap(), Verdict::Foreign);
        assert_eq!(tables(&conn), vec!["other".to_string()]);
    }
}
