//! Hostile clients against the server's budgets (issue 33, rows 2, 3, 7 and 15): write
//! lengths that would take the server's memory, UDP destination flows that would take its
//! descriptors, handshakes that would take its memory before any key is proven, and iperf3
//! clients that would take a thread on a server with keys. Each asserts the bound holds, the
//! refusal names the limit and its flag, and what was taken comes back.

use super::*;
use crate::proc::{back_to_baseline, fds, rss_kib, serve_child, threads, PeakSampler};
use ::iperf3::protocol::{cookie, State};
use session::server::Budget;
use socket2::{Domain, Socket, Type};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use wire::spec::{Params, StreamParams, TcpOptions, UdpParams};
use wire::{TestSpec, GREETING_LEN};

/// A TCP connection to `port` on 127.0.0.1 from the loopback address `source`.
fn connect_from(source: [u8; 4], port: u16) -> TcpStream {
    let sock = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    sock.bind(&SocketAddr::from((source, 0)).into()).unwrap();
    sock.connect(&SocketAddr::from(([127, 0, 0, 1], port)).into())
        .unwrap();
    sock.into()
}

/// A hostile client's `start`, written by hand: hello, the greeting read, the frame; returns
/// the connection (held open: a session that never begins keeps what it drew until its setup
/// timeout) and the server's answer.
pub(crate) fn start(port: u16, spec: TestSpec) -> (TcpStream, ServerMsg) {
    let mut c = connect_from([127, 0, 0, 1], port);
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(&Hello::ours().emit()).unwrap();
    let mut greeting = [0u8; GREETING_LEN];
    c.read_exact(&mut greeting).unwrap();
    Hello::parse(&greeting[..wire::HELLO_LEN]).unwrap();
    frame::write_frame(&mut c, &ClientMsg::Start { spec, auth: None }).unwrap();
    let answer = frame::read_frame(&mut c, Duration::from_secs(10)).unwrap();
    (c, answer)
}

pub(crate) fn refusal_text(answer: &ServerMsg) -> String {
    match answer {
        ServerMsg::Error { message } => message.clone(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn udp_spec(flows_dst: u32) -> TestSpec {
    let udp = UdpParams {
        flows_dst,
        ..UdpParams::new(Direction::Send)
    };
    TestSpec::new(Params::UdpStream { udp }, 1, 2000)
}

fn stream_spec(direction: Direction, streams: u16, len: u32) -> TestSpec {
    let stream = StreamParams {
        write_len_bytes: len,
        ..StreamParams::new(direction)
    };
    let params = Params::TcpStream {
        stream,
        tcp: TcpOptions::default(),
    };
    TestSpec::new(params, streams, 1000)
}

/// Row 2: the attack that took a server from 6.4 MB to 270 MB, on a server that allows the
/// protocol's largest length: each sending stream holds at most 4 MiB of its pattern.
#[test]
fn a_reverse_test_at_64_mib_writes_keeps_the_servers_memory_within_4_mib_a_stream() {
    let (server, port) = serve_child(&["--max-length", "64M"]);
    let pid = server.0.id();
    let base = rss_kib(pid);
    let sampler = PeakSampler::start(
        pid,
        base,
        rss_kib,
        Duration::from_millis(20),
        Duration::from_secs(20),
    );
    let p = port.to_string();
    let args = ["tcp", "127.0.0.1", "-p", &p, "-R", "-P", "4", "-l", "64M"];
    let out = linerate()
        .args(args)
        .args(["-t", "1", "-i", "0", "--no-store"])
        .output()
        .unwrap();
    let peak = sampler.stop();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let grew = peak.saturating_sub(base);
    println!("4 reverse streams at -l 64M: server RSS {base} KiB, peak +{grew} KiB");
    // 4 streams x 4 MiB, and the session's threads and sockets: far from 4 x 64 MiB.
    assert!(grew < 40 << 10, "the server grew by {grew} KiB");
}

#[test]
fn a_write_length_above_the_servers_default_limit_is_refused_naming_the_flag() {
    let (_server, port) = serve_child(&[]);
    let (_c, answer) = start(port, stream_spec(Direction::Reverse, 4, 64 << 20));
    let text = refusal_text(&answer);
    assert!(
        text.contains("67108864") && text.contains("8388608") && text.contains("--max-length"),
        "{text}"
    );
    // The client's own default length passes.
    linerate_ok(&[
        "tcp",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-R",
        "-t",
        "0.3",
        "-i",
        "0",
        "--no-store",
    ]);
}

/// An iperf3 client's opening by hand: its cookie, then, asked for them, its parameters;
/// returns the state bytes the server answered with (at most 9).
fn iperf3_opening(port: u16, params: &str) -> Vec<u8> {
    let mut c = connect_from([127, 0, 0, 1], port);
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(&cookie(&[7; 36])).unwrap();
    let mut state = [0u8; 1];
    c.read_exact(&mut state).unwrap();
    assert_eq!(state[0], State::ParamExchange.to_byte());
    c.write_all(&(params.len() as u32).to_be_bytes()).unwrap();
    c.write_all(params.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = c.take(9).read_to_end(&mut answer);
    answer
}

#[test]
fn an_iperf3_client_asking_for_64_mib_blocks_gets_iperf3s_block_size_error() {
    let (_server, port) = serve_child(&[]);
    let params = r#"{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":4,"reverse":true,"len":67108864,"client_version":"3.16"}"#;
    let answer = iperf3_opening(port, params);
    // iperf3's IEBLOCKSIZE (7), which its client prints.
    assert_iperf3_error(&answer, 7);
}

/// `answer` is iperf3's SERVER_ERROR state followed by error number `code` (big-endian).
fn assert_iperf3_error(answer: &[u8], code: i32) {
    assert_eq!(answer.first(), Some(&State::ServerError.to_byte()));
    assert_eq!(
        answer.get(1..5),
        Some(&code.to_be_bytes()[..]),
        "{answer:?}"
    );
}

/// The server's buffer budget: a test that would take it past the total is refused before
/// anything is allocated, and a test's share comes back when it ends.
#[test]
fn a_test_beyond_the_servers_buffer_budget_is_refused_and_the_budget_comes_back() {
    let server = TestServer::start(ServerConfig {
        budget: Budget {
            max_buffer_bytes: 20 << 20,
            ..Budget::default()
        },
        setup_timeout: Duration::from_secs(2),
        ..ServerConfig::default()
    });
    let port = server.addr.port();
    // 2 reverse streams at 4 MiB: 16 MiB of the 20 (a sender's pattern is counted twice).
    let (held, answer) = start(port, stream_spec(Direction::Reverse, 2, 4 << 20));
    assert!(matches!(answer, ServerMsg::Accepted { .. }), "{answer:?}");
    let (_c, answer) = start(port, stream_spec(Direction::Reverse, 1, 4 << 20));
    let text = refusal_text(&answer);
    assert!(
        text.contains("serve --max-buffer-memory") && text.contains("16777216"),
        "{text}"
    );
    drop(held);
    // The held session ends at its client's close; its 16 MiB come back.
    let deadline = Instant::now() + Duration::from_secs(10);
    while run(server.addr, stream_spec(Direction::Reverse, 1, 4 << 20)).is_err() {
        assert!(Instant::now() < deadline, "{}", server.log_text());
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Row 3: two unauthenticated `start`s for UDP with `flows_dst` 10,000 held 19,996 of the
/// server's descriptors. Now they are refused before a socket is opened.
#[test]
fn udp_starts_asking_for_10000_destination_flows_are_refused_before_any_socket_opens() {
    let (server, port) = serve_child(&[]);
    let pid = server.0.id();
    let base = fds(pid);
    let held: Vec<(TcpStream, ServerMsg)> = (0..2).map(|_| start(port, udp_spec(10_000))).collect();
    for (_, answer) in &held {
        let text = refusal_text(answer);
        assert!(
            text.contains("10000") && text.contains("serve --max-flows-dst"),
            "{text}"
        );
    }
    assert!(fds(pid) <= base + 4, "descriptors {base} -> {}", fds(pid));
    drop(held);
    linerate_ok(&[
        "udp",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--flows-dst",
        "64",
        "-t",
        "0.3",
        "-i",
        "0",
        "--no-store",
    ]);
}

/// The server's socket budget: tests that are allowed each (a larger --max-flows-dst) still
/// cannot hold more than --max-sockets together; what a session held comes back when it ends.
#[test]
fn udp_sessions_beyond_the_socket_budget_are_refused_and_descriptors_come_back() {
    let (server, port) = serve_child(&[
        "--max-flows-dst",
        "10000",
        "--max-sockets",
        "300",
        "--max-sessions",
        "64",
    ]);
    let pid = server.0.id();
    let base = (threads(pid), fds(pid));
    let (first, answer) = start(port, udp_spec(200));
    assert!(matches!(answer, ServerMsg::Accepted { .. }), "{answer:?}");
    let (_second, answer) = start(port, udp_spec(200));
    let text = refusal_text(&answer);
    assert!(
        text.contains("201 sockets") && text.contains("serve --max-sockets"),
        "{text}"
    );
    let during = fds(pid);
    assert!(during <= base.1 + 300, "descriptors {} -> {during}", base.1);
    drop(first);
    // The session that never began ends (its client closed, or its setup timeout), and gives
    // its sockets back: a real test fits again.
    let after = back_to_baseline(pid, base, Duration::from_secs(15));
    assert_eq!(after, base, "threads and descriptors back at the baseline");
    linerate_ok(&[
        "udp",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--flows-dst",
        "200",
        "-t",
        "0.3",
        "-i",
        "0",
        "--no-store",
    ]);
}

/// Opens `n` connections from `source` that each send a hello and a first frame's length
/// prefix announcing `announced` bytes, then `body` bytes of it.
fn first_frames(
    port: u16,
    source: [u8; 4],
    n: usize,
    announced: u32,
    body: usize,
) -> Vec<TcpStream> {
    let mut opening = Hello::ours().emit().to_vec();
    opening.extend_from_slice(&announced.to_be_bytes());
    opening.extend(std::iter::repeat_n(b' ', body));
    (0..n)
        .map(|_| {
            let mut c = connect_from(source, port);
            let _ = c.write_all(&opening);
            c
        })
        .collect()
}

/// How many of `conns` the server still holds open once at most `at_most` are, or when
/// `within` has passed: the server works through the connections as it accepts them, later on
/// a loaded host, so the count is read when it has come down to the bound, not after a fixed
/// sleep. Open is a read that would block (after our greeting, which may come first); closed
/// is its end or an error.
fn open_once_at_most(conns: &mut [TcpStream], at_most: usize, within: Duration) -> usize {
    let deadline = Instant::now() + within;
    let mut open: Vec<&mut TcpStream> = conns.iter_mut().collect();
    for c in &open {
        c.set_nonblocking(true).unwrap();
    }
    let mut buf = [0u8; 256];
    loop {
        open.retain_mut(|c| loop {
            match c.read(&mut buf) {
                Ok(0) => return false,
                Ok(_) => continue,
                Err(e) => return e.kind() == std::io::ErrorKind::WouldBlock,
            }
        });
        if open.len() <= at_most || Instant::now() >= deadline {
            return open.len();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits (at most `within`) until the server on `port` has read every byte its connections
/// from `source` sent: each one's receive queue, as `ss` shows it, empty.
fn read_by_server(port: u16, source: &str, within: Duration) {
    let deadline = Instant::now() + within;
    let filter = format!("( sport = :{port} and dst {source} )");
    loop {
        let out = sh(&format!("ss -Htn state established '{filter}'"));
        let queued: u64 = (out.lines())
            .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        if queued == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{queued} bytes from {source} still unread after {within:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Row 7: 300 handshakes each one byte short of a 64 KiB first frame cost ~70 KiB each. Now a
/// first frame is at most 8 KiB (refused at its length prefix), and one address holds at most
/// 256 handshakes with bytes in them; a client from another address still gets its test.
#[test]
fn large_first_frames_are_refused_at_their_prefix_and_one_address_holds_at_most_256_handshakes() {
    let (server, port) = serve_child(&[]);
    let pid = server.0.id();
    let base = (rss_kib(pid), fds(pid));
    // Within 5 s, half the handshake deadline (10 s) that would close every one of them.
    let within = Duration::from_secs(5);
    let mut big = first_frames(port, [127, 0, 0, 2], 300, (64 << 10) - 1, (64 << 10) - 2);
    let open = open_once_at_most(&mut big, 0, within);
    assert_eq!(open, 0, "a 64 KiB first frame was kept");
    drop(big);
    // Just under the limit: the per-address cap keeps 256 of 400, and drops the rest.
    let mut near = first_frames(port, [127, 0, 0, 3], 400, (8 << 10) - 1, (8 << 10) - 2);
    let open = open_once_at_most(&mut near, 256, within);
    // What it grew by holding them, once it holds all they sent.
    read_by_server(port, "127.0.0.3", within);
    let grew = rss_kib(pid).saturating_sub(base.0);
    println!("400 first frames of 8 KiB - 1 from one address: {open} kept, RSS +{grew} KiB");
    assert_eq!(open, 256, "handshakes with bytes from one address");
    // 256 x 8 KiB, and the rest's sockets.
    assert!(grew < 6 << 10, "the server grew by {grew} KiB");
    linerate_ok(&[
        "tcp",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-t",
        "0.3",
        "-i",
        "0",
        "--no-store",
    ]);
    drop(near);
    let after = back_to_baseline(pid, (threads(pid), base.1), Duration::from_secs(5));
    assert_eq!(after.1, base.1, "descriptors back at the baseline");
}

/// Row 15: on a server with keys (and without --iperf3-open) an iperf3 client is refused by
/// the gate itself: the server's thread count never moves, and the client still reads iperf3's
/// "test authorization failed".
#[test]
fn an_iperf3_client_on_a_keyed_server_is_refused_without_a_thread_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    std::fs::write(&keys, linerate_ok(&["keygen", "alice"])).unwrap();
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (server, port) = serve_child(&["--auth-keys", keys.to_str().unwrap()]);
    let pid = server.0.id();
    let base = threads(pid);
    let sampler = PeakSampler::start(
        pid,
        base as u64,
        |pid| threads(pid) as u64,
        Duration::ZERO,
        Duration::from_secs(30),
    );
    let params = r#"{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":131072,"client_version":"3.16"}"#;
    for _ in 0..100 {
        let answer = iperf3_opening(port, params);
        // IEAUTHTEST (142): "test authorization failed".
        assert_iperf3_error(&answer, 142);
    }
    let most = sampler.stop() as usize;
    assert_eq!(
        most, base,
        "100 refused iperf3 clients took the server from {base} to {most} threads"
    );
}
