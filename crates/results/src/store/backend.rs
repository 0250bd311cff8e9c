//! The one interface every results store implements ([`ResultStore`]: the embedded SQLite
//! [`Store`], and PostgreSQL in the `pgstore` crate), and where a store is ([`StoreLocation`]:
//! a file path or a `postgresql://` URL, as `--db` and `LINERATE_DB` give it).

use std::fmt;
use std::path::PathBuf;

use record::{HostFacts, RunId, RunRecord, RunRow, StoredRun, Tags};

use super::{Filter, Listing, Store, StoreError};

/// A results store: runs with their tags and host facts, listed and found by tags.
///
/// Every implementation keeps the same records (the whole [`RunRecord`] as JSON, so nothing is
/// lost), the same tags and the same headline figures ([`super::Figures`]), writes a run in
/// one transaction, brings its schema up to date once (and refuses a newer one), and lists
/// runs oldest first. Every one holds a run's JSON to [`record::bounds::MAX_RECORD_BYTES`]:
/// a longer one is refused when written ([`StoreError::TooLarge`]) and left unread when
/// stored ([`super::RowFault::TooLarge`]); and one bad row is reported by id, never fatal to
/// a listing.
pub trait ResultStore: Send {
    /// The store as messages name it: the file, or the server's URL without its password.
    fn location(&self) -> String;
    /// The schema version of the store.
    fn version(&mut self) -> Result<u32, StoreError>;
    /// Stores one run, its tags and its host's facts, in one transaction, stamped
    /// `stored_at_unix_ms`.
    fn insert_at(
        &mut self,
        record: &RunRecord,
        tags: &Tags,
        host: &HostFacts,
        stored_at_unix_ms: u64,
    ) -> Result<RunId, StoreError>;
    /// Stores one run now.
    fn insert(
        &mut self,
        record: &RunRecord,
        tags: &Tags,
        host: &HostFacts,
    ) -> Result<RunId, StoreError> {
        self.insert_at(record, tags, host, super::now_unix_ms())
    }
    /// Stores a run read from another store (`linerate import`) as it was stored there: its
    /// record, tags, host facts and time of storing (it gets an id of this store's).
    fn insert_stored(&mut self, run: &StoredRun) -> Result<RunId, StoreError> {
        self.insert_at(&run.record, &run.tags, &run.host, run.stored_at_unix_ms)
    }
    /// The full stored run `id`. A run that cannot be read is [`StoreError::BadRow`] naming
    /// it: one whose stored JSON is longer than [`record::bounds::MAX_RECORD_BYTES`] is judged
    /// by its stored length and never loaded.
    fn get(&mut self, id: RunId) -> Result<StoredRun, StoreError>;
    /// The runs that match `filter`, oldest first; a run that cannot be listed (JSON that is
    /// not JSON, a column of the wrong type or an unknown kind, a newer layout, over the
    /// limit) is skipped and named in [`Listing::skipped`], never failing the others.
    fn list(&mut self, filter: &Filter) -> Result<Listing<RunRow>, StoreError>;
    /// Every run carrying all of `tags`, full records, oldest first; a run that cannot be
    /// read is skipped and named as by [`ResultStore::list`].
    fn find(&mut self, tags: &Tags) -> Result<Listing<StoredRun>, StoreError>;
}

impl ResultStore for Store {
    fn location(&self) -> String {
        self.path().display().to_string()
    }
    fn version(&mut self) -> Result<u32, StoreError> {
        Store::version(self)
    }
    fn insert_at(
        &mut self,
        record: &RunRecord,
        tags: &Tags,
        host: &HostFacts,
        stored_at_unix_ms: u64,
    ) -> Result<RunId, StoreError> {
        Store::insert_at(self, record, tags, host, stored_at_unix_ms)
    }
    fn get(&mut self, id: RunId) -> Result<StoredRun, StoreError> {
        Store::get(self, id)
    }
    fn list(&mut self, filter: &Filter) -> Result<Listing<RunRow>, StoreError> {
        Store::list(self, filter)
    }
    fn find(&mut self, tags: &Tags) -> Result<Listing<StoredRun>, StoreError> {
        Store::find(self, tags)
    }
}

/// Where a results store is.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// An SQLite file.
    File(PathBuf),
    /// A PostgreSQL server: `postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=…]`.
    Postgres(String),
}

impl StoreLocation {
    /// Reads `--db`: `postgresql://…` or `postgres://…` is a server, any other `SCHEME://…`
    /// is refused, anything else is a file path.
    pub fn parse(given: &str) -> Result<StoreLocation, StoreError> {
        let lower = given.to_ascii_lowercase();
        if lower.starts_with("postgresql://") || lower.starts_with("postgres://") {
            return Ok(StoreLocation::Postgres(given.to_string()));
        }
        let scheme = given.split_once("://").map(|(s, _)| s);
        if scheme.is_some_and(|s| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        }) {
            return Err(StoreError::UnknownScheme {
                given: redact(given),
            });
        }
        Ok(StoreLocation::File(PathBuf::from(given)))
    }
}

impl StoreLocation {
    /// The location as `--db` takes it again, password included (never for messages: its
    /// `Display` leaves the password out).
    pub fn as_arg(&self) -> String {
        match self {
            StoreLocation::File(p) => p.display().to_string(),
            StoreLocation::Postgres(url) => url.clone(),
        }
    }
}

/// A URL without the passwords it may carry: the user part's (`postgresql://u:secret@h/db` is
/// `postgresql://u:***@h/db`) and any query parameter named `password` or ending in it
/// (`?password=secret`, `&sslpassword=secret`: `***`). Every message that shows a database
/// URL shows it through this.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    // The user part ends at the last '@' before the query (a password may hold an '@').
    let mut out = format!("{scheme}://");
    match before_query.rsplit_once('@') {
        Some((auth, host)) => match auth.split_once(':') {
            Some((user, _)) => out.push_str(&format!("{user}:***@{host}")),
            None => out.push_str(before_query),
        },
        None => out.push_str(before_query),
    }
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((key, _)) if is_password_key(key) => format!("{key}=***"),
                _ => param.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

/// Whether `url` carries a password (in its user part or a query parameter): what a long-lived
/// command refuses on its command line, where `ps` would show it.
pub fn has_password(url: &str) -> bool {
    redact(url) != url
}

fn is_password_key(key: &str) -> bool {
    key.to_ascii_lowercase().ends_with("password")
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::File(p) => write!(f, "{}", p.display()),
            StoreLocation::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

impl fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreLocation({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_servers_paths_are_files_and_other_schemes_are_refused() {
        assert_eq!(
            StoreLocation::parse("postgresql://u@db/lr").unwrap(),
            StoreLocation::Postgres("postgresql://u@db/lr".into())
        );
        assert!(matches!(
            StoreLocation::parse("postgres://u@db/lr"),
            Ok(StoreLocation::Postgres(_))
        ));
        assert_eq!(
            StoreLocation::parse("runs/x.sqlite").unwrap(),
            StoreLocation::File("runs/x.sqlite".into())
        );
        let err = StoreLocation::parse("mysql://u:pw@db/lr")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "mysql://u:***@db/lr: unknown database scheme (give a file path, or postgresql://USER@HOST/DB)");
        let shown = StoreLocation::parse("postgresql://u:pw@db:5433/lr")
            .unwrap()
            .to_string();
        assert_eq!(shown, "postgresql://u:***@db:5433/lr");
    }

    #[test]
    fn every_password_a_url_carries_is_redacted() {
        for (url, shown) in [
            (
                "postgresql://u@host/db?password=hunter2",
                "postgresql://u@host/db?password=***",
            ),
            (
                "postgresql://u:hunter2@host/db?sslmode=disable&PassWord=hunter2&sslpassword=x",
                "postgresql://u:***@host/db?sslmode=disable&PassWord=***&sslpassword=***",
            ),
            (
                "postgresql://u:hun@ter2@host/db",
                "postgresql://u:***@host/db",
            ),
            (
                "postgres://host/db?user=u&password=",
                "postgres://host/db?user=u&password=***",
            ),
        ] {
            assert_eq!(redact(url), shown);
            assert!(!redact(url).contains("hunter2") && !redact(url).contains("ter2"));
            assert!(has_password(url), "{url}");
        }
        for url in [
            "postgresql://u@host/db?sslmode=disable",
            "postgresql://host/db",
            "a/b.sqlite",
        ] {
            assert_eq!(redact(url), url);
            assert!(!has_password(url), "{url}");
        }
        let err = StoreLocation::parse("mysql://u@db/x?password=hunter2").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}
