//! `linerate check BASELINE CANDIDATE`: is the candidate's group of stored runs worse than the
//! baseline's, metric by metric? Exit 0 when nothing regressed, 1 when a metric regressed, 2 on
//! bad input or, after the check is printed, too few runs to decide (`--allow-undecided`: 0).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use report::check::{check, CheckOptions, Decision};

use crate::report_cmd::select::{self, Column};

/// `linerate check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// What the candidate is held against: a tag set (commit=abc, or kernel=6.1,mtu=9000 for
    /// runs carrying all of these tags) or a stored run (12 or #12), as `compare` takes them.
    #[arg(value_name = "BASELINE")]
    pub baseline: String,
    /// What is checked, the same way.
    #[arg(value_name = "CANDIDATE")]
    pub candidate: String,
    /// A change smaller than this is no regression, percent; default: three times each
    /// metric's noise across the baseline's runs (its robust coefficient of variation), at
    /// least 2 %.
    #[arg(long, value_name = "PCT", value_parser = parse_threshold)]
    pub threshold: Option<f64>,
    /// Check only this metric (repeatable; `compare`'s row names, e.g. throughput, "latency
    /// p99", loss, rpm). Default: goodput, CPU per GB, loss, transactions, latency p50/p99, RPM.
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
    /// Confidence of the intervals, percent.
    #[arg(long, value_name = "PCT", default_value_t = 95.0, value_parser = parse_level)]
    pub confidence: f64,
    /// Too few runs to decide passes (exit 0) instead of exit 2, naming the runs needed.
    #[arg(long)]
    pub allow_undecided: bool,
    /// Accepted from older scripts: too few runs fails by default now.
    #[arg(long, hide = true, conflicts_with = "allow_undecided")]
    pub strict: bool,
    /// Only runs of this kind on each side.
    #[arg(long, value_name = "KIND", value_parser = crate::store_args::record_kinds())]
    pub kind: Option<String>,
    #[command(flatten)]
    pub tags: crate::store_args::TagArgs,
    /// Keep interrupted and incomplete runs (left out by default: they would read low).
    #[arg(long)]
    pub include_incomplete: bool,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = CheckFormat::Table)]
    pub format: CheckFormat,
    #[command(flatten)]
    pub json: crate::output::JsonFlag,
    /// Results database, a file or postgresql://USER@HOST/DB (default: $LINERATE_DB, else
    /// $XDG_DATA_HOME/linerate/results.sqlite).
    #[arg(long, value_name = "PATH|URL")]
    pub db: Option<PathBuf>,
}

/// How `linerate check` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    /// A table and a RESULT line.
    Table,
    /// {"kind":"check", baseline, candidate, metrics: [...], decision}.
    Json,
    /// JUnit XML, a test case per metric, for CI systems.
    Junit,
}

/// `--threshold`'s value (clap prints the error after naming the flag).
fn parse_threshold(s: &str) -> Result<f64> {
    match s.trim_end_matches('%').trim().parse::<f64>() {
        Ok(v) if (0.0..100.0).contains(&v) => Ok(v / 100.0),
        _ => bail!("{s}: give a percentage from 0 to under 100, e.g. 5"),
    }
}

/// `--confidence`'s value (clap prints the error after naming the flag).
fn parse_level(s: &str) -> Result<f64> {
    match s.trim_end_matches('%').trim().parse::<f64>() {
        Ok(v) if (50.0..=99.9).contains(&v) => Ok(v),
        _ => bail!("{s}: give a confidence from 50 to 99.9 (percent), e.g. 95"),
    }
}

/// Runs the check and prints it; the exit code is the answer.
pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    for name in &args.metrics {
        report::check::find_metric(name)?;
    }
    let filter = args.tags.filter(args.kind.as_deref())?;
    let items = [args.baseline.clone(), args.candidate.clone()];
    let columns = select::columns(&items, &filter, args.db.as_deref())?;
    let [baseline, candidate] = [&columns[0], &columns[1]].map(|c| side(c, args));
    let kinds = report::check::kinds_of(columns.iter().flat_map(|c| &c.runs).map(|r| &r.record));
    if kinds.len() > 1 {
        bail!(
            "the runs are of {} kinds ({}): check compares one kind; add --kind KIND",
            kinds.len(),
            kinds.join(", ")
        );
    }
    let opts = CheckOptions {
        metrics: &args.metrics,
        threshold: args.threshold,
        level: args.confidence / 100.0,
    };
    let c = check(&baseline, &candidate, &opts)?;
    crate::output::print(&c, crate::output::format_of(args.format, args.json)?, None)?;
    match c.undecided() {
        Some(why) if !args.allow_undecided => bail!("{why}"),
        _ => Ok(ExitCode::from(u8::from(c.decision == Decision::Regressed))),
    }
}

/// A side's runs, without those that did not run whole unless asked.
fn side(c: &Column, args: &CheckArgs) -> report::LabeledRuns {
    let runs = select::labeled(c);
    match args.include_incomplete {
        true => runs,
        false => runs.leave_out_unfinished(),
    }
}
