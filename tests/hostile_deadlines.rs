//! Hostile clients against the server's deadlines (issue 33 rows 1, 5 and 11): each test does
//! what the row says a client can do, and asserts that the bound holds without the client's
//! help: the data stops, the session ends and its slot frees within the deadline, a stranger
//! gets nothing, an unproven client learns nothing about the host. A real client beside the
//! hostile one still gets its test where that is cheap to show.

use super::*;
use socket2::{Domain, Socket, Type};
use std::net::SocketAddr;
use wire::TestSpec;

mod crr;
mod host_facts;

/// A connection to `addr` from `from` (any loopback address: the whole of 127/8 is local)
/// with its receive buffer at `rcvbuf` bytes (the kernel's floor, a few KiB, if smaller),
/// set before the handshake so the window it advertises is small from the first segment.
fn connect_from(addr: SocketAddr, from: [u8; 4], rcvbuf: Option<usize>) -> TcpStream {
    let sock = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    if let Some(size) = rcvbuf {
        sock.set_recv_buffer_size(size).unwrap();
    }
    sock.bind(&SocketAddr::from((from, 0)).into()).unwrap();
    sock.connect_timeout(&addr.into(), Duration::from_secs(2))
        .unwrap();
    let c: TcpStream = sock.into();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    c
}

/// A connection that has sent its hello and read the greeting, with `rcvbuf` as above.
fn greeted(addr: SocketAddr, rcvbuf: Option<usize>) -> TcpStream {
    let mut c = connect_from(addr, [127, 0, 0, 1], rcvbuf);
    c.write_all(&Hello::ours().emit()).unwrap();
    let mut greeting = [0u8; wire::GREETING_LEN];
    c.read_exact(&mut greeting).unwrap();
    c
}

#[track_caller]
fn answer(c: &mut TcpStream) -> ServerMsg {
    frame::read_frame(c, Duration::from_secs(5)).unwrap()
}

/// Starts `spec` on a fresh control connection: the connection and the session's cookie.
fn started(addr: SocketAddr, spec: TestSpec, rcvbuf: Option<usize>) -> (TcpStream, u64) {
    let mut ctrl = greeted(addr, rcvbuf);
    let start = ClientMsg::Start { spec, auth: None };
    frame::write_frame(&mut ctrl, &start).unwrap();
    match answer(&mut ctrl) {
        ServerMsg::Accepted { session, .. } => (ctrl, session),
        other => panic!("not accepted: {other:?}"),
    }
}

/// Attaches stream `stream` of `session`.
fn attached(addr: SocketAddr, session: u64, stream: u16) -> TcpStream {
    let mut data = greeted(addr, None);
    let attach = ClientMsg::Attach {
        session,
        stream,
        auth: None,
    };
    frame::write_frame(&mut data, &attach).unwrap();
    assert!(
        matches!(answer(&mut data), ServerMsg::Attached { .. }),
        "not attached"
    );
    data
}

/// Waits up to `within` for `needle` in the server's log; how long it took.
fn log_within(server: &TestServer, needle: &str, within: Duration) -> Duration {
    let t0 = Instant::now();
    while !server.log_text().contains(needle) {
        assert!(
            t0.elapsed() < within,
            "no '{needle}' in the server's log within {within:?}:\n{}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    t0.elapsed()
}

/// Reads `data` to its end (or an error, or `limit`): the bytes that came after `after`, and
/// when the end came.
fn read_to_end_after(mut data: TcpStream, after: Instant, limit: Instant) -> (u64, Instant) {
    let mut buf = vec![0u8; 1 << 20];
    let mut late = 0u64;
    data.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    while Instant::now() < limit {
        match data.read(&mut buf) {
            Ok(0) => break,
            Ok(n) if Instant::now() > after => late += n as u64,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    (late, Instant::now())
}

/// Row 1: `begin`, then polls as fast as the socket takes them, never reading the control
/// connection (a receive buffer of a few KiB), in a 1 s reverse test. The server's session
/// thread soon blocks writing counters to it; the data must still stop within the 2 s grace
/// after the window (a watchdog of its own stops the senders), and the session must end at
/// the control write's deadline and free its slot for a real client.
#[test]
fn a_client_that_never_reads_its_control_connection_stops_getting_data_and_loses_its_slot() {
    let write_deadline = Duration::from_secs(6);
    let server = TestServer::start(ServerConfig {
        max_sessions: 1,
        handshake_timeout: write_deadline,
        ..ServerConfig::default()
    });
    let (mut ctrl, session) = started(server.addr, spec(Direction::Reverse, 1, 1_000), Some(1));
    let data = attached(server.addr, session, 0);
    frame::write_frame(&mut ctrl, &ClientMsg::Begin).unwrap();
    let begun = Instant::now();
    let flood = std::thread::spawn(move || {
        ctrl.set_write_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut polls = 0u64;
        while begun.elapsed() < Duration::from_secs(15) {
            let mut poll = Vec::new();
            frame::encode(&ClientMsg::Poll { seq: polls }, &mut poll).unwrap();
            match ctrl.write_all(&poll) {
                Ok(()) => polls += 1,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => break, // the server closed the connection: the session is over
            }
        }
        polls
    });
    let window_and_grace = Duration::from_millis(1_000) + Duration::from_secs(2);
    let margin = Duration::from_millis(700);
    let (late, ended) = read_to_end_after(
        data,
        begun + window_and_grace + margin,
        begun + Duration::from_secs(12),
    );
    let data_end = ended - begun;
    assert!(
        data_end < window_and_grace + margin + Duration::from_millis(300),
        "the data connection ended {data_end:?} after begin (window 1 s + grace 2 s)"
    );
    assert!(late < 1 << 20, "{late} bytes arrived after window + grace");
    let took = log_within(
        &server,
        "did not read a control message",
        Duration::from_secs(12),
    );
    let session_end = begun.elapsed();
    assert!(
        session_end < Duration::from_secs(1) + write_deadline + Duration::from_secs(3),
        "the session ended {session_end:?} after begin"
    );
    let polls = flood.join().unwrap();
    assert!(
        run(server.addr, spec(Direction::Send, 1, 300)).is_ok(),
        "{}",
        server.log_text()
    );
    println!(
        "{polls} unread polls: data ended {data_end:?} after begin, {late} bytes after window \
         + grace + {margin:?}; session ended {session_end:?} after begin ({took:?} waited)"
    );
}

/// A server with one slot and these timeouts.
fn one_slot(handshake: Duration, setup: Duration, drain: Duration) -> TestServer {
    TestServer::start(ServerConfig {
        max_sessions: 1,
        handshake_timeout: handshake,
        setup_timeout: setup,
        drain_timeout: drain,
        ..ServerConfig::default()
    })
}

/// A real client's short test passes: the hostile one's slot is free again. The slot is given
/// back as the hostile session's thread ends, just after it sent its last message, so a
/// "server busy" within the first second is asked again (at most 20 times).
fn real_client_passes(server: &TestServer) {
    let mut result = run(server.addr, spec(Direction::Send, 1, 300));
    for _ in 0..20 {
        match &result {
            Err(e) if format!("{e:?}").contains("server busy") => {
                std::thread::sleep(Duration::from_millis(50));
                result = run(server.addr, spec(Direction::Send, 1, 300));
            }
            _ => break,
        }
    }
    assert!(result.is_ok(), "{result:?}\n{}", server.log_text());
}

/// Row 1: a client that starts, attaches its stream, then neither begins nor reads loses its
/// slot at the setup timeout.
#[test]
fn a_session_that_never_begins_frees_its_slot_at_the_setup_timeout() {
    let setup = Duration::from_secs(1);
    let server = one_slot(Duration::from_secs(10), setup, Duration::from_secs(10));
    let (ctrl, session) = started(server.addr, spec(Direction::Reverse, 1, 60_000), Some(1));
    let data = attached(server.addr, session, 0);
    let took = log_within(
        &server,
        "did not begin within",
        setup + Duration::from_secs(2),
    );
    real_client_passes(&server);
    println!("never begun: slot freed {took:?} after the start");
    drop((ctrl, data));
}

/// Row 1: a client that trickles a poll a byte at a time (never silent for long) is dropped
/// once the frame has taken its interval plus the handshake timeout, as a silent one is.
#[test]
fn a_client_that_trickles_a_poll_is_dropped_at_its_interval_plus_the_timeout() {
    let timeout = Duration::from_secs(1);
    let server = one_slot(timeout, Duration::from_secs(5), Duration::from_secs(10));
    let (mut ctrl, session) = started(server.addr, spec(Direction::Send, 1, 60_000), None);
    let data = attached(server.addr, session, 0);
    frame::write_frame(&mut ctrl, &ClientMsg::Begin).unwrap();
    assert!(matches!(answer(&mut ctrl), ServerMsg::Begun));
    let t0 = Instant::now();
    let trickle = std::thread::spawn(move || {
        let mut bytes = vec![0, 0, 0, 100];
        bytes.extend_from_slice(&[b' '; 100]);
        for b in bytes {
            if ctrl.write_all(&[b]).is_err() || t0.elapsed() > Duration::from_secs(8) {
                break;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    let bound = Duration::from_millis(250) + timeout;
    let took = log_within(
        &server,
        "client went away mid-test",
        bound + Duration::from_secs(2),
    );
    assert!(took < bound + Duration::from_millis(1_500), "{took:?}");
    real_client_passes(&server);
    println!("trickled poll: dropped {took:?} after the trickle began (bound {bound:?})");
    drop(data);
    trickle.join().unwrap();
}

/// Row 1: a client that keeps polling (and reading the answers) but never says stop does not
/// keep its slot: the server ends the test its interval plus the handshake timeout after the
/// window's grace, and says why.
#[test]
fn a_client_that_never_says_stop_is_ended_after_the_window() {
    let timeout = Duration::from_secs(1);
    let server = one_slot(timeout, Duration::from_secs(5), Duration::from_secs(10));
    let (mut ctrl, session) = started(server.addr, spec(Direction::Send, 1, 1_000), None);
    let data = attached(server.addr, session, 0);
    frame::write_frame(&mut ctrl, &ClientMsg::Begin).unwrap();
    assert!(matches!(answer(&mut ctrl), ServerMsg::Begun));
    let t0 = Instant::now();
    let message = loop {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "still polled at 10 s"
        );
        let _ = frame::write_frame(&mut ctrl, &ClientMsg::Poll { seq: 1 });
        match answer(&mut ctrl) {
            ServerMsg::Counters { .. } => std::thread::sleep(Duration::from_millis(200)),
            ServerMsg::Error { message } => break message,
            other => panic!("{other:?}"),
        }
    };
    let took = t0.elapsed();
    assert!(message.contains("did not say stop"), "{message}");
    // Window 1 s, grace 2 s, interval 250 ms plus the handshake timeout 1 s.
    assert!(took < Duration::from_millis(4_250 + 1_000), "{took:?}");
    real_client_passes(&server);
    println!("never stopped: ended {took:?} after begin: {message}");
    drop(data);
}

/// Row 1: after `Stop`, a stream whose client never closes it (so the server's receiver
/// cannot drain to its end) is aborted at the drain timeout, and the results still come.
#[test]
fn a_stream_that_never_drains_is_aborted_at_the_drain_timeout() {
    let drain = Duration::from_secs(1);
    let server = one_slot(Duration::from_secs(10), Duration::from_secs(5), drain);
    let (mut ctrl, session) = started(server.addr, spec(Direction::Send, 1, 500), None);
    let mut data = attached(server.addr, session, 0);
    frame::write_frame(&mut ctrl, &ClientMsg::Begin).unwrap();
    assert!(matches!(answer(&mut ctrl), ServerMsg::Begun));
    data.write_all(&[1u8; 100_000]).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    frame::write_frame(&mut ctrl, &ClientMsg::Stop).unwrap();
    let results = loop {
        match answer(&mut ctrl) {
            ServerMsg::Counters { .. } => {}
            ServerMsg::Results(r) => break r,
            other => panic!("{other:?}"),
        }
    };
    let took = t0.elapsed();
    assert!(took < drain + Duration::from_millis(1_500), "{took:?}");
    assert!(results.streams[0].error.is_some(), "{results:?}");
    real_client_passes(&server);
    println!(
        "undrained stream: results {took:?} after stop: {:?}",
        results.streams[0].error
    );
    drop(data);
}

/// Row 1, iperf3: an iperf3 client's reverse 1 s test whose client never reads its control
/// connection and never says `TEST_END`: the server's data stops within the grace after the
/// test's time, and the test ends at the handshake timeout after that, freeing the slot.
#[test]
fn an_iperf3_client_that_never_ends_its_test_stops_getting_data_and_loses_its_slot() {
    let timeout = Duration::from_secs(1);
    let server = one_slot(timeout, Duration::from_secs(5), Duration::from_secs(2));
    let mut ctrl = connect_from(server.addr, [127, 0, 0, 1], Some(1));
    let mut cookie = [b'q'; ::iperf3::protocol::COOKIE_LEN];
    cookie[::iperf3::protocol::COOKIE_LEN - 1] = 0;
    ctrl.write_all(&cookie).unwrap();
    let mut state = [0u8; 1];
    ctrl.read_exact(&mut state).unwrap();
    assert_eq!(state[0], 9, "PARAM_EXCHANGE");
    let params = br#"{"tcp":true,"time":1,"parallel":1,"reverse":true,"len":131072}"#;
    let mut frame = (params.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(params);
    ctrl.write_all(&frame).unwrap();
    ctrl.read_exact(&mut state).unwrap();
    assert_eq!(state[0], 10, "CREATE_STREAMS");
    let mut data = connect_from(server.addr, [127, 0, 0, 1], None);
    data.write_all(&cookie).unwrap();
    ctrl.read_exact(&mut state).unwrap();
    assert_eq!(state[0], 1, "TEST_START");
    let started = Instant::now();
    // From here the client reads nothing on its control connection and never says TEST_END.
    let grace = Duration::from_secs(2);
    let margin = Duration::from_millis(700);
    let after = started + Duration::from_secs(1) + grace + margin;
    let (late, ended) = read_to_end_after(data, after, started + Duration::from_secs(10));
    let data_end = ended - started;
    assert!(
        data_end < Duration::from_secs(1) + grace + margin + Duration::from_millis(300),
        "the data connection ended {data_end:?} after TEST_START"
    );
    assert!(late < 1 << 20, "{late} bytes after the test's time + grace");
    let took = log_within(&server, "sent no TEST_END", Duration::from_secs(6));
    let ended_at = started.elapsed();
    assert!(
        ended_at < Duration::from_secs(1) + timeout + Duration::from_secs(2),
        "the test ended {ended_at:?} after TEST_START"
    );
    real_client_passes(&server);
    println!(
        "iperf3 client without TEST_END: data ended {data_end:?}, test ended {ended_at:?} \
         after TEST_START ({took:?} waited)"
    );
    drop(ctrl);
}
