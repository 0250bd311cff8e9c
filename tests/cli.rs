//! The binary end to end: flags, bad input named in one line, exit codes, Ctrl-C, JSON.

use super::*;

fn fails_with(args: &[&str], needle: &str) {
    let out = linerate().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
        "{stderr}"
    );
}

#[test]
fn bad_input_is_one_clear_error_with_exit_2() {
    fails_with(&["tcp", "-t", "-1"], "--time -1");
    fails_with(&["tcp", "-P", "0"], "--parallel 0");
    fails_with(&["tcp", "-l", "10X"], "--length 10X: unknown suffix 'X'");
    fails_with(&["tcp", "-w", "5"], "--window 5");
    fails_with(&["tcp", "-M", "20"], "--mss 20");
    fails_with(&["tcp", "--tos", "x"], "--tos x");
    fails_with(&["tcp", "--link-speed", "fast"], "--link-speed fast");
    fails_with(
        &["tcp", "-C", "no-such-algo", "-t", "1"],
        "--congestion no-such-algo: not available on this host; available:",
    );
    fails_with(
        &["tcp", "--unix", "/tmp/x.sock", "-M", "1000"],
        "--mss applies to TCP only",
    );
    fails_with(&["tcp", "--reverse", "--bidir"], "cannot be used with");
    fails_with(&["tcp", "-t", "abc"], "--time");
    fails_with(&["tcp", "-6", "127.0.0.1"], "no IPv6 (-6) address");
    fails_with(&["tcp", "127.0.0.1:99999"], "port '99999'");
    fails_with(&["frobnicate"], "unrecognized subcommand");
    fails_with(&["udp", "--pps", "0"], "--pps 0");
    fails_with(&["udp", "--rate", "10X"], "--rate 10X: unknown suffix 'X'");
    fails_with(&["udp", "-l", "8"], "--length 8");
    fails_with(&["udp", "--flows", "0"], "--flows 0");
    fails_with(&["rr", "-R"], "rr sends requests from the client");
    fails_with(&["rr", "--response", "0"], "--response 0");
    fails_with(&["rr", "-l", "0"], "--length 0");
    fails_with(&["rr", "--udp", "-l", "8"], "--length 8");
    fails_with(&["crr", "--udp"], "crr opens TCP connections");
    fails_with(&["rr", "-t", "2", "--omit", "3"], "--omit 3");
    fails_with(&["udp", "--flows-dst", "20000"], "--flows-dst 20000");
    fails_with(
        &["pps", "--frame", "40"],
        "--frame 40: Ethernet frames are at least 64 bytes",
    );
    fails_with(&["pps", "--frame", "64", "-6"], "--frame 64: too small");
    fails_with(
        &["udp", "--rate", "max", "--burst", "8"],
        "--burst: bursts pace a rate",
    );
    fails_with(&["serve", "--max-rate", "fast"], "--max-rate fast");
    fails_with(
        &["tcp", "--no-such-flag"],
        "unexpected argument '--no-such-flag'",
    );
}

/// A misspelt command or flag is named with the nearest one, on the one line.
#[test]
fn a_misspelt_command_or_flag_names_the_nearest() {
    for (args, line) in [
        (
            &["tcp", "--paralel", "2"][..],
            "unexpected argument '--paralel' found; did you mean --parallel?",
        ),
        (
            &["compare", "--formt", "json"],
            "unexpected argument '--formt' found; did you mean --format?",
        ),
        (
            &["sweep", "sizes"],
            "unrecognized subcommand 'sizes'; did you mean size?",
        ),
        // Two letters swapped, which clap's own measure leaves without a suggestion.
        (
            &["tpc", "198.18.0.2"],
            "unrecognized subcommand 'tpc'; did you mean tcp?",
        ),
    ] {
        fails_in_one_line(args, line);
    }
}

#[test]
fn refused_connection_says_what_to_do() {
    // Port 1 on loopback: nothing listens there.
    fails_with(
        &["tcp", "127.0.0.1", "-p", "1", "-t", "1"],
        "is `linerate serve` running there",
    );
}

#[test]
fn serve_port_in_use_is_a_clear_error() {
    let busy = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    fails_with(
        &["serve", "--bind", "0.0.0.0", "-p", &port],
        "cannot listen on port",
    );
}

#[test]
fn json_document_has_the_documented_fields() {
    let v = linerate_json(&["tcp", "-t", "1", "--json", "-P", "2"]);
    assert_eq!(v["kind"], "tcp_stream");
    assert!(v["spec"].is_object() && v["intervals"].is_array());
    let s = &v["summary"];
    for key in [
        "bytes_sent",
        "bytes_received",
        "duration_s",
        "throughput_bps",
        "local_cpu_pct",
        "remote_cpu_pct",
        "retransmits",
        "rtt_us",
    ] {
        assert!(!s[key].is_null(), "summary.{key} missing: {s}");
    }
    assert_eq!(s["flows"][0]["streams"].as_array().unwrap().len(), 2);
}

#[test]
fn table_output_shows_both_ends() {
    let out = linerate()
        .args(["tcp", "-t", "1", "--bidir", "-v"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "c->s",
        "s->c",
        "goodput",
        "TCP_INFO",
        "CPU local",
        "CPU remote",
        "in flight",
    ] {
        assert!(text.contains(needle), "missing '{needle}':\n{text}");
    }
    // The congestion control the connections ran: the host's default, as both ends read it.
    let default = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap();
    let line = format!("congestion {} (both hosts' default)", default.trim());
    assert!(text.contains(&line), "missing '{line}':\n{text}");
}

#[test]
fn unix_socket_in_process_and_external() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lr.sock");
    let p = path.to_str().unwrap();
    let v = linerate_json(&["tcp", "--unix", p, "-t", "1", "--json"]);
    assert_eq!(v["spec"]["params"]["stream"]["transport"], "unix");
    assert_eq!(v["summary"]["flows"][0]["reconciled"], true);
    // A Unix socket goes through no interface: the host facts have none.
    assert!(
        v["hosts"]["client"]["interface"].is_null(),
        "{}",
        v["hosts"]
    );
    assert!(
        v["hosts"]["client"]["hostname"].is_string(),
        "{}",
        v["hosts"]
    );
    assert!(!path.exists(), "in-process socket is removed");

    let mut server = linerate()
        .args(["serve", "--unix", p, "--one-off"])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !path.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(linerate_ok(&["tcp", "--unix", p, "-t", "1", "-R"]).contains("unix:"));
    assert!(
        server.wait().unwrap().success(),
        "one-off server exits after its test"
    );
}

#[test]
fn separate_server_process_one_off() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port().to_string()
    };
    let mut server = linerate()
        .args(["serve", "--bind", "127.0.0.1", "-p", &port, "--one-off"])
        .spawn()
        .unwrap();
    wait_listening("", port.parse().unwrap());
    linerate_ok(&["tcp", "127.0.0.1", "-p", &port, "-t", "1", "-R", "--json"]);
    let status = server.wait().unwrap();
    assert!(status.success());
}

#[test]
fn ctrl_c_prints_the_partial_summary() {
    let child = linerate()
        .args(["tcp", "-t", "30"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let start = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(8));
    assert_eq!(out.status.code(), Some(130));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("INTERRUPTED") && text.contains("goodput"),
        "{text}"
    );
}

#[test]
fn sixteen_streams_read_aggregate_first_then_spread_then_rows() {
    let text = linerate_ok(&["tcp", "-t", "1", "-P", "16", "-i", "0", "--no-store", "-v"]);
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing:\n{text}"))
    };
    // The aggregate, then how evenly the streams shared it, then the rows under a header.
    assert!(at("received ") < at("  streams    16: min "), "{text}");
    assert!(at("  streams    16: min ") < at("    #    "), "{text}");
    let rows = text
        .lines()
        .filter(|l| l.starts_with("    #") && !l.starts_with("    # "))
        .count();
    assert_eq!(rows, 16, "{text}");
    assert_eq!(text.matches("<- slowest").count(), 1, "{text}");

    let v = linerate_json(&["tcp", "-t", "1", "-P", "4", "--json"]);
    let f = &v["summary"]["flows"][0];
    let s = &f["stream_spread"];
    assert_eq!(s["streams"], 4, "{f}");
    let (min, med, max) = (
        s["min_bps"].as_f64().unwrap(),
        s["median_bps"].as_f64().unwrap(),
        s["max_bps"].as_f64().unwrap(),
    );
    assert!(0.0 < min && min <= med && med <= max, "{s}");
    let fair = s["fairness"].as_f64().unwrap();
    assert!((0.25..=1.0).contains(&fair), "{s}");
    // The per-stream byte counts add up to the direction's.
    let streams = f["streams"].as_array().unwrap();
    let sum: u64 = streams
        .iter()
        .map(|x| x["bytes_received"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, f["bytes_received"].as_u64().unwrap(), "{f}");
    let slowest = s["slowest"].as_u64().unwrap();
    let slow = streams.iter().find(|x| x["stream"] == slowest).unwrap();
    assert_eq!(slow["throughput_bps"].as_f64().unwrap(), min, "{f}");
}

#[test]
fn a_slowly_paced_tcp_test_drains_and_reconciles_promptly() {
    // 2 Mbit/s: without a cap on unsent bytes the sender would queue megabytes that take
    // tens of seconds to leave, so the drain would time out and the stream fail.
    let began = std::time::Instant::now();
    let v = linerate_json(&["tcp", "-t", "1", "-b", "2M", "--json"]);
    let f = &v["summary"]["flows"][0];
    assert_eq!(f["reconciled"], true, "{f}");
    assert!(f["streams"][0]["error"].is_null(), "{f}");
    assert!(
        began.elapsed() < std::time::Duration::from_secs(5),
        "took {:?}",
        began.elapsed()
    );
}
