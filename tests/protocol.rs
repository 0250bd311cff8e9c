//! Protocol abuse and limits: bad hellos, wrong versions, silent peers, refusals; the server keeps serving.

use super::*;

/// A raw connection that has exchanged hellos with the server.
fn raw(addr: std::net::SocketAddr) -> TcpStream {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(&Hello::ours().emit()).unwrap();
    let mut h = [0u8; wire::GREETING_LEN];
    c.read_exact(&mut h).unwrap();
    c
}

/// The error text of a run that must fail.
fn run_err(addr: std::net::SocketAddr, spec: wire::TestSpec) -> String {
    run(addr, spec).unwrap_err().to_string()
}

fn hello_and_start(addr: std::net::SocketAddr, duration_ms: u64) -> (TcpStream, u64) {
    let mut c = raw(addr);
    frame::write_frame(
        &mut c,
        &ClientMsg::Start {
            spec: spec(Direction::Send, 1, duration_ms),
            auth: None,
        },
    )
    .unwrap();
    match frame::read_frame::<_, ServerMsg>(&mut c, Duration::from_secs(5)).unwrap() {
        ServerMsg::Accepted { session, .. } => (c, session),
        other => panic!("{other:?}"),
    }
}

#[test]
fn garbage_is_refused_and_the_server_goes_on() {
    let server = fast_server();
    let mut c = TcpStream::connect(server.addr).unwrap();
    c.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    wait_for_log(&server, "not a linerate endpoint");
    assert!(run(server.addr, spec(Direction::Send, 1, 300)).is_ok());
}

#[test]
fn a_silent_connection_does_not_block_others() {
    let server = fast_server();
    let _idle = TcpStream::connect(server.addr).unwrap();
    let _idle2 = TcpStream::connect(server.addr).unwrap();
    assert!(run(server.addr, spec(Direction::Send, 1, 300)).is_ok());
    wait_for_log(&server, "dropped during handshake");
}

#[test]
fn version_mismatch_is_named_on_both_sides() {
    let server = fast_server();
    let mut c = TcpStream::connect(server.addr).unwrap();
    c.write_all(
        &Hello {
            version: 99,
            ..Hello::ours()
        }
        .emit(),
    )
    .unwrap();
    wait_for_log(
        &server,
        &format!(
            "this linerate speaks version {}, the peer speaks version 99",
            wire::PROTOCOL_VERSION
        ),
    );

    // A fake server of the previous release (version 7, before authentication): the
    // client's error names both versions.
    let previous = wire::PROTOCOL_VERSION - 1;
    let fake = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = fake.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = fake.accept().unwrap();
        s.write_all(
            &Hello {
                version: previous,
                ..Hello::ours()
            }
            .emit(),
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(500));
    });
    let err = run_err(addr, spec(Direction::Send, 1, 300));
    assert!(
        err.contains(&format!(
            "this linerate speaks version {}, the peer speaks version {previous}",
            wire::PROTOCOL_VERSION
        )),
        "{err}"
    );
}

#[test]
fn oversized_frame_is_refused() {
    let server = fast_server();
    let mut c = TcpStream::connect(server.addr).unwrap();
    c.write_all(&Hello::ours().emit()).unwrap();
    c.write_all(&[0xff, 0xff, 0xff, 0xff]).unwrap();
    wait_for_log(&server, "exceeds");
    assert!(run(server.addr, spec(Direction::Send, 1, 300)).is_ok());
}

#[test]
fn unknown_session_is_an_error() {
    let server = fast_server();
    let mut c = raw(server.addr);
    frame::write_frame(
        &mut c,
        &ClientMsg::Attach {
            session: 1234,
            stream: 0,
            auth: None,
        },
    )
    .unwrap();
    match frame::read_frame::<_, ServerMsg>(&mut c, Duration::from_secs(5)).unwrap() {
        ServerMsg::Error { message } => {
            assert!(message.contains("unknown session"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_client_vanishing_mid_test_is_survived() {
    let server = fast_server();
    let (mut ctrl, session) = hello_and_start(server.addr, 30_000);
    let mut data = raw(server.addr);
    frame::write_frame(
        &mut data,
        &ClientMsg::Attach {
            session,
            stream: 0,
            auth: None,
        },
    )
    .unwrap();
    let _ = frame::read_frame::<_, ServerMsg>(&mut data, Duration::from_secs(5)).unwrap();
    frame::write_frame(&mut ctrl, &ClientMsg::Begin).unwrap();
    let _ = frame::read_frame::<_, ServerMsg>(&mut ctrl, Duration::from_secs(5)).unwrap();
    data.write_all(&[1u8; 100_000]).unwrap();
    drop(ctrl);
    drop(data);
    wait_for_log(&server, "client went away mid-test");
    assert!(run(server.addr, spec(Direction::Send, 1, 300)).is_ok());
}

#[test]
fn over_the_session_limit_is_refused_clearly() {
    let server = TestServer::start(ServerConfig {
        max_sessions: 1,
        ..ServerConfig::default()
    });
    let (_ctrl, _session) = hello_and_start(server.addr, 30_000);
    let err = run_err(server.addr, spec(Direction::Send, 1, 300));
    assert!(
        err.contains("server busy") && err.contains("limit 1"),
        "{err}"
    );
}

#[test]
fn a_spec_over_the_server_limits_is_refused() {
    let server = fast_server();
    let err = run_err(server.addr, spec(Direction::Send, 1000, 300));
    assert!(err.contains("streams 1000"), "{err}");
}
