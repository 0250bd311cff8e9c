//! Beyond one pair of hosts, in namespaces: three hosts on a bridge, each host's egress shaped
//! to its own rate (100, 200, 300 Mbit/s). A third-party test (`--from`) measures its sender's
//! shaped rate; every mesh cell matches its sender's rate; a mesh with a host down completes
//! with that host's cells marked; a UDP mesh's cell shows the loss an nft rule made.

use super::lab_util::{tbf_goodput_bps, Lab};
use super::*;

const RATES: [&str; 3] = ["100mbit", "200mbit", "300mbit"];
const RATES_BPS: [f64; 3] = [100e6, 200e6, 300e6];

fn db(tag: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join(format!("{tag}.db"))
        .to_str()
        .unwrap()
        .to_string();
    (dir, path)
}

/// Within 5 % of the sender's shaped goodput: the lab's buckets move a 3 s test's figure by at
/// most 2.7 % either way (`lab_util::BUCKET_HOLDS`).
fn near(got: f64, rate_bps: f64) -> bool {
    (got / tbf_goodput_bps(rate_bps) - 1.0).abs() < 0.05
}

#[test]
fn a_third_party_test_measures_its_senders_shaped_rate_both_ways() {
    if !can_use_netns() {
        return;
    }
    let lab = Lab::new("rly", &RATES);
    let (_dir, db) = db("relay");
    // Host 1 sends to host 2 (host 1's 100 Mbit/s), then host 2 sends back (-R: 200).
    for (dir, rate) in [(None, RATES_BPS[0]), (Some("-R"), RATES_BPS[1])] {
        let mut args = vec!["tcp", "198.18.1.2", "--from", "198.18.1.1", "-t", "3"];
        args.extend(dir);
        let v = lab.control_json(&db, &args);
        assert_eq!(
            v["target"], "198.18.1.2:5301 from 198.18.1.1:5301",
            "{}",
            v["target"]
        );
        assert_eq!(v["hosts"]["client"]["interface"], "eth0");
        assert_eq!(v["hosts"]["server"]["interface"], "eth0");
        let got = num(&v["summary"]["throughput_bps"]);
        assert!(
            near(got, rate),
            "{dir:?}: {got} vs {}",
            tbf_goodput_bps(rate)
        );
    }
    let runs = lab.control(&db, &["runs", "--tag", "from=198.18.1.1", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    let n = runs.as_array().map_or(0, Vec::len);
    assert!(n >= 2, "stored with from/to tags: {runs}");
}

#[test]
fn every_mesh_cell_matches_its_senders_shaped_rate() {
    if !can_use_netns() {
        return;
    }
    let lab = Lab::new("msh", &RATES);
    let (_dir, db) = db("mesh");
    let hosts: Vec<String> = (1..=3).map(Lab::addr).collect();
    let mut args: Vec<&str> = vec!["mesh"];
    args.extend(hosts.iter().map(String::as_str));
    args.extend(["-t", "3"]);
    let v = lab.control_json(&db, &args);
    assert_eq!(v["kind"], "mesh");
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 6, "{v}");
    for c in cells {
        let from = c["from"].as_str().unwrap();
        let i = hosts.iter().position(|h| h == from).unwrap();
        let got = num(&c["throughput_bps"]);
        assert!(
            near(got, RATES_BPS[i]),
            "{from} -> {}: {got} vs {}",
            c["to"],
            tbf_goodput_bps(RATES_BPS[i])
        );
        assert!(
            c["run"].as_i64().is_some(),
            "every cell is a stored run: {c}"
        );
    }
    let id = v["mesh_id"].as_str().unwrap();
    let runs = lab.control(&db, &["runs", "--tag", &format!("mesh_id={id}"), "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(runs.as_array().map(Vec::len), Some(6), "{runs}");
}

/// An exact loss count needs the receiver on time, or its socket adds drops of its own: run
/// alone (`quiet::`).
mod quiet {
    use super::*;

    #[test]
    fn a_udp_mesh_cell_shows_the_loss_nft_made() {
        if !can_use_netns() {
            return;
        }
        let lab = Lab::new("mud", &["1gbit", "1gbit"]);
        // UDP GSO batches segmented at the sender, as by a NIC without UDP segmentation offload,
        // so that nft sees, drops and counts each datagram.
        for h in &lab.hosts {
            sh(&format!(
                "ip netns exec {h} ethtool -K eth0 tx-udp-segmentation off"
            ));
        }
        // 5 in 100 of the data datagrams reaching host 2 are dropped (counted by nft).
        nft_drop_data(&lab.hosts[1], 5);
        let (dir, db) = db("udpmesh");
        let args = [
            "mesh",
            "198.18.1.1",
            "198.18.1.2",
            "-t",
            "2",
            "--test",
            "udp",
            "--json",
            "--",
            "-b",
            "50M",
            "-l",
            "1000",
        ];
        let out = lab.control(&db, &args);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        let cell = |from: &str| {
            v["cells"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["from"] == from)
                .unwrap_or_else(|| panic!("no cell from {from}: {v}"))
                .clone()
        };
        let towards_2 = cell("198.18.1.1");
        let run = towards_2["run"].as_i64().unwrap().to_string();
        let shown = lab.control_json(&db, &["show", &run]);
        let (sent, lost) = (
            num(&shown["record"]["summary"]["packets_sent"]),
            num(&shown["record"]["summary"]["packets_lost"]),
        );
        assert_eq!(lost as u64, nft_drop_counter(&lab.hosts[1]), "{shown}");
        let loss = num(&towards_2["loss_pct"]);
        assert!((loss - 100.0 * lost / sent).abs() < 1e-9, "{towards_2}");
        assert!((2.0..8.0).contains(&loss), "{loss} % for a 5 % drop");
        assert_eq!(num(&cell("198.18.1.2")["loss_pct"]), 0.0);
        // The matrix's table (here the report's) shows each cell's loss beside its goodput.
        let html = format!("{}/mesh.html", dir.path().display());
        linerate_ok(&["report", "--db", &db, "-o", &html]);
        let html = std::fs::read_to_string(&html).unwrap();
        assert!(
            html.contains(&format!("{loss:.2} % lost")) && html.contains("datagrams lost"),
            "the report's mesh table"
        );
    }
}

#[test]
fn a_mesh_with_a_host_down_completes_with_that_hosts_cells_marked() {
    if !can_use_netns() {
        return;
    }
    let mut lab = Lab::new("dwn", &RATES);
    lab.stop(3);
    let (_dir, db) = db("down");
    let out = lab.control(
        &db,
        &[
            "mesh",
            "198.18.1.1",
            "198.18.1.2",
            "198.18.1.3",
            "-t",
            "0.5",
            "--json-stream",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "some pairs failed: {stderr}");
    assert!(stderr.contains("4 of 6 pairs failed"), "{stderr}");
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names.first(), Some(&"begin"), "{names:?}");
    assert_eq!(
        (
            events[0]["points"].as_u64(),
            events[0]["hosts"].as_array().map(Vec::len)
        ),
        (Some(6), Some(3))
    );
    let points: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "point").collect();
    assert!(
        points.iter().enumerate().all(|(i, p)| p["index"] == i),
        "{names:?}"
    );
    assert_eq!(
        points.len(),
        6,
        "a point per pair, failed or not: {names:?}"
    );
    for (i, e) in events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["event"] == "stored")
    {
        assert_eq!(
            events[i + 1]["data"]["run"],
            e["run_id"],
            "stored, then its point"
        );
    }
    assert_eq!(
        names.iter().filter(|n| **n == "stored").count(),
        2,
        "{names:?}"
    );
    assert_eq!(names.last(), Some(&"end"), "{names:?}");
    let v = &events[events.len() - 1]["data"];
    for c in v["cells"].as_array().unwrap() {
        let down = c["from"] == "198.18.1.3" || c["to"] == "198.18.1.3";
        assert_eq!(c["error"].is_string(), down, "{c}");
        assert_eq!(c["throughput_bps"].is_number(), !down, "{c}");
    }
    let text = lab.control(&db, &["mesh", "198.18.1.1", "198.18.1.3", "-t", "0.3"]);
    let table = String::from_utf8_lossy(&text.stdout);
    assert!(
        table.contains("error") && table.contains("198.18.1.1 -> 198.18.1.3"),
        "{table}"
    );
}

#[test]
fn a_plan_runs_a_mesh_and_a_third_party_step_and_reports_the_matrix() {
    if !can_use_netns() {
        return;
    }
    let lab = Lab::new("pln", &RATES[..2]);
    let (dir, db) = db("plan");
    let plan = dir.path().join("lab.toml");
    std::fs::write(
        &plan,
        "name = \"lab\"\n[hosts]\na = \"198.18.1.1\"\nb = \"198.18.1.2\"\n\n\
         [[step]]\nname = \"mesh\"\nrun = \"mesh {a} {b} -t 0.5\"\n\n\
         [[step]]\nname = \"a-to-b\"\nrun = \"tcp {b} --from {a} -t 0.5 -i 0\"\n",
    )
    .unwrap();
    let report = dir.path().join("lab.html");
    let (plan, report) = (plan.to_str().unwrap(), report.to_str().unwrap());
    let out = lab.control(&db, &["plan", plan, "--db", &db, "--report", report]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let listed = lab.control(&db, &["runs", "--tag", "plan=lab", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let tags: Vec<&serde_json::Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["tags"])
        .collect();
    assert_eq!(
        tags.len(),
        3,
        "two mesh cells and the third-party run: {listed}"
    );
    assert_eq!(
        tags.iter()
            .filter(|t| t["step"] == "mesh" && t["mesh_id"].is_string())
            .count(),
        2
    );
    assert!(
        tags.iter()
            .any(|t| t["step"] == "a-to-b" && t["from"] == "198.18.1.1"),
        "{listed}"
    );
    let html = std::fs::read_to_string(report).unwrap();
    assert!(
        html.contains("<h2>Mesh mesh-") && html.contains("from \\ to"),
        "the report's mesh section"
    );
}

#[test]
fn mesh_dns_runs_every_address_behind_a_name() {
    if !can_use_netns() {
        return;
    }
    let lab = Lab::new("dns", &RATES[..2]);
    // `ip netns exec` puts /etc/netns/NS/hosts over /etc/hosts for the controller alone.
    let dir = format!("/etc/netns/{}", lab.ctrl);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        format!("{dir}/hosts"),
        "198.18.1.1 lab-all\n198.18.1.2 lab-all\n",
    )
    .unwrap();
    let (_tmp, db) = db("dns");
    let out = lab.control(&db, &["mesh", "--dns", "lab-all", "-t", "0.3", "--json"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut hosts: Vec<&str> = v["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    hosts.sort();
    assert_eq!(hosts, ["198.18.1.1", "198.18.1.2"]);
    assert_eq!(v["cells"].as_array().unwrap().len(), 2);
}
