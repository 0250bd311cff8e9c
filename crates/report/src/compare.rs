//! [`Comparison`]: columns of runs lined up metric by metric, each later column also as a
//! ratio to the first. Numbers only; the exporters format them. [`Comparison::by_kind`] makes
//! one per test kind, so a ratio is only ever between runs of one kind.

use std::collections::BTreeMap;

use analysis::metric_id::{metrics, Better};
use serde::{Deserialize, Serialize};

use crate::labeled::median;
use crate::LabeledRuns;

/// One column: a run or a group of runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// The column's label.
    pub label: String,
    /// Tags the column's runs share.
    pub tags: BTreeMap<String, String>,
    /// How many runs the column's medians are over.
    pub runs: usize,
    /// What its head says beyond the label: runs left out of the medians, runs in them that
    /// did not run whole ([`LabeledRuns::marks`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<String>,
}

/// One metric across the columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Metric name, e.g. `throughput`.
    pub metric: String,
    /// Unit of every value in the row.
    pub unit: String,
    /// Which way is better.
    pub better: Better,
    /// Per column: the value, or the median over the column's runs that have it; `None` when
    /// none has.
    pub values: Vec<Option<f64>>,
    /// Per column: `values[i] / values[0]`; `None` for the first column, and wherever either
    /// value is missing or the first is zero.
    pub ratios: Vec<Option<f64>>,
}

/// Runs lined up side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The kind every run is, when they are all one kind (a [`crate::Section`]'s comparison).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<wire::TestKind>,
    /// The columns, the first being the baseline of every ratio.
    pub columns: Vec<Column>,
    /// One row per metric that at least one column has (see [`analysis::metric_id::Metric::repeats`]).
    pub rows: Vec<Row>,
    /// The settings and host facts that are not the same in every column.
    #[serde(default)]
    pub differences: Vec<crate::Difference>,
}

impl Comparison {
    /// Lines up `columns`; the first is the baseline.
    pub fn new(columns: &[LabeledRuns]) -> Self {
        let mut rows: Vec<Row> = Vec::new();
        for m in metrics() {
            let values: Vec<Option<f64>> = columns
                .iter()
                .map(|c| median(c.runs.iter().filter_map(|r| m.value(r))))
                .collect();
            if values.iter().all(Option::is_none) {
                continue;
            }
            let repeats = rows
                .iter()
                .any(|r| m.repeats.iter().any(|id| id.name() == r.metric) && r.values == values);
            if repeats {
                continue;
            }
            let ratios = ratios(&values);
            rows.push(Row {
                metric: m.name().to_string(),
                unit: m.unit.to_string(),
                better: m.better,
                values,
                ratios,
            });
        }
        let mut kinds = columns.iter().flat_map(|c| &c.runs).map(|r| r.kind);
        let first = kinds.next();
        let kind = first.filter(|k| kinds.all(|other| other == *k));
        Self {
            kind,
            columns: columns
                .iter()
                .map(|c| Column {
                    label: c.label.clone(),
                    tags: c.tags.clone(),
                    runs: c.runs.len(),
                    marks: c.marks(),
                })
                .collect(),
            rows,
            differences: crate::differences(columns),
        }
    }

    /// One comparison per section of `columns` ([`crate::sections`]): never a ratio across
    /// kinds.
    pub fn by_kind(columns: &[LabeledRuns], include_unfinished: bool) -> Vec<Comparison> {
        crate::sections(columns, include_unfinished)
            .iter()
            .map(|s| Comparison::new(&s.columns))
            .collect()
    }

    /// The row for `metric`, if any column has it.
    pub fn row(&self, metric: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.metric == metric)
    }
}

fn ratios(values: &[Option<f64>]) -> Vec<Option<f64>> {
    let base = values.first().copied().flatten().filter(|b| *b != 0.0);
    values
        .iter()
        .enumerate()
        .map(|(i, v)| match (i, base, v) {
            (0, _, _) => None,
            (_, Some(b), Some(v)) => Some(v / b),
            _ => None,
        })
        .collect()
}

/// What the columns of `cmps` left out of their medians, a line each (`tcp_stream driver=a: 1
/// left out`), and, when any group left runs out, how to keep them.
pub fn left_out_notes(cmps: &[Comparison]) -> Vec<String> {
    let mut lines = Vec::new();
    for cmp in cmps {
        for c in cmp.columns.iter().filter(|c| !c.marks.is_empty()) {
            let kind = cmp.kind.map_or("", |k| k.as_str());
            lines.push(format!("{kind} {}: {}", c.label, c.marks.join(", ")));
        }
    }
    if cmps
        .iter()
        .flat_map(|c| &c.columns)
        .any(|c| c.marks.iter().any(|m| m.ends_with("left out")))
    {
        lines.push(
            "runs that did not run whole are left out of their groups' medians; \
             --include-incomplete keeps them"
                .into(),
        );
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_to_the_first_column() {
        let r = ratios(&[Some(2.0), Some(1.0), None, Some(3.0)]);
        assert_eq!(r, vec![None, Some(0.5), None, Some(1.5)]);
        assert_eq!(ratios(&[Some(0.0), Some(1.0)]), vec![None, None]);
        assert_eq!(ratios(&[None, Some(1.0)]), vec![None, None]);
    }

    #[test]
    fn no_columns_no_rows() {
        let c = Comparison::new(&[]);
        assert!(c.columns.is_empty() && c.rows.is_empty());
    }
}
