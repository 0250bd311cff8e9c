//! The frame engine (`crates/frames`) against the kernel's own counters, across two namespaces
//! joined by a veth pair (198.18.38.1/30 ↔ 198.18.38.2/30): frames the packet engine sent are
//! counted by the XDP counter at the receiving veth's driver and by that veth's rx counters, and
//! a second XDP program on the interface is refused by name. The same for the AF_XDP sender,
//! which a veth serves in copy mode, and for an AF_XDP receiver the counter redirects to.
//!
//! Root only (skipped with a printed reason otherwise). Each thread that touches an interface
//! enters its namespace with `setns` first; the namespaces are deleted by a Drop guard, also when
//! a test panics. Every send is bounded in frames and in time.

use super::*;
use ::frames::af_xdp::{Granted, Mode, XskRx, XskTx};
use ::frames::packet_tx::{PacketTx, RingSize};
use ::frames::send::SendLimit;
use ::frames::xdp::{ifindex, Action, PortRange, XdpCounter};
use ::frames::{Endpoints, FlowPattern, FrameSpec, Frames, SysError};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Two namespaces, `a` with `va` (198.18.38.1/30) and `b` with `vb` (198.18.38.2/30), IPv6 off
/// so no neighbour discovery adds frames to the counters; deleted when dropped.
struct Pair {
    a: String,
    b: String,
}

impl Pair {
    fn new(tag: &str) -> Self {
        let id = std::process::id() % 100_000;
        let pair = Self {
            a: format!("lrf{tag}a{id}"),
            b: format!("lrf{tag}b{id}"),
        };
        let (a, b) = (&pair.a, &pair.b);
        sh(&format!(
            "ip netns add {a} && ip netns add {b} && \
             ip netns exec {a} sysctl -qw net.ipv6.conf.default.disable_ipv6=1 && \
             ip netns exec {b} sysctl -qw net.ipv6.conf.default.disable_ipv6=1 && \
             ip link add va netns {a} type veth peer name vb netns {b} && \
             ip -n {a} addr add 198.18.38.1/30 dev va && ip -n {b} addr add 198.18.38.2/30 dev vb && \
             ip -n {a} link set va up && ip -n {b} link set vb up"
        ));
        pair
    }

    fn mac(&self, ns: &str, dev: &str) -> [u8; 6] {
        let text = sh(&format!(
            "ip netns exec {ns} cat /sys/class/net/{dev}/address"
        ));
        let mut mac = [0u8; 6];
        for (m, h) in mac.iter_mut().zip(text.trim().split(':')) {
            *m = u8::from_str_radix(h, 16).unwrap();
        }
        mac
    }

    fn stat(&self, ns: &str, dev: &str, name: &str) -> u64 {
        let path = format!("/sys/class/net/{dev}/statistics/{name}");
        sh(&format!("ip netns exec {ns} cat {path}"))
            .trim()
            .parse()
            .unwrap()
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.a])
            .status();
        let _ = std::process::Command::new("ip")
            .args(["netns", "del", &self.b])
            .status();
    }
}

/// Runs `f` on a thread that has entered namespace `ns` (sockets and links made there stay
/// there; the thread ends with `f`).
pub(crate) fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            let file = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
            use std::os::fd::AsRawFd;
            // SAFETY: setns on this thread only, with a namespace file we hold open.
            let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(r, 0, "setns {ns}: {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .unwrap()
    })
}

fn frames_a_to_b(pair: &Pair, size: usize, flows: FlowPattern) -> Frames {
    let v4 = |d| IpAddr::V4(Ipv4Addr::new(198, 18, 38, d));
    frames_to(pair, (v4(1), v4(2)), 9000, size, flows)
}

/// Frames from `va` to `vb`'s MAC with these addresses and first destination port.
fn frames_to(
    pair: &Pair,
    (src, dst): (IpAddr, IpAddr),
    dst_port: u16,
    size: usize,
    flows: FlowPattern,
) -> Frames {
    Frames::new(&FrameSpec {
        endpoints: Endpoints {
            src_mac: pair.mac(&pair.a, "va"),
            dst_mac: pair.mac(&pair.b, "vb"),
            src,
            dst,
            src_port: 40000,
            dst_port,
        },
        frame_size: size,
        mtu: 1500,
        flows,
    })
    .unwrap()
}

/// Sends `n` of `frames` from `va` with the packet engine; returns the frames accepted.
fn send_from_a(pair: &Pair, frames: &Frames, n: u64) -> u64 {
    let limit = SendLimit {
        frames: n,
        time: Duration::from_secs(10),
    };
    in_netns(&pair.a, || {
        let mut tx = PacketTx::open(ifindex("va")?, RingSize::for_frames(frames.built_len()))?;
        tx.send(frames, limit, || 0)
    })
    .unwrap()
    .sent
}

const TEST_PORTS: PortRange = PortRange {
    first: 9000,
    count: 100,
};

#[test]
fn the_xdp_counter_and_the_veths_rx_counter_count_every_frame_the_packet_engine_sent() {
    if !can_use_netns() {
        return;
    }
    let pair = Pair::new("cnt");
    let counter = in_netns(&pair.b, || {
        XdpCounter::attach("vb", TEST_PORTS, Action::Drop)
    })
    .unwrap();
    let frames = frames_a_to_b(&pair, 64, FlowPattern::SourceAndDestination);
    let rx_before = pair.stat(&pair.b, "vb", "rx_packets");
    const N: u64 = 100_000;
    let limit = SendLimit {
        frames: N,
        time: Duration::from_secs(20),
    };
    let t0 = Instant::now();
    let sent = in_netns(&pair.a, || {
        let mut tx = PacketTx::open(ifindex("va")?, RingSize::for_frames(frames.built_len()))?;
        tx.send(&frames, limit, move || t0.elapsed().as_nanos() as u64)
    })
    .unwrap();
    eprintln!("packet engine: {sent:?}");
    assert_eq!(sent.sent, N, "{sent:?}");
    assert_eq!(sent.wrong_format, 0, "{sent:?}");
    // The driver's counter is read after the sender's ring has drained; a veth hands frames to
    // the peer's NAPI poll, so give it a moment (bounded) to finish.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = counter.counts().unwrap();
    while got.frames < N && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        got = counter.counts().unwrap();
    }
    assert_eq!(got.frames, N, "XDP counter");
    assert_eq!(got.bytes, N * 60, "60 bytes built per 64-byte frame");
    let rx = pair.stat(&pair.b, "vb", "rx_packets") - rx_before;
    assert_eq!(rx, N, "vb's rx_packets over the run");
}

#[test]
fn a_second_xdp_program_on_the_interface_is_refused_naming_it_and_the_first_detaches_on_drop() {
    if !can_use_netns() {
        return;
    }
    let pair = Pair::new("two");
    let attached = || {
        in_netns(&pair.b, || {
            XdpCounter::attach("vb", TEST_PORTS, Action::Pass)
        })
    };
    let first = attached().unwrap();
    let shown = sh(&format!("ip -n {} link show dev vb", pair.b));
    assert!(shown.contains("xdp"), "the program is on vb: {shown}");
    let err = attached().unwrap_err();
    assert!(matches!(err, SysError::XdpBusy { .. }), "{err:?}");
    let text = err.to_string();
    eprintln!("the refusal: {text}");
    assert!(
        text.contains("vb")
            && text.contains("already has an XDP program attached (program id ")
            && text.contains("name \"lr_count\""),
        "{text}"
    );
    drop(first);
    let shown = sh(&format!("ip -n {} link show dev vb", pair.b));
    assert!(
        !shown.contains("xdp"),
        "closing the link detached it: {shown}"
    );
    let again = attached();
    assert!(again.is_ok(), "{again:?}");
}

#[test]
fn the_af_xdp_sender_in_copy_mode_on_a_veth_is_counted_exactly_by_the_xdp_counter() {
    if !can_use_netns() {
        return;
    }
    let pair = Pair::new("xsk");
    let counter = in_netns(&pair.b, || {
        XdpCounter::attach("vb", TEST_PORTS, Action::Drop)
    })
    .unwrap();
    let frames = frames_a_to_b(&pair, 64, FlowPattern::DestinationPorts);
    let rx_before = pair.stat(&pair.b, "vb", "rx_packets");
    const N: u64 = 100_000;
    let limit = SendLimit {
        frames: N,
        time: Duration::from_secs(20),
    };
    let t0 = Instant::now();
    let (granted, sent) = in_netns(&pair.a, || {
        let mut tx = XskTx::open(ifindex("va")?, 0, Mode::Auto)?;
        let sent = tx.send(&frames, limit, move || t0.elapsed().as_nanos() as u64)?;
        Ok::<_, SysError>((tx.granted(), sent))
    })
    .unwrap();
    eprintln!("AF_XDP engine ({granted:?}): {sent:?}");
    assert_eq!(granted, Granted::Copy, "a veth has no zero-copy AF_XDP");
    assert_eq!(sent.sent, N, "{sent:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = counter.counts().unwrap();
    while got.frames < N && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        got = counter.counts().unwrap();
    }
    assert_eq!(got.frames, N, "XDP counter");
    assert_eq!(got.bytes, N * 60);
    assert_eq!(pair.stat(&pair.b, "vb", "rx_packets") - rx_before, N);
}

#[test]
fn the_counter_counts_ipv6_test_frames_and_lets_frames_outside_its_ports_pass_uncounted() {
    if !can_use_netns() {
        return;
    }
    let pair = Pair::new("six");
    let counter = in_netns(&pair.b, || {
        XdpCounter::attach("vb", TEST_PORTS, Action::Drop)
    })
    .unwrap();
    // Frames for the ports just below and just above the range: passed to vb's stack, not
    // counted (the stack drops them: no socket, nothing listening).
    let v4 = |d| IpAddr::V4(Ipv4Addr::new(198, 18, 38, d));
    let rx_before = pair.stat(&pair.b, "vb", "rx_packets");
    for port in [8999, 9100] {
        let outside = frames_to(&pair, (v4(1), v4(2)), port, 64, FlowPattern::One);
        assert_eq!(send_from_a(&pair, &outside, 1000), 1000);
    }
    // IPv6 test frames (RFC 5180's benchmarking prefix, inside the frames only: the veths
    // have no IPv6 addresses), the smallest that carry the data header: 82 bytes.
    let v6 = |d| IpAddr::V6(Ipv6Addr::new(0x2001, 2, 0, 0x38, 0, 0, 0, d));
    let six = frames_to(
        &pair,
        (v6(1), v6(2)),
        9000,
        82,
        FlowPattern::DestinationPorts,
    );
    assert_eq!(send_from_a(&pair, &six, 1000), 1000);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = counter.counts().unwrap();
    while got.frames < 1000 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        got = counter.counts().unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    let got = counter.counts().unwrap();
    assert_eq!(
        got.frames, 1000,
        "only the IPv6 frames to ports 9000..9100 count"
    );
    assert_eq!(got.bytes, 1000 * 78);
    let rx = pair.stat(&pair.b, "vb", "rx_packets") - rx_before;
    assert!(rx >= 3000, "vb saw every frame, counted or passed: {rx}");
}

#[test]
fn frames_the_counter_redirects_reach_an_af_xdp_socket_each_sequence_number_once() {
    if !can_use_netns() {
        return;
    }
    let pair = Pair::new("red");
    let (counter, mut rx) = in_netns(&pair.b, || {
        let counter = XdpCounter::attach("vb", TEST_PORTS, Action::Redirect)?;
        let map = counter
            .xsk_map()
            .expect("a redirecting counter has an XSKMAP");
        let rx = XskRx::open(ifindex("vb")?, 0, Mode::Auto, map)?;
        Ok::<_, SysError>((counter, rx))
    })
    .unwrap();
    assert_eq!(
        rx.granted(),
        Granted::Copy,
        "a veth has no zero-copy AF_XDP"
    );
    // Fewer frames than the rx ring holds (2048), so none is lost while nobody reads.
    const N: u64 = 2000;
    let frames = frames_a_to_b(&pair, 64, FlowPattern::SourceAndDestination);
    assert_eq!(send_from_a(&pair, &frames, N), N);
    let mut seen = vec![0u32; N as usize];
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = 0u64;
    while got < N && Instant::now() < deadline {
        got += u64::from(rx.recv(10, |f| {
            assert_eq!(f.len(), 60);
            let seq = u64::from_be_bytes([0, 0, 0, f[45], f[46], f[47], f[48], f[49]]);
            seen[seq as usize] += 1;
        }));
    }
    assert_eq!(got, N);
    assert!(
        seen.iter().all(|n| *n == 1),
        "every sequence number exactly once"
    );
    assert_eq!(counter.counts().unwrap().frames, N);
}

#[test]
fn frames_sent_are_frames_received_plus_the_af_xdp_sockets_own_drops() {
    if !can_use_netns() {
        return;
    }
    let pair = Pair::new("sum");
    let (counter, mut rx) = in_netns(&pair.b, || {
        let counter = XdpCounter::attach("vb", TEST_PORTS, Action::Redirect)?;
        let map = counter
            .xsk_map()
            .expect("a redirecting counter has an XSKMAP");
        let rx = XskRx::open(ifindex("vb")?, 0, Mode::Auto, map)?;
        Ok::<_, SysError>((counter, rx))
    })
    .unwrap();
    const N: u64 = 100_000;
    let frames = frames_a_to_b(&pair, 64, FlowPattern::DestinationPorts);
    let (sent, received, dupes) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut seen = vec![false; N as usize];
            let (mut got, mut dupes) = (0u64, 0u64);
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                got += u64::from(rx.recv(50, |f| {
                    let seq = u64::from_be_bytes([0, 0, 0, f[45], f[46], f[47], f[48], f[49]]);
                    match seen.get_mut(seq as usize) {
                        Some(s) if !*s => *s = true,
                        _ => dupes += 1,
                    }
                }));
                if got + rx.stats().unwrap().rx_lost() >= N {
                    break;
                }
            }
            (got, dupes)
        });
        let sent = send_from_a(&pair, &frames, N);
        let (got, dupes) = reader.join().unwrap();
        (sent, got, dupes)
    });
    let stats = rx.stats().unwrap();
    eprintln!("sent {sent}, received {received}, socket's drops {stats:?}");
    assert_eq!(sent, N);
    assert_eq!(dupes, 0, "no sequence number twice, none outside 0..N");
    assert_eq!(
        counter.counts().unwrap().frames,
        N,
        "the XDP counter saw every frame"
    );
    assert_eq!(
        received + stats.rx_lost(),
        N,
        "received + the socket's drops = sent"
    );
}

#[test]
fn frames_passed_by_the_counter_reach_a_udp_socket_so_the_kernel_accepts_their_checksums() {
    if !can_use_netns() {
        return;
    }
    let pair = Pair::new("udp");
    let (counter, sock) = in_netns(&pair.b, || {
        let counter = XdpCounter::attach("vb", TEST_PORTS, Action::Pass)?;
        let sock =
            std::net::UdpSocket::bind("198.18.38.2:9000").map_err(|source| SysError::Call {
                call: "bind 198.18.38.2:9000".into(),
                source,
            })?;
        Ok::<_, SysError>((counter, sock))
    })
    .unwrap();
    let csum_errors = || {
        let snmp = sh(&format!("ip netns exec {} cat /proc/net/snmp", pair.b));
        let udp: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Udp:")).collect();
        let (names, values) = (udp[0].split_whitespace(), udp[1].split_whitespace());
        let at = names.into_iter().position(|n| n == "InCsumErrors").unwrap();
        values.into_iter().nth(at).unwrap().parse::<u64>().unwrap()
    };
    // Few enough that the socket's default receive buffer holds them all unread.
    const N: u64 = 200;
    let frames = frames_a_to_b(&pair, 64, FlowPattern::One);
    assert_eq!(send_from_a(&pair, &frames, N), N);
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut seen = vec![false; N as usize];
    let mut buf = [0u8; 2048];
    for _ in 0..N {
        let (len, from) = sock.recv_from(&mut buf).expect("every frame a datagram");
        assert_eq!(len, 18, "a 64-byte frame carries 18 bytes of UDP payload");
        assert_eq!(from, "198.18.38.1:40000".parse().unwrap());
        let d = wire::datagram::DatagramPacket::new_checked(&buf[..len]).unwrap();
        seen[d.seq() as usize] = true;
    }
    assert!(seen.iter().all(|s| *s), "every sequence number arrived");
    assert_eq!(csum_errors(), 0, "no UDP checksum error at the receiver");
    assert_eq!(counter.counts().unwrap().frames, N);
}

/// The path the frame engine reads from the kernel is the one the kernel uses: `va`, its own
/// address and MAC, and the peer's MAC once a connection resolved it; through a gateway, the
/// gateway's MAC. Before any traffic, no neighbour entry: an error naming the next hop.
#[test]
fn the_path_to_the_peer_is_the_route_and_neighbour_entry_the_kernel_uses() {
    if !can_use_netns() {
        return;
    }
    let pair = Pair::new("rt");
    let peer = IpAddr::V4(Ipv4Addr::new(198, 18, 38, 2));
    let before = in_netns(&pair.a, || ::frames::route::path_to(peer));
    let err = before.unwrap_err().to_string();
    assert!(
        err.contains("no usable neighbour entry for 198.18.38.2 on va"),
        "{err}"
    );
    sh(&format!(
        "ip -n {} route add 198.18.39.0/24 via 198.18.38.2",
        pair.a
    ));
    let (direct, routed) = in_netns(&pair.a, || {
        // A refused TCP connection resolves the neighbour, as a control connection would.
        let to = std::net::SocketAddr::new(peer, 9);
        let _ = std::net::TcpStream::connect_timeout(&to, Duration::from_secs(2));
        let far = IpAddr::V4(Ipv4Addr::new(198, 18, 39, 5));
        (
            ::frames::route::path_to(peer),
            ::frames::route::path_to(far),
        )
    });
    let direct = direct.unwrap();
    assert_eq!(direct.ifname, "va");
    assert_eq!(direct.mtu, 1500);
    assert_eq!(direct.src, IpAddr::V4(Ipv4Addr::new(198, 18, 38, 1)));
    assert_eq!(direct.src_mac, pair.mac(&pair.a, "va"));
    assert_eq!(direct.dst_mac, pair.mac(&pair.b, "vb"));
    assert_eq!(direct.next_hop, peer);
    let routed = routed.unwrap();
    assert_eq!(routed.next_hop, peer, "the gateway");
    assert_eq!(routed.dst_mac, pair.mac(&pair.b, "vb"));
}
