//! Throughput against write size (`spec.write_len_bytes`), one series per column; runs of a
//! column at the same size are reduced to their median. The x axis is log2 of the size, with a
//! tick per power of two.

use std::collections::BTreeMap;

use plotters::chart::SeriesLabelPosition;

use super::line::{self, Axis, LinePlot};
use super::scale::{decimal_unit, max_of, short, upto};
use super::{ChartKind, Series};
use crate::labeled::median;
use crate::{Error, LabeledRuns, Result};

/// Whether some column has runs at two or more write sizes.
pub(crate) fn has_data(columns: &[LabeledRuns]) -> bool {
    series(columns).iter().any(|s| s.points.len() > 1)
}

/// One series per column: `(write bytes, bits/s)` per distinct size, in size order.
pub(crate) fn series(columns: &[LabeledRuns]) -> Vec<Series> {
    columns
        .iter()
        .filter(|c| !c.runs.is_empty())
        .map(|c| {
            let mut by_size: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
            for r in &c.runs {
                by_size
                    .entry(r.spec.message_len_bytes())
                    .or_default()
                    .push(r.summary.throughput_bps);
            }
            let points = by_size
                .into_iter()
                .filter_map(|(size, v)| Some((f64::from(size), median(v)?)))
                .collect();
            Series {
                label: c.series_label(),
                points,
            }
        })
        .collect()
}

/// `1024` → `1K`, `1048576` → `1M`, `1500` → `1500`.
fn size_label(bytes: f64) -> String {
    let b = bytes.round() as u64;
    match b {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

pub(crate) fn draw(columns: &[LabeledRuns]) -> Result<String> {
    let mut series = series(columns);
    series.retain(|s| !s.points.is_empty());
    if !series.iter().any(|s| s.points.len() > 1) {
        return Err(Error::NoData {
            chart: ChartKind::MessageSize.name(),
            reason: "needs runs at two or more write sizes (--len)".into(),
        });
    }
    let unit = decimal_unit(max_of(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
    ));
    for s in &mut series {
        for p in &mut s.points {
            *p = (p.0.max(1.0).log2(), p.1 / unit.divisor);
        }
    }
    let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let lo = xs().fold(f64::INFINITY, f64::min).floor();
    let hi = xs().fold(f64::NEG_INFINITY, f64::max).ceil();
    let ticks: Vec<f64> = (lo as i32..=hi as i32).map(f64::from).collect();
    let x_fmt = |v: &f64| size_label(2f64.powf(*v));
    let y_fmt = |v: &f64| short(*v);
    let y_max = max_of(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    line::draw(LinePlot {
        kind: ChartKind::MessageSize,
        x: Axis {
            desc: "write size (bytes, log scale)".into(),
            range: (lo - 0.25)..(hi + 0.25),
            ticks: Some(ticks),
            format: &x_fmt,
        },
        y: Axis {
            desc: format!("throughput ({}bit/s)", unit.prefix),
            range: upto(y_max),
            ticks: None,
            format: &y_fmt,
        },
        series: &series,
        reference: None,
        markers: true,
        legend: SeriesLabelPosition::LowerRight,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_multiples() {
        assert_eq!(size_label(1024.0), "1K");
        assert_eq!(size_label(524_288.0), "512K");
        assert_eq!(size_label(1_048_576.0), "1M");
        assert_eq!(size_label(1500.0), "1500");
    }
}
