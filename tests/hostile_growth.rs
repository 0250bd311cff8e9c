//! Issue 48, row 3 (and row 1's memory): what a test holds grows with neither its time nor
//! its streams. Every producer of a run's intervals (the client's measuring loop, so a
//! relay's too; a relayed test's controller; the iperf3 server's rows) keeps them in
//! `analysis::BoundedIntervals`, at most `record::bounds::MAX_INTERVALS`; a longer run merges
//! adjacent pairs (docs/RESULTS.md, "At most 1,024 intervals").
//!
//! The bound itself is held where its ground truth is arithmetic: the container's unit tests
//! in crates/analysis (more inputs than the bound, totals exact, the widest record under the
//! store's limit), and each producer's wiring with a small bound and many more ticks than it
//! (`session::client::measure`'s and `iperf3::server::rows`'s unit tests): a run of 1,024
//! intervals at the shortest interval (50 ms) lasts 51 s, too long here. These tests hold a
//! hostile relay that sends a controller twice the bound (it keeps the bound, every byte in
//! it), and the other side: a real run below the bound stores every interval as it happened,
//! and they add up to its summary.

use super::*;
use session::relay::RelayMsg;

/// The stored runs in `db` with `tag` (`None`: all), once there are `n` (the server stores an
/// iperf3 client's run once its streams have drained, maybe after the client exited).
fn stored(db: &str, tag: Option<&str>, n: usize) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut args = vec!["runs", "--db", db, "--json"];
        args.extend(tag.iter().flat_map(|t| ["--tag", t]));
        let rows = linerate_json(&args).as_array().cloned().unwrap_or_default();
        if rows.len() >= n || Instant::now() > deadline {
            return (rows.iter())
                .map(|r| {
                    let id = r["id"].as_i64().unwrap().to_string();
                    linerate_json(&["show", &id, "--db", db, "--json"])["record"].clone()
                })
                .collect();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `record`'s intervals, checked to run from 0 without gaps, each flow's receivers' bytes
/// (and with `senders`, its senders') adding up to its summary's; how many there are.
fn intervals_add_up(record: &serde_json::Value, streams: usize, senders: bool) -> usize {
    let intervals = record["intervals"].as_array().unwrap();
    assert_eq!(num(&intervals[0]["start_s"]), 0.0);
    for w in intervals.windows(2) {
        assert_eq!(w[0]["end_s"], w[1]["start_s"], "no gap");
    }
    for (i, flow) in record["summary"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let sum = |key: &str| -> u64 {
            (intervals.iter())
                .map(|s| s["flows"][i][key].as_u64().unwrap())
                .sum()
        };
        assert_eq!(
            sum("receiver_bytes"),
            flow["bytes_received"].as_u64().unwrap()
        );
        if senders {
            assert_eq!(sum("sender_bytes"), flow["bytes_sent"].as_u64().unwrap());
        }
        for s in intervals {
            let per_stream = s["flows"][i]["stream_receiver_bytes"].as_array().unwrap();
            assert_eq!(per_stream.len(), streams);
        }
    }
    intervals.len()
}

#[test]
fn a_short_runs_stored_record_keeps_every_interval_as_it_happened() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite").display().to_string();
    linerate_ok(&["tcp", "-t", "2", "-i", "0.1", "-P", "4", "--db", &db]);
    let runs = stored(&db, None, 1);
    let n = intervals_add_up(&runs[0], 4, true);
    // A poll each 100 ms for 2 s: 20, less one within 10 ms of the end; a busy machine may
    // poll late, never more often.
    assert!((10..=20).contains(&n), "{n} intervals");
}

#[test]
fn an_iperf3_clients_run_of_many_streams_is_stored_with_its_rows_intact() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("server.sqlite").display().to_string();
    let (_server, port) = crate::proc::serve_child(&["--db", &db]);
    let port = port.to_string();
    let args = [
        "tcp",
        "127.0.0.1",
        "--iperf3",
        "-p",
        &port,
        "-P",
        "16",
        "-t",
        "3",
    ];
    let out = crate::util::linerate()
        .args([&args[..], &["--no-store"]].concat())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\nthe server's log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        crate::proc::serve_log(port.parse().unwrap())
    );
    let runs = stored(&db, Some("client=iperf3"), 1);
    assert_eq!(runs.len(), 1, "the server stored the run");
    // This server's rows every second (its interval), the last at the client's TEST_END; its
    // own counts stand for both ends (the client's senders' totals come with the results).
    let n = intervals_add_up(&runs[0], 16, false);
    assert!((2..=4).contains(&n), "{n} rows");
}

/// A hostile relay: greets as a linerate server, takes the controller's `relay`, and sends
/// back a record followed by `n` one-interval slices, each interval 50 ms with `i` bytes
/// received (its `i`-th), then `done`. Serves one controller.
fn flooding_relay(n: usize) -> std::net::SocketAddr {
    use wire::frame::{read_frame, write_frame};
    use wire::hello::{Greeting, HELLO_LEN};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let nonce = wire::auth::Nonce([7; wire::auth::NONCE_LEN]);
        let greeting = Greeting {
            hello: Hello::ours(),
            nonce,
        };
        conn.write_all(&greeting.emit()).unwrap();
        let mut hello = [0u8; HELLO_LEN];
        conn.read_exact(&mut hello).unwrap();
        let _: ClientMsg = read_frame(&mut conn, Duration::from_secs(10)).unwrap();
        let relaying = RelayMsg::Relaying {
            relay: Default::default(),
            auth: None,
        };
        write_frame(&mut conn, &relaying).unwrap();
        let mut record = analysis::testing::record_with("tcp", 1e9);
        let sample = record.intervals[0].clone();
        record.intervals.clear();
        let record = Box::new(record);
        write_frame(&mut conn, &RelayMsg::Record { record }).unwrap();
        for i in 0..n {
            let mut s = sample.clone();
            (s.start_s, s.end_s) = (i as f64 * 0.05, (i + 1) as f64 * 0.05);
            s.flows[0].receiver_bytes = i as u64;
            let samples = vec![s];
            write_frame(&mut conn, &RelayMsg::Intervals { samples }).unwrap();
        }
        write_frame(&mut conn, &RelayMsg::Done).unwrap();
    });
    addr
}

/// Issue 48: a relay that sends more intervals than a record keeps does not grow the
/// controller's record past the bound, and every byte it sent is in what is kept.
#[test]
fn a_relay_sending_twice_the_bound_leaves_the_controller_a_bounded_record_with_every_byte() {
    let n = 2 * record::bounds::MAX_INTERVALS + 100;
    let relay = flooding_relay(n);
    let far: std::net::SocketAddr = "198.18.0.2:5201".parse().unwrap();
    let config = crate::relay::relayed(relay, far, spec(Direction::Send, 1, 300));
    let record = session::client::run(&config, &mut session::client::Silent).unwrap();
    assert!(record.intervals.len() <= record::bounds::MAX_INTERVALS);
    let bytes: u64 = (record.intervals.iter())
        .map(|s| s.flows[0].receiver_bytes)
        .sum();
    assert_eq!(bytes, (0..n as u64).sum::<u64>());
    assert_eq!(record.intervals.last().unwrap().end_s, n as f64 * 0.05);
}
