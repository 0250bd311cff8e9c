//! linerate's shared results store on a PostgreSQL server: the same records, tags, figures and
//! queries as the embedded SQLite store, behind [`results::store::ResultStore`], for a team whose
//! hosts all write into one database (`--db postgresql://USER@HOST/DB`).
//!
//! [`open`] opens a store of either kind from its [`StoreLocation`] (`--db`).
//!
//! Layout: [`connect`] turns the URL into a client (TLS by rustls with the system's roots as
//! `sslmode` asks; the password from the URL, else `PGPASSWORD`, else the `PGPASSFILE` or
//! `~/.pgpass` line that matches); [`migrations`] brings the schema up to date once, under an
//! advisory lock, and refuses a newer one; this file writes and reads runs.
//!
//! Invariants: a run is written in one transaction; the record is kept as the exact JSON text
//! the SQLite store keeps (so export and import between stores lose nothing); messages name the
//! server by its URL without the password.

pub mod connect;
pub mod migrations;
mod run_store;
mod sql;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;

use postgres::fallible_iterator::FallibleIterator;
use postgres::Client;
use record::{HostFacts, RunId, RunRecord, RunRow, StoredRun, Tags};
use results::store::{
    encode_bounded, BadRow, Figures, Filter, Listing, RawStored, ResultStore, RowFault, Store,
    StoreError, StoreLocation,
};

pub use connect::PgTarget;
pub use run_store::{storing_hint, RunStore, Unsaved};

/// Whether a store is opened to store runs or only to read them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Storing: an SQLite file (and its directory) is created if missing.
    Write,
    /// Reading (`runs`, `show`, `compare`, `report`): a missing SQLite file is
    /// [`StoreError::Missing`], and a read-only one is read as it is.
    Read,
}

/// Opens the store at `location`, whichever kind it is: the one way the binary opens one.
pub fn open(location: &StoreLocation, access: Access) -> Result<Box<dyn ResultStore>, StoreError> {
    Ok(match (location, access) {
        (StoreLocation::File(path), Access::Write) => Box::new(Store::open(path)?),
        (StoreLocation::File(path), Access::Read) => Box::new(Store::open_existing(path)?),
        (StoreLocation::Postgres(url), _) => Box::new(PgStore::open(url)?),
    })
}

/// An open PostgreSQL results store.
pub struct PgStore {
    client: Client,
    location: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.location)
            .finish()
    }
}

impl PgStore {
    /// Connects to the server at `url` and brings its schema to
    /// [`migrations::STORE_VERSION`], refusing a database a newer linerate wrote.
    pub fn open(url: &str) -> Result<PgStore, StoreError> {
        let target = PgTarget::parse(url)?;
        let mut client = target.connect()?;
        let location = target.location();
        migrations::migrate(&mut client, &location)?;
        Ok(PgStore { client, location })
    }

    fn fail(&self) -> impl Fn(postgres::Error) -> StoreError + '_ {
        move |e| connect::server_error(&self.location, &e)
    }
}

impl ResultStore for PgStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn version(&mut self) -> Result<u32, StoreError> {
        let location = self.location.clone();
        migrations::version(&mut self.client, &location)
    }

    fn insert_at(
        &mut self,
        record: &RunRecord,
        tags: &Tags,
        host: &HostFacts,
        stored_at_unix_ms: u64,
    ) -> Result<RunId, StoreError> {
        let record_json = encode_bounded(record, "record")?;
        let host_json = encode_bounded(host, "host facts")?;
        let f = Figures::of(record);
        let location = self.location.clone();
        let fail = |e: postgres::Error| connect::server_error(&location, &e);
        let mut tx = self.client.transaction().map_err(fail)?;
        let row = tx
            .query_one(
                sql::INSERT_RUN,
                &sql::run_params(record, &f, &host_json, &record_json, stored_at_unix_ms).as_refs(),
            )
            .map_err(fail)?;
        let id: i64 = row.get(0);
        for (k, v) in tags.iter() {
            tx.execute(sql::INSERT_TAG, &[&id, &k, &v]).map_err(fail)?;
        }
        tx.commit().map_err(fail)?;
        Ok(RunId(id))
    }

    fn get(&mut self, id: RunId) -> Result<StoredRun, StoreError> {
        let query = format!("SELECT {} FROM runs WHERE id = $2", sql::STORED_COLUMNS);
        let row = self
            .client
            .query_opt(&query, &[&sql::LIMIT, &id.0])
            .map_err(self.fail())?;
        match row {
            Some(row) => Ok(sql::raw_stored(&row)?.decode()?),
            None => Err(StoreError::UnknownRun {
                id,
                location: self.location.clone(),
            }),
        }
    }

    fn list(&mut self, filter: &Filter) -> Result<Listing<RunRow>, StoreError> {
        let (clause, params) = sql::where_clause(filter, true);
        let query = format!(
            "SELECT {} FROM runs{clause} ORDER BY started_at_unix_ms, id",
            sql::ROW_COLUMNS
        );
        match self.client.query(&query, &params.as_refs()) {
            Ok(rows) => Listing::gather(rows.iter().map(|r| Ok(sql::run_row(r)))),
            // A record that is not JSON fails the statement: list row by row instead.
            Err(e) if e.as_db_error().is_some() => self.list_row_by_row(filter),
            Err(e) => Err(connect::server_error(&self.location, &e)),
        }
    }

    fn find(&mut self, tags: &Tags) -> Result<Listing<StoredRun>, StoreError> {
        let filter = Filter {
            tags: tags.clone(),
            ..Filter::default()
        };
        let (clause, params) = sql::where_clause(&filter, true);
        let query = format!(
            "SELECT {} FROM runs{clause} ORDER BY started_at_unix_ms, id",
            sql::STORED_COLUMNS
        );
        let location = self.location.clone();
        let fail = |e: postgres::Error| connect::server_error(&location, &e);
        // Row by row as they arrive: one run's JSON is held at a time.
        let rows = (self.client.query_raw(&query, params.as_refs()))
            .map_err(fail)?
            .iterator();
        Listing::gather(rows.map(|row| {
            let row = row.map_err(fail)?;
            Ok(sql::raw_stored(&row).and_then(RawStored::decode))
        }))
    }
}

impl PgStore {
    /// [`ResultStore::list`] one run at a time, each run's failure its own.
    fn list_row_by_row(&mut self, filter: &Filter) -> Result<Listing<RunRow>, StoreError> {
        let (clause, params) = sql::where_clause(filter, false);
        let ids = (self.client)
            .query(
                &format!("SELECT id FROM runs{clause} ORDER BY started_at_unix_ms, id"),
                &params.as_refs(),
            )
            .map_err(self.fail())?;
        let query = format!("SELECT {} FROM runs WHERE id = $2", sql::ROW_COLUMNS);
        let mut rows = Vec::new();
        for id in ids.iter().map(|r| RunId(r.get(0))) {
            let row = match self.client.query_opt(&query, &[&sql::LIMIT, &id.0]) {
                Ok(Some(row)) => Ok(sql::run_row(&row)),
                // Deleted since the ids were read.
                Ok(None) => continue,
                Err(e) => match e.as_db_error() {
                    Some(db) => Ok(Err(BadRow {
                        id,
                        fault: RowFault::Malformed {
                            what: "record",
                            detail: db.message().to_string(),
                        },
                    })),
                    None => Err(connect::server_error(&self.location, &e)),
                },
            };
            rows.push(row);
        }
        Listing::gather(rows)
    }
}
