//! [`LabeledRuns`]: one column of a comparison — a single run, or a group of runs that share
//! tags, whose figure for each metric is the median over the group.

use std::collections::BTreeMap;

use results::RunRecord;
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
}

impl LabeledRuns {
    /// A column of `runs` called `label`, without tags.
    pub fn new(label: impl Into<String>, runs: Vec<RunRecord>) -> Self {
        Self {
            label: label.into(),
            tags: BTreeMap::new(),
            runs,
        }
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
    /// else `label [i+1/n]`.
    pub fn run_label(&self, i: usize) -> String {
        if self.runs.len() == 1 {
            self.label.clone()
        } else {
            format!("{} [{}/{}]", self.label, i + 1, self.runs.len())
        }
    }
}

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
/// NaNs are left out.
pub(crate) fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
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
