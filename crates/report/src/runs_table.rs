//! [`RunsTable`]: one line per run with its headline figures and how it ended, for the run
//! lists of the terminal, Markdown and HTML exporters; runs left out of a group's medians are
//! listed too, marked `(left out: incomplete)`. A TCP run's congestion control (`-C`, else the sending
//! hosts' defaults) gets a column: it moves throughput and CPU more than most settings.

use serde::Serialize;

use crate::congestion_text::congestion_cell;
use crate::format::{opt_value, utc};
use crate::headline::target_label;
use crate::LabeledRuns;
use analysis::metric_id::metric;
use analysis::metric_id::MetricId;

/// One line per run, as text cells; columns no run has are left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunsTable {
    /// Column headers, units in parentheses.
    pub headers: Vec<String>,
    /// One row per run, in column order then run order.
    pub rows: Vec<Vec<String>>,
    /// How many leading columns are text (the rest are numbers, aligned right).
    pub text_columns: usize,
}

type Cell = Box<dyn Fn(&record::RunRecord) -> Option<f64>>;

/// The figures a run list shows after its duration, in this order, headed `name (unit)`.
const NUMBERS: [MetricId; 7] = [
    MetricId::Throughput,
    MetricId::ClientCpu,
    MetricId::ServerCpu,
    MetricId::Retransmits,
    MetricId::Loss,
    MetricId::Transactions,
    MetricId::LatencyP99,
];

/// The duration, then [`NUMBERS`], each with its header.
fn numbers() -> Vec<(String, Cell)> {
    let duration: (String, Cell) = (
        "duration (s)".into(),
        Box::new(|r| Some(r.summary.duration_s)),
    );
    let figures = NUMBERS.iter().map(|&id| {
        let m = metric(id);
        let cell: Cell = Box::new(move |r| m.value(r));
        (format!("{} ({})", m.name(), m.unit), cell)
    });
    std::iter::once(duration).chain(figures).collect()
}

impl RunsTable {
    /// The runs of every column, one line each.
    pub fn new(columns: &[LabeledRuns]) -> Self {
        let runs: Vec<(String, String, &record::RunRecord)> = columns
            .iter()
            .flat_map(|c| {
                let tags = c.tags_text();
                let left_out = c.left_out.iter().map(move |r| {
                    let status = record::RunStatus::of(r);
                    (
                        format!("{} (left out: {status})", c.label),
                        c.tags_text(),
                        r,
                    )
                });
                c.runs
                    .iter()
                    .enumerate()
                    .map(move |(i, r)| (c.run_label(i), tags.clone(), r))
                    .chain(left_out)
            })
            .collect();
        let show_tags = runs.iter().any(|(_, t, _)| !t.is_empty());
        let numbers: Vec<(String, Cell)> = numbers()
            .into_iter()
            .filter(|(_, f)| runs.iter().any(|(_, _, r)| f(r).is_some()))
            .collect();
        let congestion: Vec<Option<String>> =
            runs.iter().map(|(_, _, r)| congestion_cell(r)).collect();
        let show_congestion = congestion.iter().any(Option::is_some);
        let mut headers = vec!["run".to_string()];
        if show_tags {
            headers.push("tags".into());
        }
        headers.extend(["kind", "status", "started (UTC)", "target"].map(String::from));
        if show_congestion {
            headers.push("congestion".into());
        }
        let text_columns = headers.len();
        headers.extend(numbers.iter().map(|(h, _)| h.clone()));
        let rows = runs
            .iter()
            .zip(congestion)
            .map(|((label, tags, r), cc)| {
                let mut row = vec![label.clone()];
                if show_tags {
                    row.push(tags.clone());
                }
                row.push(r.kind.as_str().to_string());
                row.push(record::RunStatus::of(r).as_str().to_string());
                row.push(utc(r.started_at_unix_ms));
                row.push(target_label(&r.target));
                if show_congestion {
                    row.push(cc.unwrap_or_else(|| "-".into()));
                }
                row.extend(numbers.iter().map(|(_, f)| opt_value(f(r))));
                row
            })
            .collect();
        Self {
            headers,
            rows,
            text_columns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_input_has_headers_only() {
        let t = RunsTable::new(&[]);
        assert!(t.rows.is_empty());
        assert_eq!(
            t.headers,
            ["run", "kind", "status", "started (UTC)", "target"]
        );
    }

    #[test]
    fn a_tcp_run_shows_its_congestion_control() {
        let mut runs: Vec<record::RunRecord> =
            serde_json::from_str(include_str!("../tests/fixtures/tcp_runs.json")).unwrap();
        runs.truncate(1);
        runs[0].spec.tcp_mut().unwrap().congestion = Some("cubic".into());
        let t = RunsTable::new(&[LabeledRuns::new("a", runs.clone())]);
        let at = t.headers.iter().position(|h| h == "congestion").unwrap();
        assert!(at < t.text_columns);
        assert_eq!(t.rows[0][at], "cubic (-C)");
        // Nothing known about any run: no column.
        runs[0].spec.tcp_mut().unwrap().congestion = None;
        runs[0].hosts = None;
        let t = RunsTable::new(&[LabeledRuns::new("a", runs)]);
        assert!(!t.headers.iter().any(|h| h == "congestion"));
    }
}
