//! Where lost datagrams went, against the kernel's own counters in namespaces: a small receive
//! buffer at the highest rate loses them at the socket (the namespace's `RcvbufErrors` says how
//! many), an nft rule loses them in the "network" (its counter says how many). Host-wide
//! counters must not see other tests' drops, so these run alone (`quiet::`).

use super::*;

fn causes(v: &serde_json::Value) -> (u64, serde_json::Value) {
    let f = &v["summary"]["flows"][0];
    (
        f["packets_lost"].as_u64().unwrap(),
        f["loss_causes"].clone(),
    )
}

fn part(c: &serde_json::Value, name: &str) -> u64 {
    c[name]
        .as_u64()
        .unwrap_or_else(|| panic!("no {name} in {c}"))
}

mod quiet {
    use super::*;

    #[test]
    fn a_small_receive_buffer_at_full_rate_is_the_socket_buffer_by_the_kernels_count() {
        if !can_use_netns() {
            return;
        }
        let pair = VethPair::new("lsb");
        let _server = pair.serve();
        for (dir, receiver) in [(None, &pair.b), (Some("-R"), &pair.a)] {
            let before = udp_rcvbuf_errors(receiver);
            // Without GRO the kernel counts each dropped datagram, not each coalesced batch.
            let mut args = vec!["udp", "-t", "2", "-b", "max", "-w", "16K", "--no-gro"];
            args.extend(dir);
            let v = pair.client_json(&args);
            let kernel = udp_rcvbuf_errors(receiver) - before;
            let (lost, c) = causes(&v);
            eprintln!("{dir:?}: lost {lost}, kernel RcvbufErrors {kernel}: {c}");
            assert!(lost > 1000, "the small buffer must overflow: lost {lost}");
            let socket = part(&c, "receiver_socket_buffer");
            // The kernel's count also holds the FIN datagrams sent after the data (at most a
            // few), which are not lost data.
            assert!(
                socket <= kernel && kernel - socket <= 5,
                "{dir:?}: socket {socket} vs kernel {kernel}"
            );
            let sum =
                socket + part(&c, "receiver_host") + part(&c, "sender_host") + part(&c, "network");
            assert_eq!(sum, lost, "{c}");
            // What limited it: the overflowing socket, by its reader's CPU or its buffer's size.
            let verdict = &v["summary"]["flows"][0]["limited_by"];
            assert!(
                ["receive_window", "receiver_cpu"].contains(&verdict["verdict"].as_str().unwrap()),
                "{verdict}"
            );
        }
    }

    #[test]
    fn nft_drops_are_the_network_by_the_rules_count() {
        if !can_use_netns() {
            return;
        }
        let pair = VethPair::new("lnw");
        nft_drop_data(&pair.b, 5);
        let _server = pair.serve();
        let v = pair.client_json(&["udp", "-t", "2", "-b", "50M", "-l", "1000"]);
        let dropped = nft_drop_counter(&pair.b);
        let (lost, c) = causes(&v);
        eprintln!("lost {lost}, nft dropped {dropped}: {c}");
        assert!(dropped > 0);
        assert_eq!(part(&c, "network"), dropped, "{c}");
        assert_eq!(part(&c, "receiver_socket_buffer"), 0, "{c}");
        assert_eq!(lost, dropped);
    }
}
