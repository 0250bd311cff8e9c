//! `linerate trend`: a metric's history per series of stored runs, with its change points
//! (`analysis::change_points`, E-divisive means), as text and JSON.
//!
//! Invariants: a series holds runs of one kind and one set of settings (the test's whole
//! configuration, `differences::settings`), in the order given (time, or a tag's order);
//! a point is a run that has the metric; each change point names the run where the new level
//! starts, and says whether the change is for the worse given the metric's direction.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use analysis::change_points::{change_points, ChangePoint, Threshold};
use analysis::metric_id::{metric as metric_of, Better, Metric, MetricId};
use record::StoredRun;
use serde::Serialize;
use wire::TestKind;

use crate::differences::settings;
use crate::format::value;
use crate::{pretty_json, Exporter, Format};

/// A run's settings by name ([`settings`]).
type Settings = BTreeMap<String, String>;

/// A series before analysis: its key and its runs (id, record) in order.
pub struct SeriesRuns<'a> {
    /// What the series is (`tcp_stream rate=200`, `tcp_stream to 198.18.0.2`).
    pub key: String,
    /// The runs, in the series' order.
    pub runs: Vec<(i64, &'a record::RunRecord)>,
}

impl<'a> SeriesRuns<'a> {
    /// Each of `series` (key, stored runs in order) as [`trend`] takes it.
    pub fn of_stored(series: &'a [(String, Vec<StoredRun>)]) -> Vec<SeriesRuns<'a>> {
        (series.iter())
            .map(|(key, rs)| SeriesRuns {
                key: key.clone(),
                runs: rs.iter().map(|r| (r.id.0, &r.record)).collect(),
            })
            .collect()
    }
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
/// `threshold`. A metric named leaves out the series of kinds that do not have it, and is
/// refused when none has it or it is no metric's name.
pub fn trend(
    series: &[SeriesRuns],
    metric: Option<&str>,
    threshold: Threshold,
) -> crate::Result<Trend> {
    let named = metric.map(crate::check::find_metric).transpose()?;
    let mut out = Vec::new();
    for s in series {
        let kind = s.runs.first().map(|(_, r)| r.kind);
        let m = match named {
            Some(m) if kind.is_some_and(|k| !m.applies(k)) => continue,
            Some(m) => m,
            None => metric_of(kind.map_or(MetricId::Throughput, default_metric)),
        };
        out.push(one_series(s, kind, m, threshold));
    }
    if let (Some(m), true) = (named, out.is_empty()) {
        // Each kind once, however the series interleave them.
        let kinds: BTreeSet<&str> = (series.iter())
            .filter_map(|s| Some(s.runs.first()?.1.kind.as_str()))
            .collect();
        let kinds: Vec<&str> = kinds.into_iter().collect();
        if !kinds.is_empty() {
            return Err(crate::Error::NotOfKind {
                metric: m.name,
                kind: kinds.join(", "),
                kinds: m.kinds_having(),
            });
        }
    }
    Ok(Trend {
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

/// `linerate trend`'s document: [`trend_text`] or JSON.
impl Exporter for Trend {
    fn name(&self) -> &'static str {
        "a trend"
    }

    fn formats(&self) -> &'static [Format] {
        &[Format::Table, Format::Json]
    }

    fn json(&self, w: &mut dyn std::io::Write) -> crate::Result<()> {
        pretty_json(w, self)
    }

    fn table(&self, w: &mut dyn std::io::Write, _width: Option<u16>) -> crate::Result<()> {
        Ok(w.write_all(trend_text(self).as_bytes())?)
    }
}

/// A few lines per series: what it is, its range, and each change point.
pub fn trend_text(t: &Trend) -> String {
    let mut out = String::new();
    for s in &t.series {
        if s.points.is_empty() {
            out.push_str(&format!("{}: no run has {}\n", s.key, s.metric));
            continue;
        }
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
/// by kind, by settings (the test's whole configuration, [`settings`]: target, direction,
/// streams, lengths, rates, engine, send and receive modes…) and, for a mesh's runs, by cell:
/// the series `linerate trend` draws, so a change of settings starts a new series rather than
/// making a change point. Keyed `KIND GROUP` (`KIND GROUP, FROM → TO` for a mesh's cell), with
/// the settings that differ among the series of that key in brackets (`tcp_stream to
/// 127.0.0.1 (streams=4)`); empty series left out.
pub fn series_by_kind(
    groups: Vec<(String, Vec<StoredRun>)>,
    keep: impl Fn(&StoredRun) -> bool,
    by: Option<&str>,
) -> Vec<(String, Vec<StoredRun>)> {
    let mut out: Vec<(String, Settings, Vec<StoredRun>)> = Vec::new();
    for (key, group) in groups {
        let first = out.len();
        for r in order(group.into_iter().filter(|r| keep(r)).collect(), by) {
            let test = format!("{} {key}{}", r.record.kind.as_str(), cell_of(&r));
            let set = settings(&r.record);
            match out[first..]
                .iter_mut()
                .find(|(t, s, _)| *t == test && *s == set)
            {
                Some((_, _, runs)) => runs.push(r),
                None => out.push((test, set, vec![r])),
            }
        }
    }
    let labels: Vec<String> = (out.iter())
        .map(|(test, set, _)| {
            let others = (out.iter())
                .filter(|(t, _, _)| t == test)
                .map(|(_, s, _)| s);
            series_label(test, set, others)
        })
        .collect();
    labels
        .into_iter()
        .zip(out)
        .map(|(label, (_, _, runs))| (label, runs))
        .collect()
}

/// `test`, and the settings of `set` that are not the same in every one of `all` (the settings
/// of the series of `test`, `set`'s among them), in brackets: `streams=4, direction=receive`.
/// A setting is named by the last part of its name (`spec.params.stream.direction`:
/// `direction`) unless two of those named share it.
fn series_label<'a>(test: &str, set: &Settings, all: impl Iterator<Item = &'a Settings>) -> String {
    let all: Vec<&Settings> = all.collect();
    let names: BTreeSet<&String> = all.iter().flat_map(|s| s.keys()).collect();
    let varying: Vec<&String> = (names.into_iter())
        .filter(|n| all.iter().any(|s| s.get(*n) != set.get(*n)))
        .collect();
    if varying.is_empty() {
        return test.to_string();
    }
    let last = |n: &str| n.rsplit('.').next().unwrap_or(n).to_string();
    let parts: Vec<String> = (varying.iter())
        .map(|n| {
            let short = last(n);
            let shared = varying.iter().filter(|m| last(m) == short).count() > 1;
            let name = match shared {
                true => n.trim_start_matches("spec.").trim_start_matches("params."),
                false => short.as_str(),
            };
            format!("{name}={}", set.get(*n).map_or("-", String::as_str))
        })
        .collect();
    format!("{test} ({})", parts.join(", "))
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

/// `runs` split by the host they ran to, keyed `to HOST`, in order of first appearance: the
/// groups `linerate trend` without items splits into series ([`series_by_kind`]).
pub fn by_target(runs: Vec<StoredRun>) -> Vec<(String, Vec<StoredRun>)> {
    let mut out: Vec<(String, Vec<StoredRun>)> = Vec::new();
    for r in runs {
        let key = format!("to {}", crate::headline::target_host(&r.record.target));
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, runs)) => runs.push(r),
            None => out.push((key, vec![r])),
        }
    }
    out
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

    /// A metric named draws the series of kinds that have it and leaves out the others; one
    /// that no series' kind has, or that is no metric, is refused by name. A series with no
    /// run that has it says so, not a range from infinity to minus infinity.
    #[test]
    fn a_metric_named_draws_only_the_kinds_that_have_it() {
        let tcp: Vec<record::RunRecord> =
            serde_json::from_str(include_str!("../tests/fixtures/tcp_runs.json")).unwrap();
        let udp: record::RunRecord =
            serde_json::from_str(include_str!("../tests/fixtures/udp_run.json")).unwrap();
        fn series<'a>(runs: &[&'a record::RunRecord]) -> SeriesRuns<'a> {
            SeriesRuns {
                key: runs[0].kind.as_str().to_string(),
                runs: runs
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (i as i64, *r))
                    .collect(),
            }
        }
        let both = [series(&[&tcp[0], &tcp[1]]), series(&[&udp, &udp])];
        let t = trend(&both, Some("jitter"), Threshold::default()).unwrap();
        let keys: Vec<&str> = t.series.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(keys, ["udp_stream"]);
        let err = trend(&both[..1], Some("jitter"), Threshold::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--metric jitter: tcp_stream runs have no jitter; it is a figure of udp_stream"
        );
        let err = trend(&both, Some("speed"), Threshold::default()).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("--metric speed: no such metric; one of: throughput"));
        let mut t = trend(&both[..1], None, Threshold::default()).unwrap();
        t.series[0].points.clear();
        assert_eq!(trend_text(&t), "tcp_stream: no run has throughput\n");
    }

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

    /// Issue 47: runs of one kind to one target with other settings (-P 1 and -P 4, another
    /// engine) are series of their own, each labelled by the settings that tell it from the
    /// others; alternating them makes no change point.
    #[test]
    fn issue47_a_change_of_settings_starts_a_series_not_a_change_point() {
        let runs: Vec<record::RunRecord> =
            serde_json::from_str(include_str!("../tests/fixtures/tcp_runs.json")).unwrap();
        let run = |id: i64, streams: u16, goodput: f64| {
            let mut record = runs[0].clone();
            record.started_at_unix_ms = 1000 * id as u64;
            record.spec.streams = streams;
            record.summary.throughput_bps = goodput;
            StoredRun {
                id: record::RunId(id),
                stored_at_unix_ms: 0,
                tags: record::Tags::new(),
                host: Default::default(),
                record,
            }
        };
        let group: Vec<StoredRun> = (1..=12)
            .map(|i| match i % 2 {
                0 => run(i, 4, 40e9 + i as f64),
                _ => run(i, 1, 10e9 + i as f64),
            })
            .collect();
        let series = series_by_kind(vec![("to a".into(), group)], |_| true, None);
        let keys: Vec<&str> = series.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            ["tcp_stream to a (streams=1)", "tcp_stream to a (streams=4)"]
        );
        let t = trend(&SeriesRuns::of_stored(&series), None, Threshold::default()).unwrap();
        assert!(t.series.iter().all(|s| s.change_points.is_empty()));
        assert_eq!(t.series[0].points.len(), 6);
        // One setting per series of a key: no brackets.
        let same = series_by_kind(vec![("to a".into(), vec![run(1, 1, 1.0)])], |_| true, None);
        assert_eq!(same[0].0, "tcp_stream to a");
    }

    /// Two varying settings named alike are named by their whole path.
    #[test]
    fn a_label_names_only_what_varies_and_each_setting_once() {
        let set = |pairs: &[(&str, &str)]| -> Settings {
            (pairs.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let a = set(&[
            ("spec.streams", "1"),
            ("spec.params.a.rate", "1"),
            ("spec.params.b.rate", "2"),
            ("target", "h"),
        ]);
        let b = set(&[
            ("spec.streams", "1"),
            ("spec.params.a.rate", "3"),
            ("spec.params.b.rate", "4"),
            ("target", "h"),
        ]);
        assert_eq!(
            series_label("udp_stream x", &a, [&a, &b].into_iter()),
            "udp_stream x (a.rate=1, b.rate=2)"
        );
    }

    #[test]
    fn versions_sort_as_people_read_them() {
        let mut v = vec!["6.10", "6.9", "6.1", "5.15.2", "6.1-rc1"];
        v.sort_by(|a, b| natural(a, b));
        assert_eq!(v, ["5.15.2", "6.1", "6.1-rc1", "6.9", "6.10"]);
    }
}
