//! Faults: a server killed mid-test, clients killed mid-test, and a path that goes black. Each
//! ends in bounded time with a clear outcome, and the server goes on serving others.

use super::*;
use crate::proc::{back_to_baseline, fds, serve_child, threads};
use std::process::{Child, Command, Stdio};

/// Waits at most `within` for `child` to exit; kills it and panics past that.
fn wait_exit(mut child: Child, within: Duration, what: &str) -> std::process::Output {
    let deadline = Instant::now() + within;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} still running after {within:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn client(args: &[&str], port: u16, db: &std::path::Path) -> Child {
    linerate()
        .args(args)
        .args(["127.0.0.1", "-p", &port.to_string(), "--json", "--db"])
        .arg(db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_server_killed_mid_test_leaves_a_printed_and_stored_incomplete_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let kinds: [&[&str]; 4] = [
        &["tcp", "-t", "20"],
        &["tcp", "-t", "20", "-R"],
        &["udp", "-t", "20", "-b", "20M"],
        &["rr", "-t", "20"],
    ];
    for kind in kinds {
        let (mut server, port) = serve_child(&[]);
        let c = client(kind, port, &db);
        std::thread::sleep(Duration::from_millis(1500));
        server.0.kill().unwrap();
        let killed = Instant::now();
        let out = wait_exit(c, Duration::from_secs(15), "the client");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{kind:?}: {stderr}");
        let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let why = record["summary"]["incomplete"].as_str().unwrap_or_default();
        assert!(
            why.contains("the server went away mid-test"),
            "{kind:?}: {record}"
        );
        assert!(
            record["summary"]["duration_s"].as_f64().unwrap() < 5.0,
            "{kind:?}: the client's window ended when the server went"
        );
        assert!(stderr.contains("stored as"), "{kind:?}: {stderr}");
        println!(
            "{kind:?}: client ended {:?} after the kill: {why}",
            killed.elapsed()
        );
    }
    let runs = linerate_json(&["runs", "--json", "--db", db.to_str().unwrap()]);
    assert_eq!(runs.as_array().unwrap().len(), kinds.len(), "{runs}");
}

#[test]
fn clients_killed_mid_test_free_their_sessions_and_others_go_on() {
    let (server, port) = serve_child(&[]);
    let pid = server.0.id();
    let base = (threads(pid), fds(pid));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let kinds: [&[&str]; 8] = [
        &["tcp", "-t", "30"],
        &["tcp", "-t", "30", "-R"],
        &["tcp", "-t", "30", "--bidir", "-P", "2"],
        &["udp", "-t", "30", "-b", "20M"],
        &["udp", "-t", "30", "-b", "20M", "-R"],
        &["rr", "-t", "30"],
        &["rr", "-t", "30", "--udp"],
        &["crr", "-t", "30"],
    ];
    let victims: Vec<Child> = kinds.iter().map(|k| client(k, port, &db)).collect();
    std::thread::sleep(Duration::from_millis(1500));
    let bystander = client(&["tcp", "-t", "3", "-b", "100M"], port, &db);
    std::thread::sleep(Duration::from_millis(500));
    for mut v in victims {
        v.kill().unwrap();
        let _ = v.wait();
    }
    let out = wait_exit(bystander, Duration::from_secs(20), "the bystander");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each session ends when its control connection closes; stragglers within the drain
    // timeout (10 s).
    let after = back_to_baseline(pid, base, Duration::from_secs(15));
    assert_eq!(after, base, "threads and descriptors back at the baseline");
}

/// Namespace `ns` drops every packet from now on (its own nft table, removed with the
/// namespace).
fn black_hole(ns: &str) {
    sh(&format!(
        "ip netns exec {ns} nft 'add table inet lrblack; \
         add chain inet lrblack in {{ type filter hook input priority 0; policy drop; }}; \
         add chain inet lrblack out {{ type filter hook output priority 0; policy drop; }}'"
    ));
}

#[test]
fn a_path_gone_black_ends_both_sides_in_bounded_time() {
    if !can_use_netns() {
        return;
    }
    if !std::process::Command::new("nft")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return skip("nft (nftables) is not installed");
    }
    let pair = VethPair::new("blk");
    let server = pair.serve();
    let pid = server.0.id();
    let base = (threads(pid), fds(pid));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let c = Command::new("ip")
        .args(["netns", "exec", &pair.a, env!("CARGO_BIN_EXE_linerate")])
        .args(["tcp", "198.18.0.2", "-t", "60", "--json", "--db"])
        .arg(&db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    black_hole(&pair.a);
    let dark = Instant::now();
    // Documented bound: the next poll (one interval) waits 10 s for its answer, then the
    // client's streams get 2 s to end (and 2 s more once aborted).
    let out = wait_exit(c, Duration::from_secs(20), "the client behind a black hole");
    let client_took = dark.elapsed();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        record["summary"]["incomplete"]
            .as_str()
            .unwrap_or_default()
            .contains("went away"),
        "{record}"
    );
    // The server: its client silent for an interval plus 10 s, then the drain timeout.
    let after = back_to_baseline(pid, base, Duration::from_secs(25));
    println!(
        "black hole: client ended after {client_took:?}, server back to {after:?} after {:?}",
        dark.elapsed()
    );
    assert_eq!(
        after, base,
        "server threads and descriptors back at the baseline"
    );
}

/// Issue 35: a run whose server was killed keeps what was measured. The server's counts come
/// from its last answered poll (marked "up to" its time), the client's own run to its end,
/// the client's data threads' CPU is counted though its stream failed, and the reason is said
/// once.
#[test]
fn a_server_killed_mid_run_leaves_its_last_polled_counts_marked_up_to_then() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let db_arg = db.to_str().unwrap();
    let (mut server, port) = serve_child(&[]);
    let c = linerate()
        .args([
            "tcp",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "3",
            "--db",
            db_arg,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // After the first interval's poll (at 1 s) was answered.
    std::thread::sleep(Duration::from_millis(1400));
    server.0.kill().unwrap();
    let out = wait_exit(c, Duration::from_secs(15), "the client");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(3), "{printed}");
    assert!(printed.matches("went away").count() <= 1, "{printed}");
    let stored = linerate_json(&["show", "1", "--json", "--db", db_arg]);
    let r = &stored["record"];
    let s = &r["summary"];
    let up_to = s["server_figures_up_to_s"].as_f64().unwrap();
    assert!((0.9..2.0).contains(&up_to), "{s}");
    // The server's count at its last poll is what the live rows showed up to then.
    let polled: u64 = r["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["end_s"].as_f64().unwrap() <= up_to + 1e-3)
        .map(|i| i["flows"][0]["receiver_bytes"].as_u64().unwrap())
        .sum();
    let received = s["bytes_received"].as_u64().unwrap();
    assert!(
        received > 0 && received == polled,
        "{received} vs {polled}: {s}"
    );
    let f = &s["flows"][0];
    assert!(f["sender_cpu_pct"].as_f64().unwrap() > 0.0, "{f}");
    assert!(s["local_cpu_pct"].as_f64().unwrap() > 0.0, "{s}");
    assert!(f["throughput_bps"].as_f64().unwrap() > 0.0, "{f}");
    // The full report: the mark, and the reason once.
    let shown = linerate_ok(&["show", "1", "--db", db_arg]);
    assert!(shown.contains("the server's figures up to"), "{shown}");
    assert_eq!(shown.matches("went away").count(), 1, "{shown}");
    println!("killed at 1.4 s: {received} bytes received up to {up_to:.2} s");
}
