//! A trend's chart (`linerate trend --chart`, the report's trend sections): one panel per
//! series, stacked vertically, each [`WIDTH`] wide and [`TREND_PANEL_HEIGHT`] high. x is the
//! run's position in the series (ticked with run ids, `#12`, or positions, as many as fit), y
//! the metric in its unit (bit rates scaled to the data: Mbit/s, Gbit/s). The runs are points
//! joined by a line; the median of each stretch between change points is a grey segment over
//! that stretch; each change point is a dashed vertical line at the first run of the new
//! level, vermillion when the change is for the worse and green when for the better, labelled
//! with its size and run (`−10.0 % at #13`).
//!
//! Invariants: one dashed marker and one label per change point, in the series' order; the
//! output depends only on the trend (deterministic).

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::scale::{decimal_unit, linear_ticks, short, Ticked};
use super::{color, draw_error, ChartKind, FONT, WIDTH};
use crate::trend::{Trend, TrendChange, TrendSeries};
use crate::{Error, Result};

/// Height of each series' panel, pixels.
pub const TREND_PANEL_HEIGHT: u32 = 320;
/// Room for the chart's title above the panels, pixels.
const TITLE_HEIGHT: u32 = 40;
/// A change for the worse (Okabe–Ito vermillion).
const WORSE: RGBColor = RGBColor(213, 94, 0);
/// A change for the better (Okabe–Ito bluish green).
const BETTER: RGBColor = RGBColor(0, 158, 115);
/// The stretches' medians.
const MEDIAN: RGBColor = RGBColor(120, 120, 120);

/// How the x axis and the change points name a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunNames {
    /// By the stored run's id, `#12`.
    Ids,
    /// By its 1-based position in the series, `run 12` (runs without ids, as in a report).
    Positions,
}

impl RunNames {
    fn tick(self, run: i64, index: usize) -> String {
        match self {
            RunNames::Ids => format!("#{run}"),
            RunNames::Positions => (index + 1).to_string(),
        }
    }

    fn at(self, run: i64, index: usize) -> String {
        match self {
            RunNames::Ids => format!("#{run}"),
            RunNames::Positions => format!("run {}", index + 1),
        }
    }
}

/// The divisor and the unit a series' values are drawn in: a bit rate in the prefix its
/// largest value reads best in, any other unit as it is.
fn y_unit(unit: &str, max: f64) -> (f64, String) {
    if unit == "Mbit/s" {
        let u = decimal_unit(max * 1e6);
        (u.divisor / 1e6, format!("{}bit/s", u.prefix))
    } else {
        (1.0, unit.to_string())
    }
}

/// The y range: the values with room below, and above for the change points' labels.
fn y_range(lo: f64, hi: f64) -> std::ops::Range<f64> {
    let span = hi - lo;
    let pad = if span > 0.0 {
        span * 0.25
    } else {
        (hi.abs() * 0.05).max(1.0)
    };
    let bottom = if lo >= 0.0 {
        (lo - pad).max(0.0)
    } else {
        lo - pad
    };
    bottom..hi + pad * 2.0
}

/// Tick positions on x: every run when they fit, else every `step`th, from the first.
fn x_ticks(s: &TrendSeries, names: RunNames) -> Vec<f64> {
    let widest = s
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| names.tick(p.run, i).chars().count())
        .max()
        .unwrap_or(1);
    // About 7 px a character at 12 px, plus a gap, over the ~700 px the plot takes.
    let fit = (700 / (widest * 7 + 10)).max(1);
    let step = s.points.len().div_ceil(fit).max(1);
    (0..s.points.len())
        .step_by(step)
        .map(|i| i as f64)
        .collect()
}

/// A change point's label: its size and where it happened.
pub(crate) fn change_label(c: &TrendChange, names: RunNames) -> String {
    let size = match c.change_pct {
        Some(p) => format!("{p:+.1} %").replacen('-', "\u{2212}", 1),
        None => format!("{} \u{2192} {}", short(c.before), short(c.after)),
    };
    format!("{size} at {}", names.at(c.run, c.index))
}

/// The stretches between change points, as (first index, end index, median).
fn stretches(s: &TrendSeries) -> Vec<(usize, usize, f64)> {
    let n = s.points.len();
    if s.change_points.is_empty() {
        let all = crate::labeled::median(s.points.iter().map(|p| p.value));
        return all.map(|m| vec![(0, n, m)]).unwrap_or_default();
    }
    let mut out = Vec::new();
    let mut from = 0;
    for (k, c) in s.change_points.iter().enumerate() {
        let level = if k == 0 {
            c.before
        } else {
            s.change_points[k - 1].after
        };
        out.push((from, c.index, level));
        from = c.index;
    }
    if let Some(last) = s.change_points.last() {
        out.push((from, n, last.after));
    }
    out
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// One series' panel on `area`.
fn draw_panel(area: &Area<'_>, s: &TrendSeries, names: RunNames) -> Result<()> {
    let err = draw_error(ChartKind::Trend);
    let values = s.points.iter().map(|p| p.value);
    let lo = values.clone().fold(f64::INFINITY, f64::min);
    let hi = values.fold(f64::NEG_INFINITY, f64::max);
    let (div, unit) = y_unit(s.unit, hi);
    let y = y_range(lo / div, hi / div);
    let x = -0.5..s.points.len() as f64 - 0.5;
    let labels: Vec<String> = s
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| names.tick(p.run, i))
        .collect();
    let x_fmt = |v: &f64| {
        let i = v.round();
        let at = (i >= 0.0 && (v - i).abs() < 1e-6).then_some(i as usize);
        at.and_then(|i| labels.get(i).cloned()).unwrap_or_default()
    };
    let area = area
        .titled(&format!("{}: {} ({unit})", s.key, s.metric), (FONT, 15))
        .map_err(&err)?;
    let mut chart = ChartBuilder::on(&area)
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            Ticked::new(x, x_ticks(s, names)),
            Ticked::new(y.clone(), linear_ticks(&y, 6)),
        )
        .map_err(&err)?;
    let x_desc = match names {
        RunNames::Ids => "run, in the series' order",
        RunNames::Positions => "run (position in the column)",
    };
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(format!("{} ({unit})", s.metric))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&|v| short(*v))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 14))
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()
        .map_err(&err)?;
    draw_runs(&mut chart, s, div).map_err(&err)?;
    draw_changes(&mut chart, s, names, &y).map_err(&err)?;
    Ok(())
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Ticked, Ticked>>;
type DrawResult = std::result::Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// The stretches' medians under the runs' points and line; values divided by `div`.
fn draw_runs(chart: &mut Chart<'_, '_>, s: &TrendSeries, div: f64) -> DrawResult {
    for (from, to, level) in stretches(s) {
        let ends = [
            (from as f64 - 0.3, level / div),
            (to as f64 - 0.7, level / div),
        ];
        chart.draw_series(LineSeries::new(ends, MEDIAN.stroke_width(3)))?;
    }
    let points: Vec<(f64, f64)> = s
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| (i as f64, p.value / div))
        .collect();
    let c = color(0);
    chart.draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(1)))?;
    chart.draw_series(points.iter().map(|&pt| Circle::new(pt, 3, c.filled())))?;
    Ok(())
}

/// Each change point's dashed line over the panel's height `y`, and its label at the top.
fn draw_changes(
    chart: &mut Chart<'_, '_>,
    s: &TrendSeries,
    names: RunNames,
    y: &std::ops::Range<f64>,
) -> DrawResult {
    for (k, cp) in s.change_points.iter().enumerate() {
        let colour = if cp.worse { WORSE } else { BETTER };
        let at = cp.index as f64;
        chart.draw_series(DashedLineSeries::new(
            [(at, y.start), (at, y.end)],
            6,
            4,
            colour.stroke_width(2),
        ))?;
        // Right of the line, or left of it past the middle; alternate rows so that close
        // change points' labels do not overlap.
        let right = cp.index * 2 <= s.points.len();
        let (dx, h) = if right {
            (5, HPos::Left)
        } else {
            (-5, HPos::Right)
        };
        let style = TextStyle::from((FONT, 13).into_font())
            .color(&colour)
            .pos(Pos::new(h, VPos::Top));
        let label = EmptyElement::at((at, y.end))
            + Text::new(
                change_label(cp, names),
                (dx, 4 + 16 * (k as i32 % 2)),
                style,
            );
        chart.plotting_area().draw(&label)?;
    }
    Ok(())
}

/// Draws every series of `t`, one panel each, top to bottom.
pub(crate) fn draw(t: &Trend, names: RunNames) -> Result<String> {
    let kind = ChartKind::Trend;
    let err = draw_error(kind);
    if t.series.is_empty() {
        return Err(Error::NoData {
            chart: kind.name(),
            reason: "no series to draw".into(),
        });
    }
    if let Some(s) = t.series.iter().find(|s| s.points.is_empty()) {
        return Err(Error::NoData {
            chart: kind.name(),
            reason: format!("the series {} has no run with {}", s.key, s.metric),
        });
    }
    let height = TITLE_HEIGHT + TREND_PANEL_HEIGHT * t.series.len() as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(&err)?;
        let title = format!("{} (E-divisive means, alpha {})", kind.title(), t.alpha);
        let root = root.titled(&title, (FONT, 20)).map_err(&err)?;
        let panels = root.split_evenly((t.series.len(), 1));
        for (area, s) in panels.iter().zip(&t.series) {
            draw_panel(area, s, names)?;
        }
        root.present().map_err(&err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trend::{trend, SeriesRuns};
    use record::RunRecord;

    /// `levels` as tcp_stream runs, one per value (Mbit/s), ids from 1, a minute apart, with
    /// a little deterministic noise.
    fn records(levels: &[f64]) -> Vec<RunRecord> {
        let runs: Vec<RunRecord> =
            serde_json::from_str(include_str!("../../tests/fixtures/tcp_runs.json")).unwrap();
        levels
            .iter()
            .enumerate()
            .map(|(i, mbit)| {
                let mut r = runs[0].clone();
                let noise = [0.3, -0.2, 0.1, -0.4, 0.2, 0.0][i % 6];
                r.summary.throughput_bps = (mbit + noise) * 1e6;
                r.started_at_unix_ms += 60_000 * i as u64;
                r
            })
            .collect()
    }

    fn trend_of(series: &[(&str, Vec<RunRecord>)]) -> Trend {
        let input: Vec<SeriesRuns> = series
            .iter()
            .map(|(key, rs)| SeriesRuns {
                key: key.to_string(),
                runs: rs
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (i as i64 + 1, r))
                    .collect(),
            })
            .collect();
        trend(&input, None, Default::default()).unwrap()
    }

    /// The x pixel of each dashed vertical marker of `colour` (dashes are short polylines).
    fn markers(svg: &str, colour: RGBColor) -> Vec<String> {
        let stroke = format!(
            "stroke=\"#{:02X}{:02X}{:02X}\"",
            colour.0, colour.1, colour.2
        );
        let mut xs: Vec<String> = svg
            .lines()
            .filter(|l| l.starts_with("<polyline") && l.contains(&stroke))
            .filter_map(|l| {
                let pts = l.split("points=\"").nth(1)?.split('"').next()?;
                let xs: Vec<&str> = pts
                    .split_whitespace()
                    .map(|p| p.split(',').next())
                    .collect::<Option<_>>()?;
                (xs.len() == 2 && xs[0] == xs[1]).then(|| xs[0].to_string())
            })
            .collect();
        let dashes = xs.len();
        xs.dedup();
        assert!(
            dashes >= xs.len() * 3,
            "each marker is dashed: {dashes} dashes"
        );
        xs
    }

    #[test]
    fn each_change_point_is_one_dashed_marker_with_its_label() {
        let mut levels = vec![200.0; 12];
        levels.extend([180.0; 12]);
        let t = trend_of(&[("tcp_stream series=s", records(&levels))]);
        assert_eq!(t.series[0].change_points.len(), 1, "{t:?}");
        let svg = draw(&t, RunNames::Ids).unwrap();
        assert_eq!(svg, draw(&t, RunNames::Ids).unwrap(), "deterministic");
        assert_eq!(markers(&svg, WORSE).len(), 1);
        assert!(markers(&svg, BETTER).is_empty());
        assert!(svg.contains("\u{2212}10.0 % at #13"), "the label");
        assert!(
            svg.contains("tcp_stream series=s: throughput (Mbit/s)"),
            "the key"
        );
        let by_position = draw(&t, RunNames::Positions).unwrap();
        assert!(by_position.contains("at run 13"), "by position");
        levels.reverse();
        let up = draw(&trend_of(&[("up", records(&levels))]), RunNames::Ids).unwrap();
        assert_eq!(
            (markers(&up, WORSE).len(), markers(&up, BETTER).len()),
            (0, 1)
        );
        assert!(up.contains("+11.1 % at #13"), "better, in its colour");
    }

    #[test]
    fn an_empty_series_is_no_data_naming_the_chart() {
        let mut t = trend_of(&[("tcp_stream a", records(&[200.0; 4]))]);
        t.series[0].points.clear();
        match crate::chart::trend_chart(&t) {
            Err(Error::NoData { chart, reason }) => {
                assert_eq!(chart, "trend");
                assert!(reason.contains("tcp_stream a has no run"), "{reason}");
            }
            other => panic!("expected NoData, got {other:?}"),
        }
        t.series.clear();
        assert!(matches!(
            crate::chart::trend_chart(&t),
            Err(Error::NoData { chart: "trend", .. })
        ));
    }

    #[test]
    fn a_series_without_change_points_has_no_marker_and_stacked_panels_add_height() {
        let t = trend_of(&[
            ("tcp_stream a", records(&[200.0; 8])),
            ("tcp_stream b", records(&[100.0; 8])),
        ]);
        let svg = crate::chart::trend_chart(&t).unwrap().svg;
        assert!(markers(&svg, WORSE).is_empty() && markers(&svg, BETTER).is_empty());
        let height = TITLE_HEIGHT + 2 * TREND_PANEL_HEIGHT;
        assert!(svg.starts_with(&format!("<svg width=\"{WIDTH}\" height=\"{height}\"")));
        assert!(svg.contains("tcp_stream b: throughput (Mbit/s)"));
    }
}
