//! [`RunsTable`]: one line per run with its headline figures, for the run lists of the
//! terminal, Markdown and HTML exporters.

use serde::Serialize;

use crate::format::{opt_value, utc};
use crate::LabeledRuns;

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

type Cell = fn(&results::RunRecord) -> Option<f64>;

const NUMBERS: [(&str, Cell); 8] = [
    ("duration (s)", |r| Some(r.summary.duration_s)),
    ("throughput (Mbit/s)", |r| {
        Some(r.summary.throughput_bps / 1e6)
    }),
    ("client CPU (%)", |r| Some(r.summary.local_cpu_pct)),
    ("server CPU (%)", |r| Some(r.summary.remote_cpu_pct)),
    ("retransmits", |r| r.summary.retransmits.map(f64::from)),
    ("loss (%)", |r| r.summary.udp.map(|u| u.loss_pct)),
    ("transactions (1/s)", |r| {
        r.summary.rr.map(|rr| rr.transactions_per_s)
    }),
    ("latency p99 (µs)", |r| {
        r.summary.rr.and_then(|rr| rr.latency_us).map(|l| l.p99)
    }),
];

impl RunsTable {
    /// The runs of every column, one line each.
    pub fn new(columns: &[LabeledRuns]) -> Self {
        let runs: Vec<(String, String, &results::RunRecord)> = columns
            .iter()
            .flat_map(|c| {
                let tags = c.tags_text();
                c.runs
                    .iter()
                    .enumerate()
                    .map(move |(i, r)| (c.run_label(i), tags.clone(), r))
            })
            .collect();
        let show_tags = runs.iter().any(|(_, t, _)| !t.is_empty());
        let numbers: Vec<&(&str, Cell)> = NUMBERS
            .iter()
            .filter(|(_, f)| runs.iter().any(|(_, _, r)| f(r).is_some()))
            .collect();
        let mut headers = vec!["run".to_string()];
        if show_tags {
            headers.push("tags".into());
        }
        headers.extend(["kind", "started (UTC)", "target"].map(String::from));
        let text_columns = headers.len();
        headers.extend(numbers.iter().map(|(h, _)| h.to_string()));
        let rows = runs
            .iter()
            .map(|(label, tags, r)| {
                let mut row = vec![label.clone()];
                if show_tags {
                    row.push(tags.clone());
                }
                row.push(r.kind.as_str().to_string());
                row.push(utc(r.started_at_unix_ms));
                row.push(r.target.clone());
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
        assert_eq!(t.headers, ["run", "kind", "started (UTC)", "target"]);
    }
}
