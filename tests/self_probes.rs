//! `tcp --self-probes`: in-band probes on a loaded stream, both ways, counted per interval and
//! over the run, each probe a round trip on the client's clock.

use crate::util::*;

fn run(extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "tcp",
        "-t",
        "2",
        "--self-probes",
        "50",
        "--no-store",
        "--json",
    ];
    args.extend_from_slice(extra);
    linerate_json(&args)
}

fn check_probes(d: &serde_json::Value) {
    let intervals = d["intervals"].as_array().unwrap();
    let per_interval: Vec<f64> = intervals
        .iter()
        .map(|i| num(&i["flows"][0]["self_probes"]["transactions"]))
        .collect();
    // Each interval lists its probes' round trips, smallest first, one per probe.
    for i in intervals {
        let f = &i["flows"][0];
        let listed: Vec<f64> = f["self_probe_round_trips_us"]
            .as_array()
            .unwrap()
            .iter()
            .map(num)
            .collect();
        assert_eq!(
            listed.len() as f64,
            num(&f["self_probes"]["transactions"]),
            "{f}"
        );
        assert!(listed.windows(2).all(|w| w[0] <= w[1]), "{listed:?}");
    }
    let total = &d["summary"]["self_probes"];
    // Every probe answered is in one interval and in the run's figures.
    assert_eq!(
        per_interval.iter().sum::<f64>(),
        num(&total["transactions"]),
        "{d}"
    );
    // 50 a second for 2 s, less those still in flight at the end.
    let n = num(&total["transactions"]);
    assert!((70.0..=101.0).contains(&n), "{n} probes: {total}");
    let lat = &total["latency_us"];
    assert!(
        num(&lat["min"]) > 0.0 && num(&lat["p50"]) <= num(&lat["p99"]),
        "{lat}"
    );
    // A self probe waits at least a round trip of the loaded connection.
    assert!(num(&lat["max"]) >= num(&lat["min"]), "{lat}");
    // Every byte still arrives: records are data too.
    let f = &d["summary"]["flows"][0];
    assert_eq!(f["bytes_sent"], f["bytes_received_after_drain"], "{f}");
}

#[test]
fn uploads_time_requests_queued_behind_their_data() {
    check_probes(&run(&[]));
}

#[test]
fn downloads_time_responses_queued_behind_the_servers_data() {
    let d = run(&["-R"]);
    assert_eq!(d["spec"]["params"]["stream"]["direction"], "reverse");
    check_probes(&d);
}

#[test]
fn self_probes_are_refused_where_they_cannot_run() {
    fails_in_one_line(&["tcp", "--self-probes", "x"], "--self-probes");
    let out = linerate()
        .args([
            "tcp",
            "-t",
            "1",
            "--self-probes",
            "5",
            "--bidir",
            "--no-store",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("self probes: one direction only"), "{err}");
}

/// Foreign probes: a new connection's connect and one request on it, timed apart; the server
/// answers each and logs none of them.
#[test]
fn foreign_probes_time_the_connect_and_the_request_apart() {
    let server = TestServer::start(session::server::ServerConfig::default());
    let config = config(server.addr, spec(wire::spec::Direction::Send, 1, 1000));
    let limit = std::time::Duration::from_millis(500);
    for _ in 0..20 {
        let p = session::client::foreign_probe(&config, std::time::Duration::from_secs(2)).unwrap();
        assert!(
            p.connect > std::time::Duration::ZERO && p.connect < limit,
            "{p:?}"
        );
        assert!(
            p.request > std::time::Duration::ZERO && p.request < limit,
            "{p:?}"
        );
    }
    assert_eq!(server.log_text(), "", "probes are not logged");
}

/// Alone (`quiet::`): the self probes' time against `--notsent-lowat` is a timing comparison that
/// a loaded host (the rest of the suite in parallel) can blur.
mod quiet {
    use super::*;

    /// The kernel's smoothed RTT (µs) and the self probes' median (µs) of each interval after
    /// the first `skip` (the queue filling).
    fn rtts(d: &serde_json::Value, skip: usize) -> Vec<(f64, f64)> {
        d["intervals"].as_array().unwrap()[skip..]
            .iter()
            .filter_map(|i| {
                let f = &i["flows"][0];
                Some((
                    f["tcp_info"]["rtt_us"].as_f64()?,
                    f["self_probes"]["p50_us"].as_f64()?,
                ))
            })
            .collect()
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    /// Ground truth: a tbf queue of known depth on the path. Loaded, the kernel's RTT sits at about
    /// the queue's drain time (buffer ÷ rate) and the self probes wait at least that long (plus the
    /// sender's unsent bytes); with a short queue the loaded RTT stays near the idle one.
    #[test]
    fn a_deep_queue_shows_in_the_kernels_rtt_and_the_self_probes() {
        if !can_use_netns() {
            return;
        }
        let pair = VethPair::bridged("sp");
        let mid = pair.mid.clone().unwrap();
        let _server = pair.serve();
        // 20 Mbit/s towards the server with 250 KB of queue: drained in 100 ms.
        let shape = |limit: &str| {
            sh(&format!(
                "ip netns exec {mid} tc qdisc replace dev mb root tbf rate 20mbit burst 16kb limit {limit}"
            ))
        };
        shape("250kb");
        // A Reno upload of `secs` seconds with 10 self probes a second, and `extra` flags.
        let probed = |secs: &str, extra: &[&str]| {
            let mut args = vec!["tcp", "-t", secs, "-C", "reno", "--self-probes", "10"];
            args.extend_from_slice(extra);
            args.push("--no-store");
            pair.client_json(&args)
        };
        let deep = probed("6", &[]);
        let drain_us = 250e3 * 8.0 / 20e6 * 1e6;
        let loaded = rtts(&deep, 2);
        let kernel = median(loaded.iter().map(|r| r.0).collect());
        let probe = median(loaded.iter().map(|r| r.1).collect());
        eprintln!(
            "deep queue: kernel RTT {kernel} us, self probe p50 {probe} us, drain {drain_us} us"
        );
        assert!(
            (0.6 * drain_us..=1.2 * drain_us).contains(&kernel),
            "kernel RTT {kernel} us against a {drain_us} us queue: {loaded:?}"
        );
        assert!(
            probe >= 0.8 * kernel,
            "self probes {probe} us below the kernel's RTT {kernel} us"
        );
        // TCP_NOTSENT_LOWAT of 16 KiB keeps the sender's unsent bytes short: the self probes fall
        // towards the kernel's RTT (the network's queue is still there).
        let lowat = probed("6", &["--notsent-lowat", "16K"]);
        let loaded = rtts(&lowat, 2);
        let kernel_lowat = median(loaded.iter().map(|r| r.0).collect());
        let probe_lowat = median(loaded.iter().map(|r| r.1).collect());
        eprintln!(
            "with --notsent-lowat 16K: kernel RTT {kernel_lowat} us, self probe p50 {probe_lowat} us"
        );
        // What the sender's own unsent bytes add over the network's RTT at least halves (the
        // queue in the network stays; in a CI run under load: 165 -> 112 ms of self probe
        // over an 88 ms kernel RTT is 76 -> 25 ms).
        assert!(
            probe_lowat - kernel_lowat < 0.5 * (probe - kernel),
            "{probe_lowat} us over a kernel RTT of {kernel_lowat} us against {probe} us over \
             {kernel} us without it"
        );
        assert!(
            probe_lowat <= 1.5 * kernel_lowat + 20_000.0,
            "{probe_lowat} us against the kernel's {kernel_lowat} us"
        );
        // A short queue (5 KB: 2 ms): the loaded RTT stays within a few ms.
        shape("5kb");
        let short = probed("4", &[]);
        let kernel_short = median(rtts(&short, 1).iter().map(|r| r.0).collect());
        eprintln!("short queue: kernel RTT {kernel_short} us");
        assert!(
            kernel_short < 0.2 * drain_us,
            "{kernel_short} us with a 2 ms queue"
        );
    }
}
