//! TCP across network namespaces joined by a veth pair (198.18.0.0/15), against a tbf rate.

use super::*;

/// Goodput a tbf rate allows for full-sized TCP segments: payload 1448 B (MSS with
/// timestamps at MTU 1500) of each 1514-byte frame tbf counts (Ethernet header included).
fn tbf_goodput_bps(rate_bps: f64) -> f64 {
    rate_bps * 1448.0 / 1514.0
}

/// Goodput against a shaped rate needs both ends on time: run alone (`quiet::`).
mod quiet {
    use super::*;

    #[test]
    fn tbf_shaped_veth_goodput_within_3_percent() {
        if !can_use_netns() {
            return;
        }
        let pair = VethPair::new("tbf");
        pair.shape(&pair.a, "va", "100mbit");
        pair.shape(&pair.b, "vb", "100mbit");
        let _server = pair.serve();
        let expected = tbf_goodput_bps(100e6);
        // Steal time on a VM can make tbf's dequeue timer fire late, so the shaped link
        // itself runs below its rate now and then (seen once in CI: -7.8 % in one direction,
        // the next eight runs within 0.5 %): a direction gets a second run before failing.
        for dir in [None, Some("-R")] {
            let mut args = vec!["tcp", "-t", "4"];
            args.extend(dir);
            let mut errors = Vec::new();
            for _attempt in 0..2 {
                let v = pair.client_json(&args);
                assert_eq!(v["summary"]["flows"][0]["reconciled"], true);
                let got = v["summary"]["throughput_bps"].as_f64().unwrap();
                let err = (got / expected - 1.0).abs();
                eprintln!(
                    "{dir:?}: {got:.0} bit/s vs {expected:.0} expected ({:.2} %)",
                    err * 100.0
                );
                errors.push(err);
                if err < 0.03 {
                    break;
                }
            }
            assert!(
                errors.iter().any(|e| *e < 0.03),
                "{dir:?}: off by {errors:?} of {expected} bit/s"
            );
        }
    }
}

#[test]
fn both_hosts_facts_name_the_veth_and_compare_names_what_changed() {
    if !can_use_netns() {
        return;
    }
    let pair = VethPair::new("fct");
    let _server = pair.serve();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();
    let facts = |doc: &serde_json::Value, end: &str| doc["hosts"][end].clone();
    let doc = pair.client_json(&["tcp", "-t", "0.3", "--db", db]);
    let (client, server) = (facts(&doc, "client"), facts(&doc, "server"));
    assert_eq!(client["interface"], "va", "{client}");
    assert_eq!(server["interface"], "vb", "{server}");
    for f in [&client, &server] {
        assert_eq!(f["mtu_bytes"], 1500, "{f}");
        assert_eq!(f["nic"]["driver"], "veth", "{f}");
    }
    // A veth's speed (newer kernels report 10 Gbit/s, and it carries more) is nominal: it is
    // no link speed, and gives no Performance Index (issue 35).
    let s = &doc["summary"];
    assert!(s["link_speed_bps"].is_null(), "{s}");
    assert!(s["performance_index"].is_null(), "{s}");
    sh(&format!(
        "ip -n {a} link set va mtu 9000 && ip -n {b} link set vb mtu 9000 && \
         ip netns exec {a} ethtool -K va tso off",
        a = pair.a,
        b = pair.b
    ));
    let doc = pair.client_json(&["tcp", "-t", "0.3", "--db", db]);
    let (client, server) = (facts(&doc, "client"), facts(&doc, "server"));
    assert_eq!(
        (client["mtu_bytes"].clone(), server["mtu_bytes"].clone()),
        (9000.into(), 9000.into())
    );
    assert_eq!(client["nic"]["tso"], false, "{client}");
    let out = linerate_ok(&["compare", "1", "2", "--db", db]);
    // "What differed" is a table: a row per field, a column per run.
    for change in [
        ["client.mtu_bytes", "1500", "9000"],
        ["server.mtu_bytes", "1500", "9000"],
        ["client.nic.tso", "true", "false"],
    ] {
        let row = out
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .any(|cells| cells == change);
        assert!(row, "{change:?}:\n{out}");
    }
}
