//! iperf3's own release checklist (`test_commands.sh` in esnet/iperf: the commands its
//! maintainers run against a server before each release), run with the stock iperf3 client
//! against `linerate serve`: every command this client can run here passes, and a test by
//! amount (`-n`, `-k`) moves what iperf3 itself counts.

use super::*;
use crate::iperf3::u;
use std::process::Command;

/// The checklist in its order, each command's words after `iperf3 -c HOST`. Its `-t 5` is
/// `-t 1` here, and the commands without a time get one, so the list takes seconds, not
/// minutes: the options are what it checks.
const CHECKLIST: [&str; 34] = [
    "-V -t 1 -T test1",
    "-u -V -t 1",
    "-i .3 -O 2 -t 1",
    "-i 1 -J -t 1",
    "-4 -t 1",
    "-4 -u -t 1",
    "-6 -t 1",
    "-6 -u -t 1",
    "-V -t 1 --fq-rate 5m",
    "-u -V -t 1 --fq-rate 5m",
    "--sctp -V -t 1",
    "-P 3 -t 1",
    "-u -P 3 -t 1",
    "-P 2 -t 1 -R",
    "-u -P 2 -t 1 -R",
    "-P 2 -t 1 --bidir",
    "-u -P 2 -t 1 --bidir",
    "-Z -t 1",
    "-Z -t 1 -R",
    "-t 1 -w 8M",
    "-n 5M",
    "-n 5M -u -b1G",
    "-n 5M -R",
    "-n 5M -u -b1G -R",
    "-n 5M -t 1",
    "-k 1K",
    "-k 1K -u -b1G",
    "-k 1K -R",
    "-k 1K -u -b1G -R",
    "-A 2/2 -t 1",
    "-A 2/2 -u -b1G -t 1",
    "-u -b1G/100 -t 1",
    "-C reno -V -t 1",
    "-M 1000 -V -t 1",
];

/// Why the client cannot run `command` here, if it cannot: each fails in the client itself,
/// whatever the server.
fn client_cannot(command: &str) -> Option<&'static str> {
    if command.starts_with("--sctp") && !std::path::Path::new("/proc/sys/net/sctp").exists() {
        return Some("this kernel has no SCTP");
    }
    if command.starts_with("-A 2/2") && engine::affinity::online_cpus() < 3 {
        return Some("there is no CPU 2 on this host");
    }
    // iperf3 refuses -n beside -t ("only one test end condition").
    (command == "-n 5M -t 1").then_some("iperf3 takes one end condition")
}

/// Runs `command` with the stock client against the server at `port` (IPv6 loopback for
/// `-6`): its exit status, its JSON and its text.
fn iperf3(port: u16, command: &str) -> (bool, serde_json::Value, String) {
    let host = if command.starts_with("-6") {
        "::1"
    } else {
        "127.0.0.1"
    };
    let mut words: Vec<&str> = command.split_whitespace().collect();
    // One JSON document per command, read the same way for each.
    words.retain(|w| *w != "-J");
    let out = Command::new("iperf3")
        .args(["-c", host, "-p", &port.to_string(), "-J"])
        .args(&words)
        .output()
        .expect("iperf3 runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    // `-V` prints a line or two before the JSON.
    let doc = text.find('{').map_or("", |at| &text[at..]);
    let json = serde_json::from_str(doc).unwrap_or(serde_json::Value::Null);
    (out.status.success(), json, text)
}

#[test]
fn iperf3s_release_checklist_passes_against_linerate_serve() {
    if Command::new("iperf3").arg("--version").output().is_err() {
        return skip::skip("iperf3 is not installed (scripts/test.sh installs it as root)");
    }
    let (mut server, port) = crate::proc::serve_child_at("::", &[]);
    let mut failed = Vec::new();
    // One command at a time: the server runs several at once, but each UDP command asks for
    // a gigabit, and two of them on this host's two cores would measure each other.
    for command in CHECKLIST {
        let (ok, json, text) = iperf3(port, command);
        let error = json["error"].as_str().unwrap_or_default().to_string();
        match client_cannot(command) {
            // (iperf3 3.12 exits 0 after printing an error in JSON mode: its words decide.)
            Some(why) => assert!(!ok || !error.is_empty(), "{command} ran ({why}?): {text}"),
            None if !ok || !error.is_empty() || json.is_null() => failed.push(format!(
                "{command}: {error}{}",
                &text[..text.len().min(300)]
            )),
            None => {}
        }
    }
    assert!(failed.is_empty(), "failed:\n{}", failed.join("\n"));
    assert!(server.0.try_wait().unwrap().is_none(), "the server ended");
}

#[test]
fn by_amount_the_server_counts_what_iperf3_sent_and_sends_what_it_reads() {
    if Command::new("iperf3").arg("--version").output().is_err() {
        return skip::skip("iperf3 is not installed (scripts/test.sh installs it as root)");
    }
    let server = test_server();
    let port = server.addr.port();
    let amount = 5u64 << 20;
    // The client sends: iperf3 writes 128 KiB blocks until it has written 5 MiB, exactly 40
    // of them, and this server's count of what arrived is iperf3's sent bytes.
    let (ok, v, text) = iperf3(port, "-n 5M");
    assert!(ok && v["error"].is_null(), "{text}");
    let sent = u(&v["end"]["sum_sent"]["bytes"]);
    assert_eq!(sent, amount, "{text}");
    let (received, _) = crate::iperf3::logged_test(&server, 0);
    assert_eq!(received, sent, "{text}");
    // -k 1K: 1024 datagrams of iperf3's UDP length, every one counted by both.
    let (ok, v, text) = iperf3(port, "-k 1K -u -b1G");
    assert!(ok && v["error"].is_null(), "{text}");
    let packets = u(&v["end"]["sum"]["packets"]);
    assert_eq!(packets, 1024, "{text}");
    // The server sends: iperf3 ends the test once it has read the amount, and read at least it.
    let (ok, v, text) = iperf3(port, "-n 5M -R");
    assert!(ok && v["error"].is_null(), "{text}");
    assert!(u(&v["end"]["sum_received"]["bytes"]) >= amount, "{text}");
    let (_, server_sent) = crate::iperf3::logged_test(&server, 2);
    assert_eq!(server_sent, u(&v["end"]["sum_sent"]["bytes"]), "{text}");
}
