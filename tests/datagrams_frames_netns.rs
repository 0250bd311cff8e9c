//! Issue 47, "frames only where frames exist": over a veth pair between two namespaces
//! (198.18.0.1 ↔ 198.18.0.2) with the veth's own UDP segmentation offload on, as a fresh veth
//! has it, so a GSO buffer of datagrams crosses as one packet. The ground truth is the
//! receiving veth's own `rx_packets`, which linerate does not own:
//! - a `udp` run's record holds both: datagrams at the sockets, and the frames each end's
//!   interface counted, the receiver's equal to the veth's count over the run;
//! - a `pps` matrix (each engine; frame engines against `serve --frames`) reports no cell above
//!   the frames the veth counted, and no `% line` above 100 unless the veth really carried
//!   more frames than the line could (a veth has no line rate: it can).
//!
//! Root only (skipped with a reason otherwise); every run is short and bounded; the
//! namespaces go with the pair.

use super::*;

/// A pair whose veth ends carry UDP GSO buffers whole (the kernel's default for a veth).
fn gso_pair(tag: &str) -> VethPair {
    let pair = VethPair::new(tag);
    sh(&format!(
        "ip netns exec {} ethtool -K va tx-udp-segmentation on",
        pair.a
    ));
    pair
}

#[test]
fn issue47_a_udp_run_holds_its_datagrams_and_the_frames_its_interfaces_counted() {
    if !can_use_netns() {
        return skip("no network namespaces here: the veth frame counts are not compared");
    }
    let pair = gso_pair("df");
    sh(&format!(
        "ip netns exec {} ethtool -K vb tx-udp-segmentation on",
        pair.b
    ));
    let _server = pair.serve();
    // Each direction: (its flags, receiving namespace and interface, sending interface).
    let (up, down): (&[&str], &[&str]) = (&[], &["-R"]);
    for (flag, ns, rx_dev, tx_dev) in [(up, &pair.b, "vb", "va"), (down, &pair.a, "va", "vb")] {
        let rx0 = dev_stat(ns, rx_dev, "rx_packets");
        let args = ["udp", "-b", "max", "-l", "18", "-t", "1", "-i", "0"];
        let run = pair.client_json(&[&args[..], flag].concat());
        let rx = dev_stat(ns, rx_dev, "rx_packets") - rx0;
        let flow = &run["summary"]["flows"][0];
        let frames = &flow["interface_frames"];
        assert_eq!(frames["receiver_interface"], rx_dev, "{flag:?}: {frames}");
        assert_eq!(frames["sender_interface"], tx_dev, "{flag:?}: {frames}");
        let counted = frames["receiver_rx_frames"].as_u64().unwrap();
        // The record counts over the test's window, this test over the whole client process:
        // the control connection's handshake, its messages before and after the window, ARP
        // and IPv6 neighbour traffic fall outside the record's count (62 packets once under
        // load), so the record is at most the veth's count and within 1 % of it.
        assert!(
            counted <= rx && counted + rx / 100 + 50 >= rx,
            "{flag:?}: record {counted}, veth {rx}"
        );
        let datagrams = flow["packets_received"].as_u64().unwrap();
        assert!(datagrams > 0 && datagrams <= flow["packets_sent"].as_u64().unwrap());
        let text = pair.client(&["show", &run["stored_run_id"].to_string()]);
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(
            text.contains(&format!("received by {rx_dev}")),
            "{flag:?}: {text}"
        );
        if datagrams as f64 > 1.5 * counted as f64 {
            assert!(text.contains("datagrams a frame"), "{flag:?}: {text}");
        }
    }
}

#[test]
fn issue47_no_pps_cell_counts_more_frames_than_the_receiving_veth() {
    if !can_use_netns() {
        return skip("no network namespaces here: the pps cells are not compared");
    }
    let pair = gso_pair("dp");
    let _server = pair.serve_with(&["--frames"]);
    for engine in ["socket", "packet", "xdp"] {
        let rx0 = dev_stat(&pair.b, "vb", "rx_packets");
        let args = [
            "pps", "--engine", engine, "--frame", "64,1518", "--flows", "1",
        ];
        let m = pair.client_json(&[&args[..], &["--link-speed", "10G", "-t", "1"]].concat());
        let rx = dev_stat(&pair.b, "vb", "rx_packets") - rx0;
        let cells = m["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 2, "{engine}: {m}");
        let (mut received, mut sent, mut at_driver) = (0, 0, 0);
        for c in cells {
            let s = &c["run"]["summary"];
            received += s["packets_received"].as_u64().unwrap();
            sent += s["packets_sent"].as_u64().unwrap();
            at_driver += s["frames"]["frames_at_driver"].as_u64().unwrap_or(0);
            // The cell's frames/s at most what its receiving interface counted (1 % for the
            // window's edges), so `% line` goes above 100 only when the veth, which has no
            // line rate, really carried more frames than a 10G line could. Both over the
            // receiver's window, the one the cell's rate divides by: the client's `duration_s`
            // differs from it by the time `begin` took to arrive, 1 % of a 1 s test under load.
            let flow = &s["flows"][0];
            let frames = &flow["interface_frames"];
            let counted = num(&frames["receiver_rx_frames"]) / num(&flow["window_s"]);
            let cell_pps = num(&c["pps_received"]);
            assert!(
                cell_pps <= 1.01 * counted,
                "{engine}: {cell_pps} frames/s, the interface {counted}: {frames}"
            );
            let line = num(&c["line_rate_pps"]);
            assert!(
                num(&c["line_rate_ratio"]) <= 1.0 || counted > line,
                "{engine}: % line above 100 from frames the interface did not count: {c}"
            );
            assert_eq!(
                c["pps_received"], s["pps_received"],
                "{engine}: one received count"
            );
            assert_eq!(c["loss_pct"], s["loss_pct"], "{engine}: one loss");
        }
        // Each frame the sockets received crossed the veth, and the veth carried no more
        // than the frames sent, the control connections and the probes (a few hundred
        // packets a cell): one datagram a frame, never a GSO buffer of many.
        assert!(
            received <= rx,
            "{engine}: {received} received, the veth counted {rx}"
        );
        assert!(
            rx <= sent + 1000,
            "{engine}: {sent} sent, the veth counted {rx}"
        );
        // A frame engine's count at the receiving driver is the veth's, within 1 %.
        if engine != "socket" {
            assert!(
                at_driver <= rx && at_driver as f64 >= 0.99 * rx as f64 - 1000.0,
                "{engine}: {at_driver} at the driver, the veth counted {rx}"
            );
        }
    }
}
