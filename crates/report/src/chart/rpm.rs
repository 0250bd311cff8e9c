//! `linerate rpm`'s chart: each direction's time series, aligned with its ramp of load
//! connections. x is seconds since the direction began (the client's clock), one point per
//! interval (at its end). The top panel is the goodput of each interval and its moving
//! average, with the connections running as a step on the right-hand axis; the bottom panel the
//! round trips of each interval: the self probes' median (in band, on the loaded connections),
//! the foreign probes' median (a request on a new connection) and the loaded connections'
//! kernel RTT (TCP_INFO). Several directions are drawn side by side in one image, each with
//! its RPM in its caption.

use plotters::prelude::*;

use record::rpm::RpmDirection;

use super::scale::{decimal_unit, linear_ticks, max_of, short, upto, Ticked};
use super::{color, draw_error, ChartKind, Series, FONT, WIDTH};
use crate::{Error, Result};

/// Height of the chart (two panels), pixels; each direction is [`WIDTH`] wide.
pub const RPM_HEIGHT: u32 = 640;

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// One direction's series, in the units the axes name (goodput in bits/s until scaled).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Panels {
    /// Goodput of each interval, then its moving average (bits/s).
    pub goodput: [Series; 2],
    /// Connections running, held over each interval (a step).
    pub connections: Series,
    /// Self probes' median, foreign probes' median, kernel RTT (ms); each only where known.
    pub round_trips: [Series; 3],
}

fn series(label: &str, points: Vec<(f64, f64)>) -> Series {
    Series {
        label: label.into(),
        points,
    }
}

/// The series of `d`; an error naming the chart when it has no interval.
pub(crate) fn panels(d: &RpmDirection) -> Result<Panels> {
    if d.timeline.is_empty() {
        return Err(Error::NoData {
            chart: ChartKind::Rpm.name(),
            reason: format!(
                "the {} direction has no intervals (it was stopped before its first one ended)",
                d.direction.as_str()
            ),
        });
    }
    let t = &d.timeline;
    let each = |f: fn(&record::rpm::RpmTick) -> Option<f64>| -> Vec<(f64, f64)> {
        t.iter().filter_map(|x| Some((x.t_s, f(x)?))).collect()
    };
    let mut steps = Vec::with_capacity(t.len() * 2);
    let mut from = 0.0;
    for x in t {
        let c = f64::from(x.connections);
        steps.extend([(from, c), (x.t_s, c)]);
        from = x.t_s;
    }
    Ok(Panels {
        goodput: [
            series("goodput", each(|x| Some(x.goodput_bps))),
            series("moving average", each(|x| Some(x.moving_average_bps))),
        ],
        connections: series("connections (right axis)", steps),
        round_trips: [
            series("self probes p50", each(|x| x.self_p50_ms)),
            series("foreign probes p50", each(|x| x.foreign_p50_ms)),
            series("kernel RTT (TCP_INFO)", each(|x| x.kernel_rtt_ms)),
        ],
    })
}

/// A direction's caption: the label, the way, the RPM where known.
fn caption(label: &str, d: &RpmDirection) -> String {
    let rpm = d
        .responsiveness
        .map_or("RPM not measured".to_string(), |r| {
            let confidence = crate::rpm_text::confidence(d.rpm_confidence);
            format!("RPM {:.0} (confidence {confidence})", r.rpm)
        });
    let prefix = if label.is_empty() {
        String::new()
    } else {
        format!("{label}: ")
    };
    format!("{prefix}{}, {rpm}", crate::rpm_text::way(d.direction))
}

/// The x axis every panel shares: 0 to the last interval's end.
fn time_axis(p: &Panels) -> (std::ops::Range<f64>, Vec<f64>) {
    let end = max_of(p.connections.points.iter().map(|x| x.0));
    let range = 0.0..if end > 0.0 { end } else { 1.0 };
    let ticks = linear_ticks(&range, 10);
    (range, ticks)
}

fn legend_line(c: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
}

/// The top panel: goodput and its moving average (left axis), connections (right axis).
fn draw_goodput(area: &Area<'_>, p: &Panels) -> Result<()> {
    let err = draw_error(ChartKind::Rpm);
    let top = max_of(p.goodput.iter().flat_map(|s| s.points.iter().map(|x| x.1)));
    let unit = decimal_unit(top);
    let y = upto(top / unit.divisor * HEADROOM);
    let (x, x_ticks) = time_axis(p);
    let conns = max_of(p.connections.points.iter().map(|c| c.1)).max(1.0);
    let c_range = 0.0..(conns * HEADROOM).ceil() + 1.0;
    let c_ticks = linear_ticks(&c_range, 6)
        .into_iter()
        .filter(|t| t.fract() == 0.0)
        .collect();
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .right_y_label_area_size(60)
        .build_cartesian_2d(
            Ticked::new(x.clone(), x_ticks.clone()),
            Ticked::new(y.clone(), linear_ticks(&y, 8)),
        )
        .map_err(&err)?
        .set_secondary_coord(Ticked::new(x, x_ticks), Ticked::new(c_range, c_ticks));
    chart
        .configure_mesh()
        .x_desc("time since the direction began (s)")
        .y_desc(format!("goodput ({}bit/s)", unit.prefix))
        .x_label_formatter(&|v| short(*v))
        .y_label_formatter(&|v| short(*v))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 14))
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()
        .map_err(&err)?;
    chart
        .configure_secondary_axes()
        .y_desc("connections")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 14))
        .draw()
        .map_err(&err)?;
    for (i, s) in p.goodput.iter().enumerate() {
        let c = color(i);
        let points = s.points.iter().map(|&(t, v)| (t, v / unit.divisor));
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(2)).point_size(3))
            .map_err(&err)?
            .label(s.label.as_str())
            .legend(legend_line(c));
    }
    let grey = RGBColor(110, 110, 110);
    chart
        .draw_secondary_series(DashedLineSeries::new(
            p.connections.points.iter().copied(),
            6,
            4,
            grey.stroke_width(2),
        ))
        .map_err(&err)?
        .label(p.connections.label.as_str())
        .legend(legend_line(grey));
    legend(&mut chart)
}

/// The bottom panel: each interval's round trips, ms.
fn draw_round_trips(area: &Area<'_>, p: &Panels) -> Result<()> {
    let err = draw_error(ChartKind::Rpm);
    let (x, x_ticks) = time_axis(p);
    let y = upto(
        max_of(
            p.round_trips
                .iter()
                .flat_map(|s| s.points.iter().map(|x| x.1)),
        ) * HEADROOM,
    );
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .right_y_label_area_size(60)
        .build_cartesian_2d(
            Ticked::new(x, x_ticks),
            Ticked::new(y.clone(), linear_ticks(&y, 8)),
        )
        .map_err(&err)?;
    chart
        .configure_mesh()
        .x_desc("time since the direction began (s)")
        .y_desc("round trip (ms)")
        .x_label_formatter(&|v| short(*v))
        .y_label_formatter(&|v| short(*v))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 14))
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()
        .map_err(&err)?;
    for (i, s) in p.round_trips.iter().enumerate() {
        let c = color(i + 2);
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)).point_size(3))
            .map_err(&err)?
            .label(s.label.as_str())
            .legend(legend_line(c));
    }
    legend(&mut chart)
}

/// Room above the highest value for the legend, which sits top left.
const HEADROOM: f64 = 1.4;

/// The panel's legend, top left (the axes' ranges leave room for it).
fn legend<'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FONT, 12))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .draw()
        .map_err(draw_error(ChartKind::Rpm))
}

/// Every `linerate rpm` direction among `columns`, side by side, each labeled as its run.
pub(crate) fn draw_runs(columns: &[crate::LabeledRuns]) -> Result<String> {
    let mut found = Vec::new();
    for c in columns {
        for (i, r) in c.runs.iter().enumerate() {
            if let Some(s) = r.as_rpm() {
                found.push((c.run_label(i), &s.direction));
            }
        }
    }
    if found.is_empty() {
        return Err(Error::NoData {
            chart: ChartKind::Rpm.name(),
            reason: "none of these runs is a `linerate rpm` direction".into(),
        });
    }
    let directions: Vec<_> = found.iter().map(|(l, d)| (l.as_str(), *d)).collect();
    draw(&directions)
}

/// Draws `directions` side by side, each captioned with its label (a run's, or the server).
pub(crate) fn draw(directions: &[(&str, &RpmDirection)]) -> Result<String> {
    let kind = ChartKind::Rpm;
    let err = draw_error(kind);
    if directions.is_empty() {
        return Err(Error::NoData {
            chart: kind.name(),
            reason: "no direction was measured".into(),
        });
    }
    let panels = directions
        .iter()
        .map(|(_, d)| panels(d))
        .collect::<Result<Vec<_>>>()?;
    let width = WIDTH * directions.len() as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, RPM_HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(&err)?;
        let root = root.titled(kind.title(), (FONT, 20)).map_err(&err)?;
        let columns = root.split_evenly((1, directions.len()));
        for ((area, (label, d)), p) in columns.iter().zip(directions).zip(&panels) {
            let area = area.titled(&caption(label, d), (FONT, 15)).map_err(&err)?;
            let height = area.dim_in_pixel().1 as i32;
            let (top, bottom) = area.split_vertically(height * 55 / 100);
            draw_goodput(&top, p)?;
            draw_round_trips(&bottom, p)?;
        }
        root.present().map_err(&err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored `linerate rpm` direction (up, three intervals, three connections).
    fn direction() -> RpmDirection {
        let r: record::RunRecord =
            serde_json::from_str(include_str!("../../tests/fixtures/rpm_run.json")).unwrap();
        r.summary.rpm().unwrap().direction.clone()
    }

    #[test]
    fn the_chart_names_its_units_and_series_and_shows_the_ramp() {
        let d = direction();
        let svg = draw(&[("#2", &d)]).unwrap();
        assert_eq!(svg, draw(&[("#2", &d)]).unwrap(), "deterministic");
        for wanted in [
            "time since the direction began (s)",
            "goodput (Gbit/s)",
            "moving average",
            "connections (right axis)",
            "round trip (ms)",
            "self probes p50",
            "foreign probes p50",
            "kernel RTT (TCP_INFO)",
            "#2: up (client -&gt; server), RPM 66172 (confidence low)",
        ] {
            assert!(svg.contains(wanted), "lacks {wanted:?}");
        }
        let p = panels(&d).unwrap();
        let t: Vec<f64> = d.timeline.iter().map(|x| x.t_s).collect();
        let step = [
            (0.0, 1.0),
            (t[0], 1.0),
            (t[0], 2.0),
            (t[1], 2.0),
            (t[1], 3.0),
            (t[2], 3.0),
        ];
        assert_eq!(p.connections.points, step, "held over each interval");
        assert_eq!(
            p.round_trips[0].points.len(),
            2,
            "no self probe in the first interval"
        );
        let both = draw(&[("", &d), ("", &d)]).unwrap();
        assert!(
            both.starts_with("<svg width=\"1600\" height=\"640\""),
            "side by side"
        );
    }

    #[test]
    fn a_direction_without_intervals_is_an_error_naming_the_chart() {
        let mut d = direction();
        d.timeline.clear();
        match draw(&[("", &d)]) {
            Err(Error::NoData { chart, reason }) => {
                assert_eq!(chart, "rpm");
                assert!(reason.contains("up direction has no intervals"), "{reason}");
            }
            other => panic!("expected NoData, got {other:?}"),
        }
        assert!(matches!(draw(&[]), Err(Error::NoData { chart: "rpm", .. })));
    }
}
