//! iperf3 peers that misbehave, and iperf3's text output: a client that sends garbage for its
//! parameters or goes away mid-exchange gets a clear end and the server goes on; runs against a
//! stock iperf3 server are tagged as such in the store.

use super::iperf3::{iperf3_client, Iperf3Server};
use super::*;
use std::process::Command;

/// A control connection that opens like iperf3's (cookie `letter`…) and has been asked for its
/// parameters.
fn asked_for_parameters(addr: std::net::SocketAddr, letter: u8) -> TcpStream {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut cookie = [letter; 37];
    cookie[36] = 0;
    c.write_all(&cookie).unwrap();
    let mut state = [0u8; 1];
    c.read_exact(&mut state).unwrap();
    assert_eq!(state[0], 9, "PARAM_EXCHANGE");
    c
}

fn json_frame(text: &str) -> Vec<u8> {
    let mut f = (text.len() as u32).to_be_bytes().to_vec();
    f.extend_from_slice(text.as_bytes());
    f
}

#[test]
fn garbage_parameters_get_iperf3s_error_and_the_server_goes_on() {
    let server = test_server();
    let mut c = asked_for_parameters(server.addr, b'g');
    c.write_all(&json_frame("{this is not json")).unwrap();
    let mut answer = [0u8; 9];
    c.read_exact(&mut answer).unwrap();
    assert_eq!(answer[0] as i8, -2, "SERVER_ERROR");
    assert_eq!(i32::from_be_bytes(answer[1..5].try_into().unwrap()), 114);
    wait_for_log(&server, "its parameters");
    assert!(run(server.addr, spec(Direction::Send, 1, 300)).is_ok());
}

#[test]
fn a_time_and_omit_past_any_clock_are_refused_as_too_long() {
    let server = test_server();
    let mut c = asked_for_parameters(server.addr, b'h');
    // 10 + 2^63 wraps to 10 in 64 bits: it must not pass --max-time as a 10 s test.
    c.write_all(&json_frame(
        r#"{"tcp":true,"time":10,"omit":9223372036854775808,"parallel":1}"#,
    ))
    .unwrap();
    let mut answer = [0u8; 9];
    c.read_exact(&mut answer).unwrap();
    assert_eq!(answer[0] as i8, -2, "SERVER_ERROR");
    assert_eq!(i32::from_be_bytes(answer[1..5].try_into().unwrap()), 37);
    assert!(run(server.addr, spec(Direction::Send, 1, 300)).is_ok());
}

#[test]
fn a_client_that_goes_away_mid_exchange_frees_its_slot() {
    let server = TestServer::start(ServerConfig {
        max_sessions: 1,
        setup_timeout: Duration::from_millis(500),
        ..ServerConfig::default()
    });
    for (letter, params, ended) in [
        (
            b'a',
            r#"{"tcp":true,"time":1,"parallel":1}"#,
            "0 of 1 data connections came in time",
        ),
        (
            b'b',
            r#"{"udp":true,"time":1,"parallel":1,"len":1000}"#,
            "0 of 1 UDP streams came in time",
        ),
    ] {
        let mut c = asked_for_parameters(server.addr, letter);
        c.write_all(&json_frame(params)).unwrap();
        let mut state = [0u8; 1];
        c.read_exact(&mut state).unwrap();
        assert_eq!(state[0], 10, "CREATE_STREAMS");
        // Gone before opening a single stream: the test ends at its setup deadline, and its
        // slot (the server's only one) is free for the next.
        drop(c);
        wait_for_log(&server, ended);
    }
    // The one slot is free again: a linerate test runs.
    assert!(run(server.addr, spec(Direction::Send, 1, 300)).is_ok());
}

#[test]
fn iperf3s_own_text_output_reads_linerate_serves_figures() {
    let server = test_server();
    let port = server.addr.port().to_string();
    let modes: [&[&str]; 6] = [
        &[],
        &["-R"],
        &["--bidir", "-P", "2"],
        &["-u", "-b", "20M"],
        &["-u", "-b", "20M", "-R"],
        &["-u", "-b", "20M", "--bidir"],
    ];
    for extra in modes {
        let out = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port, "-t", "1"])
            .args(extra)
            .output();
        let Ok(out) = out else {
            return skip::skip("iperf3 is not installed (scripts/test.sh installs it as root)");
        };
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{extra:?}: {text}");
        assert!(
            text.contains("sender") && text.contains("receiver") && text.contains("iperf Done"),
            "{extra:?}: {text}"
        );
    }
    let _ = iperf3_client;
}

#[test]
fn runs_against_a_stock_iperf3_server_are_tagged_so() {
    let Some(_server) = Iperf3Server::start(15231) else {
        return;
    };
    let db = std::env::temp_dir().join(format!("lr-i3-tag-{}.sqlite", std::process::id()));
    let db_text = db.to_str().unwrap();
    linerate_ok(&[
        "udp",
        "127.0.0.1",
        "--iperf3",
        "-p",
        "15231",
        "-t",
        "1",
        "--db",
        db_text,
    ]);
    let listed = linerate_ok(&["runs", "--db", db_text, "--tag", "server=iperf3", "--json"]);
    let _ = std::fs::remove_file(&db);
    let runs: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{listed}");
}
