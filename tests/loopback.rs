//! TCP tests against an in-process server on loopback: reconciliation, intervals, directions, streams.

use super::*;

#[test]
fn send_reconciles_and_intervals_add_up() {
    let server = test_server();
    let r = run(server.addr, spec(Direction::Send, 1, 1000)).unwrap();
    let s = &r.summary;
    let f = &s.flows[0];
    assert!(f.reconciled, "{f:?}");
    assert!(f.bytes_received > 0 && s.throughput_bps > 0.0);
    // Exact accounting: sent = received in the window + in flight; intervals sum to the window.
    assert_eq!(f.bytes_sent, f.bytes_received + f.bytes_in_flight);
    let interval_sum: u64 = r.intervals.iter().map(|i| i.flows[0].receiver_bytes).sum();
    assert_eq!(interval_sum, f.bytes_received);
    let sender_sum: u64 = r.intervals.iter().map(|i| i.flows[0].sender_bytes).sum();
    assert_eq!(sender_sum, f.bytes_sent);
    assert!(r.intervals.len() >= 4, "{} intervals", r.intervals.len());
    assert!((s.duration_s - 1.0).abs() < 0.1, "{}", s.duration_s);
    let info = f.streams[0].tcp_info.expect("sender TCP_INFO");
    assert!(info.snd_mss_bytes > 0 && info.rtt_us > 0, "{info:?}");
    assert!(s.local_cpu_pct > 1.0 && s.remote_cpu_pct > 1.0, "{s:?}");
}

#[test]
fn reverse_and_bidir_with_parallel_streams() {
    let server = test_server();
    let r = run(server.addr, spec(Direction::Reverse, 2, 600)).unwrap();
    assert_eq!(r.summary.flows.len(), 1);
    assert_eq!(r.summary.flows[0].streams.len(), 2);
    assert!(r.summary.flows[0].reconciled);
    assert!(
        r.summary.flows[0].streams[0].tcp_info.is_some(),
        "server sends TCP_INFO back"
    );

    let r = run(server.addr, spec(Direction::Bidir, 3, 600)).unwrap();
    assert_eq!(r.summary.flows.len(), 2);
    for f in &r.summary.flows {
        assert_eq!(f.streams.len(), 3);
        assert!(f.reconciled && f.bytes_received > 0, "{f:?}");
        assert!(f.streams.iter().all(|s| s.error.is_none()));
    }
    let total: u64 = r.summary.flows.iter().map(|f| f.bytes_received).sum();
    assert_eq!(total, r.summary.bytes_received);
}

#[test]
fn write_mode_and_socket_options() {
    let server = test_server();
    let mut sp = spec(Direction::Send, 1, 500);
    let wire::Params::TcpStream { stream, tcp } = &mut sp.params else {
        unreachable!("spec() is a tcp_stream")
    };
    stream.send_mode = wire::spec::SendMode::Write;
    tcp.mss_bytes = Some(1000);
    tcp.no_delay = true;
    tcp.congestion = Some("reno".into());
    sp.window_bytes = Some(512 << 10);
    sp.link_speed_bps = Some(100_000_000_000);
    let r = run(server.addr, sp).unwrap();
    let info = r.summary.flows[0].streams[0].tcp_info.unwrap();
    assert!(info.snd_mss_bytes <= 1000, "{info:?}");
    assert!(r.summary.performance_index.unwrap() > 0.0);
}

#[test]
fn concurrent_clients_are_served() {
    let server = test_server();
    let addr = server.addr;
    let handles: Vec<_> = (0..3)
        .map(|_| std::thread::spawn(move || run(addr, spec(Direction::Send, 1, 500))))
        .collect();
    for h in handles {
        assert!(h.join().unwrap().unwrap().summary.flows[0].reconciled);
    }
}

#[test]
fn tcp_state_is_in_every_interval_and_the_time_shares_in_the_summary() {
    let server = test_server();
    for direction in [Direction::Send, Direction::Reverse] {
        let r = run(server.addr, spec(direction, 2, 1000)).unwrap();
        for i in &r.intervals {
            let t = i.flows[0]
                .tcp_info
                .unwrap_or_else(|| panic!("{direction:?}: {i:?}"));
            assert!(
                t.rtt_us > 0 && t.snd_cwnd_segments > 0,
                "{direction:?}: {t:?}"
            );
        }
        // Both ends' facts name the loopback interface, which has no device driver.
        let hosts = r.hosts.as_ref().unwrap();
        for facts in [&hosts.client, hosts.server.as_ref().unwrap()] {
            assert!(
                facts.interface.is_some() && facts.driver.is_none(),
                "{facts:?}"
            );
        }
        // This kernel keeps the chrono times (Linux 4.10+).
        let time = r.summary.flows[0].tcp_time.unwrap();
        assert!(time.busy_pct > 10.0, "{direction:?}: {time:?}");
        assert!((0.0..=100.0).contains(&time.rwnd_limited_pct), "{time:?}");
        assert!(time.min_rtt_us.is_some_and(|m| m > 0), "{time:?}");
    }
}

/// Alone (`quiet::`): the host's own counters around the run must see this test's load only.
mod quiet {
    use super::*;

    /// Busy and total ticks of the whole host, from /proc/stat's `cpu` line.
    fn host_ticks() -> (u64, u64) {
        let stat = std::fs::read_to_string("/proc/stat").unwrap();
        let v: Vec<u64> = stat
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .skip(1)
            .take(8)
            .map(|x| x.parse().unwrap())
            .collect();
        let total: u64 = v.iter().sum();
        (total - v[3] - v[4], total)
    }

    #[test]
    fn service_demand_matches_the_hosts_own_cpu_counters() {
        let (busy0, _) = host_ticks();
        let doc = linerate_json(&["tcp", "-t", "2", "--json", "--no-store"]);
        let (busy1, _) = host_ticks();
        let f = &doc["summary"]["flows"][0];
        let moved = num(&f["bytes_received_after_drain"]);
        // SAFETY: sysconf with a valid name.
        let tick_us = 1e6 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let outside = (busy1 - busy0) as f64 * tick_us / (moved / 1024.0);
        for end in ["sender", "receiver"] {
            let sd = num(&f[format!("{end}_service_demand_us_per_kb")]);
            // The kernel's count around the whole process also holds its start and exit.
            assert!(
                sd > outside * 0.6 && sd < outside * 1.1,
                "{end}: {sd} us/KB against {outside} from /proc/stat around the run"
            );
        }
    }

    #[test]
    fn per_core_cpu_finds_the_core_both_ends_are_pinned_to() {
        if engine::affinity::online_cpus() < 2 {
            return skip("one CPU: nothing to tell apart");
        }
        let doc = linerate_json(&["tcp", "-t", "1", "-A", "1,1", "--json", "--no-store"]);
        let cores = doc["summary"]["local_cores"].as_array().unwrap();
        let busy = |c: &serde_json::Value| num(&c["busy_pct"]);
        // Loopback TCP is the kernel's copying, so both ends' work is mostly kernel time, and it
        // lands on the core they are pinned to, which they keep busy. Another process may fill a
        // core too (fresh-clone CI runs beside a spinning process saw core 0 at 100 %, all of it
        // user time, and the spinner sharing core 1 for 57 % of it): the busiest core need not
        // be theirs, the one with the most kernel time is. Sharing their core with one more
        // runnable task, the two ends keep at least about half of it, most of that in the
        // kernel, against the spinner's core's few % (its timer ticks).
        let kernel = |c: &serde_json::Value| {
            ["system_pct", "irq_pct", "softirq_pct"]
                .iter()
                .map(|k| num(&c[*k]))
                .sum::<f64>()
        };
        let theirs = cores
            .iter()
            .max_by(|a, b| kernel(a).total_cmp(&kernel(b)))
            .unwrap();
        assert_eq!(theirs["core"], 1, "{cores:?}");
        assert!(busy(theirs) > 80.0, "{cores:?}");
        let split: f64 = ["user_pct", "system_pct", "irq_pct", "softirq_pct"]
            .iter()
            .map(|k| num(&theirs[*k]))
            .sum();
        assert!(
            split <= busy(theirs) + 0.01,
            "the split stays within busy: {theirs}"
        );
    }
}
