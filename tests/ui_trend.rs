//! `linerate ui`'s `GET /api/trend` (docs/API.md) through the binary, against a known step:
//! twenty-four stored tcp runs, twelve at 200 Mbit/s then twelve at 180 (-10 %, with a
//! fraction of a percent of noise), answer one change point at the thirteenth run, worse;
//! ordered by a tag that reverses them, the step is at the twelfth run and better; without
//! `runs` the same series is every run to its target. A parameter that could be read as an
//! option, or names no metric, tag key or kind, is a 400 naming it. The runs are stored
//! directly (the record of a real loopback run with its goodput set), so no test is run.

use std::path::Path;

use record::{HostFacts, RunRecord, Tags};
use results::store::Store;
use serde_json::Value;

use crate::ui_api::Ui;

/// Runs in each level of the step.
pub(crate) const LEVEL: usize = 12;

/// Stores the step in `db`: `2 × LEVEL` tcp runs tagged `series=s` and `order=N` (N counting
/// down, so `by=order` reverses them), 200 Mbit/s then 180, in time order; their ids.
pub(crate) fn store_step(db: &Path) -> Vec<i64> {
    let path = format!(
        "{}/crates/results/tests/fixtures/tcp.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let fixture: RunRecord = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut store = Store::open(db).unwrap();
    (0..2 * LEVEL)
        .map(|i| {
            let mut r = fixture.clone();
            let level = if i < LEVEL { 200e6 } else { 180e6 };
            // ±0.4 %, a fixed pattern: well under the step, as a shaper's runs vary.
            let noise = [-0.004, 0.001, 0.004, -0.002, 0.002, -0.001][i % 6];
            r.summary.throughput_bps = level * (1.0 + noise);
            r.started_at_unix_ms = 1_779_235_200_000 + 60_000 * i as u64;
            let mut tags = Tags::new();
            tags.insert("series=s".parse().unwrap()).unwrap();
            let order = format!("order={}", 2 * LEVEL - i);
            tags.insert(order.parse().unwrap()).unwrap();
            store.insert(&r, &tags, &HostFacts::default()).unwrap().0
        })
        .collect()
}

/// The one series of `trend`, after checking there is one of 24 points.
fn only_series(trend: &Value) -> &Value {
    assert_eq!(trend["kind"], "trend", "{trend}");
    let series = trend["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{trend}");
    let points = series[0]["points"].as_array().unwrap();
    assert_eq!(points.len(), 2 * LEVEL, "{trend}");
    &series[0]
}

#[test]
fn a_ten_percent_step_in_stored_runs_is_one_change_point_at_its_first_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let ids = store_step(&db);
    let ui = Ui::start(&db, &[]);

    let t = ui.get_json("/api/trend?runs=series=s&metric=throughput&kind=tcp_stream");
    let s = only_series(&t);
    assert_eq!(s["metric"], "throughput");
    let cps = s["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{t}");
    assert_eq!(cps[0]["index"], LEVEL, "{t}");
    assert_eq!(cps[0]["run"], ids[LEVEL], "{t}");
    assert_eq!(cps[0]["worse"], true, "{t}");
    let pct = cps[0]["change_pct"].as_f64().unwrap();
    assert!((-10.5..-9.5).contains(&pct), "{t}");
    let (before, after) = (cps[0]["before"].as_f64(), cps[0]["after"].as_f64());
    assert!((before.unwrap() - 200.0).abs() < 1.0, "{t}");
    assert!((after.unwrap() - 180.0).abs() < 1.0, "{t}");

    // In the tag's order the runs come backwards: the step up starts at the twelfth run.
    let t = ui.get_json("/api/trend?runs=series=s&by=order");
    let cps = only_series(&t)["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{t}");
    assert_eq!(
        (&cps[0]["run"], &cps[0]["worse"]),
        (&ids[LEVEL - 1].into(), &false.into()),
        "{t}"
    );

    // Without runs: every run, a series per kind and target.
    let t = ui.get_json("/api/trend");
    let s = only_series(&t);
    assert!(s["key"].as_str().unwrap().contains(" to "), "{t}");
    assert_eq!(s["change_points"][0]["run"], ids[LEVEL], "{t}");
}

#[test]
fn a_trend_parameter_that_is_not_what_it_names_is_a_400_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    store_step(&db);
    let ui = Ui::start(&db, &[]);
    for (query, says) in [
        ("by=--db", "by=\\\"--db\\\": not a tag key"),
        ("by=x&by=y", "by: give it once"),
        (
            "metric=--chart%3D%2Ftmp%2Fx.svg",
            "metric=\\\"--chart=/tmp/x.svg\\\": no such metric",
        ),
        ("metric=speed", "no such metric; one of: throughput"),
        (
            "kind=tcp",
            "kind=\\\"tcp\\\": not a kind; one of tcp_stream",
        ),
        ("runs=--db=/x", "is neither a run id"),
        ("db=/x", "db: unknown parameter"),
        (
            "runs=series=s&kind=tcp_rr",
            "no series with two runs or more",
        ),
    ] {
        let (status, _, body) = ui.call("GET", &format!("/api/trend?{query}"), &[], "");
        assert_eq!(status, 400, "{query}: {body}");
        assert!(body.contains(says), "{query}: {body}");
    }
    let (status, _, body) = ui.call("GET", "/api/trend?runs=series=nope", &[], "");
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("series=nope"), "{body}");
}
