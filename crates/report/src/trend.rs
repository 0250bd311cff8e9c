//! `linerate trend`: a metric's history per series of stored runs, with its change points
//! (`analysis::change_points`, E-divisive means), as text and JSON.
//!
//! Invariants: a series holds runs of one kind, in the order given (time, or a tag's order);
//! a point is a run that has the metric; each change point names the run where the new level
//! starts, and says whether the change is for the worse given the metric's direction.

use std::cmp::Ordering;

use analysis::change_points::{change_points, ChangePoint, Threshold};
use analysis::metric_id::MetricId;
use record::StoredRun;
use serde::Serialize;
use wire::TestKind;

use crate::format::value;
use crate::metrics::metric as metric_of;
use crate::{Better, Metric};

/// A series before analysis: its key and its runs (id, record) in order.
pub struct SeriesRuns<'a> {
    /// What the series is (`tcp_stream rate=200`, `tcp_stream to 198.18.0.2`).
    pub key: String,
    /// The runs, in the series' order.
    pub runs: Vec<(i64, &'a record::RunRecord)>,
}

/// One point of a series.
#[derive(Debug, Clone, Serialize)]
pub struct TrendPoint {
    /// The stored run.
    pub run: i64,
    /// When it started, Unix ms.
    pub started_at_unix_ms: u64,
    /// The metric, in `unit`.
    pub value: f64,
}

/// A change point, with the run where the new level starts.
#[derive(Debug, Clone, Serialize)]
pub struct TrendChange {
    /// The first run of the new level.
    pub run: i64,
    /// Its position in the series (0-based).
    pub index: usize,
    /// Median before, in `unit`.
    pub before: f64,
    /// Median after, in `unit`.
    pub after: f64,
    /// Percent change of the median.
    pub change_pct: Option<f64>,
    /// 1 − p of the permutation test.
    pub confidence: f64,
    /// Whether the change is for the worse (lower goodput, higher latency).
    pub worse: bool,
}

/// One series' history.
#[derive(Debug, Clone, Serialize)]
pub struct TrendSeries {
    /// What the series is.
    pub key: String,
    /// The runs' kind.
    pub test: Option<TestKind>,
    /// The metric's name, as `compare` names its row.
    pub metric: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// The points, in order.
    pub points: Vec<TrendPoint>,
    /// The change points, in order.
    pub change_points: Vec<TrendChange>,
}

/// `{"kind":"trend","series":[…]}`.
#[derive(Debug, Clone, Serialize)]
pub struct Trend {
    /// Always `trend`.
    pub kind: &'static str,
    /// The significance the change points were tested at.
    pub alpha: f64,
    /// The smallest change reported, in percent of the level before it.
    pub min_change_pct: f64,
    /// One per series.
    pub series: Vec<TrendSeries>,
}

/// The metric a series is drawn in when none is named: the headline of its kind.
pub fn default_metric(kind: TestKind) -> MetricId {
    MetricId::headline(kind)
}

/// Each series' history in `metric` (`None`: the kind's headline) and its change points by
/// `threshold`. A metric name not in `compare`'s list gives `None`.
pub fn trend(series: &[SeriesRuns], metric: Option<&str>, threshold: Threshold) -> Option<Trend> {
    let find = |name: &str| name.parse().ok().map(metric_of);
    let mut out = Vec::new();
    for s in series {
        let kind = s.runs.first().map(|(_, r)| r.kind);
        let headline = kind.map_or(MetricId::Throughput, default_metric);
        let m = match metric {
            Some(name) => find(name)?,
            None => metric_of(headline),
        };
        out.push(one_series(s, kind, m, threshold));
    }
    Some(Trend {
        kind: "trend",
        alpha: threshold.alpha,
        min_change_pct: threshold.min_change_pct,
        series: out,
    })
}

fn one_series(s: &SeriesRuns, test: Option<TestKind>, m: &Metric, at: Threshold) -> TrendSeries {
    let points: Vec<TrendPoint> = s
        .runs
        .iter()
        .filter_map(|&(run, r)| {
            Some(TrendPoint {
                run,
                started_at_unix_ms: r.started_at_unix_ms,
                value: m.value(r).filter(|v| v.is_finite())?,
            })
        })
        .collect();
    let values: Vec<f64> = points.iter().map(|p| p.value).collect();
    let change_points = change_points(&values, at)
        .into_iter()
        .map(|c: ChangePoint| TrendChange {
            run: points[c.index].run,
            index: c.index,
            before: c.before,
            after: c.after,
            change_pct: c.change_pct,
            confidence: c.confidence,
            worse: match m.better {
                Better::Higher => c.after < c.before,
                Better::Lower => c.after > c.before,
            },
        })
        .collect();
    TrendSeries {
        key: s.key.clone(),
        test,
        metric: m.name(),
        unit: m.unit,
        better: m.better,
        points,
        change_points,
    }
}

/// A few lines per series: what it is, its range, and each change point.
pub fn trend_text(t: &Trend) -> String {
    let mut out = String::new();
    for s in &t.series {
        let lo = s
            .points
            .iter()
            .map(|p| p.value)
            .fold(f64::INFINITY, f64::min);
        let hi = s
            .points
            .iter()
            .map(|p| p.value)
            .fold(f64::NEG_INFINITY, f64::max);
        out.push_str(&format!(
            "{}: {} {} over {} runs ({} to {})\n",
            s.key,
            s.metric,
            s.unit,
            s.points.len(),
            value(lo),
            value(hi)
        ));
        if s.change_points.is_empty() {
            out.push_str(&format!(
                "  no change point (E-divisive means, alpha {}, changes under {} % left out)\n",
                t.alpha, t.min_change_pct
            ));
        }
        for c in &s.change_points {
            out.push_str(&format!(
                "  change at #{} (run {} of {}): {} → {} {}{}, confidence {:.1} %{}\n",
                c.run,
                c.index + 1,
                s.points.len(),
                value(c.before),
                value(c.after),
                s.unit,
                c.change_pct
                    .map_or(String::new(), |p| format!(" ({p:+.1} %)")),
                c.confidence * 100.0,
                if c.worse { ", worse" } else { ", better" }
            ));
        }
    }
    out
}

/// Each group's runs that pass `keep`, in order (time, or `by`'s value: see [`order`]), split
/// by kind and, for a mesh's runs, by cell: the series `linerate trend` draws, keyed `KIND
/// GROUP` (`KIND GROUP, FROM → TO` for a cell, so a nightly mesh's cells each get a trend);
/// empty series left out.
pub fn series_by_kind(
    groups: Vec<(String, Vec<StoredRun>)>,
    keep: impl Fn(&StoredRun) -> bool,
    by: Option<&str>,
) -> Vec<(String, Vec<StoredRun>)> {
    let mut out: Vec<(String, Vec<StoredRun>)> = Vec::new();
    for (key, group) in groups {
        let first = out.len();
        for r in order(group.into_iter().filter(|r| keep(r)).collect(), by) {
            let series = format!("{} {key}{}", r.record.kind.as_str(), cell_of(&r));
            match out[first..].iter_mut().find(|(k, _)| *k == series) {
                Some((_, runs)) => runs.push(r),
                None => out.push((series, vec![r])),
            }
        }
    }
    out
}

/// `, FROM → TO` for a mesh's run (it carries the mesh's id and its cell), else nothing: what
/// splits a mesh's runs into one series (or one check, `plan --check-against`) per cell.
pub fn cell_of(run: &StoredRun) -> String {
    let tag = |k: &str| run.tags.get(k);
    match (tag(crate::mesh::MESH_ID_TAG), tag("from"), tag("to")) {
        (Some(_), Some(from), Some(to)) => format!(", {from} → {to}"),
        _ => String::new(),
    }
}

/// The test a run is of: its kind, and its mesh cell when it has one (`tcp_stream, a → b`).
pub fn test_of(run: &StoredRun) -> String {
    format!("{}{}", run.record.kind.as_str(), cell_of(run))
}

/// `runs` split by test ([`test_of`]), in order of first appearance.
pub fn by_test(runs: Vec<StoredRun>) -> Vec<(String, Vec<StoredRun>)> {
    let mut out: Vec<(String, Vec<StoredRun>)> = Vec::new();
    for run in runs {
        let test = test_of(&run);
        match out.iter_mut().find(|(t, _)| *t == test) {
            Some((_, runs)) => runs.push(run),
            None => out.push((test, vec![run])),
        }
    }
    out
}

/// By time, or by `tag`'s value in natural order (runs without it left out); ties by time.
pub fn order(mut runs: Vec<StoredRun>, tag: Option<&str>) -> Vec<StoredRun> {
    let Some(tag) = tag else {
        runs.sort_by_key(|r| (r.record.started_at_unix_ms, r.id.0));
        return runs;
    };
    runs.retain(|r| r.tags.get(tag).is_some());
    runs.sort_by(|a, b| {
        natural(a.tags.get(tag).unwrap_or(""), b.tags.get(tag).unwrap_or("")).then(
            a.record
                .started_at_unix_ms
                .cmp(&b.record.started_at_unix_ms),
        )
    });
    runs
}

/// Compares versions and numbers as people read them: digit runs as numbers (6.9 < 6.10).
pub fn natural(a: &str, b: &str) -> Ordering {
    let parts = |s: &str| -> Vec<(u64, String)> {
        let mut out = Vec::new();
        let mut rest = s;
        while !rest.is_empty() {
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let (head, tail) = match digits {
                0 => rest.split_at(
                    rest.find(|c: char| c.is_ascii_digit())
                        .unwrap_or(rest.len()),
                ),
                n => rest.split_at(n),
            };
            out.push((head.parse().unwrap_or(u64::MAX), head.to_string()));
            rest = tail;
        }
        out
    };
    parts(a).cmp(&parts(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two nightly meshes of two hosts: each cell is a series of its own, in time order, and
    /// a run outside any mesh stays in its group's series.
    #[test]
    fn a_meshs_cells_each_make_a_series() {
        let runs: Vec<record::RunRecord> =
            serde_json::from_str(include_str!("../tests/fixtures/tcp_runs.json")).unwrap();
        let run = |id: i64, tags: &[&str]| StoredRun {
            id: record::RunId(id),
            stored_at_unix_ms: 0,
            tags: record::Tags::parse(tags.iter().copied()).unwrap(),
            host: Default::default(),
            record: record::RunRecord {
                started_at_unix_ms: 1000 * id as u64,
                ..runs[0].clone()
            },
        };
        let group = vec![
            run(1, &["nightly=1", "mesh_id=m1", "from=a", "to=b"]),
            run(2, &["nightly=1", "mesh_id=m1", "from=b", "to=a"]),
            run(3, &["nightly=1"]),
            run(4, &["nightly=1", "mesh_id=m2", "from=a", "to=b"]),
            run(5, &["nightly=1", "mesh_id=m2", "from=b", "to=a"]),
        ];
        let series = series_by_kind(vec![("nightly=1".into(), group)], |_| true, None);
        let got: Vec<(&str, Vec<i64>)> = (series.iter())
            .map(|(k, rs)| (k.as_str(), rs.iter().map(|r| r.id.0).collect()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("tcp_stream nightly=1, a → b", vec![1, 4]),
                ("tcp_stream nightly=1, b → a", vec![2, 5]),
                ("tcp_stream nightly=1", vec![3]),
            ]
        );
    }

    #[test]
    fn versions_sort_as_people_read_them() {
        let mut v = vec!["6.10", "6.9", "6.1", "5.15.2", "6.1-rc1"];
        v.sort_by(|a, b| natural(a, b));
        assert_eq!(v, ["5.15.2", "6.1", "6.1-rc1", "6.9", "6.10"]);
    }
}
