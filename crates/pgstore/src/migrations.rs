//! The PostgreSQL store's schema versions, as an ordered list of SQL steps, applied once.
//!
//! The version lives in the table `linerate_schema` (one row): version N means the first N
//! steps have been applied. Every opening runs in one transaction that first takes a
//! transaction-scoped advisory lock ([`LOCK_KEY`]), so of several hosts opening a fresh or an
//! older database at once, one migrates and the others then find it current.
//!
//! Invariants: steps are only ever appended; a database at a newer version than
//! [`STORE_VERSION`] is refused and nothing is written to it; a database with tables named
//! `runs` or `run_tags` but no `linerate_schema` is another program's, and is refused too.

use postgres::{Client, GenericClient, Transaction};
use results::store::StoreError;

use crate::connect::server_error;

/// The advisory lock every opening holds while it reads and migrates the schema: "LRDB".
pub const LOCK_KEY: i64 = 0x4C52_4442;

/// Every step, in order. Append only.
const MIGRATIONS: &[&str] = &[
    // Version 1: the SQLite store's version 1 in PostgreSQL's types; the host facts as jsonb
    // (for ad hoc queries), the record as the exact JSON text written.
    r#"
    CREATE TABLE runs (
        id                    BIGSERIAL PRIMARY KEY,
        stored_at_unix_ms     BIGINT  NOT NULL,
        started_at_unix_ms    BIGINT  NOT NULL,
        kind                  TEXT    NOT NULL,
        target                TEXT    NOT NULL,
        interrupted           BOOLEAN NOT NULL,
        record_schema_version BIGINT  NOT NULL,
        duration_s            DOUBLE PRECISION,
        throughput_bps        DOUBLE PRECISION,
        local_cpu_pct         DOUBLE PRECISION,
        remote_cpu_pct        DOUBLE PRECISION,
        retransmits           BIGINT,
        rtt_us                BIGINT,
        transactions_per_s    DOUBLE PRECISION,
        p50_us                DOUBLE PRECISION,
        p99_us                DOUBLE PRECISION,
        loss_pct              DOUBLE PRECISION,
        pps_received          DOUBLE PRECISION,
        host_json             JSONB   NOT NULL,
        record_json           TEXT    NOT NULL
    );
    CREATE INDEX runs_by_start ON runs (started_at_unix_ms);
    CREATE INDEX runs_by_kind ON runs (kind, started_at_unix_ms);
    CREATE TABLE run_tags (
        run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        key    TEXT   NOT NULL,
        value  TEXT   NOT NULL,
        PRIMARY KEY (run_id, key)
    );
    CREATE INDEX run_tags_by_pair ON run_tags (key, value);
    "#,
];

/// The schema version this build writes and reads.
pub const STORE_VERSION: u32 = MIGRATIONS.len() as u32;

/// Brings the database to [`STORE_VERSION`] under the advisory lock, or refuses it.
pub fn migrate(client: &mut Client, location: &str) -> Result<(), StoreError> {
    let fail = |e: postgres::Error| server_error(location, &e);
    let mut tx = client.transaction().map_err(fail)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
        .map_err(fail)?;
    let found = read_version(&mut tx, location)?;
    if found > STORE_VERSION {
        return Err(StoreError::NewerSchema {
            location: location.to_string(),
            found,
            supported: STORE_VERSION,
        });
    }
    if found == STORE_VERSION {
        return Ok(());
    }
    for step in &MIGRATIONS[found as usize..] {
        tx.batch_execute(step).map_err(fail)?;
    }
    tx.execute(
        "UPDATE linerate_schema SET version = $1",
        &[&i64::from(STORE_VERSION)],
    )
    .map_err(fail)?;
    tx.commit().map_err(fail)
}

/// The version in `linerate_schema`, creating the table (at version 0) in a database that has
/// none and none of our tables either.
fn read_version(tx: &mut Transaction<'_>, location: &str) -> Result<u32, StoreError> {
    let fail = |e: postgres::Error| server_error(location, &e);
    let exists = |tx: &mut Transaction<'_>, name: &str| -> Result<bool, StoreError> {
        let row = tx
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&name])
            .map_err(fail)?;
        Ok(row.get(0))
    };
    if !exists(tx, "linerate_schema")? {
        if exists(tx, "runs")? || exists(tx, "run_tags")? {
            return Err(StoreError::ForeignTables {
                location: location.to_string(),
            });
        }
        tx.batch_execute(
            "CREATE TABLE linerate_schema (version BIGINT NOT NULL); \
             INSERT INTO linerate_schema (version) VALUES (0);",
        )
        .map_err(fail)?;
        return Ok(0);
    }
    version(tx, location)
}

/// The schema version of the open database (in or out of a transaction).
pub fn version(client: &mut impl GenericClient, location: &str) -> Result<u32, StoreError> {
    let row = client
        .query_one("SELECT max(version) FROM linerate_schema", &[])
        .map_err(|e| server_error(location, &e))?;
    let version: Option<i64> = row.get(0);
    Ok(version.and_then(|v| u32::try_from(v).ok()).unwrap_or(0))
}
