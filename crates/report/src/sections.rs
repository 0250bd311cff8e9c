//! Columns grouped by test kind ([`Section`]): `compare` and `report` put each kind in a section
//! of its own, so no ratio, median or chart ever spans two kinds (a udp_stream's bit/s over a
//! tcp_stream's, a tcp_rr's transactions beside a tcp_crr's, say nothing).
//!
//! Within a section, a column that stands for one stored run (`#12`) is named by what tells it
//! from the section's other columns — its target's host, its shape (`-R`, `--bidir`, `-P 4`)
//! and its tags, whichever differ (`198.18.0.2 -P 4`, `driver=a`) — and keeps `#12` only when
//! nothing differs or two columns would read the same. A tag-set column keeps the set the user
//! wrote.
//!
//! Invariants: every run of the input is in exactly one section, or counted as left out of its
//! column (runs that did not run whole, in a group that has whole ones, unless asked to keep
//! them); sections come in the order their kinds first appear; columns keep their order.

use std::collections::BTreeMap;

use record::{RunRecord, RunShape};
use wire::TestKind;

use crate::headline::{shape_flags, target_host};
use crate::LabeledRuns;

/// The columns of one test kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The kind every run of every column is.
    pub kind: TestKind,
    /// The columns, each the runs of that kind of an input column.
    pub columns: Vec<LabeledRuns>,
}

/// `columns` split by kind (a column holding runs of two kinds is a column in each section),
/// each column without its unfinished runs unless `include_unfinished`
/// ([`LabeledRuns::leave_out_unfinished`]), single runs named by what differs.
pub fn sections(columns: &[LabeledRuns], include_unfinished: bool) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    for column in columns {
        let mut kinds: Vec<TestKind> = Vec::new();
        for r in &column.runs {
            if !kinds.contains(&r.kind) {
                kinds.push(r.kind);
            }
        }
        for kind in kinds {
            let mut part = column.clone();
            part.runs.retain(|r| r.kind == kind);
            if !include_unfinished {
                part = part.leave_out_unfinished();
            }
            match out.iter_mut().find(|s| s.kind == kind) {
                Some(s) => s.columns.push(part),
                None => out.push(Section {
                    kind,
                    columns: vec![part],
                }),
            }
        }
    }
    for s in &mut out {
        name_columns(&mut s.columns);
    }
    out
}

/// What may tell a run apart, by name: `target`, `shape`, then each tag.
fn descriptor(column: &LabeledRuns) -> BTreeMap<String, String> {
    let mut d = BTreeMap::new();
    if let Some(r) = column.runs.first() {
        d.insert(" 0target".to_string(), target_host(&r.target));
        d.insert(" 1shape".to_string(), shape_text(r));
    }
    for (k, v) in &column.tags {
        d.insert(k.clone(), format!("{k}={v}"));
    }
    d
}

fn shape_text(r: &RunRecord) -> String {
    let s = RunShape::of(r);
    shape_flags(s.direction, s.streams).join(" ")
}

/// Renames each single-run column (`#12`) after what differs between the section's columns.
fn name_columns(columns: &mut [LabeledRuns]) {
    if columns.len() < 2 {
        return;
    }
    let ds: Vec<BTreeMap<String, String>> = columns.iter().map(descriptor).collect();
    let mut keys: Vec<&String> = ds.iter().flat_map(|d| d.keys()).collect();
    keys.sort();
    keys.dedup();
    let differing: Vec<&String> = keys
        .into_iter()
        .filter(|k| {
            let first = ds[0].get(*k);
            ds.iter().any(|d| d.get(*k) != first)
        })
        .collect();
    let names: Vec<Option<String>> = columns
        .iter()
        .zip(&ds)
        .map(|(c, d)| {
            if !c.label.starts_with('#') {
                return None;
            }
            let parts: Vec<&str> = differing
                .iter()
                .filter_map(|k| d.get(*k))
                .map(String::as_str)
                .filter(|v| !v.is_empty())
                .collect();
            (!parts.is_empty()).then(|| parts.join(" "))
        })
        .collect();
    for (i, name) in names.iter().enumerate() {
        let Some(name) = name else { continue };
        let taken = columns
            .iter()
            .enumerate()
            .any(|(j, c)| j != i && (names[j].as_ref().unwrap_or(&c.label) == name));
        let label = &mut columns[i].label;
        *label = if taken {
            format!("{name} {label}")
        } else {
            name.clone()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn tcp() -> RunRecord {
        let runs: Vec<RunRecord> =
            serde_json::from_str(include_str!("../tests/fixtures/tcp_runs.json")).unwrap();
        runs[0].clone()
    }

    #[test]
    fn kinds_get_a_section_each_and_single_runs_are_named_by_what_differs() {
        let mut far = tcp();
        far.target = "198.18.0.2:5301".into();
        far.spec.streams = 4;
        let near = tcp();
        let mut rr = tcp();
        rr.kind = TestKind::TcpRr;
        rr.spec.params = wire::Params::defaults(TestKind::TcpRr);
        let s = sections(
            &[
                LabeledRuns::new("#1", vec![near.clone()]),
                LabeledRuns::new("#2", vec![rr]),
                LabeledRuns::new("#3", vec![far]),
            ],
            false,
        );
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].kind, TestKind::TcpStream);
        let labels: Vec<&str> = s[0].columns.iter().map(|c| c.label.as_str()).collect();
        let host = target_host(&near.target);
        assert_eq!(labels, [host.as_str(), "198.18.0.2 -P 4"]);
        // Alone in its section: nothing differs, the id stays.
        assert_eq!(s[1].columns[0].label, "#2");
    }

    #[test]
    fn a_group_leaves_out_its_unfinished_runs_unless_asked() {
        let mut gone = tcp();
        gone.summary.incomplete = Some("the server went away".into());
        let tags: BTreeMap<String, String> = [("driver".into(), "a".into())].into();
        let group = LabeledRuns::new("driver=a", vec![tcp(), gone.clone(), tcp()]).with_tags(tags);
        let s = sections(std::slice::from_ref(&group), false);
        assert_eq!(s[0].columns[0].runs.len(), 2);
        assert_eq!(s[0].columns[0].left_out.len(), 1);
        assert_eq!(s[0].columns[0].marks(), ["1 left out"]);
        let s = sections(&[group], true);
        assert_eq!(s[0].columns[0].runs.len(), 3);
        assert_eq!(s[0].columns[0].marks(), ["1 incomplete"]);
        // One run alone is kept, and marked.
        let s = sections(&[LabeledRuns::new("#4", vec![gone])], false);
        assert_eq!(s[0].columns[0].marks(), ["1 incomplete"]);
    }
}
