//! `tcp --self-probes`: in-band probes on a loaded stream, both ways, counted per interval and
//! over the run, each probe a round trip on the client's clock.

use crate::util::*;

fn run(extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "tcp",
        "-t",
        "2",
        "--self-probes",
        "50",
        "--no-store",
        "--json",
    ];
    args.extend_from_slice(extra);
    linerate_json(&args)
}

fn check_probes(d: &serde_json::Value) {
    let intervals = d["intervals"].as_array().unwrap();
    let per_interval: Vec<f64> = intervals
        .iter()
        .map(|i| num(&i["flows"][0]["self_probes"]["transactions"]))
        .collect();
    let total = &d["summary"]["self_probes"];
    // Every probe answered is in one interval and in the run's figures.
    assert_eq!(
        per_interval.iter().sum::<f64>(),
        num(&total["transactions"]),
        "{d}"
    );
    // 50 a second for 2 s, less those still in flight at the end.
    let n = num(&total["transactions"]);
    assert!((70.0..=101.0).contains(&n), "{n} probes: {total}");
    let lat = &total["latency_us"];
    assert!(
        num(&lat["min"]) > 0.0 && num(&lat["p50"]) <= num(&lat["p99"]),
        "{lat}"
    );
    // A self probe waits at least a round trip of the loaded connection.
    assert!(num(&lat["max"]) >= num(&lat["min"]), "{lat}");
    // Every byte still arrives: records are data too.
    let f = &d["summary"]["flows"][0];
    assert_eq!(f["bytes_sent"], f["bytes_received_after_drain"], "{f}");
}

#[test]
fn uploads_time_requests_queued_behind_their_data() {
    check_probes(&run(&[]));
}

#[test]
fn downloads_time_responses_queued_behind_the_servers_data() {
    let d = run(&["-R"]);
    assert_eq!(d["spec"]["params"]["stream"]["direction"], "reverse");
    check_probes(&d);
}

#[test]
fn self_probes_are_refused_where_they_cannot_run() {
    fails_in_one_line(&["tcp", "--self-probes", "x"], "--self-probes");
    let out = linerate()
        .args([
            "tcp",
            "-t",
            "1",
            "--self-probes",
            "5",
            "--bidir",
            "--no-store",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("self probes: one direction only"), "{err}");
}
