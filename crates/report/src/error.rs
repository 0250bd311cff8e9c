//! The library's one error type. Messages name the input and say what to do.

use thiserror::Error;

/// Why an export, chart or report could not be written.
#[derive(Debug, Error)]
pub enum Error {
    /// Writing to the output failed. (Each of the three says the cause as its source, so
    /// `{:#}` names it once and a closed pipe is found in the chain.)
    #[error("writing the output")]
    Io(#[from] std::io::Error),
    /// The CSV writer failed.
    #[error("writing CSV")]
    Csv(#[from] csv::Error),
    /// The JSON writer failed.
    #[error("writing JSON")]
    Json(#[from] serde_json::Error),
    /// A chart was asked of runs that hold none of what it shows.
    #[error("{chart} chart: {reason}")]
    NoData {
        /// Which chart.
        chart: &'static str,
        /// What is missing and what would have it.
        reason: String,
    },
    /// plotters failed to draw (a bug, or data it cannot place, such as non-finite values).
    #[error("drawing the {chart} chart: {message}")]
    Draw {
        /// Which chart.
        chart: &'static str,
        /// plotters' message.
        message: String,
    },
    /// The SVG could not be rasterised.
    #[error("rendering PNG: {0}")]
    Png(String),
    /// CSV asked of a comparison over several kinds of test (a CSV file holds one table).
    #[error("CSV holds one kind of test and these runs are of several ({kinds}); give --kind KIND for one, or --format table|markdown|json for all")]
    MixedKinds {
        /// The kinds, comma-separated.
        kinds: String,
    },
    /// A metric named that has no such name.
    #[error("--metric {name}: no such metric; one of: {names}")]
    UnknownMetric {
        /// The name as given.
        name: String,
        /// Every metric's name, comma-separated.
        names: String,
    },
    /// A metric named for runs of kinds that have no such figure (`loss` of TCP runs).
    #[error("--metric {metric}: {kind} runs have no {metric}; it is a figure of {kinds}")]
    NotOfKind {
        /// The metric's name.
        metric: &'static str,
        /// The runs' kinds, comma-separated.
        kind: String,
        /// The kinds that have it, comma-separated.
        kinds: String,
    },
    /// A format asked of a document that is not written in it.
    #[error("--format {format}: {document} is written as {formats}")]
    NoFormat {
        /// What was to be written: `a comparison`.
        document: &'static str,
        /// The format asked for.
        format: &'static str,
        /// The formats it has, comma-separated.
        formats: String,
    },
    /// The HTML template failed to render (a bug in the template).
    #[error("rendering the HTML report: {0}")]
    Template(#[from] minijinja::Error),
}
