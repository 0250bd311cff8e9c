//! Charts as SVG (plotters' SVG backend), and PNG by rasterising that SVG (resvg).
//!
//! Each chart file reads its series from the runs (numbers in the units the axes name) and
//! hands them to one of two drawers: `line` for x/y series, `bars` for per-column bars.
//! Series carry their column's label and tags; axes carry units. No font files are needed to
//! draw: text goes into the SVG as `<text>` elements sized by plotters' estimate, and the
//! viewer (a browser, or resvg with the system's fonts) sets it. Output is deterministic.

mod bars;
mod heatmap;
mod image;
mod latency;
mod line;
mod load;
mod msg_size;
mod png;
mod pps;
mod rpm;
mod scale;
mod sweep_value;
mod timeline;
mod trend;

use plotters::style::RGBColor;

pub use image::{ImageFormat, ImageFormatError};
pub use load::{LoadCurve, LoadPoint};

use crate::{Error, LabeledRuns, PpsMatrix, Result};

/// Width of every chart, pixels.
pub const WIDTH: u32 = 800;
/// Height of every chart, pixels.
pub const HEIGHT: u32 = 450;

/// Which chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChartKind {
    /// Throughput per interval over time, one series per run.
    Throughput,
    /// Throughput and both ends' CPU side by side, one bar group per column.
    ThroughputCpu,
    /// Round-trip latency distribution (request/response runs), one series per column.
    LatencyCdf,
    /// Throughput against write size, one series per column.
    MessageSize,
    /// Packets/s per frame size against the line rate (a `linerate pps` matrix).
    Pps,
    /// Throughput at each value of a swept parameter or knob (a `linerate sweep`); not in
    /// [`ChartKind::ALL`]: drawn by [`sweep_chart`] from a sweep's points.
    Sweep,
    /// A mesh's figure per ordered pair of hosts (a `linerate mesh`); not in
    /// [`ChartKind::ALL`]: drawn by [`mesh_chart`] from its matrix.
    Mesh,
    /// Round trips against offered load (a `linerate sweep load`); not in
    /// [`ChartKind::ALL`]: drawn by [`load_chart`] from its points.
    Load,
    /// `linerate rpm` directions' goodput, connections and round trips over time, side by
    /// side; not in [`ChartKind::ALL`] (the report draws one per direction): drawn by
    /// [`rpm_chart`] from the directions, or by [`render`] from stored runs' `summary.rpm`.
    Rpm,
    /// A metric's history per series of stored runs with its change points (`linerate
    /// trend`); not in [`ChartKind::ALL`]: drawn by [`trend_chart`] from a trend.
    Trend,
}

impl ChartKind {
    /// Every kind, in the order a report shows them.
    pub const ALL: [ChartKind; 5] = [
        ChartKind::Throughput,
        ChartKind::ThroughputCpu,
        ChartKind::LatencyCdf,
        ChartKind::MessageSize,
        ChartKind::Pps,
    ];

    /// The kind's name on the command line: `throughput`, `throughput-cpu`, `latency-cdf`,
    /// `message-size`, `pps`.
    pub fn name(self) -> &'static str {
        match self {
            ChartKind::Throughput => "throughput",
            ChartKind::ThroughputCpu => "throughput-cpu",
            ChartKind::LatencyCdf => "latency-cdf",
            ChartKind::MessageSize => "message-size",
            ChartKind::Pps => "pps",
            ChartKind::Sweep => "sweep",
            ChartKind::Mesh => "mesh",
            ChartKind::Load => "load",
            ChartKind::Rpm => "rpm",
            ChartKind::Trend => "trend",
        }
    }

    /// The kind named `name` (as [`ChartKind::name`] spells it).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The chart's caption.
    pub fn title(self) -> &'static str {
        match self {
            ChartKind::Throughput => "Throughput per interval",
            ChartKind::ThroughputCpu => "Throughput and CPU",
            ChartKind::LatencyCdf => "Round-trip latency distribution",
            ChartKind::MessageSize => "Throughput by write size",
            ChartKind::Pps => "Packet rate by frame size",
            ChartKind::Sweep => "Throughput by swept value",
            ChartKind::Mesh => "Mesh: every ordered pair of hosts",
            ChartKind::Load => "Round trip against offered load",
            ChartKind::Rpm => "Responsiveness under working conditions",
            ChartKind::Trend => "Trend and change points",
        }
    }

    /// What the chart shows and how it was reduced, for a caption.
    pub fn about(self) -> &'static str {
        match self {
            ChartKind::Throughput => "Receiver throughput of each interval, all directions added up, one line per run.",
            ChartKind::ThroughputCpu => "Throughput (left) and the data threads' CPU of each end (right; solid: client, light: server), the median over each column's runs.",
            ChartKind::LatencyCdf => "Round-trip percentiles on a nines scale (p90, p99, p99.9 evenly spaced), log-scale time; straight lines join the recorded percentiles, the median over each column's runs.",
            ChartKind::MessageSize => "Throughput at each write size (--len), the median over each column's runs at that size.",
            ChartKind::Pps => "Datagrams received per second at each frame size (FCS included), one line per flow count; dashed: the line rate of the link speed.",
            ChartKind::Sweep => "Receiver throughput at each value of the swept parameter, in the order swept (the median of the point's runs).",
            ChartKind::Load => "Median and 99th-percentile round trip at each offered load, a share of the capacity measured unpaced first; dashed: the knee, the first load whose median reached the stated multiple of the lowest load's.",
            ChartKind::Mesh => "One square per ordered pair: rows are the hosts that ran the test (from), columns the hosts they tested towards (to); darker is a higher figure; grey squares failed.",
            ChartKind::Trend => "One point per run in the series' order; grey: the median of each stretch between change points; dashed: a change point at the first run of the new level (vermillion: worse, green: better), with its change of the median.",
            ChartKind::Rpm => "Per direction, one point per interval since the direction began: top, the goodput and its moving average with the load connections running (dashed, right axis); bottom, the medians of the self probes (in band on the loaded connections) and the foreign probes (a request on a new connection), and the loaded connections' kernel RTT.",
        }
    }
}

/// A drawn chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Which chart.
    pub kind: ChartKind,
    /// The SVG document (`<svg …>…</svg>`, no XML declaration, so it can be inlined in HTML).
    pub svg: String,
}

impl Chart {
    /// The chart rasterised to PNG at `scale` × its size (2.0 for a sharp 1600×900). Text
    /// uses the system's fonts; without any, the PNG has the lines and bars but no text.
    pub fn to_png(&self, scale: f32) -> Result<Vec<u8>> {
        png::render(&self.svg, scale)
    }

    /// The chart's file in `format`: its SVG text, or PNG at `scale` × its size.
    pub fn encoded(self, format: ImageFormat, scale: f32) -> Result<Vec<u8>> {
        match format {
            ImageFormat::Svg => Ok(self.svg.into_bytes()),
            ImageFormat::Png => self.to_png(scale),
        }
    }
}

/// Draws `kind` over `columns`. Fails with [`Error::NoData`] when the runs hold nothing the
/// chart shows (say, a latency chart of bulk-transfer runs), and for [`ChartKind::Pps`], which
/// is drawn from a matrix by [`pps_chart`]. [`ChartKind::Rpm`] draws every `linerate rpm`
/// direction among the runs side by side.
pub fn render(kind: ChartKind, columns: &[LabeledRuns]) -> Result<Chart> {
    let svg = match kind {
        ChartKind::Throughput => timeline::draw(columns)?,
        ChartKind::ThroughputCpu => bars::draw(columns)?,
        ChartKind::LatencyCdf => latency::draw(columns)?,
        ChartKind::MessageSize => msg_size::draw(columns)?,
        ChartKind::Pps => {
            return Err(Error::NoData {
                chart: kind.name(),
                reason: "drawn from a `linerate pps --json` matrix, not from runs".into(),
            })
        }
        ChartKind::Sweep => {
            return Err(Error::NoData {
                chart: kind.name(),
                reason: "drawn from a sweep's points (linerate sweep --chart)".into(),
            })
        }
        ChartKind::Mesh => {
            return Err(Error::NoData {
                chart: kind.name(),
                reason: "drawn from a mesh's matrix (linerate mesh --chart)".into(),
            })
        }
        ChartKind::Load => {
            return Err(Error::NoData {
                chart: kind.name(),
                reason: "drawn from a load sweep's points (linerate sweep load --chart)".into(),
            })
        }
        ChartKind::Rpm => rpm::draw_runs(columns)?,
        ChartKind::Trend => {
            return Err(Error::NoData {
                chart: kind.name(),
                reason: "drawn from a trend of stored runs (linerate trend --chart)".into(),
            })
        }
    };
    Ok(Chart { kind, svg })
}

/// Draws throughput against a swept value: `points` are (value as the user wrote it,
/// throughput bits/s) in sweep order, spaced evenly on x (values may be words, e.g. a knob's);
/// `parameter` names the x axis, with its unit, e.g. `window (bytes)`.
pub fn sweep_chart(parameter: &str, series_label: &str, points: &[(String, f64)]) -> Result<Chart> {
    Ok(Chart {
        kind: ChartKind::Sweep,
        svg: sweep_value::draw(parameter, series_label, points)?,
    })
}

/// Draws round trips against offered load, with the knee (a `linerate sweep load`).
pub fn load_chart(curve: &LoadCurve) -> Result<Chart> {
    Ok(Chart {
        kind: ChartKind::Load,
        svg: load::draw(curve)?,
    })
}

/// Draws the packet rate of each of `matrices` per frame size, one series per flow count,
/// against the line-rate curve when the matrix has a link speed: a panel per matrix, one above
/// the other, captioned with its engine and start ([`PpsMatrix::caption`]).
pub fn pps_chart(matrices: &[PpsMatrix]) -> Result<Chart> {
    Ok(Chart {
        kind: ChartKind::Pps,
        svg: pps::draw(matrices)?,
    })
}

/// Draws a mesh as a heatmap: a square per ordered pair with its figure.
pub fn mesh_chart(matrix: &crate::MeshMatrix) -> Result<Chart> {
    Ok(Chart {
        kind: ChartKind::Mesh,
        svg: heatmap::draw(matrix)?,
    })
}

/// Draws `linerate rpm` directions side by side (one [`WIDTH`] wide each, [`RPM_HEIGHT`]
/// high), each captioned with its label (a run's, or the server; may be empty) and its RPM.
/// Fails with [`Error::NoData`] naming the chart without directions, or for a direction
/// without intervals.
pub fn rpm_chart(directions: &[(&str, &record::rpm::RpmDirection)]) -> Result<Chart> {
    Ok(Chart {
        kind: ChartKind::Rpm,
        svg: rpm::draw(directions)?,
    })
}

pub use rpm::RPM_HEIGHT;

/// Draws a trend's series one above the other (one [`WIDTH`] wide and [`TREND_PANEL_HEIGHT`]
/// high each), its runs named by id (`#12`), each change point a dashed line labelled with
/// its change. Fails with [`Error::NoData`] naming the chart without series, or for a series
/// without points.
pub fn trend_chart(t: &crate::trend::Trend) -> Result<Chart> {
    Ok(Chart {
        kind: ChartKind::Trend,
        svg: trend::draw(t, trend::RunNames::Ids)?,
    })
}

/// [`trend_chart`] with runs named by their position in the series (runs without ids).
pub(crate) fn trend_chart_by_position(t: &crate::trend::Trend) -> Result<Chart> {
    Ok(Chart {
        kind: ChartKind::Trend,
        svg: trend::draw(t, trend::RunNames::Positions)?,
    })
}

pub use trend::TREND_PANEL_HEIGHT;

/// Whether `columns` hold runs and every one is a `linerate rpm` direction (`summary.rpm`).
pub fn all_rpm(columns: &[LabeledRuns]) -> bool {
    let mut runs = columns.iter().flat_map(|c| &c.runs).peekable();
    runs.peek().is_some() && runs.all(|r| r.is_rpm())
}

/// The kinds that `columns` have data for, in [`ChartKind::ALL`] order ([`ChartKind::Pps`]
/// never: it needs a matrix).
pub fn applicable(columns: &[LabeledRuns]) -> Vec<ChartKind> {
    let mut kinds = Vec::new();
    if timeline::has_data(columns) {
        kinds.push(ChartKind::Throughput);
    }
    if columns.iter().any(|c| !c.runs.is_empty()) {
        kinds.push(ChartKind::ThroughputCpu);
    }
    if latency::has_data(columns) {
        kinds.push(ChartKind::LatencyCdf);
    }
    if msg_size::has_data(columns) {
        kinds.push(ChartKind::MessageSize);
    }
    kinds
}

/// One x/y series with its legend label.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// Okabe–Ito colours (distinguishable with the common colour-vision deficiencies), black
/// eighth, then six of Paul Tol's muted set that stay apart from them: fourteen series before
/// a colour repeats. Past that, line charts draw the series dashed with markers
/// ([`dashed`]), so no two series look the same.
const PALETTE: [RGBColor; 14] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
    RGBColor(136, 34, 85),
    RGBColor(68, 170, 153),
    RGBColor(153, 153, 51),
    RGBColor(51, 34, 136),
    RGBColor(170, 68, 153),
    RGBColor(102, 102, 102),
];

/// The colour of the `i`th series.
pub(crate) fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Whether the `i`th series is drawn dashed with markers: its colour is a repeat.
pub(crate) fn dashed(i: usize) -> bool {
    i >= PALETTE.len()
}

/// Maps a plotters error to ours, naming the chart.
pub(crate) fn draw_error<E: std::fmt::Debug>(chart: ChartKind) -> impl Fn(E) -> Error {
    move |e| Error::Draw {
        chart: chart.name(),
        message: format!("{e:?}"),
    }
}

/// Font family of every text element: generic, so any viewer resolves it.
pub(crate) const FONT: &str = "sans-serif";

#[cfg(test)]
mod palette_tests {
    use super::*;

    #[test]
    fn no_colour_repeats_before_the_fifteenth_series() {
        for i in 0..PALETTE.len() {
            for j in 0..i {
                assert_ne!(color(i), color(j), "series {i} and {j}");
            }
            assert!(!dashed(i));
        }
        assert!(dashed(PALETTE.len()) && color(PALETTE.len()) == color(0));
    }
}
