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

/// The kernel paces by earliest departure time: each segment leaves no sooner than the last
/// one's time plus its length at the rate, so no interval can run over the rate (beyond the
/// unpaced first window and one segment of timer slack), and time the host took from the
/// sender is lost, never caught up. A stall therefore shows as one or two low intervals, not
/// as a wrong rate: a fresh-clone CI run delivered 0.898 of 400M over 2 s (about 200 ms lost)
/// where 28 runs here, quiet and beside up to six spinning processes, delivered 0.997-1.003,
/// and the 10 whose intervals were read stayed within 0.97-1.06 in each. So the rate is read
/// where pacing sets it, the median interval, and the ceiling in every interval. Run alone
/// (`quiet::`): the parallel suite would take whole intervals from the sender.
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
            let rates: Vec<f64> = r
                .intervals
                .iter()
                .filter(|i| i.end_s - i.start_s > 0.2)
                .map(|i| i.flows[0].throughput_bps / bps as f64)
                .collect();
            let median = analysis::stats::median(&rates).unwrap_or(0.0);
            let summary = r.summary.throughput_bps / bps as f64;
            // Pacing counts headers too (64 KiB segments on loopback: 0.1 %), so goodput sits
            // at the rate or a little under it.
            assert!(
                (0.95..=1.02).contains(&median),
                "{direction:?}: median interval {median} of the rate ({rates:?})"
            );
            // The first interval also carries the initial window (ten 64 KiB segments, sent
            // before pacing starts: 21 Mbit/s over 250 ms); the rest at most one segment late.
            let over = rates
                .iter()
                .enumerate()
                .find(|&(n, &x)| x > if n == 0 { 1.12 } else { 1.05 });
            assert!(over.is_none(), "{direction:?}: over the rate {rates:?}");
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
