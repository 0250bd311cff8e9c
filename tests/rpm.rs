//! `linerate rpm`: responsiveness under working conditions, on loopback (every figure there, in
//! order; each direction a stored run that `runs`, `show`, `compare`, `report` and `--chart`
//! use) and against a ground truth: a tbf queue of known depth on a bridge between two
//! namespaces, whose drain time the loaded RTT must show, in the network's share of the delay.

use serde_json::Value;

use crate::util::*;

fn directions(d: &Value) -> &Vec<Value> {
    d["directions"].as_array().unwrap()
}

#[test]
fn loopback_gives_both_directions_every_figure_and_a_time_series() {
    let d = linerate_json(&["rpm", "-t", "8", "-P", "3", "--json"]);
    assert_eq!(d["kind"], "rpm");
    assert!(
        d["draft"].as_str().unwrap().contains("responsiveness-09"),
        "{d}"
    );
    assert!(num(&d["idle"]["rpm"]) > 0.0, "{}", d["idle"]);
    assert_eq!(d["idle"]["rr_ms"]["samples"], 20);
    let dirs = directions(&d);
    assert_eq!(dirs.len(), 2);
    for (dir, way) in dirs.iter().zip(["up", "down"]) {
        assert_eq!(dir["direction"], way);
        assert!(num(&dir["goodput_bps"]) > 0.0, "{dir}");
        assert!((1.0..=3.0).contains(&num(&dir["connections"])), "{dir}");
        for kind in [
            "foreign_connect_ms",
            "foreign_rr_ms",
            "self_ms",
            "kernel_rtt_ms",
        ] {
            assert!(num(&dir[kind]["samples"]) > 0.0, "{kind}: {dir}");
            assert!(
                num(&dir[kind]["p50"]) <= num(&dir[kind]["p99"]),
                "{kind}: {dir}"
            );
        }
        let timeline = dir["timeline"].as_array().unwrap();
        // 8 s in all: each direction about 3.8 s, whole intervals less 0.25 s.
        assert!((2..=4).contains(&timeline.len()), "{}", timeline.len());
        let t: Vec<f64> = timeline.iter().map(|x| num(&x["t_s"])).collect();
        assert!(t.windows(2).all(|w| w[0] < w[1]), "{t:?}");
        assert!(["low", "medium", "high"].contains(&dir["rpm_confidence"].as_str().unwrap()));
    }
    assert!(num(&d["duration_s"]) <= 8.5, "{}", d["duration_s"]);
    // The overall figure: the draft's formula over the directions' trimmed means, averaged.
    let o = &d["overall"];
    let tm = |k: &str| {
        dirs.iter()
            .map(|x| num(&x["responsiveness"][k]))
            .sum::<f64>()
            / 2.0
    };
    let foreign = 60_000.0 / ((tm("connect_ms") + tm("foreign_rr_ms")) / 2.0);
    let want = (foreign + 60_000.0 / tm("self_ms")) / 2.0;
    let got = num(&o["responsiveness"]["rpm"]);
    assert!(
        (got - want).abs() <= want * 1e-9,
        "{got} against {want}: {o}"
    );
    assert_eq!(o["directions"], serde_json::json!(["up", "down"]), "{o}");
    let lowest = dirs
        .iter()
        .map(|x| x["rpm_confidence"].as_str().unwrap())
        .min_by_key(|c| ["low", "medium", "high"].iter().position(|k| k == c))
        .unwrap();
    assert_eq!(o["confidence"], lowest, "{o}");
}

/// `-t` is the whole run's limit: the in-process server, the idle path and both directions end
/// within 0.5 s after it; the live rows go to stdout as `tcp`'s do, the short summary after
/// them ends with `RESULT`, and stderr holds nothing (no store, no diagnostics).
#[test]
fn the_whole_run_ends_within_its_time_limit_and_prints_as_tcp_does() {
    let began = std::time::Instant::now();
    let out = linerate()
        .args(["rpm", "-t", "4", "-P", "2", "--no-store"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let took = began.elapsed().as_secs_f64();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    eprintln!("rpm -t 4 took {took:.2} s");
    assert!(took <= 4.5, "{took:.2} s for -t 4:\n{stdout}");
    assert!(stderr.is_empty(), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("linerate rpm to "), "{stdout}");
    assert!(lines[0].contains("at most 4 s in all (-t)"), "{stdout}");
    assert!(
        lines[1].starts_with("goodput = the bytes "),
        "what the rates are: {stdout}"
    );
    assert!(lines[2].starts_with("up "), "a live row: {stdout}");
    assert!(lines.iter().any(|l| l.starts_with("down ")));
    let summary = lines
        .iter()
        .position(|l| l.starts_with("--- summary: rpm to "))
        .unwrap();
    let rest = &lines[summary + 1..];
    assert_eq!(rest.len(), 4, "up, down, idle, RESULT: {stdout}");
    assert!(rest[3].starts_with("RESULT  "), "{stdout}");
    for l in &rest[..2] {
        assert_eq!(l.matches("confidence ").count(), 1, "one statement: {l}");
    }
    // -v: the full report, led by the overall figure, no RESULT line.
    let v = linerate_ok(&["rpm", "-t", "2", "--direction", "up", "--no-store", "-v"]);
    let full = &v[v.find("Responsiveness to ").expect(&v)..];
    let second = full.lines().nth(1).unwrap();
    assert!(second.starts_with("RPM"), "{full}");
    assert!(full.contains("\nup (client -> server)\n  RPM"), "{full}");
    assert!(!full.contains("RESULT"), "{full}");
}

/// Each direction is stored as a run tagged with its rpm: listed, shown with its RPM, compared
/// on the rpm metrics, reported with its chart, and `--chart` draws it.
#[test]
fn each_direction_is_stored_shown_compared_reported_and_charted() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).display().to_string();
    let (db, svg, html) = (path("rpm.sqlite"), path("rpm.svg"), path("rpm.html"));
    let rpm = |extra: &[&str]| {
        let args = [&["rpm", "-t", "3", "--direction", "up", "--db", &db], extra].concat();
        linerate().args(&args).output().unwrap()
    };
    let first = rpm(&["--tag", "n=1"]);
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    assert!(
        stderr.contains("linerate: stored as #1 (up) in "),
        "{stderr}"
    );
    let second = rpm(&["--json", "--chart", &svg]);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let d: Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(d["run_ids"], serde_json::json!([2]), "{d}");
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.contains("round trip (ms)") && drawn.contains("goodput ("));
    let runs = linerate_ok(&["runs", "--db", &db]);
    assert!(runs.contains("rpm_direction=up"), "{runs}");
    assert!(runs.contains("n=1,rpm_direction=up,rpm_id="), "{runs}");
    let shown = linerate_ok(&["show", "1", "--db", &db]);
    assert!(shown.contains("--- summary: tcp_stream"), "{shown}");
    assert!(shown.contains("Responsiveness (draft-ietf-ippm"), "{shown}");
    assert!(shown.contains("up (client -> server)\n  RPM "), "{shown}");
    let cmp = linerate_ok(&["compare", "1", "2", "--db", &db]);
    assert!(cmp.contains("round trips/min"), "{cmp}");
    assert!(cmp.contains("rpm self p50"), "{cmp}");
    linerate_ok(&["report", "1", "2", "--db", &db, "-o", &html]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(r#"id="chart-rpm-2">"#),
        "both directions charted"
    );
    assert!(page.contains("time since the direction began (s)"));
}

#[test]
fn json_stream_gives_a_tick_per_interval_then_stored_then_the_document() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("rpm.sqlite").display().to_string();
    let out = linerate_ok(&[
        "rpm",
        "-t",
        "3",
        "-P",
        "2",
        "--direction",
        "up",
        "--json-stream",
        "--db",
        &db,
    ]);
    let events = crate::json_stream::events(&out);
    let names = crate::json_stream::names(&events);
    assert_eq!(names.first(), Some(&"tick"), "{names:?}");
    assert_eq!(names.last(), Some(&"end"), "{names:?}");
    let ticks: Vec<&Value> = events.iter().filter(|e| e["event"] == "tick").collect();
    let end = &events.last().unwrap()["data"];
    let timeline = directions(end)[0]["timeline"].as_array().unwrap();
    assert_eq!(
        ticks.len(),
        timeline.len(),
        "a tick per interval: {names:?}"
    );
    for (tick, kept) in ticks.iter().zip(timeline) {
        assert_eq!(
            (&tick["direction"], &tick["data"]),
            (&Value::from("up"), kept)
        );
    }
    assert_eq!(
        names.iter().filter(|n| **n == "stored").count(),
        1,
        "{names:?}"
    );
    let stored = events.iter().find(|e| e["event"] == "stored").unwrap();
    assert_eq!(stored["run_id"], end["run_ids"][0], "{end}");
}

#[test]
fn bad_input_names_the_flag() {
    fails_in_one_line(&["rpm", "-P", "0"], "-P 0");
    fails_in_one_line(&["rpm", "-t", "1"], "--time 1");
    fails_in_one_line(&["rpm", "--direction", "sideways"], "--direction");
    fails_in_one_line(&["rpm", "--probes", "80"], "--probes 80: between 1 and 50");
    fails_in_one_line(
        &["rpm", "--notsent-lowat", "0"],
        "--notsent-lowat 0: a TCP_NOTSENT_LOWAT must be between 1 and 67108864 bytes",
    );
    fails_in_one_line(&["tcp", "--notsent-lowat", "1X"], "--notsent-lowat 1X");
    fails_in_one_line(&["rpm", "--chart", "x.jpg"], "--chart x.jpg");
    fails_in_one_line(&["rpm", "--tag", "x"], "--tag x");
    fails_in_one_line(
        &["rpm", "--json", "--json-stream"],
        "'--json' cannot be used with '--json-stream'",
    );
    fails_in_one_line(
        &["rpm", "--direction", "idle", "--chart", "x.svg"],
        "--chart with --direction idle",
    );
}

/// Too little time to stabilise (2 s against a moving average of 4 intervals): the run ends
/// at the limit, succeeds, and says how sure its figures are rather than failing.
#[test]
fn a_run_that_cannot_stabilise_says_so() {
    let out = linerate()
        .args([
            "rpm",
            "-t",
            "2",
            "--direction",
            "up",
            "--no-store",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let up = &directions(&v)[0];
    assert_eq!(up["goodput_confidence"], "low", "{up}");
    assert_eq!(up["rpm_confidence"], "low", "{up}");
    assert_eq!(up["ended"], "time_limit", "{up}");
    assert_eq!(
        (&up["rpm_intervals"], &up["rpm_stable_s"]),
        (&Value::from(0), &Value::Null)
    );
    assert_eq!(
        up["notes"],
        serde_json::json!([]),
        "the confidence says it, once"
    );
}

/// Ground truth: 20 Mbit/s towards the server through a tbf queue of 250 KB (100 ms to
/// drain) on a bridge. Reno fills it; the loaded kernel RTT and the network's share of the
/// delay ride Reno's sawtooth, between half the drain time (tail drop makes the flows halve
/// together) and the drain time, so their median lies in 50..100 ms (CI saw 79.5 ms on a busy
/// host); the self probes wait longer (the senders' unsent bytes too), and the loaded RPM
/// falls below 60000 / 50 ms. A 5 KB queue keeps the network's share near nothing.
#[test]
fn a_deep_queue_is_found_in_the_network_and_lowers_the_rpm() {
    if !can_use_netns() {
        return;
    }
    let pair = VethPair::bridged("rp");
    let mid = pair.mid.clone().unwrap();
    let _server = pair.serve();
    let run = |limit: &str| -> Value {
        sh(&format!(
            "ip netns exec {mid} tc qdisc replace dev mb root tbf rate 20mbit burst 16kb limit {limit}"
        ));
        let out = pair.client(&[
            "rpm",
            "198.18.0.2",
            "--direction",
            "up",
            "-t",
            "10",
            "-P",
            "4",
            "-C",
            "reno",
            "--json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let d: Value = serde_json::from_slice(&out.stdout).unwrap();
        directions(&d)[0].clone()
    };
    let deep = run("250kb");
    let network = num(&deep["in_network_queues_ms"]);
    eprintln!(
        "deep: network {network} ms, sockets {} ms, RPM {}",
        deep["in_socket_buffers_ms"], deep["responsiveness"]["rpm"]
    );
    assert!(
        (50.0..=120.0).contains(&network),
        "{network} ms against 100 ms: {deep}"
    );
    assert!(
        num(&deep["self_ms"]["p50"]) >= num(&deep["kernel_rtt_ms"]["p50"]) * 0.8,
        "{deep}"
    );
    assert!(
        num(&deep["responsiveness"]["loaded_rpm"]) < 1200.0,
        "{deep}"
    );
    let short = run("5kb");
    let network = num(&short["in_network_queues_ms"]);
    eprintln!("short: network {network} ms");
    assert!(network < 20.0, "{network} ms with a 2 ms queue: {short}");
}
