//! Opening a database file safely: judging the file before anything is written to it (a newer
//! linerate's, another program's, not a database at all), and the journal settings every
//! connection gets.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::migrations::{self, judge, probe, Verdict, STORE_VERSION};
use super::{classify, StoreError, BUSY_TIMEOUT_S};

pub(super) fn open_conn(path: &Path, flags: OpenFlags) -> Result<Connection, StoreError> {
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
pub(super) fn refuse_unless_ours(path: &Path, conn: &Connection) -> Result<Verdict, StoreError> {
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
pub(super) fn check_header(path: &Path) -> Result<(), StoreError> {
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

pub(super) fn newer(path: &Path, found: u32) -> StoreError {
    StoreError::NewerSchema {
        location: path.display().to_string(),
        found,
        supported: STORE_VERSION,
    }
}

/// Switches to the WAL journal (readers never block the writer, and a crash mid-write leaves
/// the last commit intact). Another process switching at the same moment can make the pragma
/// return busy without waiting, so it is retried for up to the busy timeout.
pub(super) fn enable_wal(conn: &Connection) -> rusqlite::Result<()> {
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
