//! UDP across namespaces: loss against an nft drop rule, rates against tbf.

use super::*;

#[test]
fn payload_above_the_path_mtu_is_one_clear_error() {
    if !can_use_netns() {
        return;
    }
    let pair = VethPair::new("mtu");
    let _server = pair.serve();
    let out = pair.client(&["udp", "198.18.0.2", "-l", "2000", "-t", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("-l 2000: larger than the path allows") && stderr.contains("1472"),
        "{stderr}"
    );
}

#[test]
fn nft_random_drops_equal_reported_loss_exactly() {
    if !can_use_netns() {
        return;
    }
    for (dir, receiver_is_b) in [(None, true), (Some("-R"), false)] {
        for percent in [3, 20] {
            let pair = VethPair::new("nft");
            let _server = pair.serve();
            let receiver = if receiver_is_b { &pair.b } else { &pair.a };
            let (sender, sender_dev) = if receiver_is_b {
                (&pair.a, "va")
            } else {
                (&pair.b, "vb")
            };
            nft_drop_data(receiver, percent);
            let full_before = udp_rcvbuf_errors(receiver);
            let no_port_before = snmp(receiver, "Udp", "NoPorts");
            let mut args = vec!["udp", "-t", "2", "-b", "100M", "-l", "1000"];
            args.extend(dir);
            let v = pair.client_json(&args);
            let s = &v["summary"];
            let dropped = nft_drop_counter(receiver);
            // A receiver starved of CPU (tests run in parallel) also loses datagrams to a
            // full socket buffer; the kernel counts those separately.
            let full = udp_rcvbuf_errors(receiver) - full_before;
            // A busy host defers softirq work; the receiving side's backlog then overflows
            // and the veth counts the datagrams it could not hand over as dropped.
            let backlog = dev_stat(sender, sender_dev, "tx_dropped");
            let lost = s["packets_lost"].as_u64().unwrap();
            let sent = s["packets_sent"].as_u64().unwrap();
            // Not part of the equation (the FINs after the receiver ended land there too), but a
            // data datagram delivered after the receiver closed would show here.
            let no_port = snmp(receiver, "Udp", "NoPorts") - no_port_before;
            eprintln!(
                "{dir:?} {percent}%: sent {sent}, lost {lost}, nft dropped {dropped}, \
                 receive buffer full {full}, veth backlog full {backlog}, \
                 to a closed port {no_port}"
            );
            assert!(dropped > 0);
            assert_eq!(
                lost,
                dropped + full + backlog,
                "{dir:?} {percent}%: linerate's loss must equal the nft counter \
                 (plus the receive-buffer and backlog drops the kernel counted)"
            );
            assert_eq!(sent, s["packets_received"].as_u64().unwrap() + lost);
        }
    }
}

/// Goodput against a shaped rate needs both ends on time: run alone (`quiet::`).
mod quiet {
    use super::*;

    #[test]
    fn tbf_at_twice_the_rate_goodput_and_drops() {
        if !can_use_netns() {
            return;
        }
        let pair = VethPair::new("utbf");
        pair.shape(&pair.a, "va", "50mbit");
        let _server = pair.serve();
        let full_before = udp_rcvbuf_errors(&pair.b);
        // The qdisc runs before the device segments GSO batches, so it would count a batch it
        // drops as one packet: compare per datagram with GSO off (the nft test covers GSO).
        let v = pair.client_json(&["udp", "-t", "3", "-b", "100M", "-l", "1472", "--no-gso"]);
        let s = &v["summary"];
        // tbf counts the Ethernet frame: 1472 payload + 8 UDP + 20 IP + 14 Ethernet.
        let expected = 50e6 * 1472.0 / 1514.0;
        let got = s["throughput_bps"].as_f64().unwrap();
        eprintln!("udp tbf: {got:.0} bit/s vs {expected:.0}");
        assert!((got / expected - 1.0).abs() < 0.03, "{got} vs {expected}");
        let (_, dropped) = qdisc_packets(&pair.a, "va");
        // Datagrams the receiving socket had no room for are lost too; the kernel counts them.
        let full = udp_rcvbuf_errors(&pair.b) - full_before;
        let lost = s["packets_lost"].as_u64().unwrap() - full;
        eprintln!("udp tbf: lost {lost} (+{full} receive buffer full), qdisc dropped {dropped}");
        // The qdisc also drops the sender's FIN datagrams (up to 3) when its queue is full.
        assert!(
            lost <= dropped && dropped <= lost + 3,
            "lost {lost} vs qdisc dropped {dropped}"
        );
    }
}
