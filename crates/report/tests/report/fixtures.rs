//! Fixed synthetic runs, read from JSON so that new optional schema fields keep them loading.
//!
//! - `tcp_runs.json`: five 3-second tcp_stream runs at 10 Gbit/s link speed, the first three
//!   of driver=velocityget, the last two of driver=via-velocity;
//! - `msg_size_runs.json`: four tcp_stream runs at write sizes 1K, 8K, 64K and 512K;
//! - `udp_run.json`: one udp_stream run with loss;
//! - `rr_runs.json`: two tcp_rr runs with latency percentiles;
//! - `pps_matrix.json`: a `linerate pps --json` matrix, five frame sizes × 1 and 100 flows;
//! - `rpm_run.json`: the stored run of one `linerate rpm` direction (up, three intervals, three
//!   connections), read by the unit tests of the rpm chart, metrics and report section.

use std::collections::BTreeMap;
use std::path::PathBuf;

use record::RunRecord;
use report::{LabeledRuns, PpsMatrix};

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn load<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let text = std::fs::read_to_string(path(name)).expect("fixture is readable");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

pub fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub fn tcp_runs() -> Vec<RunRecord> {
    load("tcp_runs.json")
}

/// velocityget (3 runs) against via-velocity (2 runs), grouped by tag.
pub fn driver_columns() -> Vec<LabeledRuns> {
    let mut runs = tcp_runs();
    let via = runs.split_off(3);
    vec![
        LabeledRuns::new("driver=velocityget", runs).with_tags(tags(&[("driver", "velocityget")])),
        LabeledRuns::new("driver=via-velocity", via).with_tags(tags(&[("driver", "via-velocity")])),
    ]
}

/// Single runs by id, of different kinds: a TCP stream, a UDP stream and a request/response.
pub fn mixed_columns() -> Vec<LabeledRuns> {
    let tcp = tcp_runs().remove(0);
    let udp: RunRecord = load("udp_run.json");
    let rr: Vec<RunRecord> = load("rr_runs.json");
    vec![
        LabeledRuns::new("#1", vec![tcp]).with_tags(tags(&[("host", "a")])),
        LabeledRuns::new("#7", vec![udp]).with_tags(tags(&[("host", "a")])),
        LabeledRuns::new("#9", vec![rr[0].clone()]).with_tags(tags(&[("host", "a")])),
    ]
}

/// Two request/response runs, one per busy-poll setting.
pub fn rr_columns() -> Vec<LabeledRuns> {
    let rr: Vec<RunRecord> = load("rr_runs.json");
    vec![
        LabeledRuns::new("busy_poll=off", vec![rr[0].clone()])
            .with_tags(tags(&[("busy_poll", "off")])),
        LabeledRuns::new("busy_poll=50", vec![rr[1].clone()])
            .with_tags(tags(&[("busy_poll", "50")])),
    ]
}

/// One column of runs at four write sizes.
pub fn msg_size_columns() -> Vec<LabeledRuns> {
    vec![LabeledRuns::new("len sweep", load("msg_size_runs.json"))
        .with_tags(tags(&[("sweep", "len")]))]
}

pub fn pps_matrix() -> PpsMatrix {
    load("pps_matrix.json")
}
