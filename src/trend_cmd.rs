//! `linerate trend [ITEM…]`: each series' history of one metric with its change points. A
//! series is an item's runs (items as `compare` takes them), or, without items, every stored
//! run to one target, of one kind and the same settings (`report::trend::series_by_kind`); in
//! time order, or in a tag's order (`--by`).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use record::{RunStatus, StoredRun};
use report::trend::{series_by_kind, trend, SeriesRuns};

use crate::report_cmd::select;

/// `linerate trend`.
#[derive(Debug, Clone, Args)]
pub struct TrendArgs {
    /// Series: tag sets (host=a, or kernel=6.1,mtu=9000) or runs, as `compare` takes them, one
    /// series per item, kind and settings. Without items: every stored run, a series per kind,
    /// target and settings (direction, streams, lengths, rates, engine, send and receive
    /// modes…: a change of settings starts a new series, never a change point).
    #[arg(value_name = "TAGSET")]
    pub items: Vec<String>,
    /// The metric (`compare`'s row names: throughput, transactions, "latency p99", loss, rpm…);
    /// default: throughput, or transactions for rr and crr.
    #[arg(long, value_name = "NAME")]
    pub metric: Option<String>,
    /// Order each series by this tag's value (numbers and versions in their natural order,
    /// 6.1 < 6.9 < 6.10; runs without the tag are left out) instead of by time.
    #[arg(long, value_name = "TAG")]
    pub by: Option<String>,
    /// Significance of a change point (the permutation test's p at most this).
    #[arg(long, value_name = "P", default_value_t = analysis::change_points::ALPHA)]
    pub alpha: f64,
    /// Smallest change reported, in percent of the level before it: a significant drift
    /// smaller than this is no change point (0: every significant one).
    #[arg(long, value_name = "PCT", default_value_t = analysis::change_points::MIN_CHANGE_PCT)]
    pub min_change: f64,
    /// Only runs of this kind.
    #[arg(long, value_name = "KIND", value_parser = crate::store_args::record_kinds())]
    pub kind: Option<String>,
    #[command(flatten)]
    pub tags: crate::store_args::TagArgs,
    /// Keep interrupted and incomplete runs (left out by default: they would read low).
    #[arg(long)]
    pub include_incomplete: bool,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = TrendFormat::Table)]
    pub format: TrendFormat,
    #[command(flatten)]
    pub json: crate::output::JsonFlag,
    /// Also draw the series and their change points to this image: .svg, or .png.
    #[arg(long, value_name = "PATH")]
    pub chart: Option<PathBuf>,
    /// Results database, a file or postgresql://USER@HOST/DB (default: $LINERATE_DB, else
    /// $XDG_DATA_HOME/linerate/results.sqlite).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
}

/// How `linerate trend` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TrendFormat {
    /// A few lines per series.
    Table,
    /// {"kind":"trend","series":[{key, metric, points, change_points}]}.
    Json,
}

/// Prints each series' history and change points.
pub fn run(args: &TrendArgs) -> Result<()> {
    let at = analysis::change_points::Threshold::new(args.alpha, args.min_change)?;
    let kind = crate::store_args::parse_kind_arg(args.kind.as_deref())?;
    let keep = |r: &StoredRun| {
        kind.is_none_or(|k| r.record.kind == k)
            && (args.include_incomplete || RunStatus::of(&r.record).is_ok())
    };
    let runs = series_by_kind(series(args)?, keep, args.by.as_deref());
    let t = trend(&SeriesRuns::of_stored(&runs), args.metric.as_deref(), at)?;
    if t.series.iter().all(|s| s.points.len() < 2) {
        bail!("no series with two runs or more to draw a trend from (see `linerate runs`)");
    }
    if let Some(path) = &args.chart {
        crate::commands::write_chart(path, report::chart::trend_chart(&t)?)?;
    }
    crate::output::print(&t, crate::output::format_of(args.format, args.json)?, None)
}

/// The series' runs by key: one per item, or per target without items.
fn series(args: &TrendArgs) -> Result<Vec<(String, Vec<StoredRun>)>> {
    let filter = args.tags.filter(None)?;
    if !args.items.is_empty() {
        let columns = select::columns(&args.items, &filter, args.db.as_deref())?;
        return Ok(columns.into_iter().map(|c| (c.label, c.runs)).collect());
    }
    let mut runs = select::stored(&[], args.db.as_deref())?;
    runs.retain(|r| filter.passes(r));
    Ok(report::trend::by_target(runs))
}
