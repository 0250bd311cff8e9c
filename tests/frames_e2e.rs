//! The frame engines end to end (`udp --engine packet|xdp` against `serve --frames`), across a
//! veth pair between two namespaces (198.18.0.1 ↔ 198.18.0.2): the frames the client's driver
//! accepted are the frames the server's XDP counter saw, and an nft rule on the server that
//! drops a random tenth of them after the driver is exactly the loss the record puts in the
//! receiving host. Root only (skipped with a printed reason otherwise); every run is paced and
//! bounded; the namespaces go with the pair.

use super::*;
use crate::proc::serve_child;

/// UDP payload of the test frames, bytes.
const PAYLOAD: &str = "64";

fn frame_run(pair: &VethPair, engine: &str) -> serde_json::Value {
    pair.client_json(&[
        "udp", "--engine", engine, "-l", PAYLOAD, "--pps", "20000", "-t", "2",
    ])
}

#[test]
fn each_engines_frames_are_each_counted_at_the_servers_driver_and_socket() {
    if !can_use_netns() {
        return skip("no network namespaces here: the frame engine is not run");
    }
    let pair = VethPair::new("fe");
    let _server = pair.serve_with(&["--frames"]);
    for engine in ["packet", "xdp"] {
        engine_counted_exactly(&pair, engine);
    }
}

fn engine_counted_exactly(pair: &VethPair, engine: &str) {
    let run = frame_run(pair, engine);
    assert_eq!(run["spec"]["params"]["udp"]["engine"], engine, "{run}");
    let f = &run["summary"]["frames"];
    let sent = f["frames_sent"].as_u64().unwrap();
    assert!(sent > 20_000, "{f}");
    assert_eq!(f["frames_at_driver"], sent, "{f}");
    assert_eq!(f["interface"], "vb", "{f}");
    assert_eq!(run["summary"]["packets_received"], sent, "{run}");
    let c = &run["summary"]["flows"][0]["loss_causes"];
    assert_eq!(
        (&c["network"], &c["at_driver"]),
        (&0.into(), &sent.into()),
        "{c}"
    );
}

#[test]
fn frames_nft_drops_above_the_driver_are_exactly_the_loss_in_the_receiving_host() {
    if !can_use_netns() {
        return skip("no network namespaces here: the frame engine is not run");
    }
    let pair = VethPair::new("fn");
    nft_drop_data(&pair.b, 10);
    let _server = pair.serve_with(&["--frames"]);
    let run = frame_run(&pair, "packet");
    let f = &run["summary"]["frames"];
    let dropped = nft_drop_counter(&pair.b);
    assert!(dropped > 1000, "{dropped}");
    assert_eq!(f["frames_at_driver"], f["frames_sent"], "{f}");
    assert_eq!(run["summary"]["packets_lost"], dropped, "{run}");
    // One breakdown (issue 47): the rule's drops are the receiving host's IP layer's, none
    // the path's.
    let c = &run["summary"]["flows"][0]["loss_causes"];
    assert_eq!(c["receiver_ip"], dropped, "{c} vs nft {dropped}");
    assert_eq!(c["network"], 0, "{c}");
    assert_eq!(c["receiver_host"], 0, "{c}");
}

#[test]
fn a_frame_test_is_refused_by_a_server_without_frames_naming_the_flag() {
    if !can_use_netns() {
        return skip("no network namespaces here: the frame engine is not run");
    }
    let pair = VethPair::new("fr");
    let _server = pair.serve();
    let out = pair.client(&["udp", "198.18.0.2", "--engine", "packet", "-t", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("serve --frames"), "{err}");
    let out = pair.client(&["udp", "198.18.0.2", "--engine", "warp", "-t", "1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("socket, packet and xdp"), "{err}");
}

/// `pps --engine packet`: every cell runs as frames, its frames at the server's driver the
/// frames the client's driver accepted (paced, so the veth carries them all), pkt-gen's
/// 100-destination cell (`100d`) as 1 source × 100 destination ports and the 10,000-flow cell
/// as 100 × 100.
#[test]
fn a_pps_matrix_with_the_packet_engine_counts_each_cells_frames_at_the_driver() {
    if !can_use_netns() {
        return skip("no network namespaces here: the frame engine is not run");
    }
    let pair = VethPair::new("fp");
    let _server = pair.serve_with(&["--frames", "--max-flows-dst", "100"]);
    let args = [
        "pps",
        "--engine",
        "packet",
        "--frame",
        "64",
        "--flows",
        "1,100d,10000",
    ];
    let m = pair.client_json(&[&args[..], &["-b", "5M", "-t", "1"]].concat());
    let cells = m["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 3, "{m}");
    for c in cells {
        let f = &c["run"]["summary"]["frames"];
        assert!(f["frames_sent"].as_u64().unwrap() > 10_000, "{f}");
        assert_eq!(f["frames_at_driver"], f["frames_sent"], "{f}");
    }
    let ports: Vec<_> = (cells.iter())
        .map(|c| {
            let udp = &c["run"]["spec"]["params"]["udp"];
            (udp["flows"].as_u64(), udp["flows_dst"].as_u64())
        })
        .collect();
    let (one, hundred) = (Some(1), Some(100));
    assert_eq!(ports, [(one, one), (one, hundred), (hundred, hundred)]);
    assert_eq!(cells[1]["flows"], 100, "{}", cells[1]["flows"]);
}

/// A frame test that cannot send a frame stops before the server is asked for it, in one line
/// naming what is missing: over loopback the route's refusal (this server has no `--frames`,
/// so a test that reached it would be refused for that instead).
#[test]
fn a_frame_test_over_loopback_is_refused_up_front_in_one_line_naming_the_host_address() {
    let (_server, port) = serve_child(&[]);
    let port = port.to_string();
    for engine in ["packet", "xdp"] {
        let out = linerate()
            .args([
                "udp",
                "127.0.0.1",
                "-p",
                &port,
                "--engine",
                engine,
                "-t",
                "1",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!(
                "--engine {engine}: 127.0.0.1 is an address of this host"
            )),
            "{err}"
        );
        assert!(
            !err.contains("serve --frames") && !err.contains("data connection"),
            "{err}"
        );
    }
}

/// A client without CAP_NET_RAW (dropped from its bounding set, so root's exec does not get
/// it) is refused up front naming the capability, not from its sender after `begin`.
#[test]
fn a_frame_sender_without_cap_net_raw_is_refused_up_front_naming_it() {
    if !can_use_netns() {
        return skip("no network namespaces here: the frame engine is not run");
    }
    let pair = VethPair::new("fc");
    let _server = pair.serve_with(&["--frames"]);
    let out = std::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &pair.a,
            "setpriv",
            "--bounding-set",
            "-net_raw",
        ])
        .arg(env!("CARGO_BIN_EXE_linerate"))
        .args(["udp", "198.18.0.2", "--engine", "packet", "-t", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--engine packet: missing capabilities CAP_NET_RAW for the packet engine"),
        "{err}"
    );
    assert!(!err.contains("data connection"), "{err}");
}

/// `rfc2544 --engine packet` through a bridge whose port toward the server is shaped by tbf
/// (the ground truth: frames bypass the sender's own qdisc, so the shaper is a hop on the
/// path). tbf at 8 Mbit/s passes 16,667 64-byte frames/s (60 bytes each at the qdisc, FCS
/// off); its 3,000-byte bucket and 20 ms queue let a 2 s trial pass at most about 1.5 % above
/// that without loss, and the search stops within 5 %: the answer is at most 8 % above the tbf
/// rate, and (the search found the shaper, not the sender's ceiling) at least half of it. A
/// trial below the tbf rate loses nothing on the path however the host is loaded: a sender
/// held up makes up at most 10 ms of its schedule (`frames::send::CATCH_UP`), 167 frames at
/// this rate, where the bucket and the queue hold 50 + 333 (it once made up all of it, so a
/// stall of more than about 24 ms became a burst the shaper dropped below its rate). A host
/// too loaded to offer the rate ends the search `sender_limited`, and the test holds it to
/// that. How long the search took is the host's, not the tool's: the trials are counted.
#[test]
fn rfc2544_with_the_packet_engine_finds_the_tbf_rate_on_the_path_at_most() {
    if !can_use_netns() {
        return skip("no network namespaces here: the frame engine is not run");
    }
    let pair = VethPair::bridged("f2");
    let mid = pair.mid.clone().unwrap_or_default();
    sh(&format!(
        "ip netns exec {mid} tc qdisc replace dev mb root tbf rate 8mbit burst 3000 latency 20ms"
    ));
    let _server = pair.serve_with(&["--frames"]);
    let r = pair.client_json(&[
        "rfc2544",
        "--engine",
        "packet",
        "--frame",
        "64",
        "--link-speed",
        "20M",
        "--trial",
        "2",
        "--resolution",
        "5",
        "--max-trials",
        "8",
        "--no-latency",
    ]);
    let tbf_fps = 8e6 / (60.0 * 8.0);
    let row = &r["frames"][0];
    let fps = num(&row["throughput_fps"]);
    let trials = row["trials"].as_array().unwrap();
    assert!(fps <= tbf_fps * 1.08, "{fps} vs tbf {tbf_fps}: {row}");
    if row["end"] == "sender_limited" {
        // A host too loaded to offer the rate (CPU taken by other tests: a spinner at a
        // higher priority left the sender 7,500 frames/s) is named, never passed off as the
        // path: the answer is what the sender sent, more than 2 % short of its offer.
        let last = trials.last().unwrap();
        assert_eq!(fps, num(&last["sent_pps"]), "{row}");
        assert!(fps < 0.98 * num(&last["offer"]["pps"]), "{row}");
    } else {
        // The search found the shaper, not the sender's ceiling.
        assert!(fps >= tbf_fps * 0.5, "{fps} vs tbf {tbf_fps}: {row}");
    }
    eprintln!("rfc2544 --engine packet: {fps:.0} frames/s through tbf {tbf_fps:.0}: {row}");
    let (_, dropped) = qdisc_packets(&mid, "mb");
    if num(&trials[0]["sent_pps"]) > tbf_fps * 1.02 {
        assert!(dropped > 0, "the first trial overran tbf: {row}");
    }
    assert!(trials.len() <= 8, "{row}");
}
