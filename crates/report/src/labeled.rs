//! [`LabeledRuns`]: one column of a comparison — a single run, or a group of runs that share
//! tags, whose figure for each metric is the median over the group.

use std::collections::BTreeMap;

use record::{RunRecord, RunStatus, StoredRun, Tags};
use serde::{Deserialize, Serialize};

/// Runs under one label: `#12` for a single stored run, `driver=velocityget` for the runs
/// sharing that tag. Tags label chart series and report tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabeledRuns {
    /// What the column is called in tables and legends.
    pub label: String,
    /// Tags the runs share (shown beside the label when it does not already say them).
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// The runs, in the order they ran.
    pub runs: Vec<RunRecord>,
    /// Runs of the group left out of it because they did not run whole (interrupted,
    /// incomplete, a stream failed): they would drag its medians down. See
    /// [`LabeledRuns::leave_out_unfinished`]. Still listed, marked, with the runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<RunRecord>,
}

impl LabeledRuns {
    /// A column of `runs` called `label`, without tags.
    pub fn new(label: impl Into<String>, runs: Vec<RunRecord>) -> Self {
        Self {
            label: label.into(),
            tags: BTreeMap::new(),
            runs,
            left_out: Vec::new(),
        }
    }

    /// The group without its runs that did not run whole ([`RunStatus::is_ok`]), counted in
    /// `left_out`. A group with no whole run keeps them all: they are all there is to show,
    /// and its head says what they are ([`LabeledRuns::marks`]).
    pub fn leave_out_unfinished(mut self) -> Self {
        let whole = self
            .runs
            .iter()
            .filter(|r| RunStatus::of(r).is_ok())
            .count();
        if whole > 0 && whole < self.runs.len() {
            let (kept, out): (Vec<RunRecord>, Vec<RunRecord>) = std::mem::take(&mut self.runs)
                .into_iter()
                .partition(|r| RunStatus::of(r).is_ok());
            self.runs = kept;
            self.left_out.extend(out);
        }
        self
    }

    /// What a column's head says beyond its label: how many runs were left out, and which of
    /// the runs it holds did not run whole (`1 incomplete`, `2 interrupted`); empty when all
    /// ran whole and none was left out.
    pub fn marks(&self) -> Vec<String> {
        let mut marks = Vec::new();
        if !self.left_out.is_empty() {
            marks.push(format!("{} left out", self.left_out.len()));
        }
        for status in [
            RunStatus::Incomplete,
            RunStatus::Interrupted,
            RunStatus::Error,
        ] {
            let n = self
                .runs
                .iter()
                .filter(|r| RunStatus::of(r) == status)
                .count();
            if n > 0 {
                marks.push(format!("{n} {status}"));
            }
        }
        marks
    }

    /// A column of stored runs: `label`, the `tags` its runs share, their records (with the
    /// host facts stored beside an older one, [`StoredRun::record_with_hosts`]).
    pub fn of_stored(label: impl Into<String>, tags: &Tags, runs: &[StoredRun]) -> Self {
        let tags = tags.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        let runs = runs.iter().map(StoredRun::record_with_hosts).collect();
        Self::new(label, runs).with_tags(tags.collect())
    }

    /// The same column with `tags`.
    pub fn with_tags(mut self, tags: BTreeMap<String, String>) -> Self {
        self.tags = tags;
        self
    }

    /// Tags as `k=v, k=v` (sorted by key), empty without tags.
    pub fn tags_text(&self) -> String {
        self.tags
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The label a chart series carries: the label, then the tags when the label does not
    /// already spell them (`#12 (driver=velocityget)`; a label `driver=a,mtu=9000`, as the
    /// command line writes a tag set, spells them too).
    pub fn series_label(&self) -> String {
        let tags = self.tags_text();
        if tags.is_empty() || self.label == tags || self.label == tags.replace(", ", ",") {
            self.label.clone()
        } else {
            format!("{} ({tags})", self.label)
        }
    }

    /// Label of the `i`th run of this column: the column's label alone when it holds one run,
    /// else `label [i+1/n]`; a run that did not run whole says so (`#9 (incomplete)`).
    pub fn run_label(&self, i: usize) -> String {
        let mut label = if self.runs.len() == 1 {
            self.label.clone()
        } else {
            format!("{} [{}/{}]", self.label, i + 1, self.runs.len())
        };
        if let Some(status) = self.runs.get(i).map(RunStatus::of).filter(|s| !s.is_ok()) {
            label.push_str(&format!(" ({status})"));
        }
        label
    }
}

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
/// NaNs are left out.
pub(crate) fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = values.into_iter().filter(|x| !x.is_nan()).collect();
    analysis::stats::median(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median([3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median([4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median([f64::NAN, 5.0]), Some(5.0));
        assert_eq!(median(std::iter::empty()), None);
    }

    #[test]
    fn series_label_adds_tags_unless_the_label_is_them() {
        let tags: BTreeMap<_, _> = [("driver".to_string(), "velocityget".to_string())].into();
        let by_id = LabeledRuns::new("#12", vec![]).with_tags(tags.clone());
        assert_eq!(by_id.series_label(), "#12 (driver=velocityget)");
        let by_tag = LabeledRuns::new("driver=velocityget", vec![]).with_tags(tags);
        assert_eq!(by_tag.series_label(), "driver=velocityget");
        let two: BTreeMap<_, _> = [("driver", "a"), ("mtu", "9000")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
        let set = LabeledRuns::new("driver=a,mtu=9000", vec![]).with_tags(two);
        assert_eq!(set.series_label(), "driver=a,mtu=9000");
    }
}
