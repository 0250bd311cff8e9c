//! Regressions found from the store, against a ground truth: twelve runs through a tbf qdisc
//! at 200 Mbit/s, twelve more at 200, then twelve at 180 (-10 %), over a veth pair between
//! namespaces. `linerate trend` finds one change point in the first twelve and the 180 runs,
//! at run 13, of about -10 %, and none in the 24 runs at 200; `linerate check` calls the 180
//! group a regression of goodput (exit 1, naming it, its ratio near 0.9) and the two halves of
//! the 200 runs not (exit 0). Bad input to `check` or `trend` (an unknown tag, mixed kinds, a
//! series of one run) is one line and exit 2; so is too few runs (after the answer), unless
//! `--allow-undecided`. `trend --chart`
//! draws the change point's marker, as SVG or PNG by the file's extension, over the
//! namespaces' runs and over a stored loopback run copied at two levels (which runs wherever
//! the tests do).

use std::path::Path;

use super::*;
use crate::skip;

/// `linerate check ARGS --db DB`: (exit code, stdout, stderr).
fn check(db: &Path, args: &[&str]) -> (i32, String, String) {
    linerate_at(db, &[&["check"][..], args].concat())
}

/// Stores one loopback run of `kind` with `tags` in `db`.
fn store(db: &Path, kind: &str, tags: &[&str]) {
    let mut args = vec![kind, "-t", "0.2", "-i", "0", "--db"];
    let db = db.display().to_string();
    args.push(&db);
    for t in tags {
        args.extend(["--tag", t]);
    }
    linerate_ok(&args);
}

#[test]
fn bad_input_and_too_few_runs_exit_2_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    store(&db, "tcp", &["g=a"]);
    store(&db, "tcp", &["g=b"]);
    store(&db, "rr", &["g=b"]);
    for (args, says) in [
        (
            vec!["g=a", "nope=x"],
            "nope=x: no stored run carries these tags",
        ),
        (
            vec!["g=a", "g=b"],
            "check compares one kind; add --kind KIND",
        ),
        (
            vec!["g=a", "g=b", "--metric", "speed"],
            "--metric speed: no such metric",
        ),
    ] {
        let (code, _, err) = check(&db, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    // Too few runs is no pass (issue 47): exit 2 naming what is needed, after the answer.
    let (code, out, err) = check(&db, &["g=a", "g=b", "--kind", "tcp_stream"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("RESULT  not enough runs: 1, need 4"), "{out}");
    assert!(err.contains("check needs 4 on each side"), "{err}");
    let args = ["g=a", "g=b", "--kind", "tcp_stream", "--allow-undecided"];
    let (code, out, _) = check(&db, &args);
    assert_eq!(code, 0, "{out}");
    // trend: an unknown tag, a series of one run, a significance or a minimum out of range.
    for (args, says) in [
        (vec!["nope=x"], "nope=x: no stored run carries these tags"),
        (vec!["g=a"], "no series with two runs or more"),
        (
            vec!["g=b", "--alpha", "0.9"],
            "--alpha 0.9: give a significance",
        ),
        (
            vec!["g=b", "--min-change=100"],
            "--min-change 100: give a percent from 0",
        ),
    ] {
        let db = db.display().to_string();
        let out = linerate()
            .arg("trend")
            .args(&args)
            .args(["--db", &db])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_ten_percent_slower_shaper_is_a_change_point_and_a_goodput_regression_and_an_unchanged_one_is_neither(
) {
    if !can_use_netns() {
        return skip("no network namespaces here: check's ground truth is not run");
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let db_text = db.display().to_string();
    let pair = VethPair::new("ck");
    let _server = pair.serve();
    // Six runs per tag set given, through a tbf at `rate` on the client's side. The series
    // must be the shaper's rate, not the host's load: a run whose sender or receiver is held off
    // the cores (the suite runs four tests at a time on two) loses (hold - burst ÷ rate) × rate
    // bytes, so the bucket holds 100 ms of tokens at the run's rate (2.5 MB at 200 Mbit/s) and
    // a hold that short is caught up in the same run. A full bucket at the start also lets
    // 100 ms of the rate through at once (10 % of a second): the first 0.2 s, which spends it,
    // is left out (-O), so each run's goodput is one second at the shaped rate.
    let runs = |rate: &str, tag_sets: &[&[&str]]| {
        pair.shape_with_bucket(&pair.a, "va", rate, Duration::from_millis(100));
        for tags in tag_sets {
            for _ in 0..6 {
                let mut args = vec![
                    "tcp",
                    "198.18.0.2",
                    "-t",
                    "1.2",
                    "-O",
                    "0.2",
                    "-i",
                    "0",
                    "--db",
                    &db_text,
                ];
                for t in *tags {
                    args.extend(["--tag", t]);
                }
                let out = pair.client(&args);
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    };
    // series=s: 12 at 200 then 12 at 180; flat=1: 24 at 200 (half=1, then half=2).
    let first = ["series=s", "rate=200", "flat=1", "half=1"];
    runs("200mbit", &[&first, &first]);
    runs("200mbit", &[&["flat=1", "half=2"], &["flat=1", "half=2"]]);
    runs(
        "180mbit",
        &[&["series=s", "rate=180"], &["series=s", "rate=180"]],
    );

    let trend = |items: &[&str]| -> serde_json::Value {
        let mut args = vec!["trend", "--format", "json", "--db", &db_text];
        args.extend(items);
        serde_json::from_str(&linerate_ok(&args)).unwrap()
    };
    let t = trend(&["series=s"]);
    let series = &t["series"][0];
    assert_eq!(series["points"].as_array().unwrap().len(), 24, "{t}");
    let cps = series["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{t}");
    assert_eq!(cps[0]["index"], 12, "{t}");
    let pct = cps[0]["change_pct"].as_f64().unwrap();
    assert!((-13.0..-7.0).contains(&pct), "{t}");
    assert_eq!(cps[0]["worse"], true);
    let flat = trend(&["flat=1"]);
    assert_eq!(flat["series"][0]["points"].as_array().unwrap().len(), 24);
    assert_eq!(
        flat["series"][0]["change_points"],
        serde_json::json!([]),
        "{flat}"
    );
    let text = linerate_ok(&["trend", "series=s", "--db", &db_text]);
    // Run 13 of the series is the 25th stored: twelve more at 200 ran before the 180 ones.
    assert!(text.contains("change at #25 (run 13 of 24)"), "{text}");
    let svg = dir.path().join("trend.svg");
    linerate_ok(&[
        "trend",
        "series=s",
        "--db",
        &db_text,
        "--chart",
        &svg.display().to_string(),
    ]);
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains(" % at #25"), "the change point's label");

    let (code, out, err) = check(&db, &["rate=200", "rate=180"]);
    assert_eq!(code, 1, "{out}{err}");
    let result = out.lines().find(|l| l.starts_with("RESULT")).unwrap();
    assert!(result.contains("regressed: throughput 0."), "{out}");

    let (code, out, err) = check(&db, &["rate=200", "rate=180", "--format", "json"]);
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["kind"], "check");
    assert_eq!(v["decision"], "regressed");
    let goodput = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "throughput")
        .unwrap();
    let ratio = goodput["ratio"].as_f64().unwrap();
    assert!((0.87..0.93).contains(&ratio), "{goodput}");
    assert_eq!(goodput["finding"], "regressed");

    let (code, out, err) = check(&db, &["half=1", "half=2", "--metric", "throughput"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("RESULT  pass"), "{out}");

    let (code, out, _) = check(&db, &["rate=200", "rate=180", "--format", "junit"]);
    assert_eq!(code, 1);
    assert!(out.contains("<failure type=\"regression\""), "{out}");
    assert!(out.contains("name=\"throughput\""), "{out}");
}

/// One loopback run stored, then exported and imported 24 times, its goodput set to 200
/// Mbit/s for the first twelve copies and 180 for the last twelve, a minute apart.
fn two_levels(dir: &Path) -> String {
    let first = dir.join("first.sqlite");
    store(&first, "tcp", &["series=copy"]);
    let first = first.display().to_string();
    let line = linerate_ok(&["export", "--format", "stored", "--db", &first]);
    let run: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    let mut lines = String::new();
    for i in 0..24u64 {
        let mut copy = run.clone();
        let level = if i < 12 { 200e6 } else { 180e6 };
        let record = &mut copy["record"];
        record["summary"]["throughput_bps"] = (level + (i % 3) as f64 * 1e5).into();
        let started = record["started_at_unix_ms"].as_u64().unwrap() + i * 60_000;
        record["started_at_unix_ms"] = started.into();
        lines.push_str(&format!("{copy}\n"));
    }
    let file = dir.join("copies.jsonl");
    std::fs::write(&file, lines).unwrap();
    let db = dir.join("copies.sqlite").display().to_string();
    linerate_ok(&["import", &file.display().to_string(), "--db", &db]);
    db
}

#[test]
fn trend_chart_marks_the_change_point_as_svg_or_png_by_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    let db = two_levels(dir.path());
    let svg = dir.path().join("out.svg");
    let text = linerate_ok(&[
        "trend",
        "series=copy",
        "--db",
        &db,
        "--chart",
        &svg.display().to_string(),
    ]);
    assert!(text.contains("change at #13 (run 13 of 24)"), "{text}");
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(
        svg.contains("\u{2212}10.0 % at #13"),
        "the change point's label"
    );
    assert!(svg.contains("tcp_stream series=copy: throughput (Mbit/s)"));
    let png = dir.path().join("out.png");
    linerate_ok(&[
        "trend",
        "series=copy",
        "--db",
        &db,
        "--chart",
        &png.display().to_string(),
    ]);
    let png = std::fs::read(png).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "the PNG signature");
    let out = linerate()
        .args(["trend", "series=copy", "--db", &db, "--chart", "out.jpg"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--chart out.jpg: unknown image extension '.jpg'; use .svg or .png"),
        "{err}"
    );
}
