//! Test helpers: run records built from the JSON fixtures in crates/results/tests/fixtures
//! with numbers edited (never struct literals, so a field added to the schema does not break
//! these tests).
//!
//! Compiled for this crate's tests and, with the `testing` feature, for the unit tests of the
//! crates and the binary that use it. A missing fixture is a bug in the test, so these panic.

use record::RunRecord;
use serde_json::{json, Value};

fn fixture(name: &str) -> Value {
    let text = match name {
        "tcp" => include_str!("../../results/tests/fixtures/tcp.json"),
        "udp" => include_str!("../../results/tests/fixtures/udp.json"),
        "rr" => include_str!("../../results/tests/fixtures/rr.json"),
        other => panic!("no fixture {other}"),
    };
    serde_json::from_str(text).expect("fixture parses")
}

fn record(v: Value) -> RunRecord {
    serde_json::from_value(v).expect("fixture is a RunRecord")
}

/// A `tcp`, `udp` or `rr` fixture record with `throughput_bps` (and for rr, transactions/s
/// from it at 64 bytes each way) set.
pub fn record_with(kind: &str, throughput_bps: f64) -> RunRecord {
    let mut v = fixture(kind);
    if kind == "rr" {
        if throughput_bps > 0.0 {
            v["summary"]["throughput_bps"] = json!(throughput_bps);
            v["summary"]["transactions_per_s"] = json!(throughput_bps / (2.0 * 64.0 * 8.0));
        }
    } else {
        v["summary"]["throughput_bps"] = json!(throughput_bps);
    }
    record(v)
}

/// An rr fixture record with this median round trip.
pub fn rr_with_rtt(p50_us: f64) -> RunRecord {
    let mut v = fixture("rr");
    v["summary"]["latency_us"]["p50"] = json!(p50_us);
    v["summary"]["transactions_per_s"] = json!(1e6 / p50_us);
    record(v)
}

/// A udp fixture record of a trial that offered `offered_pps` for `secs` to a link that
/// carries `capacity_pps` and drops the rest.
pub fn udp_trial(offered_pps: f64, capacity_pps: f64, secs: f64, payload: u32) -> RunRecord {
    let mut v = fixture("udp");
    let sent = (offered_pps * secs).round() as u64;
    let received = sent.min((capacity_pps * secs).round() as u64);
    let s = &mut v["summary"];
    s["duration_s"] = json!(secs);
    s["packets_sent"] = json!(sent);
    s["packets_received"] = json!(received);
    s["packets_lost"] = json!(sent - received);
    s["loss_pct"] = json!(if sent == 0 {
        0.0
    } else {
        (sent - received) as f64 / sent as f64 * 100.0
    });
    s["pps_sent"] = json!(sent as f64 / secs);
    s["pps_received"] = json!(received as f64 / secs);
    s["throughput_bps"] = json!(received as f64 * f64::from(payload) * 8.0 / secs);
    record(v)
}
