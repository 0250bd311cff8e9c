//! Throughput and CPU side by side: on the left one throughput bar per column, on the right
//! the client's and the server's CPU per column (solid: client; light: server). Each figure is
//! the median over the column's runs, as in the comparison.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::scale::{decimal_unit, linear_ticks, max_of, short, upto, Ticked};
use super::{color, draw_error, ChartKind, FONT, HEIGHT, WIDTH};
use crate::labeled::median;
use crate::{Error, LabeledRuns, Result};

/// One column's bars.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bars {
    pub label: String,
    pub throughput_bps: f64,
    pub client_cpu_pct: f64,
    pub server_cpu_pct: f64,
}

/// One bar group per column with runs.
pub(crate) fn bars(columns: &[LabeledRuns]) -> Vec<Bars> {
    columns
        .iter()
        .filter_map(|c| {
            let s = |f: fn(&record::Summary) -> f64| median(c.runs.iter().map(|r| f(&r.summary)));
            Some(Bars {
                label: c.series_label(),
                throughput_bps: s(|s| s.throughput_bps)?,
                client_cpu_pct: s(|s| s.local_cpu_pct)?,
                server_cpu_pct: s(|s| s.remote_cpu_pct)?,
            })
        })
        .collect()
}

/// `label` cut to `max` characters with an ellipsis.
fn fit(label: &str, max: usize) -> String {
    if label.chars().count() <= max {
        label.to_string()
    } else {
        let mut s: String = label.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

/// Pixels per character of plotters' estimate for 11-12 px text.
const CHAR_PX: usize = 7;

/// The x axis both halves share: one slot per column, labelled with the column's label when
/// every label fits its slot, else with the column's number, the legend under the chart
/// naming each (labels cut to a few characters overlapped one another and said nothing).
struct Columns {
    range: std::ops::Range<f64>,
    ticks: Vec<f64>,
    labels: Vec<String>,
    /// Width of one slot, pixels.
    slot_px: usize,
    /// Whether the slots carry numbers and the legend the labels.
    numbered: bool,
}

impl Columns {
    fn new(bars: &[Bars]) -> Self {
        let n = bars.len();
        let slot_px = (WIDTH as usize / 2 - 90) / n;
        let numbered = bars
            .iter()
            .any(|b| b.label.chars().count() * CHAR_PX > slot_px);
        Self {
            range: -0.5..n as f64 - 0.5,
            ticks: (0..n).map(|i| i as f64).collect(),
            labels: bars
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    if numbered {
                        (i + 1).to_string()
                    } else {
                        b.label.clone()
                    }
                })
                .collect(),
            slot_px,
            numbered,
        }
    }

    fn label(&self, v: &f64) -> String {
        self.labels
            .get(v.round() as usize)
            .cloned()
            .unwrap_or_default()
    }

    /// Whether a value label of `text` fits in `share` of a slot without touching the next.
    fn fits(&self, text: &str, share: f64) -> bool {
        (text.chars().count() * CHAR_PX) as f64 <= self.slot_px as f64 * share
    }
}

/// Legend entries per row under a numbered chart, and the height of one row.
const LEGEND_PER_ROW: usize = 3;
const LEGEND_ROW_PX: u32 = 18;

/// The legend band's height for `n` columns.
fn legend_height(n: usize) -> u32 {
    n.div_ceil(LEGEND_PER_ROW) as u32 * LEGEND_ROW_PX + 12
}

/// Under a numbered chart: each column's number, colour and label.
fn draw_legend(area: &Area<'_>, bars: &[Bars]) -> Result<()> {
    let err = draw_error(ChartKind::ThroughputCpu);
    let cell = WIDTH as i32 / LEGEND_PER_ROW as i32;
    let max_chars = (cell as usize - 40) / CHAR_PX;
    for (i, b) in bars.iter().enumerate() {
        let x = (i % LEGEND_PER_ROW) as i32 * cell + 14;
        let y = (i / LEGEND_PER_ROW) as i32 * LEGEND_ROW_PX as i32 + 6;
        area.draw(&Rectangle::new(
            [(x, y), (x + 12, y + 12)],
            color(i).filled(),
        ))
        .map_err(&err)?;
        let text = format!("{} {}", i + 1, fit(&b.label, max_chars));
        area.draw(&Text::new(text, (x + 18, y), (FONT, 12)))
            .map_err(&err)?;
    }
    Ok(())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Ticked, Ticked>>;

/// One half's chart: the shared x axis, a y axis from 0 to `y_max` described by `y_desc`.
fn half<'a, 'b>(
    area: &'a Area<'b>,
    columns: &Columns,
    y_max: f64,
    y_desc: &str,
) -> Result<Chart<'a, 'b>> {
    let err = draw_error(ChartKind::ThroughputCpu);
    let y_range = upto(y_max);
    let y_ticks = linear_ticks(&y_range, 8);
    let mut chart = ChartBuilder::on(area)
        .margin(14)
        .x_label_area_size(46)
        .y_label_area_size(64)
        .build_cartesian_2d(
            Ticked::new(columns.range.clone(), columns.ticks.clone()),
            Ticked::new(y_range, y_ticks),
        )
        .map_err(&err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("")
        .y_desc(y_desc)
        .x_label_formatter(&|v| columns.label(v))
        .y_label_formatter(&|v| short(*v))
        .label_style((FONT, 12))
        .axis_desc_style((FONT, 14))
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()
        .map_err(&err)?;
    Ok(chart)
}

fn value_style() -> TextStyle<'static> {
    TextStyle::from((FONT, 11)).pos(Pos::new(HPos::Center, VPos::Bottom))
}

/// The left half: one throughput bar per column, its value on top.
fn draw_throughput(area: &Area<'_>, columns: &Columns, bars: &[Bars]) -> Result<()> {
    let err = draw_error(ChartKind::ThroughputCpu);
    let unit = decimal_unit(max_of(bars.iter().map(|b| b.throughput_bps)));
    let tput: Vec<f64> = bars
        .iter()
        .map(|b| b.throughput_bps / unit.divisor)
        .collect();
    let desc = format!("throughput ({}bit/s)", unit.prefix);
    let mut chart = half(area, columns, max_of(tput.iter().copied()), &desc)?;
    chart
        .draw_series(tput.iter().enumerate().map(|(i, &v)| {
            let x = i as f64;
            Rectangle::new([(x - 0.35, 0.0), (x + 0.35, v)], color(i).filled())
        }))
        .map_err(&err)?;
    chart
        .draw_series(
            tput.iter()
                .enumerate()
                .filter(|(_, v)| columns.fits(&short(**v), 1.0))
                .map(|(i, &v)| Text::new(short(v), (i as f64, v), value_style())),
        )
        .map_err(&err)?;
    Ok(())
}

/// The right half: the client's (solid) and the server's (light) CPU per column, with a legend.
fn draw_cpu(area: &Area<'_>, columns: &Columns, bars: &[Bars]) -> Result<()> {
    let err = draw_error(ChartKind::ThroughputCpu);
    let cpu_max = max_of(
        bars.iter()
            .flat_map(|b| [b.client_cpu_pct, b.server_cpu_pct]),
    );
    // Extra headroom: the legend sits top right, above the bars.
    let mut chart = half(area, columns, cpu_max * 1.2, "CPU (% of one core)")?;
    let swatch = |c: RGBAColor| {
        move |(x, y): (i32, i32)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled())
    };
    // (x offset of the bar's left edge, alpha, legend label, the figure)
    type Side = (f64, f64, &'static str, fn(&Bars) -> f64);
    let sides: [Side; 2] = [
        (-0.38, 1.0, "client", |b| b.client_cpu_pct),
        (0.02, 0.45, "server", |b| b.server_cpu_pct),
    ];
    for (offset, alpha, label, figure) in sides {
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                let x = i as f64 + offset;
                Rectangle::new(
                    [(x, 0.0), (x + 0.36, figure(b))],
                    color(i).mix(alpha).filled(),
                )
            }))
            .map_err(&err)?
            .label(label)
            .legend(swatch(RGBColor(90, 90, 90).mix(alpha)));
    }
    // Values after both bars, so no bar covers a neighbour's value.
    chart
        .draw_series(bars.iter().enumerate().flat_map(|(i, b)| {
            sides
                .into_iter()
                .filter(|(_, _, _, figure)| columns.fits(&short(figure(b)), 0.5))
                .map(move |(offset, _, _, figure)| {
                    let x = i as f64 + offset + 0.18;
                    Text::new(short(figure(b)), (x, figure(b)), value_style())
                })
        }))
        .map_err(&err)?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FONT, 12))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .draw()
        .map_err(&err)?;
    Ok(())
}

pub(crate) fn draw(columns: &[LabeledRuns]) -> Result<String> {
    let kind = ChartKind::ThroughputCpu;
    let err = draw_error(kind);
    let bars = bars(columns);
    if bars.is_empty() {
        return Err(Error::NoData {
            chart: kind.name(),
            reason: "no runs given".into(),
        });
    }
    let columns = Columns::new(&bars);
    let band = if columns.numbered {
        legend_height(bars.len())
    } else {
        0
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT + band)).into_drawing_area();
        root.fill(&WHITE).map_err(&err)?;
        let (top, legend) = root.split_vertically(HEIGHT);
        let top = top.titled(kind.title(), (FONT, 20)).map_err(&err)?;
        let (left, right) = top.split_horizontally(WIDTH / 2);
        draw_throughput(&left, &columns, &bars)?;
        draw_cpu(&right, &columns, &bars)?;
        if columns.numbered {
            draw_legend(&legend, &bars)?;
        }
        root.present().map_err(&err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(label: &str) -> Bars {
        Bars {
            label: label.into(),
            throughput_bps: 9.41e9,
            client_cpu_pct: 40.0,
            server_cpu_pct: 50.0,
        }
    }

    /// Fifteen columns: labels cut to four characters overlapped; now the slots are numbered
    /// and the legend under the chart names each column, and values that would not fit their
    /// slot are left out.
    #[test]
    fn many_columns_are_numbered_with_a_legend_and_no_label_overlaps() {
        let many: Vec<Bars> = (0..15).map(|i| bar(&format!("driver=d{i}"))).collect();
        let c = Columns::new(&many);
        assert!(c.numbered);
        assert_eq!(c.label(&0.0), "1");
        assert!(c
            .labels
            .iter()
            .all(|l| l.chars().count() * CHAR_PX <= c.slot_px));
        assert!(!c.fits("9.41", 0.5));
        let svg = {
            let mut svg = String::new();
            let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT + legend_height(15)))
                .into_drawing_area();
            draw_legend(&root, &many).unwrap();
            drop(root);
            svg
        };
        assert!(svg.contains("15 driver=d14"), "{svg}");
        let two = [bar("driver=a"), bar("driver=b")];
        let c = Columns::new(&two);
        assert!(!c.numbered && c.label(&1.0) == "driver=b");
    }

    #[test]
    fn long_labels_are_cut() {
        assert_eq!(fit("driver=velocityget", 8), "driver=…");
        assert_eq!(fit("#12", 8), "#12");
    }
}
