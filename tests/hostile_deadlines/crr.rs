//! Row 5 of issue 33: a `tcp_crr` session's listener answers the client's address alone, and
//! a stalled transaction there costs its responder a second, not the test.

use super::*;

/// A `tcp_crr` spec of `streams` streams for `duration_ms`, with `request` and `response`
/// bytes per transaction.
fn crr_spec(streams: u16, duration_ms: u64, request: u32, response: u32) -> TestSpec {
    let params = wire::spec::Params::TcpCrr {
        rr: wire::spec::RrParams::new(request, response),
        tcp: wire::spec::TcpOptions::default(),
    };
    TestSpec {
        interval_ms: 250,
        ..TestSpec::new(params, streams, duration_ms)
    }
}

/// An accepted `tcp_crr` session driven by hand: its control connection and its listener's
/// port.
fn accepted_crr(server: &TestServer, spec: TestSpec) -> (TcpStream, u16) {
    let mut ctrl = greeted(server.addr, None);
    frame::write_frame(&mut ctrl, &ClientMsg::Start { spec, auth: None }).unwrap();
    let ServerMsg::Accepted {
        crr_port: Some(port),
        ..
    } = answer(&mut ctrl)
    else {
        panic!("no connection test port")
    };
    (ctrl, port)
}

/// Begins a hand-driven session.
fn begin(ctrl: &mut TcpStream) {
    frame::write_frame(ctrl, &ClientMsg::Begin).unwrap();
    assert!(matches!(answer(ctrl), ServerMsg::Begun));
}

/// A begun `tcp_crr` session driven by hand: its control connection and its listener's port.
fn begun_crr(server: &TestServer, spec: TestSpec) -> (TcpStream, u16) {
    let (mut ctrl, port) = accepted_crr(server, spec);
    begin(&mut ctrl);
    (ctrl, port)
}

/// One transaction on a new connection from `from`: `Some(bytes of the response)` when it
/// was answered whole, `None` when closed or reset first.
fn transaction(from: [u8; 4], port: u16, request: usize, response: usize) -> Option<usize> {
    let mut c = connect_from(SocketAddr::from(([127, 0, 0, 1], port)), from, None);
    c.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    c.write_all(&vec![7u8; request]).ok()?;
    let mut got = vec![0u8; response];
    c.read_exact(&mut got).ok().map(|()| response)
}

/// Ends a hand-driven session: `Stop`, then its results (the server's log if none come).
fn stop(mut ctrl: TcpStream, server: &TestServer) {
    frame::write_frame(&mut ctrl, &ClientMsg::Stop).unwrap();
    loop {
        match frame::read_frame(&mut ctrl, Duration::from_secs(5)) {
            Ok(ServerMsg::Counters { .. }) => {}
            Ok(ServerMsg::Results(_)) => break,
            other => panic!(
                "{other:?} after stop; the server's log:\n{}",
                server.log_text()
            ),
        }
    }
}

/// Row 5: a connection to a `tcp_crr` session's listener from an address other than the
/// client's (127.0.0.2; the client's control connection comes from 127.0.0.1) is closed
/// before anything is read, while the client's own transactions are answered.
#[test]
fn a_stranger_on_a_connection_tests_port_is_closed_unanswered() {
    let server = TestServer::start(ServerConfig::default());
    let (ctrl, port) = begun_crr(&server, crr_spec(1, 10_000, 1, 64 << 10));
    for _ in 0..3 {
        assert_eq!(
            transaction([127, 0, 0, 2], port, 1, 64 << 10),
            None,
            "a stranger got an answer"
        );
    }
    assert_eq!(
        transaction([127, 0, 0, 1], port, 1, 64 << 10),
        Some(64 << 10),
        "the client's own transaction was not answered"
    );
    stop(ctrl, &server);
    log_within(
        &server,
        "3 connections from other addresses closed unanswered",
        Duration::from_secs(5),
    );
}

/// Row 5: a connection from the client's own address that sends part of its request and
/// stalls (made before the test begins, before any responder runs) holds its responder for
/// the stall limit (1 s) at most: the transactions after it are answered, and the stalled one
/// is dropped and counted.
#[test]
fn a_stalled_transaction_does_not_stall_a_connection_test() {
    let server = TestServer::start(ServerConfig::default());
    let (request, response) = (100, 1_000);
    let spec = crr_spec(1, 10_000, request as u32, response as u32);
    let (mut ctrl, port) = accepted_crr(&server, spec);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    // Part of a request (enough for the listener's deferred accept to hand it on), then
    // nothing, sent before the test begins (before any responder runs): the only responder
    // takes it first.
    let mut stalled = connect_from(addr, [127, 0, 0, 1], None);
    stalled.write_all(&[7u8; 10]).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    begin(&mut ctrl);
    let t0 = Instant::now();
    let (mut answered, mut longest) = (0u32, Duration::ZERO);
    while t0.elapsed() < Duration::from_secs(3) {
        let start = Instant::now();
        if transaction([127, 0, 0, 1], port, request, response).is_some() {
            answered += 1;
        }
        longest = longest.max(start.elapsed());
    }
    stop(ctrl, &server);
    assert!(answered > 100, "{answered} transactions answered in 3 s");
    assert!(
        longest < engine::tcp_crr::STALL + Duration::from_millis(700),
        "one transaction waited {longest:?} behind the stalled connection"
    );
    log_within(
        &server,
        "1 stalled or broken transactions dropped",
        Duration::from_secs(5),
    );
    println!("{answered} transactions in 3 s beside a stalled one; the longest took {longest:?}");
    drop(stalled);
}
