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
//! intervals at the shortest interval (50 ms) lasts 51 s, too long here. These tests hold the
//! other side: a real run below the bound stores every interval as it happened, and they add
//! up to its summary.

use super::*;

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
    linerate_ok(&[&args[..], &["--no-store"]].concat());
    let runs = stored(&db, Some("client=iperf3"), 1);
    assert_eq!(runs.len(), 1, "the server stored the run");
    // This server's rows every second (its interval), the last at the client's TEST_END; its
    // own counts stand for both ends (the client's senders' totals come with the results).
    let n = intervals_add_up(&runs[0], 16, false);
    assert!((2..=4).contains(&n), "{n} rows");
}
