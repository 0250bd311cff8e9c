//! Every interval carries both ends' CPU (`intervals[].cpu`): the data threads' share agrees
//! with the summary's figures for the same ends, and the host's busy share sees a spinner.

use super::*;
use record::{IntervalCpu, RunRecord};
use wire::spec::{UdpParams, UdpRate};

/// Online cores, as the host figures count them.
fn cores() -> f64 {
    engine::affinity::online_cpus() as f64
}

/// Each interval's CPU, checked present with both ends' thread shares in (0, 100 × cores] and
/// both host shares in [0, 100].
fn checked_cpu(r: &RunRecord) -> Vec<IntervalCpu> {
    let most = 100.0 * cores() + 1.0;
    r.intervals
        .iter()
        .map(|i| {
            let cpu = i.cpu.unwrap_or_else(|| panic!("no cpu in {i:?}"));
            let remote = cpu.remote_pct.unwrap_or_else(|| panic!("{cpu:?}"));
            assert!(cpu.local_pct > 0.0 && cpu.local_pct <= most, "{cpu:?}");
            assert!(remote > 0.0 && remote <= most, "{cpu:?}");
            for host in [cpu.local_host_busy_pct, cpu.remote_host_busy_pct] {
                let host = host.unwrap_or_else(|| panic!("no host share: {cpu:?}"));
                assert!((0.0..=100.0).contains(&host), "{cpu:?}");
            }
            cpu
        })
        .collect()
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = values.collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The mean of the intervals' figure is the summary's figure for that end, within 15 % and 3
/// points: the summary's wall time also holds the drain and, for the client, the wait for the
/// server's results.
fn agrees(what: &str, intervals: f64, summary: f64) {
    assert!(
        (intervals - summary).abs() <= 0.15 * summary + 3.0,
        "{what}: mean of the intervals {intervals:.1} %, summary {summary:.1} %"
    );
}

#[test]
fn tcp_intervals_carry_both_ends_cpu_and_agree_with_the_summary() {
    let server = test_server();
    let r = run(server.addr, spec(Direction::Send, 1, 3000)).unwrap();
    let cpu = checked_cpu(&r);
    assert!(cpu.len() >= 10, "{} intervals", cpu.len());
    let f = &r.summary.flows[0];
    // The client sends: its threads are the sender's, the server's the receiver's.
    agrees(
        "client (sender)",
        mean(cpu.iter().map(|c| c.local_pct)),
        f.sender_cpu_pct,
    );
    agrees(
        "server (receiver)",
        mean(cpu.iter().filter_map(|c| c.remote_pct)),
        f.receiver_cpu_pct,
    );
    // The host's share over the intervals is the summary's, from the same /proc/stat counters
    // (over the client's whole wall time there).
    if let Some(host) = r.summary.local_cpu.system_busy_pct {
        let intervals = mean(cpu.iter().filter_map(|c| c.local_host_busy_pct));
        agrees("client host", intervals, host);
    }
    // The record keeps the field and reads it back (JSON keeps a float to within an ulp).
    let back: RunRecord = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    for (a, b) in back.intervals.iter().zip(&r.intervals) {
        let (a, b) = (a.cpu.unwrap(), b.cpu.unwrap());
        assert!((a.local_pct - b.local_pct).abs() < 1e-9, "{a:?} {b:?}");
        assert_eq!(a.remote_pct.is_some(), b.remote_pct.is_some());
    }
}

#[test]
fn reverse_tcp_intervals_count_the_servers_sender() {
    let server = test_server();
    let r = run(server.addr, spec(Direction::Reverse, 2, 1000)).unwrap();
    let cpu = checked_cpu(&r);
    let f = &r.summary.flows[0];
    agrees(
        "server (sender)",
        mean(cpu.iter().filter_map(|c| c.remote_pct)),
        f.sender_cpu_pct,
    );
}

#[test]
fn unpaced_udp_intervals_carry_both_ends_cpu() {
    let server = test_server();
    let udp = UdpParams {
        payload_len_bytes: 1200,
        rate: UdpRate::Max,
        ..UdpParams::new(Direction::Send)
    };
    let sp = wire::TestSpec {
        params: wire::Params::UdpStream { udp },
        ..spec(Direction::Send, 1, 1000)
    };
    let r = run(server.addr, sp).unwrap();
    let cpu = checked_cpu(&r);
    assert!(cpu.len() >= 3, "{} intervals", cpu.len());
}

/// Alone (`quiet::`): the host's busy share must see this test's load only.
mod quiet {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// Spins one thread from `from` after now until `until` after now (or `stop`), returning
    /// the CPU time it used.
    fn spinner(
        from: Duration,
        until: Duration,
        stop: Arc<AtomicBool>,
    ) -> std::thread::JoinHandle<Duration> {
        std::thread::spawn(move || {
            let start = Instant::now();
            std::thread::sleep(from);
            let cpu0 = measure::cpu::CpuTime::thread_now();
            let mut x = 0u64;
            while start.elapsed() < until && !stop.load(Ordering::Relaxed) {
                for _ in 0..10_000 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
            }
            std::hint::black_box(x);
            let used = measure::cpu::CpuTime::thread_now().since(cpu0).total_us();
            Duration::from_micros(used)
        })
    }

    /// A light, paced test of 4 s whose second half has a spinner beside it: the host's busy
    /// share of those intervals is higher than the first half's by at least 80 % of one core's
    /// share (100 / cores), on both ends (one host). Also, in every interval the host was at
    /// least as busy as the two ends' data threads.
    #[test]
    fn host_busy_share_sees_a_spinning_core() {
        let server = test_server();
        let mut sp = spec(Direction::Send, 1, 4000);
        sp.interval_ms = 500;
        if let wire::Params::TcpStream { tcp, .. } = &mut sp.params {
            tcp.pacing_bps = Some(20_000_000);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let spin = spinner(
            Duration::from_millis(2000),
            Duration::from_millis(4500),
            Arc::clone(&stop),
        );
        let r = run(server.addr, sp);
        stop.store(true, Ordering::Relaxed);
        let spun = spin.join().unwrap();
        let r = r.unwrap();
        let cpu = checked_cpu(&r);
        let share = |pick: fn(&IntervalCpu) -> Option<f64>, lo: f64, hi: f64| {
            mean(
                r.intervals
                    .iter()
                    .zip(&cpu)
                    .filter(|(i, _)| i.start_s >= lo && i.end_s <= hi)
                    .filter_map(|(_, c)| pick(c)),
            )
        };
        let one_core = 100.0 / cores();
        for (end, pick) in [
            (
                "client",
                (|c| c.local_host_busy_pct) as fn(&IntervalCpu) -> Option<f64>,
            ),
            ("server", |c| c.remote_host_busy_pct),
        ] {
            let (without, with) = (share(pick, 0.4, 2.0), share(pick, 2.4, 4.1));
            // Something else keeping the cores busy leaves the spinner no idle core to take.
            if without > 100.0 - one_core || spun < Duration::from_millis(1500) {
                return skip(&format!(
                    "the host is {without:.0} % busy without the spinner, which ran {spun:?} \
                     of 2 s: no idle core for it to take"
                ));
            }
            assert!(
                with - without >= 0.8 * one_core,
                "{end}: {without:.1} % busy without the spinner, {with:.1} % with ({} cores)",
                cores()
            );
        }
        for c in &cpu {
            let threads = (c.local_pct + c.remote_pct.unwrap()) / cores();
            let host = c.local_host_busy_pct.unwrap();
            assert!(host + 5.0 >= threads, "{c:?}");
        }
    }
}
