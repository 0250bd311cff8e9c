//! Reading what `linerate export --format stored` writes, one stored run per line, for
//! `linerate import`: each line read to at most [`MAX_LINE_BYTES`] and each run held to the
//! store's [`MAX_RECORD_BYTES`], so a file, whoever wrote it, takes no more memory per run than
//! reading a stored one does, and an over-limit run is named by its line before anything is
//! stored.

use std::io::BufRead;

use record::bounds::MAX_RECORD_BYTES;
use record::{RunId, StoredRun};

use super::json_len;

/// The longest line read: a run's record at the limit, plus its id, time, tags and host facts
/// (1 MiB for those).
pub const MAX_LINE_BYTES: usize = MAX_RECORD_BYTES + (1 << 20);

/// Why a line of a stored-runs file is refused; the caller prefixes the file.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// A line longer than [`MAX_LINE_BYTES`]: reading stops there.
    #[error("line {line}: longer than {MAX_LINE_BYTES} bytes, more than a stored run can be (its record is at most {MAX_RECORD_BYTES} bytes); not read further")]
    TooLong {
        /// The line, from 1.
        line: usize,
    },
    /// A line that is not a stored run.
    #[error(
        "line {line}: not a stored run (`linerate export --format stored` writes them): {source}"
    )]
    NotStored {
        /// The line, from 1.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
    /// A run whose record or host facts are over the store's limit.
    #[error("line {line}: run {id}'s {what} is {bytes} bytes as JSON, over the limit of {MAX_RECORD_BYTES} bytes a results store keeps per run")]
    TooLarge {
        /// The line, from 1.
        line: usize,
        /// The run's id in the store it came from.
        id: RunId,
        /// `record` or `host facts`.
        what: &'static str,
        /// Its length as JSON.
        bytes: u64,
    },
    /// The file could not be read.
    #[error("line {line}: cannot read it: {source}")]
    Io {
        /// The line, from 1.
        line: usize,
        /// Why.
        source: std::io::Error,
    },
}

/// The stored runs of `reader`, one a non-blank line, in order; after an error, nothing more.
pub fn read_stored(reader: impl BufRead) -> impl Iterator<Item = Result<StoredRun, LineError>> {
    let mut lines = Lines {
        reader,
        line: 0,
        done: false,
    };
    std::iter::from_fn(move || lines.next_run())
}

struct Lines<R> {
    reader: R,
    line: usize,
    done: bool,
}

impl<R: BufRead> Lines<R> {
    fn next_run(&mut self) -> Option<Result<StoredRun, LineError>> {
        while !self.done {
            let mut buf = Vec::new();
            self.line += 1;
            let read = std::io::Read::take(&mut self.reader, MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut buf);
            let got = match read {
                Ok(0) => return None,
                Ok(_) if buf.len() > MAX_LINE_BYTES => Err(LineError::TooLong { line: self.line }),
                Ok(_) if buf.trim_ascii().is_empty() => continue,
                Ok(_) => self.run(&buf),
                Err(source) => Err(LineError::Io {
                    line: self.line,
                    source,
                }),
            };
            self.done = got.is_err();
            return Some(got);
        }
        None
    }

    fn run(&self, text: &[u8]) -> Result<StoredRun, LineError> {
        let line = self.line;
        let run: StoredRun =
            serde_json::from_slice(text).map_err(|source| LineError::NotStored { line, source })?;
        let lengths = [
            ("record", json_len(&run.record)),
            ("host facts", json_len(&run.host)),
        ];
        for (what, bytes) in lengths {
            let bytes = bytes.map_err(|source| LineError::NotStored { line, source })?;
            if bytes > MAX_RECORD_BYTES as u64 {
                let id = run.id;
                return Err(LineError::TooLarge {
                    line,
                    id,
                    what,
                    bytes,
                });
            }
        }
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_longer_than_a_run_can_be_is_refused_without_reading_it_whole() {
        let mut text = b"\n  \n".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 10));
        text.extend(b"\n{}\n");
        let got: Vec<_> = read_stored(&text[..]).collect();
        assert_eq!(got.len(), 1, "nothing after the first error");
        let err = got.into_iter().next().unwrap().unwrap_err();
        assert!(matches!(err, LineError::TooLong { line: 3 }), "{err:?}");
        let err = read_stored(&b"[1]\n"[..]).next().unwrap().unwrap_err();
        assert!(
            err.to_string()
                .starts_with("line 1: not a stored run (`linerate export --format stored`"),
            "{err}"
        );
        assert!(read_stored(&b"\n\n"[..]).next().is_none());
    }
}
