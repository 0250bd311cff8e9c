//! Throughput against the values of a sweep (`linerate sweep streams|window|…|knob`), one
//! point per value in the order swept, evenly spaced so that words (a knob's values) and
//! numbers read alike; each tick is the value as the user wrote it.

use plotters::chart::SeriesLabelPosition;

use super::line::{self, Axis, LinePlot};
use super::scale::{decimal_unit, max_of, short, upto};
use super::{ChartKind, Series};
use crate::{Error, Result};

pub(crate) fn draw(parameter: &str, label: &str, points: &[(String, f64)]) -> Result<String> {
    if points.is_empty() {
        return Err(Error::NoData {
            chart: ChartKind::Sweep.name(),
            reason: "the sweep has no finished point".into(),
        });
    }
    let unit = decimal_unit(max_of(points.iter().map(|p| p.1)));
    let series = [Series {
        label: label.to_string(),
        points: points
            .iter()
            .enumerate()
            .map(|(i, p)| (i as f64, p.1 / unit.divisor))
            .collect(),
    }];
    let names: Vec<String> = points.iter().map(|p| p.0.clone()).collect();
    let x_fmt = move |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            names.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let y_fmt = |v: &f64| short(*v);
    let ticks: Vec<f64> = (0..points.len()).map(|i| i as f64).collect();
    let y_max = max_of(series[0].points.iter().map(|p| p.1));
    line::draw(LinePlot {
        kind: ChartKind::Sweep,
        x: Axis {
            desc: parameter.to_string(),
            range: -0.5..(points.len() as f64 - 0.5),
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
    #[test]
    fn values_label_the_x_axis_and_units_the_y() {
        let points = vec![("0".to_string(), 9.1e8), ("7".to_string(), 9.4e8)];
        let c =
            crate::chart::sweep_chart("DMA_length (knob)", "driver=velocityget", &points).unwrap();
        assert!(c.svg.contains("DMA_length (knob)"), "{}", c.svg);
        assert!(c.svg.contains("Mbit/s"), "{}", c.svg);
        assert!(c.svg.contains("driver=velocityget"));
        assert!(crate::chart::sweep_chart("x", "y", &[]).is_err());
    }
}
