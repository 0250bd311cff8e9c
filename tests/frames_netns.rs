//! The frame engine (`crates/frames`) against the kernel's own counters, across two namespaces
//! joined by a veth pair (198.18.38.1/30 ↔ 198.18.38.2/30): frames the packet engine sent are
//! counted by the XDP counter at the receiving veth's driver and by that veth's rx counters, and
//! a second XDP program on the interface is refused by name. The same for the AF_XDP sender,
//! which a veth serves in copy mode.
//!
//! Root only (skipped with a printed reason otherwise). Each thread that touches an interface
//! enters its namespace with `setns` first; the namespaces are deleted by a Drop guard, also when
//! a test panics. Every send is bounded in frames and in time.

use super::*;
use ::frames::af_xdp::{Granted, Mode, XskTx};
use ::frames::packet_tx::{PacketTx, RingSize, SendLimit};
use ::frames::xdp::{ifindex, Action, PortRange, XdpCounter};
use ::frames::{Endpoints, FlowPattern, FrameSpec, Frames, SysError};
use std::net::{IpAddr, Ipv4Addr};

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
fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
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
    Frames::new(&FrameSpec {
        endpoints: Endpoints {
            src_mac: pair.mac(&pair.a, "va"),
            dst_mac: pair.mac(&pair.b, "vb"),
            src: IpAddr::V4(Ipv4Addr::new(198, 18, 38, 1)),
            dst: IpAddr::V4(Ipv4Addr::new(198, 18, 38, 2)),
            src_port: 40000,
            dst_port: 9000,
        },
        frame_size: size,
        mtu: 1500,
        flows,
    })
    .unwrap()
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
    assert!(
        text.contains("vb") && text.contains("already has an XDP program attached"),
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
