//! The HTML report: one self-contained file (inline CSS, inline SVG charts, one inline
//! script), readable offline — no external URL appears anywhere in it.
//!
//! The page is a minijinja template (`templates/report.html`) over the same tables the other
//! exporters write: the columns and their tags, the comparison, the run list, the packet-rate
//! matrix when given, each `linerate rpm` direction's figures and chart, every chart the
//! data supports, and each column's trend with its change points (`html_trend`). Its script
//! counts the drawn charts into `<body data-charts>`, so a headless browser's DOM shows that
//! the page ran.

use minijinja::value::Serde;
use minijinja::{context, Environment, Value};
use serde::Serialize;

use crate::chart;
use crate::format::comparison_cells;
use crate::{Comparison, Error, LabeledRuns, MeshMatrix, PpsMatrix, Result, RunsTable};
use record::rpm::StoredRpm;

const TEMPLATE: &str = include_str!("../templates/report.html");

/// What a report shows.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    /// Page title and heading.
    pub title: &'a str,
    /// A line under the title, e.g. when and from which store the report was made (the
    /// library reads no clock, so reports of the same runs are identical).
    pub subtitle: Option<&'a str>,
    /// The columns compared; their runs are listed and charted.
    pub columns: &'a [LabeledRuns],
    /// Packet-rate matrices to tabulate and chart, each apart (one per `linerate pps`
    /// execution and engine, as [`PpsMatrix::of_cells`] gathers them).
    pub pps: &'a [PpsMatrix],
    /// The meshes among the runs (`linerate mesh`), each a table and a heatmap.
    pub meshes: &'a [MeshMatrix],
    /// Keep runs that did not run whole in their groups' medians (`--include-incomplete`).
    pub include_unfinished: bool,
}

/// A table as the template's `table` macro takes it.
#[derive(Serialize)]
pub(crate) struct Cells {
    pub(crate) headers: Vec<String>,
    pub(crate) rows: Vec<Vec<String>>,
    pub(crate) text_columns: usize,
}

fn pps_cells(m: &PpsMatrix) -> Cells {
    let opt = |v: Option<f64>, f: fn(f64) -> String| v.map(f).unwrap_or_else(|| "-".into());
    Cells {
        headers: [
            "frame (bytes)",
            "payload (bytes)",
            "flows",
            "sent (packets/s)",
            "received (packets/s)",
            "loss (%)",
            "line rate (packets/s)",
            "of line rate (%)",
        ]
        .map(String::from)
        .to_vec(),
        rows: m
            .cells
            .iter()
            .map(|c| {
                vec![
                    c.frame_bytes.to_string(),
                    c.payload_bytes.to_string(),
                    crate::pps_text::flow_pattern(c),
                    format!("{:.0}", c.pps_sent),
                    format!("{:.0}", c.pps_received),
                    format!("{:.3}", c.loss_pct),
                    opt(c.line_rate_pps, |v| format!("{v:.0}")),
                    opt(c.line_rate_ratio, |v| format!("{:.1}", v * 100.0)),
                ]
            })
            .collect(),
        text_columns: 0,
    }
}

/// A packet-rate matrix as the template shows it: what tells it from the others (engine,
/// start), its table and its chart; `index` (1-based) makes the ids (`pps`, `pps-2`, …).
fn pps_view(m: &PpsMatrix, index: usize) -> Result<Value> {
    let charts = match m.cells.is_empty() {
        true => Vec::new(),
        false => vec![chart::pps_chart(std::slice::from_ref(m))?],
    };
    Ok(context! {
        id => if index <= 1 { "pps".to_string() } else { format!("pps-{index}") },
        caption => m.caption(),
        target => m.target.clone(),
        link => m.link_speed_bps.map(|l| measure::units::format_bits_per_sec(l as f64)),
        table => Value::from(Serde(pps_cells(m))),
        charts => chart_views(charts, index),
    })
}

/// A mesh as the template shows it: its table and its heatmap.
fn mesh_view(m: &MeshMatrix) -> Result<Value> {
    let mut headers = vec!["from \\ to".to_string()];
    headers.extend(m.hosts.iter().cloned());
    let rows = m
        .hosts
        .iter()
        .map(|from| {
            let mut row = vec![from.clone()];
            row.extend(m.hosts.iter().map(|to| m.cell_text(from, to)));
            row
        })
        .collect();
    let table = Cells {
        headers,
        rows,
        text_columns: 1,
    };
    Ok(context! {
        id => m.mesh_id.clone(),
        test => m.test.as_str(),
        caption => m.caption(),
        table => Value::from(Serde(table)),
        errors => m.errors_text(),
        // The SVG is ours (plotters escapes every text it writes), so it goes in as is.
        svg => Value::from_safe_string(chart::mesh_chart(m)?.svg),
    })
}

/// A `linerate rpm` direction's figures as rows of a two-column table.
fn rpm_cells(s: &StoredRpm) -> Cells {
    let d = &s.direction;
    let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2} ms"));
    let p50 = |x: &record::rpm::Spread| ms((x.samples > 0).then_some(x.p50));
    let conf = crate::rpm_text::confidence;
    let r = d.responsiveness;
    let rows: Vec<(&str, String)> = vec![
        (
            "RPM",
            r.map_or("not measured".into(), |r| {
                format!("{:.0} (confidence {})", r.rpm, conf(d.rpm_confidence))
            }),
        ),
        (
            "foreign RPM",
            r.map_or("-".into(), |r| format!("{:.0}", r.foreign_rpm)),
        ),
        (
            "loaded RPM",
            r.map_or("-".into(), |r| format!("{:.0}", r.loaded_rpm)),
        ),
        (
            "goodput",
            format!(
                "{} by {} connections (confidence {})",
                crate::rpm_text::goodput_words(d),
                d.connections,
                conf(d.goodput_confidence)
            ),
        ),
        ("self probes p50", p50(&d.self_ms)),
        ("foreign requests p50", p50(&d.foreign_rr_ms)),
        ("foreign connects p50", p50(&d.foreign_connect_ms)),
        ("kernel RTT p50", p50(&d.kernel_rtt_ms)),
        ("idle round trip p50", p50(&s.idle.rr_ms)),
        (
            "idle RPM",
            s.idle.rpm.map_or("-".into(), |v| format!("{v:.0}")),
        ),
        ("delay the load added", ms(d.loaded_minus_idle_ms)),
        ("of which in socket buffers", ms(d.in_socket_buffers_ms)),
        (
            "of which in the network's queues",
            ms(d.in_network_queues_ms),
        ),
    ];
    Cells {
        headers: vec!["figure".into(), "value".into()],
        rows: rows
            .into_iter()
            .map(|(k, v)| vec![k.to_string(), v])
            .chain(d.notes.iter().map(|n| vec!["note".into(), n.clone()]))
            .collect(),
        text_columns: 2,
    }
}

/// Every `linerate rpm` direction among the runs: its label, figures and chart (none for a
/// direction stopped before its first interval).
fn rpm_views(columns: &[LabeledRuns]) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for c in columns {
        for (i, r) in c.runs.iter().enumerate() {
            let Some(s) = r.as_rpm() else { continue };
            let label = c.run_label(i);
            let svg = match chart::rpm_chart(&[(&label, &s.direction)]) {
                Ok(chart) => Some(Value::from_safe_string(chart.svg)),
                Err(Error::NoData { .. }) => None,
                Err(e) => return Err(e),
            };
            out.push(context! {
                label => label,
                draft => s.draft.clone(),
                table => Value::from(Serde(rpm_cells(s))),
                svg => svg,
                about => chart::ChartKind::Rpm.about(),
            });
        }
    }
    Ok(out)
}

/// Every chart the columns' data supports, in [`chart::ChartKind::ALL`] order (draw them over
/// one kind's columns: a [`crate::Section`]'s).
pub fn charts(columns: &[LabeledRuns]) -> Result<Vec<chart::Chart>> {
    let mut out = Vec::new();
    for kind in chart::applicable(columns) {
        match chart::render(kind, columns) {
            Ok(c) => out.push(c),
            Err(Error::NoData { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

fn chart_views(charts: Vec<chart::Chart>, section: usize) -> Vec<Value> {
    charts
        .into_iter()
        .map(|c| {
            Value::from(Serde(ChartView {
                name: c.kind.name(),
                id: if section <= 1 {
                    c.kind.name().to_string()
                } else {
                    format!("{}-{section}", c.kind.name())
                },
                title: c.kind.title(),
                about: c.kind.about(),
                // The SVG is ours (plotters escapes every text it writes), so it goes in as is.
                svg: Value::from_safe_string(c.svg),
            }))
        })
        .collect()
}

/// One kind's part of the report: its columns, what differed, the comparison and its charts.
fn section_view(section: &crate::Section, index: usize) -> Result<Value> {
    let cmp = Comparison::new(&section.columns);
    let labels: Vec<String> = cmp.columns.iter().map(|c| c.label.clone()).collect();
    let (headers, rows) = crate::differences_cells(&labels, &cmp.differences);
    let differences = Cells {
        headers,
        rows,
        text_columns: usize::MAX,
    };
    let (headers, rows) = comparison_cells(&cmp);
    let comparison = Cells {
        headers,
        rows,
        text_columns: 2,
    };
    let columns: Vec<Value> = section
        .columns
        .iter()
        .map(|c| {
            context! {
                label => c.label.clone(),
                tags => c.tags.clone(),
                runs => c.runs.len(),
                marks => c.marks().join(", "),
            }
        })
        .collect();
    let left_out: usize = section.columns.iter().map(|c| c.left_out.len()).sum();
    Ok(context! {
        kind => section.kind.as_str(),
        index => index,
        columns => columns,
        left_out => left_out,
        differences => (!cmp.differences.is_empty()).then(|| Value::from(Serde(differences))),
        comparison => Value::from(Serde(comparison)),
        charts => chart_views(charts(&section.columns)?, index),
        trends => crate::html_trend::trend_views(section, index)?,
    })
}

/// The report as one HTML document.
pub fn render(report: &Report<'_>) -> Result<String> {
    let mut env = Environment::new();
    env.add_template("report.html", TEMPLATE)?;
    let sections = crate::sections(report.columns, report.include_unfinished);
    let views = sections
        .iter()
        .enumerate()
        .map(|(i, s)| section_view(s, i + 1))
        .collect::<Result<Vec<_>>>()?;
    let in_sections: Vec<LabeledRuns> = sections.into_iter().flat_map(|s| s.columns).collect();
    let runs = RunsTable::new(&in_sections);
    let pps = (report.pps.iter().enumerate())
        .map(|(i, m)| pps_view(m, i + 1))
        .collect::<Result<Vec<_>>>()?;
    let meshes = report
        .meshes
        .iter()
        .map(mesh_view)
        .collect::<Result<Vec<_>>>()?;
    let rpms = rpm_views(report.columns)?;
    let html = env.get_template("report.html")?.render(context! {
        title => report.title,
        subtitle => report.subtitle,
        sections => views,
        runs => Value::from(Serde(runs)),
        pps => pps,
        meshes => meshes,
        rpms => rpms,
    })?;
    Ok(html)
}

#[derive(Serialize)]
struct ChartView {
    name: &'static str,
    /// The figure's id: the chart's name and its section's number.
    id: String,
    title: &'static str,
    about: &'static str,
    svg: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_rpm_direction_gets_its_figures_and_chart() {
        let run: record::RunRecord =
            serde_json::from_str(include_str!("../tests/fixtures/rpm_run.json")).unwrap();
        let columns = [LabeledRuns::new("#2", vec![run])];
        let html = render(&Report {
            title: "t",
            subtitle: None,
            columns: &columns,
            pps: &[],
            meshes: &[],
            include_unfinished: false,
        })
        .unwrap();
        assert!(html.contains("<h2>Responsiveness #2</h2>"), "{html}");
        assert!(
            html.contains("66172 (confidence low)"),
            "the RPM in the table"
        );
        assert!(html.contains(r#"<figure class="chart" id="chart-rpm-1">"#));
        assert!(
            html.contains("#2: up (client -&gt; server), RPM 66172"),
            "its chart"
        );
    }
}
