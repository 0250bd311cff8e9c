//! What can go wrong opening, writing or reading the store, each as one line that names the
//! file and says what to do. Every refusal happens before anything is written, so the
//! database file is left exactly as it was.

use std::path::PathBuf;

use rusqlite::ErrorCode;

use record::bounds::MAX_RECORD_BYTES;

use super::RunId;

/// A store error.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No `--db`, no `$LINERATE_DB`, and no directory to put the default database in.
    #[error("no results database: neither XDG_DATA_HOME nor HOME is set; give --db PATH")]
    NoDefault,
    /// `open_existing` on a path with no file.
    #[error("{}: no results database there yet (runs are stored there as they finish)", path.display())]
    Missing {
        /// The path.
        path: PathBuf,
    },
    /// The file is not an SQLite database at all.
    #[error("{}: not a linerate results database (the file is not an SQLite database); it was left untouched: move it away or choose another file", path.display())]
    NotADatabase {
        /// The path.
        path: PathBuf,
    },
    /// An SQLite database that linerate did not create.
    #[error("{}: an SQLite database of another program, not a linerate results database; it was left untouched: choose another file", path.display())]
    Foreign {
        /// The path.
        path: PathBuf,
    },
    /// A database whose pages are damaged.
    #[error("{}: the database is damaged ({detail}); it was left untouched: restore it from a backup or choose another file", path.display())]
    Corrupt {
        /// The path.
        path: PathBuf,
        /// SQLite's words.
        detail: String,
    },
    /// A database written by a newer linerate.
    #[error("{location}: database schema version {found} is newer than this linerate supports (version {supported}); it was left untouched: use a newer linerate, or choose another database")]
    NewerSchema {
        /// The file, or the server's URL without its password.
        location: String,
        /// The file's version.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },
    /// The file (or its file system) is not writable.
    #[error("{}: the database file is read-only; make it writable, or choose another file", path.display())]
    ReadOnly {
        /// The path.
        path: PathBuf,
    },
    /// A read-only database at an older version, which cannot be read until it is upgraded.
    #[error("{}: the database is at schema version {found} and read-only; make it writable so this linerate can upgrade it to version {supported}", path.display())]
    ReadOnlyNeedsUpgrade {
        /// The path.
        path: PathBuf,
        /// The file's version.
        found: u32,
        /// This build's version.
        supported: u32,
    },
    /// Another process held the database locked for longer than the busy timeout.
    #[error("{}: the database stayed locked by another process for {timeout_s} s; try again", path.display())]
    Busy {
        /// The path.
        path: PathBuf,
        /// How long we waited.
        timeout_s: u64,
    },
    /// No run with this id.
    #[error("run {id}: no such run in {location}; `linerate runs` lists the stored runs")]
    UnknownRun {
        /// The id asked for.
        id: RunId,
        /// The file, or the server's URL without its password.
        location: String,
    },
    /// A `--db` URL of a scheme no store here speaks.
    #[error("{given}: unknown database scheme (give a file path, or postgresql://USER@HOST/DB)")]
    UnknownScheme {
        /// As given.
        given: String,
    },
    /// A database server that cannot be reached, refused us, or failed a statement.
    #[error("{location}: {detail}")]
    Server {
        /// The server's URL without its password.
        location: String,
        /// What went wrong, in the server's (or the connection's) words.
        detail: String,
    },
    /// A database server whose catalogue holds tables named like ours that are not ours.
    #[error("{location}: the database has tables named runs or run_tags that linerate did not make; it was left untouched: choose another database")]
    ForeignTables {
        /// The server's URL without its password.
        location: String,
    },
    /// A stored run this build cannot read (listings skip it and name it instead).
    #[error(transparent)]
    BadRow(#[from] BadRow),
    /// A run whose record (or host facts) is larger as JSON than a store keeps: refused
    /// before anything is written.
    #[error("the run's {what} is {bytes} bytes as JSON, over the limit of {limit} bytes ({mib} MiB) a results store keeps per run", limit = MAX_RECORD_BYTES, mib = MAX_RECORD_BYTES >> 20)]
    TooLarge {
        /// `record` or `host facts`.
        what: &'static str,
        /// Its length as JSON.
        bytes: u64,
    },
    /// The record could not be turned into JSON.
    #[error("cannot encode the run record: {0}")]
    Encode(#[source] serde_json::Error),
    /// The database's directory could not be created.
    #[error("{}: cannot create the database's directory: {source}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file could not be inspected.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Any other SQLite failure.
    #[error("{}: {source}", path.display())]
    Sqlite {
        /// The path.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
}

/// One stored run that cannot be read, by id: `get` fails with it, a listing skips the run
/// and names it ([`super::Listing::skipped`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("run {id}: {fault}")]
pub struct BadRow {
    /// The run.
    pub id: RunId,
    /// What is wrong with it.
    pub fault: RowFault,
}

/// What is wrong with a stored run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RowFault {
    /// Its stored JSON is longer than [`MAX_RECORD_BYTES`]: left unread.
    #[error("its stored {what} is {bytes} bytes, over the limit of {limit} bytes ({mib} MiB) a results store reads; it was left unread", limit = MAX_RECORD_BYTES, mib = MAX_RECORD_BYTES >> 20)]
    TooLarge {
        /// `record` or `host facts`.
        what: &'static str,
        /// Its stored length.
        bytes: u64,
    },
    /// Its stored JSON does not decode.
    #[error("its stored {what} cannot be read by this linerate: {detail}")]
    Malformed {
        /// `record` or `host facts`.
        what: &'static str,
        /// Why, in the decoder's (or the server's) words.
        detail: String,
    },
    /// Its record is of a layout newer than this build reads.
    #[error("its record is of layout {found}, newer than this linerate reads (layout {supported}); use a newer linerate", supported = record::SCHEMA_VERSION)]
    NewerLayout {
        /// The stored layout (`record_schema_version`).
        found: i64,
    },
    /// A column holds a value of the wrong type, or one this build does not know.
    #[error("its {column} column cannot be read: {detail}")]
    Column {
        /// The column.
        column: &'static str,
        /// Why.
        detail: String,
    },
}

/// Busy timeout, seconds: how long a writer waits for another process's transaction.
pub const BUSY_TIMEOUT_S: u64 = 10;

/// Maps an SQLite error on `path` to the variant a user can act on.
pub(crate) fn classify(path: &std::path::Path, e: rusqlite::Error) -> StoreError {
    let path = path.to_path_buf();
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => StoreError::NotADatabase { path },
        Some(ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            path,
            detail: e.to_string(),
        },
        Some(ErrorCode::ReadOnly) => StoreError::ReadOnly { path },
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy {
            path,
            timeout_s: BUSY_TIMEOUT_S,
        },
        _ => StoreError::Sqlite { path, source: e },
    }
}
