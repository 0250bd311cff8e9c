//! A frame test's server side against a client that aims it elsewhere (issue 48, rows 5 and 6
//! and the refusal's detail), across two namespaces: the client's `a` (198.18.0.1, `va`) and
//! the server's `b` (198.18.0.2 on `vb`, and a second address 198.18.7.2 on `vx`, a veth whose
//! peer `vy` is in `b` too, standing for a management NIC or a bridge). The client routes
//! 198.18.7.2 through `va`, so everything it sends that address arrives on `vb`.
//!
//! - XDP goes on the interface the control connection arrived on (`vb`), never on the one that
//!   holds the address it arrived at (`vx`): the frames are counted, and `vx`'s XDP slot stays
//!   free (watched with `ip -j link show` while the test runs).
//! - An `xdp` test's counter takes only frames to the address the control connection arrived
//!   at: the client's datagrams to the host's other address at the test's port reach the plain
//!   UDP socket listening there, each of them.
//! - A test refused because another XDP program holds the interface is not told which program
//!   (the server's log is).
//!
//! Root only (skipped with the reason otherwise); every run is paced and bounded in time; the
//! namespaces go with the pair, the server with its guard.

use super::*;
use crate::frames_netns::in_netns;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::process::{Command, Stdio};

/// The server's second address, on `vx`.
const OTHER: Ipv4Addr = Ipv4Addr::new(198, 18, 7, 2);

/// The pair, with `vx` (holding [`OTHER`]) and `vy` in `b`, and `a`'s route to [`OTHER`]
/// through `vb`'s address.
fn testbed(tag: &str) -> VethPair {
    let pair = VethPair::new(tag);
    let (a, b) = (&pair.a, &pair.b);
    sh(&format!(
        "ip link add vx netns {b} type veth peer name vy netns {b} && \
         ip -n {b} addr add {OTHER}/32 dev vx && \
         ip -n {b} link set vx up && ip -n {b} link set vy up && \
         ip -n {a} route add {OTHER}/32 via 198.18.0.2"
    ));
    pair
}

/// `linerate serve --frames` in `b` on every address (port 5301), its log in `log`.
fn serve_everywhere(pair: &VethPair, log: &std::path::Path) -> ServerProcess {
    let child = Command::new("ip")
        .args(["netns", "exec", &pair.b, env!("CARGO_BIN_EXE_linerate")])
        .args(["serve", "--frames"])
        .env("LINERATE_DB", test_db())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    wait_listening(&format!("ip netns exec {} ", pair.b), 5301);
    ServerProcess(child)
}

fn log_path(tag: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hostile-frames-{tag}-{}.log", std::process::id()))
}

/// Whether `dev` in `ns` has an XDP program attached, as `ip -j link show` says.
fn has_xdp(ns: &str, dev: &str) -> bool {
    sh(&format!("ip -j -n {ns} link show dev {dev}")).contains("\"xdp\"")
}

/// `linerate ARGS` in `a`, started, its output piped.
fn client_child(pair: &VethPair, args: &[&str]) -> std::process::Child {
    Command::new("ip")
        .args(["netns", "exec", &pair.a, env!("CARGO_BIN_EXE_linerate")])
        .args(args)
        .env("LINERATE_DB", test_db())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The finished client's JSON document (panics with its stderr when it failed).
fn finished_json(child: std::process::Child) -> serde_json::Value {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Row 5: a frame test to the server's address on `vx`, reached through `vb`, attaches on `vb`,
/// where its frames arrive, and counts them all; `vx` never gets an XDP program (watched every
/// 20 ms while the client runs, at most 30 s: a 2 s test).
#[test]
fn a_frame_test_to_an_address_routed_through_another_interface_attaches_where_it_arrived() {
    if !can_use_netns() {
        return skip("no network namespaces here: the frame engine is not run");
    }
    let pair = testbed("hf5");
    let _server = serve_everywhere(&pair, &log_path("hf5"));
    let to = OTHER.to_string();
    let args = [
        "udp", "--engine", "packet", "-l", "64", "--pps", "20000", "-t", "2", &to, "--json",
    ];
    let mut child = client_child(&pair, &args);
    let (mut on_vb, mut on_vx) = (false, false);
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the 2 s test ran 30 s");
        on_vb |= has_xdp(&pair.b, "vb");
        on_vx |= has_xdp(&pair.b, "vx");
        std::thread::sleep(Duration::from_millis(20));
    }
    let run = finished_json(child);
    let f = &run["summary"]["frames"];
    assert!(
        !on_vx,
        "an XDP program went on vx, which the test's frames never cross: {f}"
    );
    assert!(on_vb, "the counter was on vb while the test ran: {f}");
    assert_eq!(f["interface"], "vb", "{f}");
    let sent = f["frames_sent"].as_u64().unwrap();
    assert!(sent > 20_000, "{f}");
    assert_eq!(f["frames_at_driver"], sent, "{f}");
}

/// Row 6: while an `xdp` test runs against 198.18.0.2, the client's address sends 100
/// datagrams to the server's other address at one of the test's ports, where a plain UDP
/// socket listens: every one arrives there, and the test's driver count is its own frames.
/// One datagram at a time, each awaited (at most 2 s, for microseconds' work on a veth) before
/// the next, so none is lost to a full queue on a busy machine; the test runs 10 s at 1,000
/// frames/s, and its counter is checked to be on `vb` before the first and after the last.
#[test]
fn an_xdp_tests_counter_leaves_the_clients_datagrams_to_another_address_of_the_host() {
    if !can_use_netns() {
        return skip("no network namespaces here: the frame engine is not run");
    }
    let pair = testbed("hf6");
    let _server = serve_everywhere(&pair, &log_path("hf6"));
    let args = [
        "udp",
        "--engine",
        "xdp",
        "-l",
        "64",
        "--pps",
        "1000",
        "-t",
        "10",
        "198.18.0.2",
        "--json",
    ];
    let mut child = client_child(&pair, &args);
    let port = test_port(&pair, &mut child);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !has_xdp(&pair.b, "vb") {
        assert!(
            Instant::now() < deadline,
            "no counter on vb 10 s after the test's ports"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let listener = in_netns(&pair.b, || UdpSocket::bind((OTHER, port))).unwrap();
    listener
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let sender = in_netns(&pair.a, || UdpSocket::bind("198.18.0.1:0")).unwrap();
    let to = SocketAddr::from((OTHER, port));
    let mut arrived = 0;
    let mut buf = [0u8; 128];
    for i in 0..100u8 {
        // Zeros after the first byte: a data header's flags byte of 0, as a test frame's.
        let mut datagram = [0u8; 64];
        datagram[0] = i;
        sender.send_to(&datagram, to).unwrap();
        match listener.recv_from(&mut buf) {
            Ok((64, _)) if buf[0] == i => arrived += 1,
            Ok(other) => panic!("datagram {i}: {other:?}"),
            Err(e) => panic!("datagram {i} of 100 did not arrive at {to} within 2 s: {e}"),
        }
    }
    assert!(
        has_xdp(&pair.b, "vb"),
        "the test's counter was still on vb after the 100 datagrams"
    );
    assert_eq!(arrived, 100);
    let run = finished_json(child);
    let f = &run["summary"]["frames"];
    assert_eq!(f["interface"], "vb", "{f}");
    assert_eq!(f["frames_at_driver"], f["frames_sent"], "{f}");
}

/// The lowest UDP port the server in `b` holds on 198.18.0.2 (the test's block), at most 10 s
/// after the client started (panics with the client's stderr if it ends first). Sockets in
/// every state: the server connects the block's sockets to the client once its probes are
/// in, so a listening-only view sees them for milliseconds.
fn test_port(pair: &VethPair, child: &mut std::process::Child) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let ss = sh(&format!("ip netns exec {} ss -Huan src 198.18.0.2", pair.b));
        let ports = ss
            .split_whitespace()
            .filter_map(|w| w.strip_prefix("198.18.0.2:"));
        if let Some(p) = ports.filter_map(|p| p.parse::<u16>().ok()).min() {
            return p;
        }
        if child.try_wait().unwrap().is_some() {
            let out = child.stderr.take().map(std::io::read_to_string);
            panic!("the client ended before its test's ports opened: {out:?}");
        }
        assert!(Instant::now() < deadline, "no test ports after 10 s: {ss}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The minor of issue 48: with another XDP program on `vb`, a frame test is refused naming the
/// interface but not the program (its id and name are the server's log's alone).
#[test]
fn a_refused_frame_test_names_no_other_program_to_the_client() {
    if !can_use_netns() {
        return skip("no network namespaces here: the frame engine is not run");
    }
    let pair = testbed("hfm");
    let log = log_path("hfm");
    let _server = serve_everywhere(&pair, &log);
    let ports = ::frames::xdp::PortRange { first: 9, count: 1 };
    let action = ::frames::xdp::Action::Pass;
    let _other = in_netns(&pair.b, || {
        ::frames::xdp::XdpCounter::attach("vb", ports, action)
    })
    .unwrap();
    let out = pair.client(&["udp", "--engine", "packet", "-t", "1", "198.18.0.2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("vb") && err.contains("already has an XDP program"),
        "{err}"
    );
    assert!(
        !err.contains("program id") && !err.contains("lr_count"),
        "the client learnt the other program: {err}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    let logged = || std::fs::read_to_string(&log).unwrap_or_default();
    while !logged().contains("refused") {
        assert!(Instant::now() < deadline, "no refusal logged: {}", logged());
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = logged();
    assert!(
        text.contains("program id") && text.contains("lr_count"),
        "the server's log names the program: {text}"
    );
}
