//! linerate against the real iperf3 (Debian's, installed by scripts/test.sh): `tcp --iperf3`
//! against a stock `iperf3 -s`, whose own JSON says what it counted.

use super::*;
use std::process::{Child, Command, Stdio};

/// A one-test `iperf3 -s -1 -J` on loopback at `port`; its JSON is read when it exits.
pub(crate) struct Iperf3Server(Child);

impl Iperf3Server {
    pub(crate) fn start(port: u16) -> Option<Self> {
        let child = Command::new("iperf3")
            .args(["-s", "-1", "-J", "-B", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        match child {
            Ok(c) => {
                wait_listening("", port);
                Some(Self(c))
            }
            Err(_) => {
                skip::skip("iperf3 is not installed (scripts/test.sh installs it as root)");
                None
            }
        }
    }

    /// The server's JSON once its one test is over.
    pub(crate) fn report(mut self) -> serde_json::Value {
        let mut text = String::new();
        self.0
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        let _ = self.0.wait();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("iperf3 JSON: {e}: {text}"))
    }
}

impl Drop for Iperf3Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn client(port: u16, extra: &[&str]) -> serde_json::Value {
    let port = port.to_string();
    let mut args = vec![
        "tcp",
        "127.0.0.1",
        "--iperf3",
        "-p",
        &port,
        "-t",
        "1",
        "--json",
    ];
    args.extend(extra);
    linerate_json(&args)
}

pub(crate) fn flow<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["summary"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["flow"] == name)
        .unwrap_or_else(|| panic!("no {name} flow in {v}"))
}

pub(crate) fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn against_a_stock_iperf3_server_every_byte_count_matches_its_own() {
    for (port, mode) in [
        (15211, None),
        (15212, Some("-R")),
        (15213, Some("--bidir")),
        (15214, Some("-P")),
    ] {
        let Some(server) = Iperf3Server::start(port) else {
            return;
        };
        let extra: Vec<&str> = match mode {
            Some("-P") => vec!["-P", "2"],
            Some(m) => vec![m],
            None => vec![],
        };
        let v = client(port, &extra);
        let s = server.report();
        let end = &s["end"];
        eprintln!("{mode:?}: iperf3 server end: {}", end["sum_received"]);
        if mode != Some("-R") {
            // The iperf3 server's count of what it received is the receiver's count here.
            let c2s = flow(&v, "client_to_server");
            let received = u(&end["sum_received"]["bytes"]);
            assert_eq!(u(&c2s["bytes_received"]), received, "{mode:?}");
            assert!(u(&c2s["bytes_sent"]) >= received);
            assert!(
                c2s["streams"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|s| s["error"].is_null()),
                "{c2s}"
            );
        }
        if matches!(mode, Some("-R") | Some("--bidir")) {
            // What the iperf3 server sent, linerate received, every byte after the drain.
            let s2c = flow(&v, "server_to_client");
            let sent = if mode == Some("--bidir") {
                u(&end["sum_sent_bidir_reverse"]["bytes"])
            } else {
                u(&end["sum_sent"]["bytes"])
            };
            assert_eq!(u(&s2c["bytes_sent"]), sent, "{mode:?}");
            assert_eq!(s2c["reconciled"], true, "{s2c}");
        }
        assert_eq!(v["server"]["version"], "iperf3");
    }
}

#[test]
fn a_busy_or_absent_iperf3_server_is_one_clear_line() {
    let Some(_server) = Iperf3Server::start(15215) else {
        return;
    };
    // The first test holds the one-test server; a second meanwhile is refused.
    let first = std::thread::spawn(|| {
        linerate()
            .args(["tcp", "127.0.0.1", "--iperf3", "-p", "15215", "-t", "2"])
            .output()
            .unwrap()
    });
    std::thread::sleep(Duration::from_millis(500));
    fails_in_one_line(
        &["tcp", "127.0.0.1", "--iperf3", "-p", "15215", "-t", "1"],
        "the iperf3 server is busy with another test",
    );
    assert!(first.join().unwrap().status.success());
    fails_in_one_line(
        &["tcp", "127.0.0.1", "--iperf3", "-p", "15216", "-t", "1"],
        "is `iperf3 -s` running there",
    );
    fails_in_one_line(
        &["rr", "127.0.0.1", "--iperf3"],
        "unexpected argument '--iperf3'",
    );
}

/// A linerate client at a stock iperf3 server without `--iperf3` hears nothing (the server
/// waits for the cookie an iperf3 client sends first): a second in, a note says what such a
/// silence may be and names `--iperf3` (the client waits on: a loaded linerate server may be
/// slow to greet); the handshake's error, once its 10 s are up, says it again.
#[test]
fn a_linerate_client_at_a_stock_iperf3_server_is_pointed_to_iperf3() {
    use std::io::BufRead;
    let Some(_server) = Iperf3Server::start(15217) else {
        return;
    };
    let started = std::time::Instant::now();
    let mut child = linerate()
        .args(["tcp", "127.0.0.1", "-p", "15217", "-t", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines: Vec<(std::time::Duration, String)> =
        std::io::BufReader::new(child.stderr.take().unwrap())
            .lines()
            .map(|l| (started.elapsed(), l.unwrap()))
            .collect();
    assert_eq!(child.wait().unwrap().code(), Some(2), "{lines:?}");
    let [(noted, note), (failed, error)] = &lines[..] else {
        panic!("a note, then the error: {lines:?}");
    };
    assert!(
        note.contains("has sent nothing 1 s after the connection opened")
            && note.contains("add --iperf3"),
        "{note}"
    );
    // The note comes one second after the connection opened, the error ten: the process's
    // own start is the rest (well under the 9 s between them, however loaded the host).
    assert!(
        *noted < *failed - std::time::Duration::from_secs(5),
        "{lines:?}"
    );
    assert!(
        error.contains(
            "peer sent nothing for 10s: a linerate server greets at once; an iperf3 server \
             (`iperf3 -s`) waits like this (add --iperf3 to talk to one)"
        ),
        "{error}"
    );
}

/// `iperf3 -c` against the server at `port` with `args`; its JSON, or `None` without iperf3.
pub(crate) fn iperf3_client(port: u16, args: &[&str]) -> Option<(bool, serde_json::Value, String)> {
    let out = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port.to_string(), "-J"])
        .args(args)
        .output();
    let Ok(out) = out else {
        skip::skip("iperf3 is not installed (scripts/test.sh installs it as root)");
        return None;
    };
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let json = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
    Some((out.status.success(), json, text))
}

/// The bytes the server's log says it received and sent in its iperf3 tests, in order.
pub(crate) fn logged_bytes(server: &TestServer) -> Vec<(u64, u64)> {
    let count = |rest: &str, word: &str| -> Option<u64> {
        rest.split(word).nth(1)?.split(' ').next()?.parse().ok()
    };
    server
        .log_text()
        .lines()
        .filter_map(|l| l.split("test done: ").nth(1))
        .filter_map(|rest| rest.rsplit(" (").next())
        .filter_map(|rest| Some((count(rest, "received ")?, count(rest, "sent ")?)))
        .collect()
}

/// The server's log line of its `n`th iperf3 test (from 0), waiting for it: the client may exit
/// before the server has logged its test.
pub(crate) fn logged_test(server: &TestServer, n: usize) -> (u64, u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while logged_bytes(server).len() <= n && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let logged = logged_bytes(server);
    *logged
        .get(n)
        .unwrap_or_else(|| panic!("no test {n} in the log: {logged:?}"))
}

#[test]
fn stock_iperf3_clients_run_their_tests_at_linerate_serve() {
    let server = test_server();
    let port = server.addr.port();
    for (i, mode) in [&[][..], &["-R"], &["--bidir"], &["-P", "2"]]
        .iter()
        .enumerate()
    {
        let mut args = vec!["-t", "1"];
        args.extend_from_slice(mode);
        let Some((ok, v, text)) = iperf3_client(port, &args) else {
            return;
        };
        assert!(ok, "{mode:?}: {text}");
        let end = &v["end"];
        let received = u(&end["sum_received"]["bytes"]);
        let sent = u(&end["sum_sent"]["bytes"]);
        assert!(received > 0 && sent >= received, "{mode:?}: {end}");
        let (server_received, server_sent) = logged_test(&server, i);
        if mode.first() == Some(&"-R") {
            // What iperf3 prints as the sender's bytes is what this server wrote, every write
            // counted whole (the server's senders stop by its clock, and then report).
            assert_eq!(server_sent, sent, "{mode:?}: {end}");
        } else {
            // What iperf3 prints as the receiver's bytes is what this server counted.
            assert_eq!(server_received, received, "{mode:?}: {end}");
        }
    }
    // A linerate client right after still works.
    assert!(run(server.addr, spec(Direction::Send, 1, 300)).is_ok());
}

#[test]
fn two_iperf3_clients_and_a_linerate_client_at_once_all_complete() {
    let server = test_server();
    let port = server.addr.port();
    let iperf3s: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(move || iperf3_client(port, &["-t", "2"])))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let ours = run(server.addr, spec(Direction::Send, 1, 1000));
    for t in iperf3s {
        let Some((ok, _, text)) = t.join().unwrap() else {
            return;
        };
        assert!(ok, "{text}");
    }
    assert!(ours.is_ok(), "{ours:?}");
}

#[test]
fn what_linerate_serve_does_not_run_is_iperf3s_error_and_the_server_goes_on() {
    let server = test_server();
    let port = server.addr.port();
    // (iperf3 3.12 exits 0 after printing an error in JSON mode: its words are the test.) A
    // congestion control this host lacks: iperf3's client sets it only on its data sockets, after
    // the server took its parameters.
    let Some((_, v, text)) = iperf3_client(port, &["-C", "nosuchcc", "-t", "1"]) else {
        return;
    };
    assert!(
        v["error"]
            .as_str()
            .unwrap_or("")
            .contains("not implemented yet"),
        "{text}"
    );
    wait_for_log(&server, "nosuchcc");
    assert!(run(server.addr, spec(Direction::Send, 1, 300)).is_ok());
}

#[test]
fn iperf3_cookies_that_say_nothing_more_cost_no_threads() {
    let (server, port) = crate::proc::serve_child(&[]);
    let pid = server.0.id();
    let base = crate::proc::threads(pid);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    // Each opens like an iperf3 client (a cookie of its own), then never sends parameters.
    let silent: Vec<TcpStream> = (0..200u32)
        .filter_map(|i| {
            let mut c = TcpStream::connect(addr).ok()?;
            let mut cookie = [b'a'; 37];
            for (k, d) in format!("{i:08}").bytes().enumerate() {
                cookie[k] = b'a' + (d - b'0');
            }
            cookie[36] = 0;
            c.write_all(&cookie).ok()?;
            Some(c)
        })
        .collect();
    // Each is asked for its parameters, in the gate.
    for mut c in silent.iter().take(3) {
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut state = [0u8; 1];
        c.read_exact(&mut state).unwrap();
        assert_eq!(state[0], 9, "PARAM_EXCHANGE");
    }
    let during = crate::proc::threads(pid);
    assert!(
        during <= base + 2,
        "200 silent iperf3 openings grew the server from {base} to {during} threads"
    );
    drop(silent);
}

/// Goodput against a rate needs both ends on time: run alone (`quiet::`).
mod quiet {
    use super::*;

    #[test]
    fn an_iperf3_clients_rate_paces_the_servers_senders() {
        // iperf3 -R -b: this server sends, paced at the client's rate (before, its data
        // connections were left without the test's socket options, and it sent unpaced).
        let server = test_server();
        let Some((ok, v, text)) =
            iperf3_client(server.addr.port(), &["-t", "2", "-R", "-b", "50M"])
        else {
            return;
        };
        assert!(ok, "{text}");
        let bps = v["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap();
        assert!(
            (40e6..=60e6).contains(&bps),
            "{bps} bit/s received of 50 Mbit/s asked for"
        );
    }
}
