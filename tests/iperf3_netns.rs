//! iperf3's UDP tests across namespaces, against the kernel's own counts: an nft rule drops a
//! known number of data datagrams, and the loss each side reports must equal its counter.

use super::*;
use std::process::{Command, Stdio};

/// Drops `percent` % of the UDP datagrams longer than iperf3's 4-byte connect message arriving
/// in `ns`, counting them.
fn nft_drop_iperf3_data(ns: &str, percent: u32) {
    sh(&format!(
        "ip netns exec {ns} nft 'add table inet lrtest; \
         add chain inet lrtest input {{ type filter hook input priority 0; }}; \
         add rule inet lrtest input udp length > 100 numgen random mod 100 < {percent} counter drop'"
    ));
}

/// Everything the receiving side's kernel dropped besides the rule: a full socket buffer, a
/// full backlog on the sending side of the veth.
fn other_drops(receiver: &str, sender: &str, sender_dev: &str) -> u64 {
    udp_rcvbuf_errors(receiver) + dev_stat(sender, sender_dev, "tx_dropped")
}

/// `iperf3 ARGS -J` in namespace `ns`; its JSON.
fn iperf3_in(ns: &str, args: &[&str]) -> Option<serde_json::Value> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "iperf3"])
        .args(args)
        .arg("-J")
        .stderr(Stdio::null())
        .output()
        .ok()?;
    serde_json::from_slice(&out.stdout).ok()
}

fn n(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn has_iperf3() -> bool {
    let found = Command::new("iperf3").arg("--version").output().is_ok();
    if !found {
        skip::skip("iperf3 is not installed (scripts/test.sh installs it as root)");
    }
    found
}

#[test]
fn iperf3_clients_at_linerate_serve_see_the_loss_nft_made() {
    if !can_use_netns() || !has_iperf3() {
        return;
    }
    let pair = VethPair::new("i3s");
    let _server = pair.serve();
    nft_drop_iperf3_data(&pair.b, 5);
    let before = other_drops(&pair.b, &pair.a, "va");
    let args = [
        "-c",
        "198.18.0.2",
        "-p",
        "5301",
        "-u",
        "-b",
        "50M",
        "-l",
        "1000",
        "-t",
        "2",
    ];
    let v = iperf3_in(&pair.a, &args).expect("iperf3's JSON");
    let dropped = nft_drop_counter(&pair.b) + other_drops(&pair.b, &pair.a, "va") - before;
    let (sent, received) = (&v["end"]["sum_sent"], &v["end"]["sum_received"]);
    // The server counts until its receivers have been quiet after TEST_END, so every datagram
    // sent is either counted below the highest it saw or lost past it.
    let lost = n(&received["lost_packets"]);
    let tail = n(&sent["packets"]) - n(&received["packets"]);
    eprintln!(
        "nft and kernel dropped {dropped}; iperf3 says lost {lost}, and {tail} after the last"
    );
    assert!(dropped > 0);
    assert_eq!(lost + tail, dropped, "{received}");
}

#[test]
fn linerate_against_a_stock_iperf3_server_loses_what_nft_dropped() {
    if !can_use_netns() || !has_iperf3() {
        return;
    }
    let pair = VethPair::new("i3c");
    let server = Command::new("ip")
        .args(["netns", "exec", &pair.b, "iperf3", "-s", "-1", "-p", "5201"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _server = ServerProcess(server);
    wait_listening(&format!("ip netns exec {} ", pair.b), 5201);
    // linerate receives (-R): its own accounting of iperf3's datagrams against the counter.
    nft_drop_iperf3_data(&pair.a, 5);
    let before = other_drops(&pair.a, &pair.b, "vb");
    let v = pair.client_json(&[
        "udp", "--iperf3", "-R", "-b", "50M", "-l", "1000", "-t", "2",
    ]);
    let dropped = nft_drop_counter(&pair.a) + other_drops(&pair.a, &pair.b, "vb") - before;
    let s = &v["summary"];
    let (sent, received, lost) = (
        n(&s["packets_sent"]),
        n(&s["packets_received"]),
        n(&s["packets_lost"]),
    );
    eprintln!("nft and kernel dropped {dropped}; sent {sent}, received {received}, lost {lost}");
    assert!(dropped > 0);
    assert_eq!(lost, dropped, "{s}");
    assert_eq!(sent, received + lost);
}
