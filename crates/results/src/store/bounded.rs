//! The store's bounds, shared by every [`super::ResultStore`]: a run's JSON is encoded into at
//! most [`MAX_RECORD_BYTES`] (a larger one is refused with its length, never held whole), a
//! stored one is judged by its stored length and layout before it is decoded, and a listing
//! gathers the rows that read beside the ids of those that did not.
//!
//! Invariants: one bad row never fails a listing (only the database failing does); nothing
//! over the limit is loaded, decoded or written.

use std::io::Write;

use record::bounds::MAX_RECORD_BYTES;
use record::{RunId, SCHEMA_VERSION};
use serde::Serialize;

use super::{BadRow, RowFault, StoreError};

/// What a listing ([`super::ResultStore::list`], [`super::ResultStore::find`]) read: the rows
/// that could be read, oldest first, and the runs that could not, each by id with why.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing<T> {
    /// The rows that read.
    pub rows: Vec<T>,
    /// The runs left out, in the listing's order.
    pub skipped: Vec<BadRow>,
}

impl<T> Listing<T> {
    /// Sorts read rows from bad ones; the first error of the database itself ends it.
    pub fn gather<E>(
        rows: impl IntoIterator<Item = Result<Result<T, BadRow>, E>>,
    ) -> Result<Listing<T>, E> {
        let mut listing = Listing {
            rows: Vec::new(),
            skipped: Vec::new(),
        };
        for row in rows {
            match row? {
                Ok(row) => listing.rows.push(row),
                Err(bad) => listing.skipped.push(bad),
            }
        }
        Ok(listing)
    }
}

/// `value` as JSON, or [`StoreError::TooLarge`] with its whole length when that is over
/// [`MAX_RECORD_BYTES`] (counted, not kept: at most the limit is ever held).
pub fn encode_bounded(value: &impl Serialize, what: &'static str) -> Result<String, StoreError> {
    let mut out = Capped::default();
    serde_json::to_writer(&mut out, value).map_err(StoreError::Encode)?;
    if out.len > MAX_RECORD_BYTES as u64 {
        return Err(StoreError::TooLarge {
            what,
            bytes: out.len,
        });
    }
    // serde_json writes UTF-8 only.
    String::from_utf8(out.kept).map_err(|e| StoreError::Encode(serde::ser::Error::custom(e)))
}

/// The length of `value` as JSON, counted without keeping it.
pub fn json_len(value: &impl Serialize) -> Result<u64, serde_json::Error> {
    let mut out = Capped {
        kept: Vec::new(),
        len: 0,
        keep: false,
    };
    serde_json::to_writer(&mut out, value)?;
    Ok(out.len)
}

/// A writer that keeps the first [`MAX_RECORD_BYTES`] and counts everything.
struct Capped {
    kept: Vec<u8>,
    len: u64,
    keep: bool,
}

impl Default for Capped {
    fn default() -> Capped {
        Capped {
            kept: Vec::new(),
            len: 0,
            keep: true,
        }
    }
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.len += buf.len() as u64;
        if self.keep && self.len <= MAX_RECORD_BYTES as u64 {
            self.kept.extend_from_slice(buf);
        } else {
            self.keep = false;
            self.kept = Vec::new();
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What the store says of a row before its JSON is decoded: the stored lengths of its host
/// facts and record, and its record layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// `host_json`'s stored length, bytes.
    pub host_bytes: i64,
    /// `record_json`'s stored length, bytes.
    pub record_bytes: i64,
    /// `record_schema_version`.
    pub layout: i64,
}

impl Stored {
    /// Whether a row of these lengths and layout may be read: a length over
    /// [`MAX_RECORD_BYTES`] or a layout newer than [`SCHEMA_VERSION`] is the row's fault.
    pub fn check(self, id: RunId) -> Result<(), BadRow> {
        let fault = |fault| Err(BadRow { id, fault });
        for (what, bytes) in [
            ("record", self.record_bytes),
            ("host facts", self.host_bytes),
        ] {
            if bytes > MAX_RECORD_BYTES as i64 {
                let bytes = bytes as u64;
                return fault(RowFault::TooLarge { what, bytes });
            }
        }
        if self.layout > i64::from(SCHEMA_VERSION) {
            return fault(RowFault::NewerLayout { found: self.layout });
        }
        Ok(())
    }
}

/// The limit as a statement parameter (`?1`, `$1`).
pub(crate) const LIMIT_PARAM: i64 = MAX_RECORD_BYTES as i64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_over_the_limit_is_refused_with_its_whole_length() {
        let small = vec![1u8; 10];
        assert_eq!(
            encode_bounded(&small, "record").unwrap(),
            "[1,1,1,1,1,1,1,1,1,1]"
        );
        // "[1,1,…,1]": 2 bytes a value, less one comma, plus the brackets.
        let n = MAX_RECORD_BYTES / 2 + 1;
        let big = vec![1u8; n];
        let err = encode_bounded(&big, "record").unwrap_err();
        let bytes = 2 * n as u64 + 1;
        assert!(
            matches!(err, StoreError::TooLarge { what: "record", bytes: b } if b == bytes),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "the run's record is {bytes} bytes as JSON, over the limit of 16777216 bytes \
                 (16 MiB) a results store keeps per run"
            )
        );
        assert_eq!(json_len(&big).unwrap(), bytes);
    }

    #[test]
    fn a_row_over_the_limit_or_of_a_newer_layout_is_named_by_id() {
        let ok = Stored {
            host_bytes: 10,
            record_bytes: MAX_RECORD_BYTES as i64,
            layout: 2,
        };
        assert_eq!(ok.check(RunId(3)), Ok(()));
        let big = Stored {
            record_bytes: MAX_RECORD_BYTES as i64 + 1,
            ..ok
        };
        assert_eq!(
            big.check(RunId(3)).unwrap_err().to_string(),
            "run #3: its stored record is 16777217 bytes, over the limit of 16777216 bytes \
             (16 MiB) a results store reads; it was left unread"
        );
        let newer = Stored { layout: 9, ..ok };
        assert_eq!(
            newer.check(RunId(4)).unwrap_err().fault,
            RowFault::NewerLayout { found: 9 }
        );
    }
}
