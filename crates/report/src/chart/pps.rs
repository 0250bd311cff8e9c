//! Packets/s received per frame size, one series per flow count, against the line rate
//! `link / 8 / (frame + 20)` of the matrix's link speed: one panel per matrix (a `linerate
//! pps` execution with one engine), stacked, each captioned with its engine and start.

use std::collections::BTreeMap;

use plotters::chart::SeriesLabelPosition;

use plotters::prelude::*;

use super::line::{self, Axis, LinePlot};
use super::scale::{decimal_unit, max_of, short, upto};
use super::{draw_error, ChartKind, Series, HEIGHT, WIDTH};
use crate::{Error, PpsMatrix, Result};

/// One series per flow count: `(frame bytes, packets/s received)` in frame order.
pub(crate) fn series(m: &PpsMatrix) -> Vec<Series> {
    let mut by_flows: BTreeMap<u32, Vec<(f64, f64)>> = BTreeMap::new();
    for c in &m.cells {
        by_flows
            .entry(c.flows)
            .or_default()
            .push((f64::from(c.frame_bytes), c.pps_received));
    }
    by_flows
        .into_iter()
        .map(|(flows, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: format!("flows={flows}"),
                points,
            }
        })
        .collect()
}

/// The line-rate curve from frame size `lo` to `hi`, every 2 bytes so it is smooth.
fn line_rate(link_bps: u64, lo: u32, hi: u32) -> Series {
    let points = (lo..=hi)
        .step_by(2)
        .chain(((hi - lo) % 2 == 1).then_some(hi))
        .map(|f| (f64::from(f), measure::line_rate::pps(link_bps as f64, f)))
        .collect();
    Series {
        label: format!(
            "line rate at {}",
            measure::units::format_bits_per_sec(link_bps as f64)
        ),
        points,
    }
}

/// Draws `ms` one panel each, [`HEIGHT`] high, one above the other.
pub(crate) fn draw(ms: &[PpsMatrix]) -> Result<String> {
    let err = draw_error(ChartKind::Pps);
    if ms.is_empty() {
        return Err(Error::NoData {
            chart: ChartKind::Pps.name(),
            reason: "no matrix".into(),
        });
    }
    let mut svg = String::new();
    {
        let size = (WIDTH, HEIGHT * ms.len() as u32);
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(&err)?;
        for (m, area) in ms.iter().zip(root.split_evenly((ms.len(), 1))) {
            let title = format!("{}: {}", ChartKind::Pps.title(), m.caption());
            panel(&area, m, &title)?;
        }
        root.present().map_err(&err)?;
    }
    Ok(svg)
}

/// One matrix's panel on `area`.
fn panel(area: &line::Area<'_>, m: &PpsMatrix, title: &str) -> Result<()> {
    let mut series = series(m);
    let frames: Vec<u32> = {
        let mut f: Vec<u32> = m.cells.iter().map(|c| c.frame_bytes).collect();
        f.sort_unstable();
        f.dedup();
        f
    };
    let (Some(&lo), Some(&hi)) = (frames.first(), frames.last()) else {
        return Err(Error::NoData {
            chart: ChartKind::Pps.name(),
            reason: "the matrix has no cells".into(),
        });
    };
    let mut reference = m.link_speed_bps.map(|l| line_rate(l, lo, hi));
    let all = series.iter().chain(reference.iter());
    let unit = decimal_unit(max_of(all.flat_map(|s| s.points.iter().map(|p| p.1))));
    for s in series.iter_mut().chain(reference.iter_mut()) {
        for p in &mut s.points {
            p.1 /= unit.divisor;
        }
    }
    let y_max = max_of(
        series
            .iter()
            .chain(reference.iter())
            .flat_map(|s| s.points.iter().map(|p| p.1)),
    );
    let pad = f64::from(hi - lo).max(100.0) * 0.04;
    let x_fmt = |v: &f64| short(*v);
    let y_fmt = |v: &f64| short(*v);
    let plot = LinePlot {
        kind: ChartKind::Pps,
        x: Axis {
            desc: "frame size (bytes, FCS included)".into(),
            range: (f64::from(lo) - pad)..(f64::from(hi) + pad),
            ticks: Some(frames.iter().map(|&f| f64::from(f)).collect()),
            format: &x_fmt,
        },
        y: Axis {
            desc: format!("received ({}packets/s)", unit.prefix),
            range: upto(y_max),
            ticks: None,
            format: &y_fmt,
        },
        series: &series,
        reference: reference.as_ref(),
        markers: true,
        legend: SeriesLabelPosition::UpperRight,
    };
    line::draw_on(area, &plot, title)
}
