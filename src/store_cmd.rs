//! `linerate runs` and `linerate show`: the stored runs as a listing (table, JSON or CSV) and
//! one stored run in full. The flags they share with the test commands, and storing, are
//! `store_args`'s.
//!
//! Times are printed, and `--since` dates read, in the local time zone. stdout is the listing
//! or the record; nothing else is printed there.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use pgstore::Access;
use record::{RunId, StoredRun};
use report::stored::RunList;
use report::Format;
use results::store::{Filter, StoreError};

use crate::output::TableFormat;
use crate::report_cmd::select::noted;
use crate::store_args::{resolve_db, store_error, RunFilterArgs};

/// `linerate runs`.
#[derive(Debug, Clone, Default, Args)]
pub struct RunsArgs {
    /// Only runs carrying every tag of these tag sets (driver=a, or driver=a,mtu=9000), as
    /// compare names them: the same as --tag for each tag.
    #[arg(value_name = "TAGSET")]
    pub tagsets: Vec<String>,
    #[command(flatten)]
    pub filter: RunFilterArgs,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = TableFormat::Table)]
    pub format: TableFormat,
    /// Print a JSON array instead of the table: the same as --format json.
    #[arg(long, conflicts_with_all = ["csv", "format"])]
    pub json: bool,
    /// Print CSV (a header line, then one line per run) instead of the table: the same as
    /// --format csv.
    #[arg(long, conflicts_with = "format")]
    pub csv: bool,
    /// Only the newest N runs that match (still listed oldest first).
    #[arg(long, visible_alias = "last", value_name = "N")]
    pub limit: Option<usize>,
    /// Results database, a file or postgresql://USER@HOST/DB (default: $LINERATE_DB, else
    /// $XDG_DATA_HOME/linerate/results.sqlite).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
}

/// `linerate show`.
#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// The run, as `linerate runs` lists it: 12 or #12.
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Print the stored run as one JSON document: {id, stored_at_unix_ms, tags, host, record}.
    #[arg(long)]
    pub json: bool,
    /// Results database, a file or postgresql://USER@HOST/DB (default: $LINERATE_DB, else
    /// $XDG_DATA_HOME/linerate/results.sqlite).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
}

/// `linerate runs`: the stored runs that match (the newest `--limit N` of them), oldest first,
/// as a table, JSON or CSV.
pub fn runs(args: &RunsArgs) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    runs_to(args, &mut out)?;
    out.flush()?;
    Ok(())
}

/// [`runs`] into `out`.
pub fn runs_to(args: &RunsArgs, out: &mut dyn Write) -> Result<()> {
    let pps = args.filter.pps_only();
    let mut filter = Filter {
        last: args.limit.filter(|_| !pps),
        ..args.filter.filter()?
    };
    let sets = args.tagsets.iter().flat_map(|set| set.split(','));
    let words: Vec<String> = (args.filter.tags.tag.iter().map(String::as_str))
        .chain(sets)
        .map(str::to_owned)
        .collect();
    filter.tags = crate::store_args::parse_tags(&words)?;
    let location = resolve_db(args.db.as_deref())?;
    let rows = match pgstore::open(&location, Access::Read) {
        Ok(mut store) => noted(store.list(&filter).map_err(|e| store_error(e, false))?),
        Err(StoreError::Missing { .. }) => {
            eprintln!("linerate: no runs stored yet ({location} does not exist)");
            Vec::new()
        }
        Err(e) => return Err(store_error(e, false)),
    };
    let rows = match pps {
        true => report::pps::cells_of(rows, args.limit),
        false => rows,
    };
    let format = args.format.with(args.json, args.csv);
    Ok(report::write(out, &RunList(&rows), format, None)?)
}

/// `linerate import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Files written by `linerate export --format stored` (one stored run per line).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// The database to import into (default: $LINERATE_DB, else
    /// $XDG_DATA_HOME/linerate/results.sqlite); a file path or postgresql://USER@HOST/DB.
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
}

/// `linerate import`: every run of the files, each in its own transaction, keeping its tags,
/// host facts and time of storing (ids are the new database's). Every line is read (each to a
/// bound) and checked, an over-limit run refused, before the first is stored.
pub fn import(args: &ImportArgs) -> Result<()> {
    let mut runs: Vec<StoredRun> = Vec::new();
    for file in &args.files {
        let text = std::fs::File::open(file)
            .map_err(|e| anyhow!("{}: cannot read it: {e}", file.display()))?;
        for run in results::store::read_stored(std::io::BufReader::new(text)) {
            runs.push(run.map_err(|e| anyhow!("{} {e}", file.display()))?);
        }
    }
    let location = resolve_db(args.db.as_deref())?;
    let mut store = pgstore::open(&location, Access::Write).map_err(|e| store_error(e, false))?;
    let ids = runs
        .iter()
        .map(|run| store.insert_stored(run).map_err(|e| store_error(e, false)))
        .collect::<Result<Vec<_>>>()?;
    match (ids.first(), ids.last()) {
        (Some(a), Some(b)) => eprintln!(
            "linerate: imported {} runs into {location} as {a} to {b}",
            ids.len()
        ),
        _ => eprintln!("linerate: nothing to import"),
    }
    Ok(())
}

/// `linerate show RUN`: one stored run in full.
pub fn show(args: &ShowArgs) -> Result<()> {
    let mut out = crate::output::stdout(!args.json);
    show_to(args, &mut out)?;
    out.flush()?;
    Ok(())
}

/// [`show`] into `out`.
pub fn show_to(args: &ShowArgs, out: &mut dyn Write) -> Result<()> {
    let id: RunId = args
        .run
        .parse()
        .map_err(|e| anyhow!("linerate show {e}; `linerate runs` lists them"))?;
    let location = resolve_db(args.db.as_deref())?;
    let mut store = match pgstore::open(&location, Access::Read) {
        Ok(store) => store,
        Err(StoreError::Missing { path }) => bail!(
            "run {id}: no such run; no runs stored yet ({} does not exist)",
            path.display()
        ),
        Err(e) => return Err(store_error(e, false)),
    };
    let run = store.get(id).map_err(|e| store_error(e, false))?;
    let format = if args.json {
        Format::Json
    } else {
        Format::Table
    };
    Ok(report::write(out, &run, format, None)?)
}
