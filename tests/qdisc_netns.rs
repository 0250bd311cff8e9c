//! The path's queues in the record, against tc's own counters, in namespaces joined by a veth
//! pair (198.18.0.0/15): each host's qdiscs on the test's interface with their drops over the
//! run, a tbf shaper named by the verdict, and `compare` naming a qdisc that changed.

use super::*;

/// The first direction's `limited_by`.
fn limited_by(v: &serde_json::Value) -> serde_json::Value {
    v["summary"]["flows"][0]["limited_by"].clone()
}

/// Both ends' root qdisc drops so far, by tc.
fn tc_drops(pair: &VethPair) -> [u64; 2] {
    [
        qdisc_packets(&pair.a, "va").1,
        qdisc_packets(&pair.b, "vb").1,
    ]
}

#[test]
fn the_record_holds_both_hosts_qdiscs_with_the_drops_tc_counts() {
    if !can_use_netns() {
        return;
    }
    let pair = VethPair::new("qrc");
    pair.shape(&pair.a, "va", "100mbit");
    pair.shape(&pair.b, "vb", "50mbit");
    let _server = pair.serve();
    // Each way in turn: the sending end's tbf drops what it cannot pass.
    for (dir, sender) in [(None, 0), (Some("-R"), 1)] {
        let before = tc_drops(&pair);
        let mut args = vec!["udp", "-t", "1", "-b", "300M", "-l", "1400"];
        args.extend(dir);
        let v = pair.client_json(&args);
        let after = tc_drops(&pair);
        let ends = [
            ("client", "va", 100_000_000u64),
            ("server", "vb", 50_000_000),
        ];
        for (i, (end, dev, rate)) in ends.into_iter().enumerate() {
            let h = &v["hosts"][end];
            assert_eq!(h["interface"], dev, "{h}");
            let q = &h["qdiscs"][0];
            assert_eq!(
                (q["kind"].as_str(), q["parent"].as_str()),
                (Some("tbf"), Some("root")),
                "{h}"
            );
            assert_eq!(q["rate_bps"].as_u64(), Some(rate), "{q}");
            // The kernel keeps the bucket as a time in 64 ns ticks: back in bytes, within 1 %.
            let burst = q["burst_bytes"].as_f64().unwrap();
            assert!((burst / 262_144.0 - 1.0).abs() < 0.01, "{q}");
            let drops = q["during_test"]["drops"].as_u64().unwrap();
            eprintln!(
                "{dir:?} {end}: record {drops} dropped, tc {}",
                after[i] - before[i]
            );
            assert_eq!(drops, after[i] - before[i], "{dir:?} {end}: {q}");
            if i == sender {
                assert!(drops > 0, "{dir:?}: the sender's tbf must drop: {q}");
            }
        }
    }
}

/// Verdicts against a shaped rate need both ends on time: run alone.
mod quiet {
    use super::*;

    #[test]
    fn a_tbf_shaped_run_names_its_qdisc_in_the_verdict_and_compare() {
        if !can_use_netns() {
            return;
        }
        let pair = VethPair::new("qsh");
        let _server = pair.serve();
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("runs.db");
        let db = db.to_str().unwrap();
        let bare = pair.client_json(&["tcp", "-t", "0.5", "--db", db]);
        assert_eq!(bare["hosts"]["client"]["qdiscs"][0]["kind"], "noqueue");
        assert_ne!(limited_by(&bare)["verdict"], "shaper");
        pair.shape(&pair.a, "va", "100mbit");
        const NAMED: &str = "the tbf qdisc at 100 Mbit/s on the client's va";
        for args in [
            vec!["tcp", "-t", "2", "--db", db],
            vec!["udp", "-t", "2", "-b", "300M", "-l", "1400"],
        ] {
            let v = pair.client_json(&args);
            let l = limited_by(&v);
            eprintln!("{args:?}: {l}");
            assert_eq!(l["verdict"], "shaper", "{args:?}: {l}");
            let s = &l["shaper"];
            assert_eq!(
                (s["kind"].as_str(), s["end"].as_str()),
                (Some("tbf"), Some("client"))
            );
            assert_eq!(
                (s["rate_bps"].as_u64(), s["interface"].as_str()),
                (Some(100_000_000), Some("va"))
            );
            assert!(l["evidence"].as_str().unwrap().contains(NAMED), "{l}");
        }
        // The brief text says it too, with the host's queues.
        let out = pair.client(&["tcp", "-t", "1", "198.18.0.2"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("limited by {NAMED}")), "{text}");
        let queues = text
            .lines()
            .find(|l| l.starts_with("qdiscs     client va: tbf "));
        assert!(
            queues.is_some_and(|l| l.contains(" root rate 100Mbit")),
            "{text}"
        );
        // "What differed" names the qdisc that changed, in a few words.
        let out = linerate_ok(&["compare", "1", "2", "--db", db]);
        let row = out
            .lines()
            .find(|l| l.trim_start().starts_with("client.qdisc"))
            .unwrap_or_else(|| panic!("no client.qdisc row:\n{out}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells, ["client.qdisc", "none", "tbf", "100Mbit"], "{out}");
    }
}
