//! The results database from the command line, for every command that stores or reads runs:
//! the `--db/--no-store/--tag` flags every test takes ([`StoreArgs`]), the `--tag/--kind/
//! --since` filter of listings ([`RunFilterArgs`]), where the database is ([`resolve_db`]),
//! storing a finished run ([`RunStore`], from `pgstore`, and [`store_run`]).
//!
//! The database is `--db PATH|URL`, else `$LINERATE_DB`, else
//! `$XDG_DATA_HOME/linerate/results.sqlite` (`~/.local/share/linerate/results.sqlite`); a
//! `postgresql://` URL is a shared PostgreSQL store (`pgstore`).
//! Nothing here prints: the caller reports "stored as #12" on stderr.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use clap::Args;
use pgstore::Access;
pub use pgstore::RunStore;
use record::{parse_kind, RunId, RunRecord, Tags};
use results::store::{Filter, ResultStore, StoreError, StoreLocation};

use report::local_time::parse_since;

/// Where runs are stored, and how they are tagged (flattened into every test command).
#[derive(Debug, Clone, Default, Args)]
pub struct StoreArgs {
    /// Results database, a file or postgresql://USER@HOST/DB (default: $LINERATE_DB, else
    /// $XDG_DATA_HOME/linerate/results.sqlite, i.e. ~/.local/share/linerate/results.sqlite).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
    /// Do not store this run in the results database.
    #[arg(long, conflicts_with = "tag")]
    pub no_store: bool,
    /// Label the stored run, e.g. --tag driver=velocityget --tag mtu=9000 (repeatable; find
    /// runs later with `linerate runs --tag KEY=VALUE`).
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tag: Vec<String>,
}

/// `--tag` on the commands that compare or chart stored runs (`compare`, `check`, `trend`,
/// `chart`, `export`): only runs that also carry these tags, in every column.
#[derive(Debug, Clone, Default, Args)]
pub struct TagArgs {
    /// Only runs that carry this tag (repeatable: all of them; in every column where a command
    /// takes tag sets).
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tag: Vec<String>,
}

impl TagArgs {
    /// The store's filter of these tags and `kind`; a bad value is an error naming its flag.
    pub fn filter(&self, kind: Option<&str>) -> Result<Filter> {
        Ok(Filter {
            tags: parse_tags(&self.tag)?,
            kind: parse_kind_arg(kind)?,
            ..Filter::default()
        })
    }
}

/// Which stored runs a listing takes: `--tag`, `--kind`, `--since` (`linerate runs` and
/// `linerate report`).
#[derive(Debug, Clone, Default, Args)]
pub struct RunFilterArgs {
    #[command(flatten)]
    pub tags: TagArgs,
    /// Only runs of this kind (`pps`: the cells of `linerate pps`, each execution apart).
    #[arg(long, value_name = "KIND", value_parser = listing_kinds())]
    pub kind: Option<String>,
    /// Only runs started at or after DATE: YYYY-MM-DD (local midnight), YYYY-MM-DDTHH:MM or
    /// YYYY-MM-DDTHH:MM:SS (local time, or UTC with a Z, or with an offset such as +02:00).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
}

impl RunFilterArgs {
    /// The store's filter; a bad value is an error naming its flag.
    pub fn filter(&self) -> Result<Filter> {
        // `linerate pps`'s cells are UDP runs; `runs` and `report` keep only the cells.
        let kind = match self.pps_only() {
            true => Some(wire::TestKind::UdpStream.row().name),
            false => self.kind.as_deref(),
        };
        Ok(Filter {
            since_unix_ms: self
                .since
                .as_deref()
                .map(|s| parse_since(s).map_err(|e| anyhow!("--since {s}: {e}")))
                .transpose()?,
            ..self.tags.filter(kind)?
        })
    }

    /// Whether `--kind pps` asks for `linerate pps`'s cells only.
    pub fn pps_only(&self) -> bool {
        self.kind.as_deref() == Some("pps")
    }
}

/// `--kind KIND` as a test kind; the error names the flag.
pub fn parse_kind_arg(kind: Option<&str>) -> Result<Option<wire::TestKind>> {
    kind.map(parse_kind)
        .transpose()
        .map_err(|e| anyhow!("--kind {e}"))
}

/// The store a command uses: `--db`, else `$LINERATE_DB`, else the default file
/// ([`StoreLocation::resolve`]); a bad `--db` is an error naming the flag.
pub fn resolve_db(db: Option<&Path>) -> Result<StoreLocation> {
    StoreLocation::resolve(db).map_err(|e| match e {
        StoreError::NoDefault => anyhow!("{e}"),
        e => anyhow!("--db {e}"),
    })
}

/// Opens the store at `location` (see [`pgstore::open`]); a refusal is one line.
pub fn open_store(location: &StoreLocation, access: Access) -> Result<Box<dyn ResultStore>> {
    pgstore::open(location, access).map_err(|e| store_error(e, access == Access::Write))
}

/// Parses `--tag` values: one line naming the bad one.
pub fn parse_tags(items: &[String]) -> Result<Tags> {
    Tags::parse(items).map_err(|e| anyhow!("--tag {e}"))
}

impl StoreArgs {
    /// Checks the tags and opens the database (creating it on first use); `None` with
    /// `--no-store`.
    pub fn open(&self) -> Result<Option<RunStore>> {
        let tags = parse_tags(&self.tag)?;
        if self.no_store {
            return Ok(None);
        }
        let location = resolve_db(self.db.as_deref())?;
        let store = RunStore::open(&location, tags).map_err(|e| store_error(e, true))?;
        Ok(Some(store))
    }
}

/// Stores a finished (or interrupted) run as `args` say: `Ok(None)` with `--no-store`. Prints
/// nothing. Prefer [`StoreArgs::open`] before the test and [`RunStore::save`] after it, so a
/// bad database is reported before the test runs.
pub fn store_run(args: &StoreArgs, record: &RunRecord) -> Result<Option<RunId>> {
    match args.open()? {
        Some(mut store) => Ok(Some(store.save(record)?)),
        None => Ok(None),
    }
}

/// A store error as one line; when storing, says how to skip it.
pub(crate) fn store_error(e: StoreError, storing: bool) -> anyhow::Error {
    let hint = if storing {
        pgstore::storing_hint(&e)
    } else {
        ""
    };
    anyhow!("{e}{hint}")
}

/// A listing's `--kind`: a stored run's kind, or `pps` for `linerate pps`'s cells.
fn listing_kinds() -> clap::builder::PossibleValuesParser {
    let kinds = wire::TestKind::ALL.map(wire::TestKind::as_str);
    clap::builder::PossibleValuesParser::new(kinds.into_iter().chain(["pps"]))
}

/// `--kind`: a stored run's kind (`tcp_stream`, …), every one `wire::TestKind` has.
pub fn record_kinds() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(wire::TestKind::ALL.map(wire::TestKind::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_name_the_flag() {
        let err = parse_tags(&["mtu".into()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--tag mtu: a tag is KEY=VALUE, e.g. mtu=9000"
        );
        let twice = parse_tags(&["a=1".into(), "a=2".into()]).unwrap_err();
        assert!(twice.to_string().starts_with("--tag "), "{twice}");
    }
}
