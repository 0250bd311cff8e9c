//! The `xdp` engine's live-frames sender (`frames::xdp_live`) end to end, across a veth pair
//! between two namespaces (198.18.0.1 ↔ 198.18.0.2) whose server end runs the counter, so the
//! client's veth transmits redirected frames: an unpaced IPv4 test takes it and says so in the
//! record, every frame the program sent is at the server's driver, and the driver's count splits
//! exactly into what the socket received and what the receiving host lost; each frame carries
//! its own sequence number (the receiver sees no duplicate and no reordering). A paced test
//! takes the AF_XDP socket. Root only (skipped with a printed reason otherwise); each run lasts
//! 1 s; the namespaces go with the pair.

use super::*;

#[test]
fn an_unpaced_xdp_test_sends_live_frames_each_counted_once_at_the_servers_driver() {
    if !can_use_netns() {
        return skip("no network namespaces here: the frame engine is not run");
    }
    let pair = VethPair::new("fl");
    let _server = pair.serve_with(&["--frames"]);
    for flows in ["1", "100"] {
        let args = [
            "udp", "--engine", "xdp", "-l", "18", "-b", "max", "-t", "1", "--flows", flows,
        ];
        let run = pair.client_json(&args);
        let (f, s) = (&run["summary"]["frames"], &run["summary"]);
        assert_eq!(f["tx_path"], "xdp_live", "{f}");
        let sent = f["frames_sent"].as_u64().unwrap();
        assert!(sent > 100_000, "unpaced live frames sent only {sent}: {f}");
        assert_eq!(f["frames_at_driver"], sent, "{f}");
        assert_eq!(f["lost_on_path"], 0, "{f}");
        let received = s["packets_received"].as_u64().unwrap();
        assert_eq!(
            received + f["lost_in_receiver"].as_u64().unwrap(),
            sent,
            "{run}"
        );
        assert_eq!(s["packets_sent"], sent, "{s}");
        assert_eq!(s["packets_lost"], f["lost_in_receiver"], "{s}");
        assert_eq!(s["packets_duplicate"], 0, "{s}");
    }
}

#[test]
fn a_paced_xdp_test_takes_the_af_xdp_socket_and_a_packet_test_its_ring() {
    if !can_use_netns() {
        return skip("no network namespaces here: the frame engine is not run");
    }
    let pair = VethPair::new("fk");
    let _server = pair.serve_with(&["--frames"]);
    for (engine, path) in [("xdp", "xdp_copy"), ("packet", "packet_ring")] {
        let args = [
            "udp", "--engine", engine, "-l", "18", "--pps", "20000", "-t", "1",
        ];
        let run = pair.client_json(&args);
        let f = &run["summary"]["frames"];
        assert_eq!(f["tx_path"], path, "{f}");
        assert_eq!(f["frames_at_driver"], f["frames_sent"], "{f}");
    }
}
