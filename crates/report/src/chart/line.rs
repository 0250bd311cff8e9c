//! The x/y line drawer every line chart shares: axes with units and chosen ticks, one coloured
//! series per column or run with its label in the legend, and an optional black reference
//! curve (the line rate).

use std::ops::Range;

use plotters::prelude::*;

use super::{color, dashed, draw_error, scale, ChartKind, Series, FONT, HEIGHT, WIDTH};
use crate::Result;

/// One axis: its description (with the unit), range, ticks and how a tick reads.
pub(crate) struct Axis<'a> {
    pub desc: String,
    pub range: Range<f64>,
    /// Tick positions; `None` picks round ones.
    pub ticks: Option<Vec<f64>>,
    pub format: &'a dyn Fn(&f64) -> String,
}

/// A line chart to draw.
pub(crate) struct LinePlot<'a> {
    pub kind: ChartKind,
    pub x: Axis<'a>,
    pub y: Axis<'a>,
    pub series: &'a [Series],
    /// Drawn dashed in black after the series, e.g. the line-rate curve.
    pub reference: Option<&'a Series>,
    /// Whether to mark each point (for sparse series).
    pub markers: bool,
    pub legend: SeriesLabelPosition,
}

/// Draws `p` as an SVG document.
pub(crate) fn draw(p: LinePlot<'_>) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error(p.kind))?;
        draw_on(&root, &p, p.kind.title())?;
        root.present().map_err(draw_error(p.kind))?;
    }
    Ok(svg)
}

/// Draws `p` on `area`, captioned `title` (one panel of a chart of several).
pub(crate) fn draw_on(area: &Area<'_>, p: &LinePlot<'_>, title: &str) -> Result<()> {
    let err = draw_error(p.kind);
    let x_ticks =
        p.x.ticks
            .clone()
            .unwrap_or_else(|| scale::linear_ticks(&p.x.range, 10));
    let y_ticks =
        p.y.ticks
            .clone()
            .unwrap_or_else(|| scale::linear_ticks(&p.y.range, 8));
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 20))
        .margin(14)
        .x_label_area_size(46)
        .y_label_area_size(70)
        .build_cartesian_2d(
            scale::Ticked::new(p.x.range.clone(), x_ticks),
            scale::Ticked::new(p.y.range.clone(), y_ticks),
        )
        .map_err(&err)?;
    chart
        .configure_mesh()
        .x_desc(p.x.desc.as_str())
        .y_desc(p.y.desc.as_str())
        .x_label_formatter(p.x.format)
        .y_label_formatter(p.y.format)
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 14))
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()
        .map_err(&err)?;
    for (i, s) in p.series.iter().enumerate() {
        draw_series(&mut chart, i, s, p.markers).map_err(&err)?;
    }
    if let Some(r) = p.reference {
        chart
            .draw_series(DashedLineSeries::new(
                r.points.iter().copied(),
                6,
                4,
                BLACK.stroke_width(1),
            ))
            .map_err(&err)?
            .label(r.label.as_str())
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
    }
    chart
        .configure_series_labels()
        .position(p.legend.clone())
        .label_font((FONT, 12))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .draw()
        .map_err(&err)?;
    Ok(())
}

/// Where a line chart is drawn: the whole image, or one panel of it.
pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<scale::Ticked, scale::Ticked>>;
type DrawResult = std::result::Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// The `i`th series in its colour, with its legend entry; dashed with markers when its colour
/// is a repeat ([`dashed`]), markers also when asked.
fn draw_series<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    i: usize,
    s: &Series,
    markers: bool,
) -> DrawResult {
    let c = color(i);
    if dashed(i) {
        // A repeated colour: dashed, with markers in the line and its legend entry.
        chart
            .draw_series(DashedLineSeries::new(
                s.points.iter().copied(),
                8,
                4,
                c.stroke_width(2),
            ))?
            .label(s.label.as_str())
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (8, 0)], c.stroke_width(2))
                    + Circle::new((14, 0), 3, c.filled())
            });
    } else {
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))?
            .label(s.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    if markers || dashed(i) {
        chart.draw_series(s.points.iter().map(|&pt| Circle::new(pt, 3, c.filled())))?;
    }
    Ok(())
}
