//! A test by amount (`-n BYTES`, `-k BLOCKS` on `tcp` and `udp`): each way moves exactly it,
//! over all its streams, and the run ends once it has; against a stock iperf3 server its own
//! count is the ground truth.

use super::*;
use crate::iperf3::{flow, u, Iperf3Server};

/// A run on loopback with an in-process server, by amount.
fn run(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend(["--json", "--no-store", "-i", "0"]);
    linerate_json(&all)
}

#[test]
fn tcp_moves_exactly_the_bytes_each_way_over_every_stream_and_ends() {
    let cases: [(&[&str], u64); 3] = [
        // Not a whole number of 128 KiB writes: the last one is cut to what is left.
        (&["tcp", "-n", "5000000", "-l", "128K"], 5_000_000),
        (&["tcp", "-n", "5M", "-R", "-P", "3"], 5 << 20),
        (
            &["tcp", "--bidir", "-k", "10", "-l", "100K", "-P", "2"],
            10 * 100 * 1024,
        ),
    ];
    for (args, bytes) in cases {
        let v = run(args);
        assert_eq!(
            v["spec"]["amount"].as_object().map(|o| o.len()),
            Some(1),
            "{args:?}"
        );
        for f in v["summary"]["flows"].as_array().unwrap() {
            assert_eq!(u(&f["bytes_sent"]), bytes, "{args:?}: {f}");
            assert_eq!(u(&f["bytes_received"]), bytes, "{args:?}: {f}");
        }
        // It ended once the amount had arrived, long before the 24 h it was allowed.
        let secs = v["summary"]["duration_s"].as_f64().unwrap();
        assert!(secs < 30.0, "{args:?}: {secs} s");
    }
}

#[test]
fn udp_moves_whole_datagrams_and_the_summary_says_how_long_it_took() {
    // 1 MiB in 1000-byte datagrams: 1049 of them, the last one whole.
    let v = run(&["udp", "-n", "1M", "-l", "1000", "-b", "200M", "-R"]);
    let f = flow(&v, "server_to_client");
    assert_eq!(u(&f["bytes_sent"]), 1049 * 1000, "{f}");
    let v = run(&["udp", "-k", "2000", "-b", "100M", "-P", "2"]);
    let f = flow(&v, "client_to_server");
    assert_eq!(u(&f["bytes_sent"]), 2000 * 1472, "{f}");
    // 2000 datagrams of 1472 bytes at 100 Mbit/s a stream, two streams: 0.118 s of sending.
    let secs = v["summary"]["duration_s"].as_f64().unwrap();
    assert!((0.11..10.0).contains(&secs), "{secs} s");
    let text = linerate_ok(&["udp", "-k", "100", "-b", "100M", "--no-store"]);
    assert!(text.contains("100 datagrams in "), "{text}");
}

#[test]
fn against_a_stock_iperf3_server_the_record_holds_its_count_of_the_amount() {
    let port = 15219;
    let Some(server) = Iperf3Server::start(port) else {
        return;
    };
    let p = port.to_string();
    let args = ["tcp", "127.0.0.1", "--iperf3", "-p", &p, "-n", "3M"];
    let v = run(&args);
    let ours = flow(&v, "client_to_server");
    assert_eq!(u(&ours["bytes_sent"]), 3 << 20, "{ours}");
    // iperf3's server counts what it read by the client's TEST_END, which comes once the amount
    // is written (as from iperf3's own client): the record's received bytes are that count.
    let theirs = server.report();
    let received = u(&theirs["end"]["sum_received"]["bytes"]);
    assert_eq!(u(&ours["bytes_received"]), received, "{theirs}");
    assert!(received <= 3 << 20, "{theirs}");
}

#[test]
fn what_cannot_run_by_amount_says_so_in_one_line() {
    fails_in_one_line(
        &["tcp", "-n", "1M", "-O", "1"],
        "--omit with -n or -k: the amount is the whole test",
    );
    fails_in_one_line(&["tcp", "-n", "0"], "an amount (-n, -k) of 0");
    fails_in_one_line(
        &["udp", "-k", "10", "--engine", "packet"],
        "does not run by amount",
    );
    fails_in_one_line(&["tcp", "-n", "1M", "-k", "1"], "cannot be used with");
}
