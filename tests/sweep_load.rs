//! `linerate sweep load` through the binary: bad input, a loopback run stored and charted,
//! and the ground truth of a tbf queue of known depth between namespaces.

use super::*;

#[test]
fn bad_load_sweeps_are_refused_naming_the_fix() {
    let load = |values: &str, test: &[&str], needle: &str| {
        let mut args = vec!["sweep", "load", "--values", values, "--"];
        args.extend_from_slice(test);
        fails_in_one_line(&args, needle);
    };
    load("50%,500%", &[], "at most 400%");
    load("half", &[], "'half' is not a percentage");
    load("50%,20%", &[], "increasing order");
    load("50%", &["tcp", "--bidir"], "drop --bidir");
    load("50%", &["udp", "--json"], "--json after --");
    fails_in_one_line(
        &["sweep", "load", "--values", "50%", "--capacity", "fast"],
        "--capacity fast",
    );
}

/// A request/response load on loopback: the capacity run and every point stored under the
/// sweep's tags, the capacity and the offered loads in the JSON, and the chart drawn.
#[test]
fn a_loopback_load_sweep_stores_every_run_and_draws_the_curve() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("l.sqlite").display().to_string();
    let chart = dir.path().join("load.svg");
    let v = linerate_json(&[
        "sweep",
        "load",
        "--values",
        "25%,100%",
        "--db",
        &db,
        "--json",
        "--chart",
        &chart.display().to_string(),
        "--",
        "rr",
        "-t",
        "0.5",
    ]);
    assert_eq!(v["kind"], "sweep_load", "{v}");
    assert_eq!(v["parameter"], "load_pct");
    let load = &v["load"];
    assert_eq!(load["unit"], "transactions_per_s");
    let capacity = num(&load["capacity"]);
    assert!(capacity > 100.0, "{load}");
    assert_eq!(load["points"].as_array().unwrap().len(), 2, "{load}");
    let offered = num(&load["points"][0]["offered"]);
    assert!((offered / (capacity * 0.25) - 1.0).abs() < 1e-9, "{load}");
    assert!(num(&load["points"][1]["rtt_p99_us"]) > 0.0, "{load}");
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(svg.contains("Round trip against offered load") && svg.contains("offered load"));
    let rows = linerate_json(&["runs", "--db", &db, "--tag", "sweep=load", "--json"]);
    assert_eq!(
        rows.as_array().unwrap().len(),
        3,
        "capacity + 2 points: {rows}"
    );
    let capacity_runs =
        linerate_json(&["runs", "--db", &db, "--tag", "load_pct=capacity", "--json"]);
    assert_eq!(capacity_runs.as_array().unwrap().len(), 1);
}

/// Timing-sensitive ground truths, run alone by scripts/test.sh: the capacity run saturates
/// both cores.
mod quiet {
    use super::*;

    /// Ground truth: UDP towards the server through a tbf queue of 250 KB at 50 Mbit/s (40 ms to
    /// drain) on a bridge. Below the capacity the probes beside the load cross a queue that
    /// empties between the sender's batches (their median stays near the idle round trip); at
    /// 120 % the queue stays full and the probes wait its drain time (within 20 %); the knee is
    /// the 120 % point.
    #[test]
    fn a_full_queue_past_the_capacity_is_the_knee() {
        if !can_use_netns() {
            return;
        }
        let pair = VethPair::bridged("ld");
        let mid = pair.mid.clone().unwrap();
        sh(&format!(
            "ip netns exec {mid} tc qdisc replace dev mb root tbf rate 50mbit burst 16kb limit 250kb"
        ));
        let _server = pair.serve();
        let out = pair.client(&[
            "sweep",
            "load",
            "198.18.0.2",
            "--values",
            "25%,50%,120%",
            "--json",
            "--no-store",
            "--",
            "udp",
            "-t",
            "2",
            "-l",
            "1200",
            "--latency",
            "udp",
            "--latency-idle",
            "0.5",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let load = &v["load"];
        eprintln!("{load}");
        let capacity = num(&load["capacity"]);
        assert!(
            (40e6..=51e6).contains(&capacity),
            "UDP goodput through 50 Mbit/s: {capacity}"
        );
        let p = load["points"].as_array().unwrap();
        for low in &p[..2] {
            assert!(
                num(&low["rtt_p50_us"]) < 2_000.0,
                "no standing queue: {low}"
            );
            assert!(
                num(&low["rtt_p99_us"]) < 20_000.0,
                "at most a batch queued: {low}"
            );
        }
        let full = num(&p[2]["rtt_p50_us"]) / 1000.0;
        assert!(
            (32.0..=48.0).contains(&full),
            "{full} ms against a 40 ms queue: {load}"
        );
        assert_eq!(num(&load["knee_pct"]), 120.0, "{load}");
    }
}
