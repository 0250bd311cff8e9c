//! Round-trip latency distribution of request/response runs, one series per column (the
//! median of each percentile over the column's runs).
//!
//! The y axis is the percentile on a "nines" scale, `−log10(1 − p)`, so p90, p99, p99.9 and
//! p99.99 are evenly spaced and the tail is visible; the maximum is drawn one step above
//! p99.99. The x axis is µs on a log scale. Only the recorded percentiles are known (the
//! histogram itself is not stored), so the curve joins them with straight segments.

use plotters::chart::SeriesLabelPosition;

use super::line::{self, Axis, LinePlot};
use super::scale::{log10_ticks, short};
use super::{ChartKind, Series};
use crate::labeled::median;
use crate::{Error, LabeledRuns, Result};

/// The percentiles drawn: (nines position, tick label, value of the summary).
type Percentile = (
    f64,
    &'static str,
    fn(&measure::latency::LatencySummary) -> f64,
);

const LEVELS: [Percentile; 7] = [
    (0.0, "min", |l| l.min),
    // −log10(1 − 0.5) = log10 2.
    (std::f64::consts::LOG10_2, "50%", |l| l.p50),
    (1.0, "90%", |l| l.p90),
    (2.0, "99%", |l| l.p99),
    (3.0, "99.9%", |l| l.p999),
    (4.0, "99.99%", |l| l.p9999),
    (5.0, "max", |l| l.max),
];

fn summaries(c: &LabeledRuns) -> Vec<measure::latency::LatencySummary> {
    c.runs
        .iter()
        .filter_map(|r| r.summary.rr().and_then(|rr| rr.latency_us))
        .collect()
}

/// Whether any run has latency percentiles.
pub(crate) fn has_data(columns: &[LabeledRuns]) -> bool {
    columns.iter().any(|c| !summaries(c).is_empty())
}

/// One series per column with latency: `(log10 µs, nines)` per percentile.
pub(crate) fn series(columns: &[LabeledRuns]) -> Vec<Series> {
    columns
        .iter()
        .filter_map(|c| {
            let sums = summaries(c);
            if sums.is_empty() {
                return None;
            }
            let points = LEVELS
                .iter()
                .filter_map(|(nines, _, f)| {
                    let us = median(sums.iter().map(f))?;
                    (us > 0.0).then(|| (us.log10(), *nines))
                })
                .collect();
            Some(Series {
                label: c.series_label(),
                points,
            })
        })
        .collect()
}

pub(crate) fn draw(columns: &[LabeledRuns]) -> Result<String> {
    let series = series(columns);
    if series.is_empty() {
        return Err(Error::NoData {
            chart: ChartKind::LatencyCdf.name(),
            reason: "none of these runs has latency percentiles; they come from request/response runs (linerate rr, linerate crr)".into(),
        });
    }
    let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let lo = 10f64.powf(xs().fold(f64::INFINITY, f64::min)) / 1.25;
    let hi = 10f64.powf(xs().fold(f64::NEG_INFINITY, f64::max)) * 1.25;
    let x_fmt = |v: &f64| short(10f64.powf(*v));
    let y_fmt = |v: &f64| {
        LEVELS
            .iter()
            .find(|(n, _, _)| (n - v).abs() < 1e-6)
            .map(|(_, label, _)| label.to_string())
            .unwrap_or_default()
    };
    line::draw(LinePlot {
        kind: ChartKind::LatencyCdf,
        x: Axis {
            desc: "round trip (µs, log scale)".into(),
            range: lo.log10()..hi.log10(),
            ticks: Some(log10_ticks(lo, hi)),
            format: &x_fmt,
        },
        y: Axis {
            desc: "percentile (nines scale)".into(),
            range: 0.0..5.2,
            ticks: Some(LEVELS.iter().map(|l| l.0).collect()),
            format: &y_fmt,
        },
        series: &series,
        reference: None,
        markers: true,
        legend: SeriesLabelPosition::LowerRight,
    })
}
