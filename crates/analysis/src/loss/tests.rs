//! The loss split's rules on literal counters: the stages always add up to the loss.

use super::*;
use record::LossCauses;

fn host(backlog: u64, sndbuf: u64) -> HostDrops {
    HostDrops {
        udp_rcvbuf_errors: Some(7),
        udp_sndbuf_errors: Some(sndbuf),
        nic_rx_dropped: Some(0),
        nic_tx_dropped: Some(0),
        backlog_drops: Some(backlog),
        ..HostDrops::default()
    }
}

fn sockets(count: u64, batched: bool) -> Option<SocketDrops> {
    Some(SocketDrops { count, batched })
}

fn refused(datagrams: u64, sends: u64) -> Option<SendDrops> {
    Some(SendDrops { datagrams, sends })
}

fn inputs(lost: u64, socket: Option<SocketDrops>) -> LossInputs {
    LossInputs {
        lost,
        socket,
        per_batch: 64,
        sender: Some(host(0, 0)),
        receiver: Some(host(0, 0)),
        ..LossInputs::default()
    }
}

fn parts(c: &LossCauses) -> [Option<u64>; 4] {
    [
        c.receiver_socket_buffer,
        c.receiver_host,
        c.sender_host,
        c.network,
    ]
}

#[test]
fn the_parts_add_up_to_the_loss() {
    let i = LossInputs {
        sender: Some(host(0, 50)),
        receiver: Some(host(100, 0)),
        ..inputs(1000, sockets(600, false))
    };
    let c = attribute(&i);
    assert_eq!(parts(&c), [Some(600), Some(100), Some(50), Some(250)]);
    assert!(c.bounds.is_empty());
    assert!(!c.note.contains("more than"), "{}", c.note);
}

#[test]
fn host_wide_counters_never_take_more_than_is_left() {
    let i = LossInputs {
        receiver: Some(host(500, 0)),
        ..inputs(100, sockets(90, false))
    };
    let c = attribute(&i);
    assert_eq!(parts(&c), [Some(90), Some(10), Some(0), Some(0)]);
    assert!(
        c.note
            .contains("receiver_host counters saw 500, more than the 10 left"),
        "{}",
        c.note
    );
}

#[test]
fn without_a_socket_count_the_host_wide_one_stands_in_and_unknown_stays_unknown() {
    let i = LossInputs {
        sender: None,
        ..inputs(10, None)
    };
    let c = attribute(&i);
    assert_eq!(c.receiver_socket_buffer, Some(7));
    assert!(c.note.contains("Udp RcvbufErrors"), "{}", c.note);
    assert_eq!((c.sender_host, c.network), (None, Some(3)));
    let c = attribute(&LossInputs {
        receiver: None,
        ..i
    });
    assert_eq!((c.receiver_socket_buffer, c.receiver_host), (None, None));
    assert_eq!(c.network, Some(10));
}

/// The issue's case (a): a small receive buffer under GRO, no other counter moving: all
/// of it at the socket, a range from one datagram a batch up.
#[test]
fn batches_with_nothing_else_counted_are_all_the_sockets_as_a_range() {
    let c = attribute(&inputs(108_268 * 20, sockets(108_268, true)));
    assert_eq!(parts(&c), [Some(108_268 * 20), Some(0), Some(0), Some(0)]);
    let range = c.bounds.receiver_socket_buffer.unwrap();
    assert_eq!((range.at_least, range.at_most), (108_268, 108_268 * 20));
    let network = c.bounds.network.unwrap();
    assert_eq!((network.at_least, network.at_most), (0, 108_268 * 19));
    assert!(
        c.note.contains("108268 coalesced (GRO) batches"),
        "{}",
        c.note
    );
    // More lost than the batches can hold: the rest is the network's, at least.
    let c = attribute(&inputs(1000, sockets(10, true)));
    assert_eq!(parts(&c), [Some(640), Some(0), Some(0), Some(360)]);
    assert_eq!(c.bounds.network.unwrap().at_least, 360);
    // A batched receiver that dropped nothing: every part a count.
    let c = attribute(&inputs(5, sockets(0, true)));
    assert_eq!(parts(&c), [Some(0), Some(0), Some(0), Some(5)]);
    assert!(c.bounds.is_empty());
}

/// The issue's case (b): a qdisc dropping whole GSO messages, 35,920 of them holding
/// 107,739 datagrams: the sender counted them, and the network keeps nothing.
#[test]
fn refused_sends_are_the_senders_exactly_before_host_wide_counters() {
    let i = LossInputs {
        refused: refused(107_739, 35_920),
        sender: Some(host(0, 35_920)),
        ..inputs(107_739, sockets(0, true))
    };
    let c = attribute(&i);
    assert_eq!(parts(&c), [Some(0), Some(0), Some(107_739), Some(0)]);
    assert!(c.bounds.is_empty());
    // SndbufErrors counted the refused sends too: not twice.
    assert!(!c.note.contains("SndbufErrors"), "{}", c.note);
    let other = LossInputs {
        sender: Some(host(0, 35_920 + 3)),
        lost: 107_742,
        ..i
    };
    assert_eq!(attribute(&other).sender_host, Some(107_742));
}

#[test]
fn the_qdisc_hook_adds_the_segments_of_messages_accepted_in_part() {
    let i = LossInputs {
        refused: refused(300, 10),
        sender_qdisc_drops: Some(10 + 45),
        ..inputs(400, sockets(0, false))
    };
    let c = attribute(&i);
    assert_eq!(parts(&c), [Some(0), Some(0), Some(345), Some(55)]);
}

#[test]
fn per_batch_most_follows_the_payload() {
    assert_eq!(per_batch_most(1200), 64);
    assert_eq!(per_batch_most(100), 128);
    assert_eq!(per_batch_most(0), 128);
}

/// A receiving host whose IP layer saw `receives` packets and delivered all but `dropped`.
fn ip_host(receives: u64, dropped: u64) -> HostDrops {
    HostDrops {
        ip_in_receives: Some(receives),
        ip_in_delivers: Some(receives - dropped),
        ip_forw_datagrams: Some(0),
        ip_in_discards: Some(0),
        ..host(0, 0)
    }
}

/// Issue 47: datagrams an nft rule drops in the receiving host reached it
/// (`IpInReceives − IpInDelivers`): they are the receiver's IP layer's, not the network's.
#[test]
fn issue47_an_nft_drop_in_the_receiver_is_its_ip_layers_not_the_networks() {
    let i = LossInputs {
        received: 9_500,
        receiver: Some(ip_host(10_000 + 20, 500)),
        ..inputs(500, sockets(0, false))
    };
    let c = attribute(&i);
    assert_eq!(c.receiver_ip, Some(500));
    assert_eq!(parts(&c), [Some(0), Some(0), Some(0), Some(0)]);
    assert!(c.bounds.is_empty());
    assert!(c.note.contains("IpInReceives"), "{}", c.note);
    assert_eq!(c.total(), 500);
}

/// Under GSO across a virtual link (or GRO) the IP layer counts packets of many datagrams:
/// its part is a range, from one datagram a packet up, taken by elimination.
#[test]
fn coalesced_ip_packets_are_a_range() {
    let i = LossInputs {
        received: 64_000,
        receiver: Some(ip_host(1_000 + 10, 10)),
        ..inputs(640, sockets(0, true))
    };
    let c = attribute(&i);
    assert_eq!(c.receiver_ip, Some(640));
    let r = c.bounds.receiver_ip.unwrap();
    assert_eq!((r.at_least, r.at_most), (10, 640));
    assert_eq!(c.network, Some(0));
    assert_eq!(c.bounds.network.unwrap().at_most, 630);
    assert_eq!(c.total(), 640);
    // A few packets of other traffic with nothing left to explain: a count, no range.
    let i = LossInputs {
        refused: refused(640, 10),
        ..i
    };
    let c = attribute(&i);
    assert_eq!((c.sender_host, c.receiver_ip), (Some(640), Some(0)));
    assert!(c.bounds.is_empty(), "{c:?}");
    assert!(!c.note.contains("several datagrams"), "{}", c.note);
    // Coalesced packets, none dropped at IP: a count of 0, not unknown.
    let c = attribute(&LossInputs {
        receiver: Some(ip_host(1_000, 0)),
        ..i
    });
    assert_eq!(c.receiver_ip, Some(0));
}

/// A frame engine's driver count cuts the loss in two exact halves: the sender's refused
/// frames and the path before it, the sockets', the IP layer's and the rest after it.
#[test]
fn issue47_a_frame_runs_driver_count_is_one_breakdown_not_two() {
    // 10,000 sent, 20 refused, 9,900 at the driver, 9,700 received: 300 lost, 200 of
    // them in the receiver (50 at the sockets, 120 at IP, 30 elsewhere).
    let i = LossInputs {
        received: 9_700,
        at_driver: Some(9_900),
        refused: refused(20, 20),
        receiver: Some(ip_host(9_900 + 5, 120)),
        ..inputs(300, sockets(50, false))
    };
    let c = attribute(&i);
    assert_eq!(c.at_driver, Some(9_900));
    assert_eq!(c.sender_host, Some(20));
    assert_eq!(c.network, Some(80));
    assert_eq!(c.receiver_socket_buffer, Some(50));
    assert_eq!(c.receiver_ip, Some(120));
    assert_eq!(c.receiver_host, Some(30));
    assert_eq!(c.total(), 300);
    // The socket engine's host-wide interface drops do not move a frame run's stages.
    let noisy = LossInputs {
        receiver: Some(HostDrops {
            nic_rx_dropped: Some(1_000),
            ..ip_host(9_905, 120)
        }),
        ..i
    };
    assert_eq!(attribute(&noisy).stages(), c.stages());
}

/// The stages add up to the loss whatever the counters say (a fixed pseudo-random walk over
/// every input, both engines).
#[test]
fn the_stages_always_add_up_to_the_loss() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m.max(1)
    };
    for _ in 0..20_000 {
        let lost = next(5_000);
        let received = next(100_000);
        let mut h = || HostDrops {
            udp_rcvbuf_errors: Some(next(3_000)),
            udp_sndbuf_errors: Some(next(3_000)),
            nic_rx_dropped: Some(next(3_000)),
            nic_tx_dropped: Some(next(3_000)),
            backlog_drops: Some(next(3_000)),
            ip_in_receives: Some(next(200_000)),
            ip_in_delivers: Some(next(200_000)),
            ip_forw_datagrams: Some(next(10)),
            ..HostDrops::default()
        };
        let (sender, receiver) = (Some(h()), Some(h()));
        let i = LossInputs {
            lost,
            received,
            at_driver: (next(2) == 0).then(|| received + next(6_000)),
            socket: sockets(next(3_000), next(2) == 0),
            refused: refused(next(3_000), next(100)),
            sender_qdisc_drops: Some(next(3_000)),
            per_batch: 64,
            sender,
            receiver,
        };
        let c = attribute(&i);
        assert_eq!(c.total(), lost, "{i:?} → {c:?}");
        for (name, n, range) in c.stages() {
            if let (Some(n), Some(r)) = (n, range) {
                assert!(r.at_least <= n && n <= r.at_most, "{name}: {c:?}");
            }
        }
    }
}
