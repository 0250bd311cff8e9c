//! Request/response latency (`rr`, `crr`, UDP rr) on loopback and across namespaces.

use super::*;

fn rr_json(args: &[&str]) -> serde_json::Value {
    linerate_json(&[&["rr", "-i", "0", "--json"], args].concat())
}

/// Little's law holds only while nothing else takes the cores between transactions:
/// run alone by scripts/test.sh (`quiet::`).
mod quiet {
    use super::*;

    #[test]
    fn littles_law_and_ordered_percentiles() {
        for streams in ["1", "2"] {
            let v = rr_json(&["-t", "2", "-P", streams]);
            let s = &v["summary"];
            assert_eq!(v["kind"], "tcp_rr");
            let tps = s["transactions_per_s"].as_f64().unwrap();
            let l = &s["latency_us"];
            let mean_s = l["mean"].as_f64().unwrap() * 1e-6;
            let n: f64 = streams.parse().unwrap();
            // One transaction in flight per stream: mean round trip × rate = streams.
            let little = mean_s * tps / n;
            // One stream: within 2 %. Two streams: four busy threads (two requesters, two
            // responders) share the two cores, so a requester is sometimes descheduled
            // between a response and its next request, time no round trip contains: 3 %.
            let tolerance = if n == 1.0 { 0.02 } else { 0.03 };
            assert!(
                (little - 1.0).abs() < tolerance,
                "-P {streams}: mean x rate / streams = {little}"
            );
            let q: Vec<f64> = ["min", "p50", "p90", "p99", "p999", "p9999", "max"]
                .iter()
                .map(|k| l[k].as_f64().unwrap())
                .collect();
            assert!(q.windows(2).all(|w| w[0] <= w[1]), "{q:?}");
            assert_eq!(l["samples"].as_u64(), s["transactions"].as_u64());
            let rows = v["intervals"].as_array().unwrap();
            let interval_tx: u64 = rows
                .iter()
                .map(|i| i["flows"][0]["rr"]["transactions"].as_u64().unwrap())
                .sum();
            // No warm-up left out at -t 2 with 1 s intervals, so the intervals hold every one.
            assert_eq!(s["omit_s"], 0.0);
            assert_eq!(interval_tx, s["transactions"].as_u64().unwrap());
        }
    }

    #[test]
    fn udp_littles_law() {
        let v = rr_json(&["--udp", "-t", "2", "-l", "100", "--response", "1000"]);
        let s = &v["summary"];
        let tps = s["transactions_per_s"].as_f64().unwrap();
        let mean_s = s["latency_us"]["mean"].as_f64().unwrap() * 1e-6;
        // Between a response and the next request the requester does a little work of its
        // own, which the round trips do not contain.
        assert!(
            (mean_s * tps - 1.0).abs() < 0.05,
            "mean x rate = {}",
            mean_s * tps
        );
    }
}

#[test]
fn warm_up_is_left_out_and_busy_poll_is_set() {
    let v = rr_json(&["-t", "1.5", "--omit", "0.5", "--busy-poll", "20"]);
    let s = &v["summary"];
    assert_eq!(s["omit_s"], 0.5);
    let all: u64 = v["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["flows"][0]["rr"]["transactions"].as_u64().unwrap())
        .sum();
    let kept = s["transactions"].as_u64().unwrap();
    assert!(0 < kept && kept < all, "kept {kept} of {all}");
    assert_eq!(v["spec"]["params"]["rr"]["busy_poll_us"], 20);
}

#[test]
fn udp_request_response() {
    let v = rr_json(&["--udp", "-t", "2", "-l", "100", "--response", "1000"]);
    let s = &v["summary"];
    assert_eq!(v["kind"], "udp_rr");
    assert_eq!(
        s["lost_transactions"], 0,
        "a clean loopback loses no request"
    );
    let tps = s["transactions_per_s"].as_f64().unwrap();
    let mean_s = s["latency_us"]["mean"].as_f64().unwrap() * 1e-6;
    // One request in flight: the round trips cannot add up to more than the window (how
    // close they come is the quiet Little's-law test's question).
    assert!(mean_s * tps <= 1.01, "mean x rate = {}", mean_s * tps);
}

#[test]
fn connection_per_transaction() {
    let v = linerate_json(&["crr", "-t", "2", "-P", "2", "-i", "0", "--json"]);
    let s = &v["summary"];
    assert_eq!(v["kind"], "tcp_crr");
    let cps = s["connections_per_s"].as_f64().unwrap();
    assert!(cps > 0.0, "{cps} connections/s");
    assert_eq!(s["connections_per_s"], s["transactions_per_s"]);
    let l = &s["latency_us"];
    assert!(l["p50"].as_f64().unwrap() <= l["p99"].as_f64().unwrap());
    // The requesters close after the server: no TIME_WAIT, so no port exhaustion.
    for f in v["summary"]["flows"].as_array().unwrap() {
        assert!(
            f["streams"]
                .as_array()
                .unwrap()
                .iter()
                .all(|s| s["error"].is_null()),
            "{f}"
        );
    }
}

#[test]
fn responses_of_another_size() {
    let v = rr_json(&["-t", "1", "-l", "1", "--response", "8K"]);
    assert_eq!(v["spec"]["params"]["rr"]["response_len_bytes"], 8192);
    assert!(v["summary"]["transactions"].as_u64().unwrap() > 100);
}
