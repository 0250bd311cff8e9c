//! Round trips against offered load (`linerate sweep load --chart`): the load as a share of
//! the measured capacity on x, the median and 99th-percentile round trip on y, and the knee
//! (where the median first reached a multiple of the lowest load's) as a dashed vertical line.

use plotters::chart::SeriesLabelPosition;

use super::line::{self, Axis, LinePlot};
use super::scale::{max_of, short, upto};
use super::{ChartKind, Series};
use crate::{Error, Result};

/// One point of a load sweep: the share of the capacity (percent) and its round trips (µs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadPoint {
    /// Offered load, percent of the capacity.
    pub load_pct: f64,
    /// Median round trip, µs.
    pub p50_us: Option<f64>,
    /// 99th-percentile round trip, µs.
    pub p99_us: Option<f64>,
}

/// What the chart draws: the points, the knee, and what the capacity was.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadCurve {
    /// The test and where it ran, for the legend.
    pub label: String,
    /// The capacity the loads are shares of, as text with its unit (`9.41 Gbit/s`).
    pub capacity: String,
    /// The points, by increasing load.
    pub points: Vec<LoadPoint>,
    /// The knee's load, percent.
    pub knee_pct: Option<f64>,
    /// The knee's rule, for its legend entry (`p50 ≥ 2× the lowest load's`).
    pub knee_rule: String,
}

pub(crate) fn draw(c: &LoadCurve) -> Result<String> {
    let all = c.points.iter().flat_map(|p| [p.p50_us, p.p99_us]).flatten();
    let top = max_of(all);
    if top.is_nan() || top <= 0.0 {
        return Err(Error::NoData {
            chart: ChartKind::Load.name(),
            reason: "no point has round trips".into(),
        });
    }
    // Milliseconds once the largest round trip passes one.
    let (div, unit) = if top >= 1000.0 {
        (1000.0, "ms")
    } else {
        (1.0, "µs")
    };
    let series_of = |label: String, f: fn(&LoadPoint) -> Option<f64>| Series {
        label,
        points: c
            .points
            .iter()
            .filter_map(|p| Some((p.load_pct, f(p)? / div)))
            .collect(),
    };
    let series = [
        series_of(format!("p50, {}", c.label), |p| p.p50_us),
        series_of("p99".into(), |p| p.p99_us),
    ];
    let y_max = top / div;
    let x_max = max_of(c.points.iter().map(|p| p.load_pct)).max(100.0) * 1.05;
    let knee = c.knee_pct.map(|k| Series {
        label: format!("knee at {k}%: {}", c.knee_rule),
        points: vec![(k, 0.0), (k, upto(y_max).end)],
    });
    let x_fmt = |v: &f64| format!("{}%", short(*v));
    let y_fmt = |v: &f64| short(*v);
    line::draw(LinePlot {
        kind: ChartKind::Load,
        x: Axis {
            desc: format!("offered load (% of the capacity, {})", c.capacity),
            range: 0.0..x_max,
            ticks: None,
            format: &x_fmt,
        },
        y: Axis {
            desc: format!("round trip ({unit})"),
            range: upto(y_max),
            ticks: None,
            format: &y_fmt,
        },
        series: &series,
        reference: knee.as_ref(),
        markers: true,
        legend: SeriesLabelPosition::UpperLeft,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(p99: [f64; 3], knee: Option<f64>) -> LoadCurve {
        LoadCurve {
            label: "udp_stream 198.18.0.2".into(),
            capacity: "47.6 Mbit/s".into(),
            points: [25.0, 50.0, 120.0]
                .iter()
                .zip(p99)
                .map(|(&load_pct, p99)| LoadPoint {
                    load_pct,
                    p50_us: Some(p99 / 2.0),
                    p99_us: Some(p99),
                })
                .collect(),
            knee_pct: knee,
            knee_rule: "p50 ≥ 2× the lowest load's".into(),
        }
    }

    #[test]
    fn axes_have_units_and_the_knee_is_named() {
        let svg = draw(&curve([300.0, 400.0, 42_000.0], Some(120.0))).unwrap();
        assert!(
            svg.contains("offered load (% of the capacity, 47.6 Mbit/s)"),
            "{svg}"
        );
        assert!(svg.contains("round trip (ms)"));
        assert!(svg.contains("knee at 120%"));
        assert!(svg.contains("udp_stream 198.18.0.2"));
        let svg = draw(&curve([30.0, 40.0, 50.0], None)).unwrap();
        assert!(svg.contains("round trip (µs)") && !svg.contains("knee"));
    }

    #[test]
    fn no_round_trips_is_an_error_naming_the_chart() {
        let mut c = curve([1.0, 2.0, 3.0], None);
        for p in &mut c.points {
            (p.p50_us, p.p99_us) = (None, None);
        }
        assert!(draw(&c).unwrap_err().to_string().contains("load"));
    }
}
