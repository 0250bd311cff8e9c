//! `--json-stream`: line-delimited events as a test, sweep or repetition runs (each point's test
//! with its own `started` and intervals), checked against the document `--json` prints (the
//! `end` event) and the runs stored.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// Every stdout line parsed, each an object naming its event.
pub(crate) fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .inspect(|v| assert!(v["event"].is_string(), "{v}"))
        .collect()
}

/// Each event's name, in order.
pub(crate) fn names(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect()
}

#[test]
fn a_test_streams_started_its_intervals_stored_then_the_document() {
    let ev = events(&linerate_ok(&["tcp", "-t", "2", "--json-stream"]));
    let n = names(&ev);
    assert_eq!(n[0], "started", "{n:?}");
    assert_eq!(&n[n.len() - 2..], ["stored", "end"], "{n:?}");
    let intervals: Vec<&Value> = ev.iter().filter(|e| e["event"] == "interval").collect();
    assert!(intervals.len() >= 2, "{n:?}");
    // The live intervals are the record's, one for one.
    let end = &ev[n.len() - 1]["data"];
    assert_eq!(end["kind"], "tcp_stream");
    let recorded = end["intervals"].as_array().unwrap();
    assert_eq!(recorded.len(), intervals.len());
    for (live, kept) in intervals.iter().zip(recorded) {
        assert_eq!(
            live["data"]["flows"][0]["receiver_bytes"],
            kept["flows"][0]["receiver_bytes"]
        );
    }
    assert_eq!(ev[0]["spec"]["duration_ms"], 2000);
    // The stored run is the one `show` prints.
    let id = ev[n.len() - 2]["run_id"].as_i64().unwrap();
    let shown = linerate_json(&["show", &id.to_string(), "--json"]);
    assert_eq!(shown["record"]["summary"], end["summary"], "{shown}");
}

#[test]
fn a_sweep_streams_begin_then_each_point_with_its_stored_runs() {
    let out = linerate_ok(&[
        "sweep",
        "streams",
        "--values",
        "1,2",
        "--json-stream",
        "--",
        "tcp",
        "-t",
        "1",
    ]);
    let all = events(&out);
    let n = names(&all);
    // Each point's test streams its own start and interval, between begin and its point.
    let point = ["started", "interval", "stored", "point"];
    assert_eq!(
        n,
        [&["begin"][..], &point, &point, &["end"]].concat(),
        "{n:?}"
    );
    assert_eq!(all[1]["spec"]["streams"], 1);
    assert_eq!(all[5]["spec"]["streams"], 2);
    let ev: Vec<Value> = all
        .into_iter()
        .filter(|e| e["event"] != "started" && e["event"] != "interval")
        .collect();
    assert_eq!(ev[0]["points"], 2);
    assert_eq!(ev[2]["label"], "streams=1");
    assert_eq!(ev[4]["index"], 1);
    let end = &ev[5]["data"];
    assert_eq!(end["points"][1], ev[4]["data"]);
    let stored: Vec<&Value> = [&ev[1], &ev[3]].map(|e| &e["run_id"]).to_vec();
    assert_eq!(stored[0], &end["points"][0]["runs"][0]["run_id"]);
    assert_eq!(stored[1], &end["points"][1]["runs"][0]["run_id"]);
}

#[test]
fn a_repetition_streams_each_run() {
    let ev = events(&linerate_ok(&[
        "rr",
        "-t",
        "1",
        "--repeat",
        "2",
        "--json-stream",
    ]));
    let n = names(&ev);
    let run = ["started", "interval", "stored", "point"];
    assert_eq!(n, [&["begin"][..], &run, &run, &["end"]].concat(), "{n:?}");
    assert_eq!(ev[9]["data"]["kind"], "repeat");
    assert_eq!(ev[8]["data"]["run_id"], ev[7]["run_id"]);
}

#[test]
fn json_stream_and_json_together_is_a_usage_error() {
    fails_in_one_line(&["tcp", "--json", "--json-stream"], "--json");
    fails_in_one_line(
        &[
            "sweep",
            "streams",
            "--values",
            "1",
            "--",
            "tcp",
            "--json-stream",
        ],
        "--json-stream after --",
    );
}

#[test]
fn ctrl_c_still_ends_the_stream_with_the_partial_document() {
    let child = linerate()
        .args(["tcp", "-t", "30", "--json-stream"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let start = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(8));
    assert_eq!(out.status.code(), Some(130));
    let ev = events(&String::from_utf8_lossy(&out.stdout));
    let last = ev.last().unwrap();
    assert_eq!(last["event"], "end");
    assert_eq!(last["data"]["summary"]["interrupted"], true, "{last}");
    assert_eq!(ev[ev.len() - 2]["event"], "stored");
}
