//! Key files: the server's table (`serve --auth-keys`), one line per key,
//! `NAME SECRET [max-time=S] [max-rate=RATE] [max-sessions=N] [max-streams=N] [relay]`, and a
//! client's key (`--auth-key`), the line `linerate keygen NAME` printed.
//!
//! Invariants: a symbolic link, a file that is not regular, another user's, or one readable
//! or writable by group or others is refused before it is read, checked on the descriptor it
//! is read from (`private_file`; as ssh refuses such private keys); every problem names the file and line; names are unique
//! within a table; blank lines and lines starting with `#` are skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use wire::auth::{BadUserName, UserName};

use super::private_file::read_private;
use super::Secret;

/// What one key may do beyond the server's own limits (each `None`: the server's limit alone).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyLimits {
    /// Longest test.
    pub max_time: Option<Duration>,
    /// Highest rate per stream, bits/s: UDP rate and TCP pacing.
    pub max_rate_bps: Option<u64>,
    /// Tests this key may run at once.
    pub max_sessions: Option<usize>,
    /// Streams per direction.
    pub max_streams: Option<u16>,
    /// May ask this server to run tests towards others (`serve --relay`).
    pub relay: bool,
}

/// One key of the server's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyEntry {
    /// The shared secret.
    pub secret: Secret,
    /// What the key may do.
    pub limits: KeyLimits,
}

/// The server's keys, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyTable {
    keys: BTreeMap<UserName, KeyEntry>,
}

/// A client's key: its name and secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientKey {
    /// The key's name (the user).
    pub name: UserName,
    /// The shared secret.
    pub secret: Secret,
}

/// What is wrong with one line of a key file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineProblem {
    /// A name and nothing else.
    #[error("a name without a secret (expected NAME SECRET [LIMITS])")]
    NoSecret,
    /// A name outside the allowed characters.
    #[error("{0}")]
    BadName(#[from] BadUserName),
    /// A secret that is not base64 of 16 to 64 bytes.
    #[error("the secret is not base64 of 16 to 64 bytes (make one with `linerate keygen NAME`)")]
    BadSecret,
    /// A name given twice.
    #[error("key {0} appears twice")]
    Duplicate(String),
    /// A limit whose value does not parse.
    #[error("{word}: {why}")]
    BadLimit {
        /// The word as written.
        word: String,
        /// What is allowed.
        why: &'static str,
    },
    /// A word that is no limit.
    #[error(
        "unknown word {0:?} (limits: max-time=S max-rate=RATE max-sessions=N max-streams=N relay)"
    )]
    UnknownWord(String),
}

/// A key file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Missing or unreadable.
    #[error("cannot read key file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not a file this server's user alone controls: a symbolic link, not a regular file,
    /// another user's, too large.
    #[error("key file {path} {why}")]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// What it is and what to do.
        why: String,
    },
    /// Open to group or others.
    #[error("key file {path} is open to group or others (mode {mode:04o}); `chmod 600` it")]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A line that does not parse.
    #[error("key file {path} line {line}: {problem}")]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        problem: LineProblem,
    },
    /// A client key file without exactly one key.
    #[error("key file {path} holds {count} keys; a client's key file holds one line, NAME SECRET")]
    NotOne {
        /// The file.
        path: PathBuf,
        /// Keys found.
        count: usize,
    },
}

impl KeyTable {
    /// Reads and parses the server's keys file.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let text = read_private(path)?;
        Self::parse(&text).map_err(|(line, problem)| KeyError::Line {
            path: path.to_path_buf(),
            line,
            problem,
        })
    }

    /// Parses a table; the error carries the 1-based line number.
    pub fn parse(text: &str) -> Result<Self, (usize, LineProblem)> {
        let mut keys = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let Some((name, entry)) = parse_line(line).map_err(|p| (n + 1, p))? else {
                continue;
            };
            if keys.contains_key(&name) {
                return Err((n + 1, LineProblem::Duplicate(name.to_string())));
            }
            keys.insert(name, entry);
        }
        Ok(Self { keys })
    }

    /// The key named `name`.
    pub fn get(&self, name: &UserName) -> Option<&KeyEntry> {
        self.keys.get(name)
    }

    /// How many keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none (a server with an empty table refuses everyone).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl ClientKey {
    /// Reads a client's key file: one `NAME SECRET` line (limits, if copied along, are ignored).
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let table = KeyTable::load(path)?;
        let count = table.len();
        let mut keys = table.keys.into_iter();
        match (keys.next(), count) {
            (Some((name, entry)), 1) => Ok(Self {
                name,
                secret: entry.secret,
            }),
            _ => Err(KeyError::NotOne {
                path: path.to_path_buf(),
                count,
            }),
        }
    }
}

/// One line: `None` for a blank line or a comment.
fn parse_line(line: &str) -> Result<Option<(UserName, KeyEntry)>, LineProblem> {
    let mut words = line.split_whitespace();
    let Some(name) = words.next().filter(|w| !w.starts_with('#')) else {
        return Ok(None);
    };
    let name = UserName::new(name)?;
    let secret = words.next().ok_or(LineProblem::NoSecret)?;
    let secret = Secret::from_base64(secret).ok_or(LineProblem::BadSecret)?;
    let mut limits = KeyLimits::default();
    for word in words {
        parse_limit(word, &mut limits)?;
    }
    Ok(Some((name, KeyEntry { secret, limits })))
}

fn parse_limit(word: &str, limits: &mut KeyLimits) -> Result<(), LineProblem> {
    let bad = |why| LineProblem::BadLimit {
        word: word.to_string(),
        why,
    };
    let (key, value) = word.split_once('=').unwrap_or((word, ""));
    match key {
        "relay" if value.is_empty() => limits.relay = true,
        "max-time" => {
            let secs: f64 = value.parse().map_err(|_| bad("seconds, above 0"))?;
            if !(secs.is_finite() && secs > 0.0 && secs <= 1e9) {
                return Err(bad("seconds, above 0"));
            }
            limits.max_time = Some(Duration::from_secs_f64(secs));
        }
        "max-rate" => {
            let bps = measure::units::parse_bits_per_sec(value)
                .map_err(|_| bad("bits per second, e.g. 500M or 1G"))?;
            limits.max_rate_bps = Some(bps);
        }
        "max-sessions" => {
            let n: usize = value
                .parse()
                .map_err(|_| bad("a whole number, at least 1"))?;
            if n == 0 {
                return Err(bad("a whole number, at least 1"));
            }
            limits.max_sessions = Some(n);
        }
        "max-streams" => {
            let n: u16 = value
                .parse()
                .map_err(|_| bad("a whole number, 1 to 65535"))?;
            if n == 0 {
                return Err(bad("a whole number, 1 to 65535"));
            }
            limits.max_streams = Some(n);
        }
        _ => return Err(LineProblem::UnknownWord(word.to_string())),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    const SECRET: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

    #[test]
    fn a_table_with_limits_comments_and_blank_lines() {
        let text = format!(
            "# lab keys\n\nalice {SECRET} max-time=60 max-rate=1G max-sessions=2 max-streams=4 relay\n\
             bob {SECRET}\n"
        );
        let table = KeyTable::parse(&text).unwrap();
        assert_eq!(table.len(), 2);
        let alice = table.get(&UserName::new("alice").unwrap()).unwrap();
        assert_eq!(
            alice.limits,
            KeyLimits {
                max_time: Some(Duration::from_secs(60)),
                max_rate_bps: Some(1_000_000_000),
                max_sessions: Some(2),
                max_streams: Some(4),
                relay: true,
            }
        );
        let bob = table.get(&UserName::new("bob").unwrap()).unwrap();
        assert_eq!(bob.limits, KeyLimits::default());
    }

    #[test]
    fn every_bad_line_is_named() {
        let cases = [
            ("alice", LineProblem::NoSecret),
            ("alice c2hvcnQ=", LineProblem::BadSecret),
            (&format!("al ice {SECRET}")[..], LineProblem::BadSecret),
            (
                &format!("alice {SECRET} max-time=0")[..],
                LineProblem::BadLimit {
                    word: "max-time=0".into(),
                    why: "seconds, above 0",
                },
            ),
            (
                &format!("alice {SECRET} max-sessions=x")[..],
                LineProblem::BadLimit {
                    word: "max-sessions=x".into(),
                    why: "a whole number, at least 1",
                },
            ),
            (
                &format!("alice {SECRET} fast")[..],
                LineProblem::UnknownWord("fast".into()),
            ),
        ];
        for (line, problem) in cases {
            let text = format!("# first\n{line}\n");
            assert_eq!(KeyTable::parse(&text), Err((2, problem)), "{line}");
        }
        let twice = format!("a {SECRET}\na {SECRET}\n");
        assert_eq!(
            KeyTable::parse(&twice),
            Err((2, LineProblem::Duplicate("a".into())))
        );
        assert!(matches!(
            KeyTable::parse(&format!("a/b {SECRET}")),
            Err((1, LineProblem::BadName(_)))
        ));
    }

    #[test]
    fn files_open_to_others_are_refused_and_client_files_hold_one_key() {
        let dir = std::env::temp_dir().join(format!("lr-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("alice.key");
        std::fs::write(&path, format!("alice {SECRET}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = ClientKey::load(&path).unwrap_err();
        assert!(err.to_string().contains("mode 0644"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(ClientKey::load(&path).unwrap().name.as_str(), "alice");
        std::fs::write(&path, format!("a {SECRET}\nb {SECRET}\n")).unwrap();
        assert!(matches!(
            ClientKey::load(&path),
            Err(KeyError::NotOne { count: 2, .. })
        ));
        let missing = ClientKey::load(&dir.join("none")).unwrap_err();
        assert!(matches!(missing, KeyError::Read { .. }), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
