//! issue 35's iperf3 habits through the binary: an iperf3 command line answered with
//! linerate's, negative numbers given their range, `-t 0` until Ctrl-C, `-O` warm-ups left out
//! of the stored window (their intervals marked), and the server's one result line per test.

use super::*;

/// A fresh results database for one test of this module.
fn db(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "linerate-habits-{name}-{}.sqlite",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

/// `args` exits 2 with exactly `line` on stderr.
fn answers(args: &[&str], line: &str) {
    let out = linerate().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end(), line, "{args:?}");
}

#[test]
fn an_iperf3_command_line_is_answered_with_the_linerate_command() {
    answers(
        &["-c", "198.18.0.2", "-t", "5", "-P", "4", "-R"],
        "linerate has no -c: run `linerate tcp 198.18.0.2 -t 5 -P 4 -R` \
         (iperf3 -c 198.18.0.2 -t 5 -P 4 -R)",
    );
    answers(
        &["-u", "-c", "198.18.0.2", "-b", "100M"],
        "linerate has no -c: run `linerate udp 198.18.0.2 -b 100M` (iperf3 -u -c 198.18.0.2 -b 100M)",
    );
    answers(
        &["-s", "-p", "5201"],
        "linerate has no -s: run `linerate serve -p 5201` (iperf3 -s -p 5201); it listens on \
         port 5301 and serves iperf3 clients too (iperf3 -c HOST -p 5301)",
    );
    // linerate's own top-level flags still work.
    let out = linerate().arg("--version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn negative_numbers_get_the_range_message() {
    fails_in_one_line(
        &["tcp", "-t", "-1"],
        "--time -1: must be between 0.1 and 86400",
    );
    fails_in_one_line(&["udp", "-i", "-2"], "--interval -2: must be between");
    fails_in_one_line(&["tcp", "-O", "-1"], "--omit -1: must be at least 0");
    fails_in_one_line(
        &["udp", "-t", "2", "-O", "2"],
        "--omit 2: must be at least 0 and shorter than --time",
    );
    fails_in_one_line(
        &["tcp", "127.0.0.1", "--iperf3", "-O", "1"],
        "--omit with --iperf3",
    );
}

#[test]
fn t_zero_runs_until_ctrl_c_then_prints_and_stores_the_summary() {
    let db = db("t0");
    let child = linerate()
        .args(["tcp", "-t", "0", "-i", "0.5", "--json", "--db"])
        .arg(&db)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["spec"]["duration_ms"], 86_400_000);
    let s = &v["summary"];
    assert_eq!(s["interrupted"], true);
    assert!((1.0..10.0).contains(&num(&s["duration_s"])), "{s}");
    assert!(num(&s["throughput_bps"]) > 0.0, "{s}");
    let shown = linerate_json(&["show", "1", "--json", "--db", db.to_str().unwrap()]);
    assert_eq!(shown["record"]["summary"]["duration_s"], s["duration_s"]);
    let _ = std::fs::remove_file(&db);
}

/// A `-t 0` run stopped with SIGINT did what it was asked (run until stopped): `runs` lists it
/// `ok` and a tag group's median counts it; a timed run cut short by the same SIGINT stays
/// `interrupted`, left out of its group.
#[test]
fn a_t_zero_run_stopped_by_sigint_is_ok_and_a_cut_timed_run_stays_interrupted() {
    let db = db("t0status");
    let path = db.to_str().unwrap();
    let start = |time: &str, case: &str| {
        let tag = format!("case={case}");
        linerate()
            .args(["tcp", "-t", time, "-b", "200M", "--tag", &tag, "--db", path])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children = [start("0", "until"), start("30", "cut")];
    std::thread::sleep(Duration::from_millis(1500));
    for child in &children {
        // SAFETY: sending SIGINT to our own child, not yet reaped.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    }
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{stderr}");
    }
    let runs = linerate_json(&["runs", "--json", "--db", path]);
    let status = |case: &str| {
        let run = runs
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["tags"]["case"] == case);
        let run = run.unwrap_or_else(|| panic!("no run tagged case={case}: {runs}"));
        (run["status"].clone(), run["interrupted"].clone())
    };
    assert_eq!(
        status("until"),
        (serde_json::json!("ok"), serde_json::json!(true)),
        "{runs}"
    );
    assert_eq!(
        status("cut"),
        (serde_json::json!("interrupted"), serde_json::json!(true)),
        "{runs}"
    );
    let until = linerate_json(&["show", "1", "--json", "--db", path]);
    let until = if until["tags"]["case"] == "until" {
        until
    } else {
        linerate_json(&["show", "2", "--json", "--db", path])
    };
    assert_eq!(until["record"]["summary"]["until_stopped"], true, "{until}");
    // As a tag group: the -t 0 run is a whole run, unmarked; the cut one is marked (a group of
    // only such runs keeps them, saying so).
    let cmp = linerate_json(&[
        "compare",
        "--format",
        "json",
        "case=until",
        "case=cut",
        "--db",
        path,
    ]);
    let columns = &cmp["columns"];
    assert_eq!(columns[0]["marks"], serde_json::Value::Null, "{cmp}");
    assert_eq!(
        columns[1]["marks"],
        serde_json::json!(["1 interrupted"]),
        "{cmp}"
    );
    let _ = std::fs::remove_file(&db);
}

/// `-O 1 -t 2`: the stored summary covers the last second on both ends' clocks, the first
/// second's intervals are stored marked omitted, and the unmarked intervals add up to the
/// summary's bytes (the window starts where the omitted intervals end).
#[test]
fn a_warm_up_is_left_out_of_the_stored_window_and_its_intervals_marked() {
    let db = db("omit");
    let path = db.to_str().unwrap();
    for (kind, extra) in [("tcp", &[][..]), ("udp", &["-b", "50M"][..])] {
        let mut args = vec![kind, "-O", "1", "-t", "2", "-i", "0.5", "--db", path];
        args.extend(extra);
        let out = linerate().args(&args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        let marked: Vec<&str> = text.lines().filter(|l| l.ends_with("(omitted)")).collect();
        assert_eq!(
            marked.len(),
            2,
            "two live rows of 0.5 s are omitted:\n{text}"
        );
    }
    for run in ["1", "2"] {
        let shown = linerate_json(&["show", run, "--json", "--db", path]);
        let v = &shown["record"];
        let s = &v["summary"];
        assert_eq!(v["spec"]["omit_ms"], 1000);
        let client_window = num(&s["duration_s"]);
        let flow = &s["flows"][0];
        let server_window = num(&flow["window_s"]);
        for w in [client_window, server_window] {
            assert!((0.9..1.1).contains(&w), "window {w} s, not 1 s: {s}");
        }
        let intervals = v["intervals"].as_array().unwrap();
        let (omitted, kept): (Vec<_>, Vec<_>) =
            intervals.iter().partition(|i| i["omitted"] == true);
        assert_eq!(omitted.len(), 2, "{intervals:?}");
        assert!(
            omitted.iter().all(|i| num(&i["end_s"]) < 1.1),
            "{intervals:?}"
        );
        assert!(
            kept.iter().all(|i| num(&i["start_s"]) >= 1.0),
            "{intervals:?}"
        );
        let in_window: u64 = kept
            .iter()
            .map(|i| i["flows"][0]["receiver_bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(in_window, flow["bytes_received"].as_u64().unwrap(), "{s}");
        if let Some(u) = flow.get("udp").filter(|u| !u.is_null()) {
            let (sent, got, lost) = (
                u["packets_sent"].as_u64(),
                u["packets_received"].as_u64(),
                u["packets_lost"].as_u64(),
            );
            assert_eq!(sent, Some(got.unwrap() + lost.unwrap()), "{u}");
            // 50 Mbit/s of 1472-byte payloads: about 4246 a second, one second counted.
            assert!((3800..4700).contains(&got.unwrap()), "{u}");
        }
    }
    let _ = std::fs::remove_file(&db);
}

#[test]
fn serve_logs_one_result_line_per_test() {
    let server = TestServer::start(ServerConfig::default());
    let record = run(server.addr, spec(Direction::Reverse, 2, 500)).unwrap();
    assert!(record.summary.throughput_bps > 0.0);
    wait_for_log(&server, "test done: tcp reverse, 2 streams, 0.5");
    let log = server.log_text();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 1, "one line per test: {log}");
    let line = lines[0];
    assert!(
        line.starts_with("127.0.0.1:"),
        "the client's address first: {line}"
    );
    assert!(
        line.contains(" s: s->c ") && line.ends_with("bit/s sent"),
        "{line}"
    );
    assert!(
        !line.contains("tcp_stream") && !line.contains("Reverse"),
        "{line}"
    );
}
