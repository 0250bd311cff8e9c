//! Efficiency in every result (issue 34): each end's goodput per core of its data threads and
//! its CPU seconds per 10⁹ bytes, in `--json`, in a stored run's text and in `compare`, over
//! short loopback runs against the in-process server. The ground truth is the record's own
//! goodput and CPU figures: every efficiency figure must follow from them.

use std::path::Path;

use serde_json::Value;

use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs()
}

/// Checks `f`'s efficiency against its `throughput_bps` and each end's `*_cpu_pct` (and, for
/// UDP, `pps_received`): present, positive, and the quotient of those figures.
fn check_flow(f: &Value) {
    let e = &f["efficiency"];
    let bps = num(&f["throughput_bps"]);
    assert!(bps > 0.0, "{f}");
    for end in ["sender", "receiver"] {
        let cores = num(&f[format!("{end}_cpu_pct")]) / 100.0;
        assert!(cores > 0.01, "{end}: a busy data thread: {f}");
        let per_core = num(&e[format!("{end}_goodput_bps_per_core")]);
        assert!(per_core > 0.0, "{end}: {e}");
        assert!(
            close(per_core, bps / cores),
            "{end}: {per_core} vs {bps} / {cores}"
        );
        let s_per_gb = num(&e[format!("{end}_cpu_s_per_gb")]);
        assert!(close(s_per_gb, cores / (bps / 8e9)), "{end}: {s_per_gb}");
        match f.get("pps_received") {
            Some(pps) => {
                let pps_per_core = num(&e[format!("{end}_pps_per_core")]);
                assert!(close(pps_per_core, num(pps) / cores), "{end}: {e}");
            }
            None => assert!(e.get(format!("{end}_pps_per_core")).is_none(), "{e}"),
        }
    }
}

fn stored_json(db: &Path, args: &[&str]) -> Value {
    let db = db.display().to_string();
    linerate_json(&[args, &["-t", "1", "-i", "0", "--json", "--db", &db]].concat())
}

#[test]
fn each_ends_goodput_per_core_follows_from_the_records_goodput_and_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let runs = [
        stored_json(&db, &["tcp", "--tag", "run=a"]),
        stored_json(&db, &["tcp", "--tag", "run=b"]),
    ];
    for r in &runs {
        let flows = r["summary"]["flows"].as_array().unwrap();
        assert_eq!(flows.len(), 1, "{r}");
        check_flow(&flows[0]);
    }

    // The stored run's text names each end, the unit and the CPU per GB.
    let db_arg = db.display().to_string();
    let text = linerate_ok(&["show", "1", "--db", &db_arg]);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("efficiency"))
        .unwrap_or_else(|| panic!("no efficiency line:\n{text}"));
    for words in [
        "sender (client) ",
        "receiver (server) ",
        "Gbit/s per core",
        "CPU s/GB",
    ] {
        assert!(line.contains(words), "{words}: {line}");
    }

    // compare: each end's figure as a row, in Gbit/s per core, the ratio B / A beside it.
    let cmp: Value = serde_json::from_str(&linerate_ok(&[
        "compare", "#1", "#2", "--format", "json", "--db", &db_arg,
    ]))
    .unwrap();
    let rows = cmp["rows"].as_array().unwrap();
    let row = |metric: &str| {
        rows.iter()
            .find(|r| r["metric"] == metric)
            .unwrap_or_else(|| panic!("no {metric} row: {cmp}"))
    };
    for (end, unit, per_unit) in [
        ("sender efficiency", "Gbit/s per core", 1e9),
        ("receiver efficiency", "Gbit/s per core", 1e9),
        ("sender CPU per GB", "CPU s/GB", 1.0),
        ("receiver CPU per GB", "CPU s/GB", 1.0),
    ] {
        let r = row(end);
        assert_eq!(r["unit"], unit, "{r}");
        let key = match unit {
            "CPU s/GB" => format!("{}_cpu_s_per_gb", end.split(' ').next().unwrap()),
            _ => format!("{}_goodput_bps_per_core", end.split(' ').next().unwrap()),
        };
        let stored: Vec<f64> = runs
            .iter()
            .map(|x| num(&x["summary"]["flows"][0]["efficiency"][&key]) / per_unit)
            .collect();
        let values: Vec<f64> = r["values"].as_array().unwrap().iter().map(num).collect();
        assert!(
            close(values[0], stored[0]) && close(values[1], stored[1]),
            "{r}"
        );
        assert!(close(num(&r["ratios"][1]), stored[1] / stored[0]), "{r}");
    }
    let table = linerate_ok(&["compare", "#1", "#2", "--db", &db_arg]);
    assert!(table.contains("sender efficiency"), "{table}");
    assert!(table.contains("Gbit/s per core"), "{table}");
}

#[test]
fn bidir_and_udp_directions_each_have_both_ends_figures() {
    let bidir = linerate_json(&[
        "tcp",
        "--bidir",
        "-t",
        "1",
        "-i",
        "0",
        "--json",
        "--no-store",
    ]);
    let flows = bidir["summary"]["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2, "{bidir}");
    flows.iter().for_each(check_flow);

    let udp = linerate_json(&[
        "udp",
        "-l",
        "18",
        "-b",
        "50M",
        "-t",
        "1",
        "-i",
        "0",
        "--json",
        "--no-store",
    ]);
    let f = &udp["summary"]["flows"][0];
    assert!(num(&f["pps_received"]) > 0.0, "{f}");
    check_flow(f);
}
