//! Latency under load, paced request/response, CPU placement, and (in `quiet`, run alone by
//! scripts/test.sh) linerate's round trips against sockperf's measured in the same run.

use super::*;

#[test]
fn affinity_pins_and_is_stored() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let last = (cpus - 1).to_string();
    let arg = format!("0,{last}");
    let v = linerate_json(&["rr", "-t", "0.5", "-A", &arg, "--json", "-i", "0"]);
    assert_eq!(v["spec"]["client_cpu"], 0);
    assert_eq!(num(&v["spec"]["server_cpu"]) as usize, cpus - 1);
    let out = linerate()
        .args(["tcp", "-t", "1", "--affinity", "4096"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--affinity 4096") && err.contains("CPUs"),
        "{err}"
    );
    let out = linerate()
        .args(["tcp", "-t", "1", "--affinity", ",4096"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the server has") && err.contains("4096"),
        "{err}"
    );
}

#[test]
fn bad_latency_input_is_one_clear_error() {
    fails_in_one_line(&["rr", "--tps", "0"], "--tps 0");
    fails_in_one_line(&["rr", "--tps", "5X"], "--tps 5X");
    fails_in_one_line(
        &["tcp", "--latency", "--latency-rate", "0"],
        "--latency-rate 0",
    );
    fails_in_one_line(
        &["tcp", "--latency", "--latency-idle", "0"],
        "--latency-idle 0",
    );
    fails_in_one_line(
        &["tcp", "--latency", "--unix", "/tmp/lr-none.sock"],
        "--latency with --unix",
    );
    fails_in_one_line(&["tcp", "--affinity", "x"], "--affinity x");
    fails_in_one_line(&["rr", "--response", "65M"], "--response 65M");
    fails_in_one_line(&["rr", "--udp", "-l", "70000"], "--length 70000");
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    fails_in_one_line(
        &["crr", "127.0.0.1", "-p", &port.to_string(), "-t", "1"],
        "is `linerate serve` running there",
    );
}

/// Request/response clients killed mid-transaction (no Stop, no FIN) cost the server nothing
/// but those sessions: the next client is served.
#[test]
fn server_survives_clients_killed_mid_transaction() {
    let server = test_server();
    let port = server.addr.port().to_string();
    for kind in [&["rr"][..], &["rr", "--udp"], &["crr"]] {
        let mut child = linerate()
            .args(kind)
            .args(["127.0.0.1", "-p", &port, "-t", "30", "-i", "0"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(700));
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let v = linerate_json(&[
        "rr",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "0.5",
        "-i",
        "0",
        "--json",
    ]);
    assert!(num(&v["summary"]["transactions"]) > 0.0);
}

/// Tests whose figures are timings (paced rates, queueing delay): scripts/test.sh runs them on their own, one at a time, after everything else, so
/// other tests do not load the two cores meanwhile.
mod quiet {
    use super::*;

    #[test]
    fn probes_count_idle_and_loaded_phases() {
        let v = linerate_json(&[
            "tcp",
            "-t",
            "2",
            "--latency",
            "--latency-rate",
            "200",
            "--latency-idle",
            "1",
            "-i",
            "0.5",
            "--json",
        ]);
        let l = &v["summary"]["latency_under_load"];
        assert_eq!(l["probe_kind"], "udp_rr");
        // Paced probes: rate x time, give or take the last one in flight, less the slots a
        // descheduled prober skipped (counted).
        let idle = num(&l["idle"]["transactions"]);
        let idle_slots = idle + num(&l["idle"]["slots_missed"]);
        assert!(
            (198.0..=201.0).contains(&idle_slots),
            "idle probes {idle}, slots {idle_slots}"
        );
        assert!(idle >= 100.0, "idle probes {idle}");
        let loaded = num(&l["loaded"]["transactions"]);
        let loaded_slots = loaded + num(&l["loaded"]["slots_missed"]);
        let expected = 200.0 * num(&l["loaded_s"]);
        assert!(
            (expected - 3.0..=expected + 2.0).contains(&loaded_slots),
            "loaded probes {loaded}, slots {loaded_slots}, expected {expected}"
        );
        assert!(loaded >= 200.0, "loaded probes {loaded}");
        assert_eq!(
            l["idle"]["latency_us"]["samples"],
            l["idle"]["transactions"]
        );
        let added = num(&l["added_p50_us"]);
        let (i50, l50) = (
            num(&l["idle"]["latency_us"]["p50"]),
            num(&l["loaded"]["latency_us"]["p50"]),
        );
        assert!((added - (l50 - i50)).abs() < 1e-9);
        // Every interval carries the probe's figures beside the bulk's.
        let rows = v["intervals"].as_array().unwrap();
        assert!(rows.len() >= 4);
        for r in &rows[..rows.len() - 1] {
            let n = num(&r["probe"]["transactions"]);
            assert!((80.0..=120.0).contains(&n), "{r}");
        }
    }

    #[test]
    fn paced_transactions_hold_the_rate() {
        for proto in [&[][..], &["--udp"][..]] {
            let mut args = vec![
                "rr", "-t", "2", "--tps", "500", "--omit", "0", "--json", "-i", "0",
            ];
            args.extend_from_slice(proto);
            let v = linerate_json(&args);
            let s = &v["summary"];
            let tps = num(&s["transactions_per_s"]);
            // Never above the rate; below it only by slots a descheduled requester skipped (it
            // does not catch up in a burst), which a busy 2-core machine does cost: those are
            // counted, and with the slots taken they make up the schedule. The schedule runs
            // from the window's start to the instant stop was raised, and the slots that opened
            // in it, taken or missed, number ceil(500 * window): within one of 500 *
            // duration_s, which ends a moment after the stop (beside a spinner, slots that
            // opened while the requester's thread was starting or finishing its last request
            // were once neither, and it came out 2-3 short).
            let (taken, missed) = (num(&s["transactions"]), num(&s["slots_missed"]));
            let slots = 500.0 * num(&s["duration_s"]);
            eprintln!("{proto:?}: {tps:.1}/s, {taken} taken + {missed} missed of {slots:.1} slots");
            assert!(
                (250.0..=505.0).contains(&tps),
                "{proto:?}: {tps} per second"
            );
            assert!(
                (slots - 1.0..=slots + 1.0).contains(&(taken + missed)),
                "{proto:?}: {taken} taken + {missed} missed vs {slots} slots"
            );
        }
    }
    /// tbf holds at most `limit` bytes: at 20 Mbit/s a 125 000-byte queue drains in 50 ms. UDP
    /// offered at 30 Mbit/s keeps it full, so every probe behind it waits those 50 ms (less up to
    /// one 1514-byte frame, 0.6 ms); idle, probes wait for nothing.

    #[test]
    fn latency_under_load_is_the_tbf_queue() {
        if !can_use_netns() {
            return;
        }
        let pair = VethPair::new("lul");
        sh(&format!(
            "ip netns exec {} tc qdisc replace dev va root tbf rate 20mbit burst 16kb limit 125000",
            pair.a
        ));
        let _server = pair.serve();
        let v = pair.client_json(&[
            "udp",
            "-b",
            "30M",
            "-t",
            "3",
            "--latency",
            "--latency-idle",
            "1",
            "-i",
            "0",
        ]);
        let l = &v["summary"]["latency_under_load"];
        let idle50 = num(&l["idle"]["latency_us"]["p50"]);
        let added50 = num(&l["added_p50_us"]) / 1000.0;
        assert!(idle50 < 2000.0, "idle p50 {idle50} us");
        assert!(
            (47.5..=51.5).contains(&added50),
            "the load added {added50} ms at p50; the full queue holds 50 ms"
        );
        // Probes go out on schedule whatever the queue does: 100 per second for the 3 s. (They are
        // seldom tail-dropped: tbf's limit is in bytes, and a 106-byte probe fits where a 1514-byte
        // frame does not.)
        let sent = num(&l["loaded"]["transactions"]) + num(&l["loaded"]["lost_transactions"]);
        let expected = 100.0 * num(&l["loaded_s"]);
        assert!(
            sent <= expected + 1.0 && sent >= 0.9 * expected,
            "{sent} probes in {expected} slots"
        );
    }
}
