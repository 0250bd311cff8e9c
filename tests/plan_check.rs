//! `plan --check-against TAGS`: the plan's new runs of each step checked against the stored
//! baseline of that step. The baseline is a real loopback run copied four times with its
//! goodput set far above (a regression the plan must report, exit 1) or far below (none, exit
//! 0) what the plan's own loopback runs measure; `--tag` puts the commit on the new runs; one
//! run where four are needed is exit 2 (0 with `--allow-undecided`). Mesh runs make a trend per
//! cell.

use std::path::Path;

use super::*;

/// A plan `gate` whose step `send` runs four short loopback tests.
const PLAN: &str =
    "name = \"gate\"\n[[step]]\nname = \"send\"\nrun = \"tcp -t 0.2 -i 0 --repeat 4\"\n";

/// A database holding four copies of one loopback run, tagged as step `send` of plan `gate`
/// at `commit=base`, their goodput set to `bps`.
fn baseline(dir: &Path, bps: f64) -> String {
    let first = dir.join("first.sqlite").display().to_string();
    linerate_ok(&["tcp", "-t", "0.2", "-i", "0", "--db", &first]);
    let line = linerate_ok(&["export", "--format", "stored", "--db", &first]);
    let run: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    let mut lines = String::new();
    for i in 0..4u64 {
        let mut copy = run.clone();
        copy["tags"] = serde_json::json!({"plan": "gate", "step": "send", "commit": "base"});
        let record = &mut copy["record"];
        record["summary"]["throughput_bps"] = (bps * (1.0 + i as f64 * 1e-3)).into();
        // Goodput is the figure under test: the copies' CPU per GB (one run's, four times,
        // with no spread) would make any loopback run's CPU noise a finding.
        for flow in record["summary"]["flows"].as_array_mut().unwrap() {
            flow["efficiency"] = serde_json::Value::Null;
        }
        let started = record["started_at_unix_ms"].as_u64().unwrap() - (i + 1) * 60_000;
        record["started_at_unix_ms"] = started.into();
        lines.push_str(&format!("{copy}\n"));
    }
    let file = dir.join("baseline.jsonl");
    std::fs::write(&file, lines).unwrap();
    let db = dir.join("runs.sqlite").display().to_string();
    linerate_ok(&["import", &file.display().to_string(), "--db", &db]);
    db
}

/// `linerate plan PLAN --db DB --tag commit=new --check-against commit=base`: (exit, stdout).
fn plan_against_base(dir: &Path, db: &str) -> (i32, String) {
    let file = dir.join("gate.toml");
    std::fs::write(&file, PLAN).unwrap();
    let out = linerate()
        .args(["plan", &file.display().to_string(), "--db", db])
        .args(["--tag", "commit=new", "--check-against", "commit=base"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), format!("{stdout}{stderr}"))
}

#[test]
fn a_plan_slower_than_its_baseline_exits_1_naming_the_step_and_the_metric() {
    let dir = tempfile::tempdir().unwrap();
    // A petabit per second: far above any loopback run.
    let db = baseline(dir.path(), 1e15);
    let (code, out) = plan_against_base(dir.path(), &db);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("step send (tcp_stream):"), "{out}");
    assert!(out.contains("RESULT  regressed"), "{out}");
    assert!(out.contains("throughput"), "{out}");
    // The new runs carry the commit, and only they were the candidate.
    let listed = linerate_ok(&["runs", "--tag", "commit=new", "--db", &db]);
    assert_eq!(
        listed.lines().filter(|l| l.contains("tcp")).count(),
        4,
        "{listed}"
    );
}

#[test]
fn a_plan_faster_than_its_baseline_exits_0_and_a_run_is_no_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let db = baseline(dir.path(), 1e3);
    let (code, out) = plan_against_base(dir.path(), &db);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("step send (tcp_stream):"), "{out}");
    assert!(!out.contains("RESULT  regressed"), "{out}");
    let file = dir.path().join("gate.toml").display().to_string();
    let out = linerate()
        .args(["plan", &file, "--db", &db, "--check-against", "#1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--check-against #1: give the baseline's tags"),
        "{err}"
    );
}

/// Issue 47: a step with too few runs to decide is no pass: exit 2 naming the step and the
/// runs a side needs, or exit 0 with `--allow-undecided`.
#[test]
fn a_plan_too_short_to_decide_exits_2_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let db = baseline(dir.path(), 1e3);
    let file = dir.path().join("once.toml");
    let once = PLAN.replace(" --repeat 4", "");
    std::fs::write(&file, once).unwrap();
    let file = file.display().to_string();
    let args = ["plan", &file, "--db", &db, "--check-against", "commit=base"];
    let out = linerate().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("step send (tcp_stream): not enough runs"),
        "{err}"
    );
    assert!(err.contains("check needs 4 on each side"), "{err}");
    let out = linerate()
        .args(args)
        .arg("--allow-undecided")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("not enough runs"), "{said}");
}
