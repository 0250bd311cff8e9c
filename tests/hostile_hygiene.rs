//! Hostile clients against the hygiene promises (issue 33, rows 4, 9, 10, 12, 14): a
//! request/response test cannot outrun `--max-rate`, a peer's text cannot forge a log line or
//! reach a terminal raw, a congestion name the host does not list never reaches the kernel, a
//! database password never prints and never sits in a server's argv, and a keys file that is
//! not the server user's own regular file is refused.

use super::*;
use std::net::SocketAddr;
use std::process::Stdio;
use wire::spec::{Params, SpecLimits, TestKind};

/// A hostile peer's text: a forged server line and an escape code.
const FORGED: &str = "x\n linerate serve: forged\x1b[31m";
/// How [`FORGED`] reads once escaped.
const FORGED_ESCAPED: &str = "x\\n linerate serve: forged\\x1b[31m";

/// A connection that has exchanged hellos with the server.
fn raw(addr: SocketAddr) -> TcpStream {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(&Hello::ours().emit()).unwrap();
    let mut h = [0u8; wire::GREETING_LEN];
    c.read_exact(&mut h).unwrap();
    c
}

/// `spec` started, its one data connection attached and the test begun: (control, data).
fn begun(addr: SocketAddr, spec: wire::TestSpec) -> (TcpStream, TcpStream) {
    let mut ctrl = raw(addr);
    frame::write_frame(&mut ctrl, &ClientMsg::Start { spec, auth: None }).unwrap();
    let session = match frame::read_frame::<_, ServerMsg>(&mut ctrl, Duration::from_secs(5)) {
        Ok(ServerMsg::Accepted { session, .. }) => session,
        other => panic!("{other:?}"),
    };
    let mut data = raw(addr);
    let attach = ClientMsg::Attach {
        session,
        stream: 0,
        auth: None,
    };
    frame::write_frame(&mut data, &attach).unwrap();
    let _ = frame::read_frame::<_, ServerMsg>(&mut data, Duration::from_secs(5)).unwrap();
    frame::write_frame(&mut ctrl, &ClientMsg::Begin).unwrap();
    let _ = frame::read_frame::<_, ServerMsg>(&mut ctrl, Duration::from_secs(5)).unwrap();
    (ctrl, data)
}

/// No line of the log holds a line break or an ESC, and none begins a forged server line.
fn assert_log_clean(server: &TestServer) {
    for line in server.log.lock().unwrap().iter() {
        assert!(
            !line.chars().any(char::is_control),
            "a raw control character in the log: {line:?}"
        );
    }
}

#[test]
fn a_client_error_message_with_line_breaks_and_escape_codes_forges_no_log_line() {
    let server = test_server();
    let (mut ctrl, _data) = begun(server.addr, spec(Direction::Send, 1, 30_000));
    let give_up = ClientMsg::Error {
        message: FORGED.into(),
    };
    frame::write_frame(&mut ctrl, &give_up).unwrap();
    wait_for_log(&server, FORGED_ESCAPED);
    assert_log_clean(&server);
}

#[test]
fn a_congestion_name_with_line_breaks_is_refused_escaped_on_both_sides() {
    let server = test_server();
    let mut hostile = spec(Direction::Send, 1, 300);
    hostile.tcp_mut().unwrap().congestion = Some(FORGED.into());
    let err = run(server.addr, hostile).unwrap_err().to_string();
    assert!(
        err.contains("not available on this host; available: ") && err.contains(FORGED_ESCAPED),
        "{err}"
    );
    assert!(!err.chars().any(char::is_control), "{err:?}");
    assert_log_clean(&server);
    // A real client beside it still runs.
    assert!(run(server.addr, spec(Direction::Send, 1, 300)).is_ok());
}

#[test]
fn a_congestion_name_the_host_does_not_list_is_refused_naming_the_available_ones() {
    let server = test_server();
    let mut foo = spec(Direction::Send, 1, 300);
    foo.tcp_mut().unwrap().congestion = Some("foo".into());
    let err = run(server.addr, foo).unwrap_err().to_string();
    let listed =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap();
    let first = listed.split_whitespace().next().unwrap();
    assert!(
        err.contains("--congestion foo: not available on this host; available: ")
            && err.contains(first),
        "{err}"
    );
}

/// A server whose `--max-rate` is 10 Mbit/s.
fn limited_server() -> TestServer {
    TestServer::start(ServerConfig {
        limits: SpecLimits {
            max_rate_bps: Some(10_000_000),
            ..SpecLimits::default()
        },
        ..ServerConfig::default()
    })
}

fn rr_spec(kind: TestKind, request: u32, response: u32, per_sec: Option<u64>) -> wire::TestSpec {
    let mut spec = wire::TestSpec::new(Params::defaults(kind), 1, 2000);
    let rr = spec.params.rr_mut().unwrap();
    (rr.request_len_bytes, rr.response_len_bytes) = (request, response);
    rr.transactions_per_sec = per_sec;
    spec
}

#[test]
fn a_rate_limit_refuses_request_response_tests_that_would_outrun_it_naming_the_rate_to_ask() {
    let server = limited_server();
    for kind in [TestKind::TcpRr, TestKind::TcpCrr, TestKind::UdpRr] {
        let (request, response) = if kind == TestKind::UdpRr {
            (16, 60_000)
        } else {
            // The 16 MiB is above the default --max-length; 4 MiB at any rate past
            // 0.3 a second is still far past 10 Mbit/s.
            (1, 4 << 20)
        };
        let err = run(server.addr, rr_spec(kind, request, response, None))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("back to back (no --tps) per stream above this server's limit of 10000000 bit/s (serve --max-rate): ask for --tps"),
            "{kind:?}: {err}"
        );
        let err = run(server.addr, rr_spec(kind, request, response, Some(1000)))
            .unwrap_err()
            .to_string();
        assert!(err.contains("at 1000 transactions/s"), "{kind:?}: {err}");
    }
    // Within the limit: 10 transactions a second of 100 kB is 8 Mbit/s, and it runs.
    for kind in [TestKind::TcpRr, TestKind::TcpCrr, TestKind::UdpRr] {
        let response = if kind == TestKind::UdpRr {
            60_000
        } else {
            100_000
        };
        let record = run(server.addr, rr_spec(kind, 16, response, Some(10)));
        assert!(record.is_ok(), "{kind:?}: {record:?}");
    }
}

/// `serve --max-rate` holds every kind of the kind table by construction (issue 50): each kind
/// at its defaults (as fast as it goes) is refused naming the limit, and each paced well within
/// it (`sweep::load::paced`, the one way to pace a test of any kind) runs. A kind added to the
/// table is in this loop without a line here.
#[test]
fn every_kind_of_the_kind_table_is_held_to_the_rate_limit() {
    use ::sweep::load::{paced, LoadUnit};
    let server = limited_server();
    for row in wire::spec::KINDS {
        let spec = wire::TestSpec::new(Params::defaults(row.kind), 1, 500);
        let err = run(server.addr, spec.clone()).expect_err(row.name);
        let err = err.to_string();
        assert!(
            err.contains("10000000 bit/s (serve --max-rate)"),
            "{}: {err}",
            row.name
        );
        // 1 Mbit/s, or 100 transactions a second of 64 bytes each way (51 kbit/s).
        let total = match LoadUnit::of(row.kind) {
            LoadUnit::BitsPerS => 1e6,
            LoadUnit::TransactionsPerS => 100.0,
        };
        let record = run(server.addr, paced(&spec, total));
        assert!(record.is_ok(), "{}: {record:?}", row.name);
    }
}

#[test]
fn a_requester_flooding_a_paced_tcp_rr_test_gets_answers_no_faster_than_the_limit() {
    let server = limited_server();
    // Admitted: 12 transactions a second of 100,000-byte responses is 9.6 Mbit/s.
    let (response, per_sec) = (100_000usize, 12u64);
    let spec = rr_spec(TestKind::TcpRr, 1, response as u32, Some(per_sec));
    let (_ctrl, data) = begun(server.addr, spec);
    let mut writer = data.try_clone().unwrap();
    // Requests far faster than asked: 2,000 1-byte requests at once.
    let flood = std::thread::spawn(move || {
        let _ = writer.write_all(&[0u8; 2000]);
    });
    let mut reader = data;
    reader
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let started = Instant::now();
    let mut got = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    while started.elapsed() < Duration::from_secs(2) {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got += n as u64,
            Err(_) => {}
        }
    }
    let took = started.elapsed().as_secs_f64();
    let _ = reader.shutdown(std::net::Shutdown::Both);
    flood.join().unwrap();
    // At the limit for 2 s, plus the burst a paced requester may need (3 responses) and
    // one in flight: 24 + 4 responses; unpaced it would be the whole 200 MB.
    let allowed = (10_000_000.0 / 8.0 * took) as u64 + 4 * response as u64;
    assert!(
        got <= allowed,
        "{got} bytes in {took:.2} s against a limit allowing {allowed}"
    );
    assert!(got >= 10 * response as u64, "the test ran: {got} bytes");
}

/// `linerate ARGS` that must fail: its stderr.
fn failing_stderr(args: &[&str]) -> String {
    let out = linerate()
        .args(args)
        .stdin(Stdio::null())
        .env_remove("PGPASSWORD")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_database_password_never_prints_and_serve_refuses_one_in_its_argv() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let in_query = format!(
        "postgresql://u@127.0.0.1:{port}/db?password=hunter2&sslmode=disable&connect_timeout=2"
    );
    let in_user = format!("postgresql://u:hunter2@127.0.0.1:{port}/db?sslmode=disable");
    for url in [&in_query, &in_user] {
        let err = failing_stderr(&["runs", "--db", url]);
        assert!(!err.contains("hunter2"), "{err}");
        assert!(err.contains("***"), "{err}");
        let err = failing_stderr(&["serve", "--bind", "127.0.0.1", "-p", "0", "--db", url]);
        assert!(!err.contains("hunter2"), "{err}");
        assert!(
            err.contains("a password on serve's command line") && err.contains("PGPASSWORD"),
            "{err}"
        );
    }
}

#[test]
fn a_keys_file_that_is_a_link_or_open_to_others_is_refused_before_the_port_is_taken() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("keys");
    let secret = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    std::fs::write(&real, format!("alice {secret}\n")).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let serve = |keys: &std::path::Path| {
        let keys = keys.to_str().unwrap().to_string();
        failing_stderr(&[
            "serve",
            "--bind",
            "127.0.0.1",
            "-p",
            "0",
            "--auth-keys",
            &keys,
        ])
    };
    let err = serve(&link);
    assert!(err.contains("is a symbolic link"), "{err}");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    let err = serve(&real);
    assert!(err.contains("open to group or others"), "{err}");
    let err = serve(dir.path());
    assert!(err.contains("is a directory, not a regular file"), "{err}");
    // SAFETY: no arguments, cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::chown(&real, Some(65534), None).unwrap();
        let err = serve(&real);
        assert!(err.contains("is owned by user 65534"), "{err}");
    }
}
