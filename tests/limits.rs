//! Server limits without keys: a rate limit covers TCP pacing as well as UDP rates, and TCP
//! pacing itself (`tcp --rate`) delivers the rate asked for.

use super::*;
use wire::spec::{Params, SpecLimits, TcpOptions};

fn paced(spec: wire::TestSpec, bps: Option<u64>) -> wire::TestSpec {
    let Params::TcpStream { stream, tcp } = spec.params else {
        unreachable!()
    };
    let tcp = TcpOptions {
        pacing_bps: bps,
        ..tcp
    };
    wire::TestSpec {
        params: Params::TcpStream { stream, tcp },
        ..spec
    }
}

/// The ground truth is the kernel's: the pacing rate the sending socket reports
/// (`tcpi_pacing_rate`, in the record's `tcp_time`) is the rate asked for, to the bit. What it
/// delivers follows the kernel's earliest-departure-time pacing: each segment leaves no sooner
/// than the last one's time plus its length at the rate, so no interval can run over the rate
/// (beyond the unpaced first window and a segment of timer slack), and time the host keeps
/// from the sender is lost, never caught up: the goodput reaches the rate only as far as the
/// host lets the sender run. 28 runs here, quiet and beside up to six spinning processes,
/// delivered 0.997-1.003 of it; fresh-clone CI runs 0.898 over 2 s (a stall of about 200 ms),
/// and beside a spinning process intervals of 0.88-0.995 (median 0.948). So the median
/// interval is held to 0.85 of the rate: what a loaded host takes, and far from what a rate
/// set wrong or not at all would give (8 times off, or loopback's 30 Gbit/s). Run alone
/// (`quiet::`): the parallel suite would take more than that from the sender.
mod quiet {
    use super::*;

    #[test]
    fn tcp_pacing_delivers_the_rate_asked_for() {
        let server = test_server();
        for (direction, bps) in [
            (Direction::Send, 200_000_000u64),
            (Direction::Reverse, 400_000_000),
        ] {
            let r = run(server.addr, paced(spec(direction, 1, 2000), Some(bps))).unwrap();
            let flow = &r.summary.flows[0];
            let kernel = flow.tcp_time.and_then(|t| t.pacing_rate_bps);
            assert_eq!(
                kernel,
                Some(bps),
                "{direction:?}: the sender's tcpi_pacing_rate"
            );
            let rates: Vec<f64> = r
                .intervals
                .iter()
                .filter(|i| i.end_s - i.start_s > 0.2)
                .map(|i| i.flows[0].throughput_bps / bps as f64)
                .collect();
            let median = analysis::stats::median(&rates).unwrap_or(0.0);
            // Pacing counts headers too (64 KiB segments on loopback: 0.1 %), so goodput sits
            // at the rate or under it.
            assert!(
                (0.85..=1.02).contains(&median),
                "{direction:?}: median interval {median} of the rate ({rates:?})"
            );
            // The first interval also carries the initial window (ten 64 KiB segments, sent
            // before pacing starts: 21 Mbit/s over 250 ms); the rest at most one segment late.
            let over = rates
                .iter()
                .enumerate()
                .find(|&(n, &x)| x > if n == 0 { 1.12 } else { 1.05 });
            assert!(over.is_none(), "{direction:?}: over the rate {rates:?}");
            let summary = r.summary.throughput_bps / bps as f64;
            assert!(
                summary <= 1.02 && rates.len() >= 7,
                "{direction:?}: {summary} of the rate over {rates:?}"
            );
        }
    }
}

#[test]
fn a_rate_limit_covers_tcp_pacing() {
    let server = TestServer::start(ServerConfig {
        limits: SpecLimits {
            max_rate_bps: Some(500_000_000),
            ..SpecLimits::default()
        },
        ..ServerConfig::default()
    });
    let err = run(server.addr, spec(Direction::Send, 1, 300))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unpaced (no --rate)") && err.contains("--rate 500000000 or less"),
        "{err}"
    );
    let err = run(
        server.addr,
        paced(spec(Direction::Send, 1, 300), Some(1_000_000_000)),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("pacing at 1000000000 bit/s"), "{err}");
    let r = run(
        server.addr,
        paced(spec(Direction::Reverse, 2, 1000), Some(100_000_000)),
    )
    .unwrap();
    let ratio = r.summary.throughput_bps / 200e6;
    // The first window goes out before pacing has a rate: a short test sits a little over.
    assert!(
        (0.85..=1.06).contains(&ratio),
        "two streams at 100M: {}",
        r.summary.throughput_bps
    );
}

#[test]
fn tcp_rate_flag_is_checked() {
    fails_in_one_line(&["tcp", "--rate", "0"], "--rate 0: must be above 0");
    fails_in_one_line(&["tcp", "--rate", "fast"], "--rate fast");
    fails_in_one_line(
        &["tcp", "--rate", "1G", "--unix", "/tmp/lr-none.sock"],
        "Unix-domain sockets have no pacing",
    );
}
