//! Storing finished runs as the measuring commands do: an open store of either kind and the
//! user's tags, opened before a test starts (so a bad database is reported before any time is
//! spent measuring); each run stored with its client host's facts; a run the store refuses
//! (disk full, file system gone read-only, a record over `record::bounds::MAX_RECORD_BYTES`)
//! kept as a JSON file so nothing measured is lost.
//!
//! Invariants: where a key is both the user's and a caller's extra tag, the user's value wins;
//! a refused run's record is written whole to the temporary directory before the error is
//! returned, and the error says where (or that it could not be).

use std::path::PathBuf;

use record::{RunId, RunRecord, Tag, Tags};
use results::store::{ResultStore, StoreError, StoreLocation};

use crate::{open, Access};

/// An open database and the tags for the runs stored into it.
pub struct RunStore {
    store: Box<dyn ResultStore>,
    tags: Tags,
}

impl std::fmt::Debug for RunStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RunStore({})", self.store.location())
    }
}

/// A run the store would not take.
#[derive(Debug)]
pub struct Unsaved {
    /// Why the store refused it.
    pub error: StoreError,
    /// Where its record (JSON, as `--json` prints it) was written instead, or why it could not
    /// be.
    pub kept: Result<PathBuf, (PathBuf, std::io::Error)>,
}

impl std::fmt::Display for Unsaved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (error, hint) = (&self.error, storing_hint(&self.error));
        write!(f, "the run was printed but not stored: {error}{hint}; ")?;
        match &self.kept {
            Ok(path) => write!(f, "its record (JSON) is in {}", path.display()),
            Err((path, e)) => write!(
                f,
                "nor could its record be written to {} ({e}): the output above is all that is left",
                path.display()
            ),
        }
    }
}

impl std::error::Error for Unsaved {}

/// What to do about a store that refuses to store, after its error: store elsewhere or skip.
pub fn storing_hint(e: &StoreError) -> &'static str {
    match e {
        StoreError::ReadOnly { .. }
        | StoreError::NotADatabase { .. }
        | StoreError::Foreign { .. }
        | StoreError::Corrupt { .. }
        | StoreError::NewerSchema { .. }
        | StoreError::CreateDir { .. }
        | StoreError::Server { .. }
        | StoreError::ForeignTables { .. } => {
            " (--db PATH stores elsewhere, --no-store skips storing)"
        }
        StoreError::TooLarge { .. } => {
            " (fewer intervals make a smaller one: a longer --interval, or a shorter --time)"
        }
        _ => "",
    }
}

impl RunStore {
    /// Opens the store at `location` for writing (an SQLite file is created on first use).
    pub fn open(location: &StoreLocation, tags: Tags) -> Result<Self, StoreError> {
        Ok(Self {
            store: open(location, Access::Write)?,
            tags,
        })
    }

    /// Stores one run with the user's tags.
    pub fn save(&mut self, record: &RunRecord) -> Result<RunId, Unsaved> {
        self.save_with(record, &Tags::new())
    }

    /// Stores one run with the user's tags plus `extra` ones (e.g. a `linerate pps` cell's
    /// `frame_bytes` and `flows`). The client host's facts stored beside it are the record's
    /// own (`hosts.client`), which the client collected for the run.
    pub fn save_with(&mut self, record: &RunRecord, extra: &Tags) -> Result<RunId, Unsaved> {
        let mut tags = self.tags.clone();
        for (k, v) in extra.iter() {
            if tags.get(k).is_none() {
                // Keys from a valid `Tags` are valid.
                let _ = tags.insert(Tag {
                    key: k.to_string(),
                    value: v.to_string(),
                });
            }
        }
        let facts = (record.hosts.as_ref())
            .map(|h| h.client.clone())
            .unwrap_or_default();
        self.store
            .insert(record, &tags, &facts)
            .map_err(|error| Unsaved {
                error,
                kept: keep(record),
            })
    }

    /// The database as messages name it: the file, or the URL without its password.
    pub fn location(&self) -> String {
        self.store.location()
    }
}

/// Writes `record` as JSON to the temporary directory; the file, or why it could not be.
fn keep(record: &RunRecord) -> Result<PathBuf, (PathBuf, std::io::Error)> {
    let stamp = record.started_at_unix_ms;
    let path = std::env::temp_dir().join(format!(
        "linerate-unsaved-{stamp}-{}.json",
        std::process::id()
    ));
    // Streamed to the file: a record too large to store is not held twice.
    let written = std::fs::File::create(&path).and_then(|file| {
        let mut out = std::io::BufWriter::new(file);
        serde_json::to_writer_pretty(&mut out, record).map_err(std::io::Error::other)?;
        std::io::Write::flush(&mut out)
    });
    match written {
        Ok(()) => Ok(path),
        Err(e) => Err((path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_run_says_why_what_to_do_and_where_its_record_is() {
        let unsaved = Unsaved {
            error: StoreError::ReadOnly {
                path: "/ro/r.sqlite".into(),
            },
            kept: Ok("/tmp/linerate-unsaved-1-2.json".into()),
        };
        assert_eq!(
            unsaved.to_string(),
            "the run was printed but not stored: /ro/r.sqlite: the database file is read-only; \
             make it writable, or choose another file (--db PATH stores elsewhere, --no-store \
             skips storing); its record (JSON) is in /tmp/linerate-unsaved-1-2.json"
        );
        let lost = Unsaved {
            kept: Err(("/full/x.json".into(), std::io::Error::other("no space"))),
            ..unsaved
        };
        let large = Unsaved {
            error: StoreError::TooLarge {
                what: "record",
                bytes: 104_857_600,
            },
            kept: Ok("/tmp/linerate-unsaved-1-2.json".into()),
        };
        assert_eq!(
            large.to_string(),
            "the run was printed but not stored: the run's record is 104857600 bytes as JSON, \
             over the limit of 16777216 bytes (16 MiB) a results store keeps per run (fewer \
             intervals make a smaller one: a longer --interval, or a shorter --time); its \
             record (JSON) is in /tmp/linerate-unsaved-1-2.json"
        );
        assert!(lost.to_string().ends_with(
            "nor could its record be written to /full/x.json (no space): the output above is \
             all that is left"
        ));
    }
}
