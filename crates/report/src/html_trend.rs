//! The HTML report's trend parts: for each column of a kind's section that holds at least
//! [`MIN_RUNS`] runs, the history of the kind's headline metric (goodput, or transactions for
//! rr and crr) over its runs in the order they ran, with its change points (E-divisive means
//! at [`analysis::change_points::ALPHA`], as `linerate trend` finds them): a note, a table of
//! the change points and the trend chart.
//!
//! Invariants: a run is named by its position in its column (the report's columns hold
//! records, not store ids), counted as the run list counts them (`label [13/24]`); a column
//! whose runs lack the metric gets no trend.

use minijinja::value::Serde;
use minijinja::{context, Value};

use crate::format::value;
use crate::html::Cells;
use crate::trend::{trend, SeriesRuns, TrendSeries};
use crate::{chart, LabeledRuns, Result, Section};

/// Fewest runs of one kind a column needs for a trend.
pub const MIN_RUNS: usize = 4;

/// The trend of each column of `section` that has [`MIN_RUNS`] runs with the metric; `index`
/// is the section's number, for the ids.
pub(crate) fn trend_views(section: &Section, index: usize) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for (k, column) in section.columns.iter().enumerate() {
        if let Some(v) = trend_view(column, &format!("{index}-{}", k + 1))? {
            out.push(v);
        }
    }
    Ok(out)
}

fn trend_view(column: &LabeledRuns, id: &str) -> Result<Option<Value>> {
    // A trend is one test's history: runs that differ in their settings (a sweep's write
    // sizes) are points of a sweep, not a series.
    let one_test = column.runs.windows(2).all(|w| w[0].spec == w[1].spec);
    if column.runs.len() < MIN_RUNS || !one_test {
        return Ok(None);
    }
    let mut runs: Vec<_> = column.runs.iter().collect();
    // Stable: runs that started together keep the column's order.
    runs.sort_by_key(|r| r.started_at_unix_ms);
    let input = [SeriesRuns {
        key: column.series_label(),
        runs: runs
            .into_iter()
            .enumerate()
            .map(|(i, r)| (i as i64 + 1, r))
            .collect(),
    }];
    let at = analysis::change_points::Threshold::default();
    let Ok(t) = trend(&input, None, at) else {
        return Ok(None);
    };
    let Some(s) = t.series.first().filter(|s| s.points.len() >= MIN_RUNS) else {
        return Ok(None);
    };
    let found = match s.change_points.len() {
        0 => "no change point".to_string(),
        1 => "one change point".to_string(),
        n => format!("{n} change points"),
    };
    let note = format!(
        "{} ({}) of the {} runs of this column, in the order they ran: {found} (E-divisive means, \
         alpha {}, changes under {} % left out).",
        s.metric,
        s.unit,
        s.points.len(),
        at.alpha,
        at.min_change_pct
    );
    let svg = chart::trend_chart_by_position(&t)?.svg;
    Ok(Some(context! {
        id => id,
        label => column.label.clone(),
        note => note,
        table => (!s.change_points.is_empty()).then(|| Value::from(Serde(changes(s)))),
        // The SVG is ours (plotters escapes every text it writes), so it goes in as is.
        svg => Value::from_safe_string(svg),
        about => chart::ChartKind::Trend.about(),
    }))
}

/// The change points of `s` as a table.
fn changes(s: &TrendSeries) -> Cells {
    let n = s.points.len();
    Cells {
        headers: vec![
            "run".into(),
            format!("before → after ({})", s.unit),
            "change (%)".into(),
            "confidence (%)".into(),
            "for the".into(),
        ],
        rows: s
            .change_points
            .iter()
            .map(|c| {
                vec![
                    format!("{} of {n}", c.index + 1),
                    format!("{} → {}", value(c.before), value(c.after)),
                    c.change_pct.map_or("-".into(), |p| format!("{p:+.1}")),
                    format!("{:.1}", c.confidence * 100.0),
                    if c.worse { "worse" } else { "better" }.into(),
                ]
            })
            .collect(),
        text_columns: 1,
    }
}

#[cfg(test)]
mod tests {
    use crate::html::{render, Report};
    use crate::LabeledRuns;
    use record::RunRecord;

    /// Twelve tcp_stream runs at 200 Mbit/s then twelve at 180, a minute apart, a little noise.
    fn shaped_runs() -> Vec<RunRecord> {
        let runs: Vec<RunRecord> =
            serde_json::from_str(include_str!("../tests/fixtures/tcp_runs.json")).unwrap();
        (0..24)
            .map(|i| {
                let mut r = runs[0].clone();
                let level = if i < 12 { 200.0 } else { 180.0 };
                let noise = [0.4, -0.3, 0.1, -0.2, 0.3, 0.0][i % 6];
                r.summary.throughput_bps = (level + noise) * 1e6;
                r.started_at_unix_ms += 60_000 * i as u64;
                r
            })
            .collect()
    }

    fn report(columns: &[LabeledRuns]) -> String {
        render(&Report {
            title: "t",
            subtitle: None,
            columns,
            pps: &[],
            meshes: &[],
            include_unfinished: false,
        })
        .unwrap()
    }

    #[test]
    fn a_column_of_24_runs_gets_a_trend_with_one_change_point_at_run_13() {
        let html = report(&[LabeledRuns::new("series=s", shaped_runs())]);
        assert!(
            html.contains(r#"<h3 id="trend-1-1">Trend: series=s</h3>"#),
            "{html}"
        );
        let note = &html[html.find("Trend: series=s").unwrap()..];
        assert!(note.contains(
            "throughput (Mbit&#x2f;s) of the 24 runs of this column, in the order they ran: one change point"
        ), "{}", &note[..600]);
        let table = &html[html.find(r#"<table id="trend-changes-1-1">"#).unwrap()..];
        let table = &table[..table.find("</table>").unwrap()];
        assert_eq!(
            table.matches("<tr>").count(),
            2,
            "a head and one row: {table}"
        );
        for cell in ["<td>13 of 24</td>", ">200.1 → 180.1<", ">-10.0<", ">worse<"] {
            assert!(table.contains(cell), "{cell}: {table}");
        }
        let chart = &html[html.find(r#"id="chart-trend-1-1""#).unwrap()..];
        assert!(
            chart.contains("\u{2212}10.0 % at run 13"),
            "the chart's marker"
        );
        assert_eq!(html, report(&[LabeledRuns::new("series=s", shaped_runs())]));
    }

    #[test]
    fn a_column_of_three_runs_gets_no_trend() {
        let mut runs = shaped_runs();
        runs.truncate(3);
        let html = report(&[LabeledRuns::new("series=s", runs)]);
        assert!(!html.contains("Trend:"), "{html}");
    }

    #[test]
    fn a_column_whose_runs_differ_in_their_settings_gets_no_trend() {
        let mut runs = shaped_runs();
        runs[5].spec.duration_ms += 1000;
        let html = report(&[LabeledRuns::new("series=s", runs)]);
        assert!(!html.contains("Trend:"), "a sweep's points are no series");
    }
}
