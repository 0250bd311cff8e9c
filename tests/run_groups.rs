//! Issue 47, runs that belong together are grouped so: over loopback (the binary's in-process
//! server), into a temporary store.
//!
//! - `trend` without items keys a series by the whole test configuration: six UDP runs paced
//!   at 10 Mbit/s then six at 50 Mbit/s (a +400 % level shift, which one series of twelve
//!   reports as a change point) and TCP runs at -P 1 and -P 4 make four series, each labelled
//!   by the setting that tells it from the others, and no change point.
//! - `check` with one run a side exits 2 naming the 4 runs a side it needs, and 0 with
//!   `--allow-undecided`.
//! - Two `linerate pps` executions on the socket engine, and a copy of one as the xdp engine's
//!   (imported: a frame engine needs a real interface), are three matrices in `report`, each
//!   captioned with its engine; `runs --kind pps` lists the cells, each carrying its
//!   execution's `pps_id`.

use std::collections::BTreeSet;
use std::path::Path;

use super::*;

/// `linerate ARGS --db DB`, which must succeed: its stdout.
fn ok_at(db: &Path, args: &[&str]) -> String {
    let (code, out, err) = linerate_at(db, args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

#[test]
fn issue47_trend_over_mixed_settings_makes_a_series_per_configuration_and_no_change_point() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    for rate in ["10M", "50M"] {
        for _ in 0..6 {
            ok_at(&db, &["udp", "-b", rate, "-t", "0.3", "-i", "0"]);
        }
    }
    for streams in ["1", "4", "1", "4"] {
        ok_at(&db, &["tcp", "-P", streams, "-t", "0.2", "-i", "0"]);
    }
    let v: serde_json::Value =
        serde_json::from_str(&ok_at(&db, &["trend", "--format", "json"])).unwrap();
    let series = v["series"].as_array().unwrap();
    let keys: BTreeSet<&str> = series.iter().map(|s| s["key"].as_str().unwrap()).collect();
    let want: BTreeSet<&str> = [
        "tcp_stream to loopback (streams=1)",
        "tcp_stream to loopback (streams=4)",
        "udp_stream to loopback (bits_per_sec=10000000)",
        "udp_stream to loopback (bits_per_sec=50000000)",
    ]
    .into();
    assert_eq!(keys, want, "{v}");
    for s in series {
        let points = s["points"].as_array().unwrap().len();
        let udp = s["key"].as_str().unwrap().starts_with("udp");
        assert_eq!(points, if udp { 6 } else { 2 }, "{s}");
        assert_eq!(s["change_points"], serde_json::json!([]), "{s}");
    }
    // The text says so too, once per series.
    let text = ok_at(&db, &["trend"]);
    assert_eq!(text.matches("no change point").count(), 4, "{text}");
}

#[test]
fn issue47_check_with_one_run_a_side_exits_2_naming_the_runs_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    for side in ["g=a", "g=b"] {
        ok_at(&db, &["tcp", "-t", "0.2", "-i", "0", "--tag", side]);
    }
    let (code, out, err) = linerate_at(&db, &["check", "g=a", "g=b"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("RESULT  not enough runs: 1, need 4"), "{out}");
    assert!(err.contains("check needs 4 on each side"), "{err}");
    assert!(err.contains("1 on the fewer side"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // The JSON a CI keeps is written all the same.
    let (code, out, _) = linerate_at(&db, &["check", "g=a", "g=b", "--format", "json"]);
    assert_eq!(code, 2);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"], "not_enough_runs", "{v}");
    let (code, out, err) = linerate_at(&db, &["check", "g=a", "g=b", "--allow-undecided"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("not enough runs"), "{out}");
}

/// The stored cells of `db` as `export --format stored` writes them, one JSON value each.
fn stored_cells(db: &Path) -> Vec<serde_json::Value> {
    let lines = ok_at(db, &["export", "--format", "stored"]);
    (lines.lines())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["tags"].get("frame_bytes").is_some())
        .collect()
}

#[test]
fn issue47_pps_executions_and_engines_are_matrices_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let pps = ["pps", "-t", "0.3", "--frame", "64,1518", "--flows", "1"];
    ok_at(&db, &pps);
    ok_at(&db, &pps);
    // One more plain UDP run: in no matrix, and not listed by `runs --kind pps`.
    ok_at(&db, &["udp", "-t", "0.2", "-i", "0"]);
    let cells = stored_cells(&db);
    assert_eq!(cells.len(), 4);
    let ids: BTreeSet<&str> = (cells.iter())
        .map(|c| c["tags"]["pps_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "one pps_id per execution: {ids:?}");
    // The first execution again, as the xdp engine's, an hour later.
    let mut copies = String::new();
    let hour_later =
        |c: &serde_json::Value| c["record"]["started_at_unix_ms"].as_u64().unwrap() + 3_600_000;
    let xdp_id = hour_later(&cells[0]).to_string();
    for c in cells.iter().take(2) {
        let mut copy = c.clone();
        let record = &mut copy["record"];
        record["spec"]["params"]["udp"]["engine"] = "xdp".into();
        record["started_at_unix_ms"] = hour_later(c).into();
        copy["tags"]["pps_id"] = xdp_id.as_str().into();
        copies.push_str(&format!("{copy}\n"));
    }
    let file = dir.path().join("xdp.jsonl");
    std::fs::write(&file, copies).unwrap();
    ok_at(&db, &["import", &file.display().to_string()]);

    let listed: serde_json::Value =
        serde_json::from_str(&ok_at(&db, &["runs", "--kind", "pps", "--json"])).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 6, "every cell, no other run");
    assert!(listed.iter().all(|r| r["tags"]["pps_id"].is_string()));
    let last = ok_at(&db, &["runs", "--kind", "pps", "--limit", "2", "--json"]);
    let last: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(last.as_array().unwrap().len(), 2, "{last}");

    let html = dir.path().join("report.html");
    ok_at(&db, &["report", "--out", &html.display().to_string()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(
        page.matches("<h2>Packet rate: socket engine, ").count(),
        2,
        "two socket executions, two tables"
    );
    assert_eq!(page.matches("<h2>Packet rate: xdp engine, ").count(), 1);
    for id in ["pps", "pps-2", "pps-3"] {
        assert!(page.contains(&format!("<table id=\"{id}\"")), "no {id}");
        assert!(
            page.contains(&format!("id=\"chart-{id}\"")),
            "no {id} chart"
        );
    }
    // `--kind pps`: the matrices only.
    ok_at(
        &db,
        &[
            "report",
            "--kind",
            "pps",
            "--out",
            &html.display().to_string(),
        ],
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("<h2>Packet rate: ").count(), 3);

    let svg = dir.path().join("pps.svg");
    let first = format!("pps_id={}", cells[0]["tags"]["pps_id"].as_str().unwrap());
    ok_at(
        &db,
        &[
            "chart",
            "flows=1",
            "--type",
            "pps",
            "--out",
            &svg.display().to_string(),
        ],
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(drawn.matches("socket engine, ").count(), 2, "a panel each");
    assert_eq!(drawn.matches("xdp engine, ").count(), 1);
    ok_at(
        &db,
        &[
            "chart",
            &first,
            "--type",
            "pps",
            "--out",
            &svg.display().to_string(),
        ],
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(
        drawn.matches(" engine, ").count(),
        1,
        "one execution, one panel"
    );
}
