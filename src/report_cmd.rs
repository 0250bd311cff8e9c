//! Stored runs out of the results database and into people's hands: `linerate compare`
//! (side by side with ratios), `linerate report` (one self-contained HTML file), `linerate
//! chart` (SVG or PNG) and `linerate export` (JSON, JSON Lines, CSV, Markdown).
//!
//! This is glue: `select` turns the command line's items (`12`, `#12`, or a tag set such as
//! `driver=velocityget,mtu=9000`) into labeled columns of stored runs, and the `report` crate
//! formats them. Invariants: every item is parsed before the database is opened, so a bad item
//! is reported without touching it; the database is only read (opened as `linerate runs` opens
//! it); a file named by `--out` is written whole or not at all (`output::write_file`);
//! stdout carries only the output, stderr only warnings.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};
use clap::{Args, ValueEnum};
use report::chart::{self, ChartKind, ImageFormat};
use report::{Comparison, PpsMatrix};

use report::local_time::format_local;

pub mod select;

pub use select::Column;

/// `linerate compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Columns, the first being the baseline of every ratio: a stored run (12 or #12), or a
    /// tag set (driver=velocityget, or driver=a,mtu=9000 for runs carrying all of these tags)
    /// standing for the median of its runs.
    #[arg(value_name = "RUN_OR_TAGSET", required = true)]
    pub items: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = CompareFormatArg::Table)]
    pub format: CompareFormatArg,
    #[command(flatten)]
    pub json: crate::output::JsonFlag,
    /// Only runs of this kind within each column (without it, each kind is compared in a
    /// section of its own).
    #[arg(long, value_name = "KIND", value_parser = crate::store_args::record_kinds())]
    pub kind: Option<String>,
    #[command(flatten)]
    pub tags: crate::store_args::TagArgs,
    /// Keep interrupted and incomplete runs (and runs with a failed stream) in their tag
    /// groups' medians; by default they are left out, and each column says how many.
    #[arg(long)]
    pub include_incomplete: bool,
    /// Results database, a file or postgresql://USER@HOST/DB (default: $LINERATE_DB, else
    /// $XDG_DATA_HOME/linerate/results.sqlite).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
}

/// How `linerate compare` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormatArg {
    /// A terminal table (as wide as the terminal, or $COLUMNS when set).
    Table,
    /// A Markdown table.
    Markdown,
    /// CSV: metric, unit, better, then each column and its ratio to the first, raw numbers
    /// (one kind of test: add --kind when the runs are of several).
    Csv,
    /// JSON: {kind, columns, rows: [{metric, unit, better, values, ratios}]}; an array of
    /// them, one per kind, when the runs are of several kinds.
    Json,
}

/// `linerate report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Columns, as `linerate compare` takes them (12, #12, driver=a or driver=a,mtu=9000);
    /// none: every stored run that passes --tag, --kind and --since, grouped into one column per
    /// kind and tag set (an untagged run is a column of its own; `linerate pps` cells go to the
    /// packet-rate matrices instead, one per execution and engine).
    #[arg(value_name = "RUN_OR_TAGSET")]
    pub items: Vec<String>,
    #[command(flatten)]
    pub filter: crate::store_args::RunFilterArgs,
    /// The HTML file to write (replaced whole, never half-written).
    #[arg(long, short = 'o', value_name = "PATH")]
    pub out: PathBuf,
    /// Page title and heading.
    #[arg(long, value_name = "TEXT", default_value = "linerate report")]
    pub title: String,
    /// Keep interrupted and incomplete runs (and runs with a failed stream) in their tag
    /// groups' medians; by default they are left out, and each section says how many.
    #[arg(long)]
    pub include_incomplete: bool,
    /// Results database, a file or postgresql://USER@HOST/DB (default: $LINERATE_DB, else
    /// $XDG_DATA_HOME/linerate/results.sqlite).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
}

/// `linerate chart`.
#[derive(Debug, Clone, Args)]
pub struct ChartArgs {
    /// Series: stored runs (12 or #12) or tag sets (driver=a, driver=a,mtu=9000), each labeled
    /// with its tags.
    #[arg(value_name = "RUN_OR_TAGSET", required = true)]
    pub items: Vec<String>,
    /// Which chart (default: the first of these the runs have data for, rpm when every run
    /// is a `linerate rpm` direction; pps needs `linerate pps` cells).
    #[arg(long = "type", value_enum, value_name = "CHART")]
    pub chart_type: Option<ChartKindArg>,
    #[command(flatten)]
    pub tags: crate::store_args::TagArgs,
    /// The image to write: .svg, or .png (the SVG rasterised with the system's fonts).
    #[arg(long, short = 'o', value_name = "PATH")]
    pub out: PathBuf,
    /// PNG only: pixels per SVG pixel (2 gives 1600x900).
    #[arg(long, value_name = "FACTOR", default_value_t = 2.0)]
    pub scale: f32,
    /// Results database, a file or postgresql://USER@HOST/DB (default: $LINERATE_DB, else
    /// $XDG_DATA_HOME/linerate/results.sqlite).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
}

/// The charts `linerate chart` draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChartKindArg {
    /// Throughput per interval over time, one line per run.
    Throughput,
    /// Throughput and both ends' CPU, one bar group per column (medians).
    ThroughputCpu,
    /// Round-trip latency percentiles of request/response runs, one line per column.
    LatencyCdf,
    /// Throughput against write size, one line per column.
    MessageSize,
    /// Packets/s per frame size and flow count against the line rate (`linerate pps` cells).
    Pps,
    /// Goodput, connections and round trips over time of `linerate rpm` directions, side by
    /// side (the default when every run is one).
    Rpm,
}

impl From<ChartKindArg> for ChartKind {
    fn from(k: ChartKindArg) -> ChartKind {
        match k {
            ChartKindArg::Throughput => ChartKind::Throughput,
            ChartKindArg::ThroughputCpu => ChartKind::ThroughputCpu,
            ChartKindArg::LatencyCdf => ChartKind::LatencyCdf,
            ChartKindArg::MessageSize => ChartKind::MessageSize,
            ChartKindArg::Pps => ChartKind::Pps,
            ChartKindArg::Rpm => ChartKind::Rpm,
        }
    }
}

/// `linerate export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// Runs to export: stored runs (12 or #12) or tag sets (driver=a, driver=a,mtu=9000);
    /// none with `--format stored`: every stored run.
    #[arg(value_name = "RUN_OR_TAGSET")]
    pub items: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = ExportFormatArg::Json)]
    pub format: ExportFormatArg,
    #[command(flatten)]
    pub json: crate::output::JsonFlag,
    #[command(flatten)]
    pub tags: crate::store_args::TagArgs,
    /// Write to this file (replaced whole, never half-written) instead of stdout.
    #[arg(long, short = 'o', value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Results database, a file or postgresql://USER@HOST/DB (default: $LINERATE_DB, else
    /// $XDG_DATA_HOME/linerate/results.sqlite).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
}

/// How `linerate export` writes runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormatArg {
    /// One JSON array of {label, tags, run}, `run` being the full stored record.
    Json,
    /// One {label, tags, run} object per line (JSON Lines).
    Jsonl,
    /// One row per interval per direction per run (docs/RESULTS.md lists the columns).
    Csv,
    /// A Markdown table, one line per run.
    Markdown,
    /// Every stored field, one run per line ({id, stored_at_unix_ms, tags, host, record}):
    /// what `linerate import` reads into another database, nothing lost.
    Stored,
}

/// Says (stderr) how many runs each section's groups left out of their medians.
fn note_left_out(cmps: &[Comparison]) {
    for line in report::left_out_notes(cmps) {
        eprintln!("linerate: {line}");
    }
}

/// `linerate compare`: the items side by side, metric by metric, each later column also as a
/// ratio to the first.
pub fn compare(args: &CompareArgs) -> Result<()> {
    let filter = args.tags.filter(args.kind.as_deref())?;
    let columns = select::columns(&args.items, &filter, args.db.as_deref())?;
    let labeled: Vec<_> = columns.iter().map(select::labeled).collect();
    let cmps = Comparison::by_kind(&labeled, args.include_incomplete);
    let format = crate::output::format_of(args.format, args.json)?;
    crate::output::print(
        &report::Comparisons(&cmps),
        format,
        report::fold::terminal_width(),
    )?;
    note_left_out(&cmps);
    Ok(())
}

/// `linerate export`: the items' full runs, to stdout or `--out`.
pub fn export(args: &ExportArgs) -> Result<()> {
    let mut buf = Vec::new();
    if args.format == ExportFormatArg::Stored && !args.json.json {
        for run in select::stored(&args.items, args.db.as_deref())? {
            serde_json::to_writer(&mut buf, &run)?;
            buf.push(b'\n');
        }
    } else {
        if args.items.is_empty() {
            bail!("name the runs or tag sets to export (--format stored exports every run)");
        }
        let columns = select::columns(&args.items, &args.tags.filter(None)?, args.db.as_deref())?;
        let labeled: Vec<_> = columns.iter().map(select::labeled).collect();
        let format = crate::output::format_of(args.format, args.json)?;
        report::write(&mut buf, &report::Runs(&labeled), format, None)?;
    }
    match &args.out {
        Some(path) => crate::output::write_file("--out", path, &buf),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(&buf)?;
            stdout.flush()?;
            Ok(())
        }
    }
}

/// `linerate chart`: one chart of the items, as SVG or PNG.
pub fn chart(args: &ChartArgs) -> Result<()> {
    let format = ImageFormat::of(&args.out).map_err(|e| anyhow::anyhow!("--out {e}"))?;
    if format == ImageFormat::Png && !(args.scale > 0.0 && args.scale <= 16.0) {
        bail!(
            "--scale {}: must be above 0 and at most 16, e.g. --scale 2",
            args.scale
        );
    }
    let columns = select::columns(&args.items, &args.tags.filter(None)?, args.db.as_deref())?;
    let labeled: Vec<_> = columns.iter().map(select::labeled).collect();
    let matrices = PpsMatrix::of_cells(columns.iter().flat_map(|c| &c.runs));
    let kind = match args.chart_type {
        Some(k) => ChartKind::from(k),
        None if chart::all_rpm(&labeled) => ChartKind::Rpm,
        None => chart::applicable(&labeled)
            .first()
            .copied()
            .or((!matrices.is_empty()).then_some(ChartKind::Pps))
            .ok_or_else(|| anyhow!("{}: nothing to chart in these runs", args.items.join(" ")))?,
    };
    let drawn = match kind {
        ChartKind::Pps if !matrices.is_empty() => chart::pps_chart(&matrices)?,
        ChartKind::Pps => bail!(
            "--kind pps: none of these runs is a `linerate pps` cell (tagged frame_bytes and \
             flows); give the cells' tags, e.g. `linerate chart flows=1 --kind pps`"
        ),
        k => chart::render(k, &labeled)?,
    };
    crate::output::write_file("--out", &args.out, &drawn.encoded(format, args.scale)?)
}

/// `linerate report`: one self-contained HTML file (inline CSS and SVG, no external URL) with
/// the comparison, the runs, every chart they support and the packet-rate matrices.
pub fn report(args: &ReportArgs) -> Result<()> {
    let filter = args.filter.filter()?;
    let (mut columns, cells, db) = if args.items.is_empty() {
        select::grouped(&filter, args.db.as_deref())?
    } else {
        let db = crate::store_args::resolve_db(args.db.as_deref())?;
        (
            select::columns(&args.items, &filter, args.db.as_deref())?,
            vec![],
            db,
        )
    };
    let matrices = PpsMatrix::of_cells(columns.iter().flat_map(|c| &c.runs).chain(&cells));
    if args.filter.pps_only() {
        columns.clear();
    }
    let labeled: Vec<_> = columns.iter().map(select::labeled).collect();
    note_left_out(&Comparison::by_kind(&labeled, args.include_incomplete));
    let meshes = report::MeshMatrix::of_runs(columns.iter().flat_map(|c| &c.runs));
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let subtitle = format!("Generated {} from {db}", format_local(now_ms));
    let html = report::html::render(&report::html::Report {
        title: &args.title,
        subtitle: Some(&subtitle),
        columns: &labeled,
        pps: &matrices,
        meshes: &meshes,
        include_unfinished: args.include_incomplete,
    })?;
    crate::output::write_file("--out", &args.out, html.as_bytes())
}
