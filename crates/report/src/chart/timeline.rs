//! Throughput per interval over time: one stepped series per run (each interval's rate held
//! over the interval), all directions added up.

use plotters::chart::SeriesLabelPosition;

use super::line::{self, Axis, LinePlot};
use super::scale::{decimal_unit, max_of, short, upto};
use super::{ChartKind, Series};
use crate::{Error, LabeledRuns, Result};

/// Whether any run has intervals.
pub(crate) fn has_data(columns: &[LabeledRuns]) -> bool {
    columns
        .iter()
        .any(|c| c.runs.iter().any(|r| !r.intervals.is_empty()))
}

/// One series per run with intervals: `(seconds, bits/s)` at each interval's start and end.
pub(crate) fn series(columns: &[LabeledRuns]) -> Vec<Series> {
    let mut out = Vec::new();
    for c in columns {
        let label = c.series_label();
        for (i, r) in c.runs.iter().enumerate() {
            if r.intervals.is_empty() {
                continue;
            }
            let mut points = Vec::with_capacity(r.intervals.len() * 2);
            for iv in &r.intervals {
                let bps: f64 = iv.flows.iter().map(|f| f.throughput_bps).sum();
                points.push((iv.start_s, bps));
                points.push((iv.end_s, bps));
            }
            let label = if c.runs.len() > 1 {
                format!("{label} [{}/{}]", i + 1, c.runs.len())
            } else {
                label.clone()
            };
            out.push(Series { label, points });
        }
    }
    out
}

pub(crate) fn draw(columns: &[LabeledRuns]) -> Result<String> {
    let mut series = series(columns);
    if series.is_empty() {
        return Err(Error::NoData {
            chart: ChartKind::Throughput.name(),
            reason: "none of these runs has per-interval samples".into(),
        });
    }
    let unit = decimal_unit(max_of(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
    ));
    for s in &mut series {
        for p in &mut s.points {
            p.1 /= unit.divisor;
        }
    }
    let end = max_of(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    let y_max = max_of(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let fmt = |v: &f64| short(*v);
    line::draw(LinePlot {
        kind: ChartKind::Throughput,
        x: Axis {
            desc: "time (s)".into(),
            range: 0.0..if end > 0.0 { end } else { 1.0 },
            ticks: None,
            format: &fmt,
        },
        y: Axis {
            desc: format!("throughput ({}bit/s)", unit.prefix),
            range: upto(y_max),
            ticks: None,
            format: &fmt,
        },
        series: &series,
        reference: None,
        markers: false,
        legend: SeriesLabelPosition::LowerRight,
    })
}
