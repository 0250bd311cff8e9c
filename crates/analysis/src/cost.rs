//! Cost per byte: each end's efficiency in a stream run's direction, goodput per core of its
//! data threads, CPU seconds per 10⁹ bytes and µs per KB (1,024 bytes), from the flow's own
//! goodput and CPU figures (so a reader of the record can recompute them): what the test
//! itself cost. Beside it, service demand as netperf defines it, µs of the host's machine-wide
//! CPU per KB moved over the period an end measured it: other work on the host counts too, so
//! a slow test on a busy host reads far above its own cost. METHODOLOGY.md section 6.

use std::time::Duration;

use measure::cpu::SystemCpu;
use record::{Efficiency, FlowSummary};
use wire::spec::{FamilyId, Flow};
use wire::TestKind;

use crate::RawRun;

/// Microseconds of CPU the host spent per KB of `bytes`: its busy share × its cores × `wall`,
/// over `bytes` / 1024. `None` without a CPU reading or without bytes.
pub fn service_demand_us_per_kb(
    system: Option<SystemCpu>,
    wall: Duration,
    bytes: u64,
) -> Option<f64> {
    let cpu = system?;
    if bytes == 0 {
        return None;
    }
    let cpu_us = cpu.busy_pct / 100.0 * f64::from(cpu.cores) * wall.as_secs_f64() * 1e6;
    Some(cpu_us / (bytes as f64 / 1024.0))
}

/// Each flow's service demand on both ends: each host's CPU over all the bytes the test moved
/// (delivered, drain included), since one host's CPU serves every direction at once.
pub(crate) fn add_service_demand(raw: &RawRun, flows: &mut [FlowSummary]) {
    let moved: u64 = flows.iter().map(|f| f.bytes_received_after_drain).sum();
    let client = service_demand_us_per_kb(raw.local_system_cpu, raw.local_wall, moved);
    let server = service_demand_us_per_kb(
        raw.server.system_cpu,
        Duration::from_micros(raw.server.wall_us),
        moved,
    );
    for f in flows {
        (
            f.sender_service_demand_us_per_kb,
            f.receiver_service_demand_us_per_kb,
        ) = match f.flow {
            Flow::ClientToServer => (client, server),
            Flow::ServerToClient => (server, client),
        };
    }
}

/// An end's CPU below this, % of one core, reads as unknown: a far end that did not report
/// (its figure reads 0), or too little CPU time for the quotient to mean anything.
pub const MIN_CPU_PCT: f64 = 0.1;

/// `per_s` (bits/s, datagrams/s) per core of an end whose data threads used `cpu_pct` % of
/// one core. `None` when that CPU is unknown or about zero (below [`MIN_CPU_PCT`]) or
/// nothing arrived.
pub fn per_core(per_s: f64, cpu_pct: f64) -> Option<f64> {
    let known = cpu_pct.is_finite() && cpu_pct >= MIN_CPU_PCT;
    (known && per_s.is_finite() && per_s > 0.0).then(|| per_s / (cpu_pct / 100.0))
}

/// CPU seconds an end using `cpu_pct` % of one core spends per 10⁹ bytes at `goodput_bps`:
/// its cores over the gigabytes per second, `8e9 / per_core(goodput_bps, cpu_pct)`.
pub fn cpu_s_per_gb(goodput_bps: f64, cpu_pct: f64) -> Option<f64> {
    per_core(goodput_bps, cpu_pct).map(|bps_per_core| 8e9 / bps_per_core)
}

/// The same in netperf's unit, µs of CPU per KB (1,024 bytes): `cpu_s_per_gb × 1.024`.
pub fn us_per_kb(goodput_bps: f64, cpu_pct: f64) -> Option<f64> {
    cpu_s_per_gb(goodput_bps, cpu_pct).map(|s| s * 1e6 * 1024.0 / 1e9)
}

/// Both ends' efficiency in direction `f`, from its `throughput_bps`, `sender_cpu_pct`,
/// `receiver_cpu_pct` and (UDP) `udp.pps_received`; `None` when neither end's CPU is known.
pub fn efficiency(f: &FlowSummary) -> Option<Efficiency> {
    let (snd, rcv, bps) = (f.sender_cpu_pct, f.receiver_cpu_pct, f.throughput_bps);
    let pps = f.udp.map(|u| u.pps_received);
    let e = Efficiency {
        sender_goodput_bps_per_core: per_core(bps, snd),
        receiver_goodput_bps_per_core: per_core(bps, rcv),
        sender_cpu_s_per_gb: cpu_s_per_gb(bps, snd),
        receiver_cpu_s_per_gb: cpu_s_per_gb(bps, rcv),
        sender_us_per_kb: us_per_kb(bps, snd),
        receiver_us_per_kb: us_per_kb(bps, rcv),
        sender_pps_per_core: pps.and_then(|p| per_core(p, snd)),
        receiver_pps_per_core: pps.and_then(|p| per_core(p, rcv)),
    };
    (e != Efficiency::default()).then_some(e)
}

/// Each direction's efficiency, for the stream kinds (a request/response test's bytes are
/// not its point, and its CPU mostly waits).
pub(crate) fn add_efficiency(kind: TestKind, flows: &mut [FlowSummary]) {
    if kind.row().family != FamilyId::Transaction {
        for f in flows {
            f.efficiency = efficiency(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() <= 1e-9 * b.abs())
    }

    #[test]
    fn forty_gbits_on_eight_tenths_of_a_core_is_fifty_per_core() {
        assert!(close(per_core(40e9, 80.0), 50e9));
        // 40 Gbit/s = 5 GB/s; 0.8 core-seconds per second over 5 GB per second = 0.16 s/GB.
        assert!(close(cpu_s_per_gb(40e9, 80.0), 0.16));
        // Two cores busy (200 %) for 10 Gbit/s: 5 Gbit/s per core, 1.6 s per GB.
        assert!(close(per_core(10e9, 200.0), 5e9));
        assert!(close(cpu_s_per_gb(10e9, 200.0), 1.6));
    }

    #[test]
    fn a_slow_tests_own_cost_is_its_threads_not_its_busy_host() {
        // Issue 35: 95 Mbit/s with its thread at 0.2 % of a core costs 0.172 us/KB, though
        // the whole host (busy with other work) read 171 us/KB.
        let own = us_per_kb(95e6, 0.2).unwrap();
        assert!(
            (own - 0.002 * 1e6 / (95e6 / 8.0 / 1024.0)).abs() < 1e-9,
            "{own}"
        );
        assert!((own - 0.1725).abs() < 1e-3, "{own}");
        assert!(close(us_per_kb(40e9, 80.0), 0.16 * 1.024));
    }

    #[test]
    fn unknown_or_idle_cpu_and_nothing_received_have_no_figure() {
        assert_eq!(per_core(40e9, 0.0), None, "far end did not report");
        assert_eq!(per_core(40e9, MIN_CPU_PCT / 2.0), None, "about zero");
        assert_eq!(per_core(40e9, f64::NAN), None);
        assert_eq!(per_core(0.0, 50.0), None, "nothing arrived");
        assert_eq!(cpu_s_per_gb(0.0, 50.0), None);
        assert!(close(per_core(1e6, MIN_CPU_PCT), 1e9));
    }

    #[test]
    fn a_flows_efficiency_uses_its_own_goodput_and_each_ends_cpu() {
        let mut f = crate::testing::record_with("tcp", 1.0).summary.flows[0].clone();
        (f.throughput_bps, f.sender_cpu_pct, f.receiver_cpu_pct) = (48e9, 100.0, 150.0);
        let e = efficiency(&f).unwrap();
        assert!(close(e.sender_goodput_bps_per_core, 48e9));
        assert!(close(e.receiver_goodput_bps_per_core, 32e9));
        assert!(close(e.sender_cpu_s_per_gb, 1.0 / 6.0));
        assert!(close(e.receiver_cpu_s_per_gb, 0.25));
        assert_eq!(
            (e.sender_pps_per_core, e.receiver_pps_per_core),
            (None, None)
        );
        f.udp = Some(record::UdpSummary {
            pps_received: 3e6,
            ..Default::default()
        });
        let e = efficiency(&f).unwrap();
        assert!(close(e.sender_pps_per_core, 3e6));
        assert!(close(e.receiver_pps_per_core, 2e6));
        f.receiver_cpu_pct = 0.0;
        let e = efficiency(&f).unwrap();
        assert_eq!(e.receiver_goodput_bps_per_core, None, "receiver unknown");
        assert!(
            e.sender_goodput_bps_per_core.is_some(),
            "sender still known"
        );
        f.sender_cpu_pct = 0.0;
        assert_eq!(efficiency(&f), None, "neither end known");
    }

    #[test]
    fn only_stream_kinds_get_efficiency() {
        let mut f = crate::testing::record_with("tcp", 1.0).summary.flows[0].clone();
        (f.throughput_bps, f.sender_cpu_pct, f.receiver_cpu_pct) = (1e9, 10.0, 10.0);
        let mut flows = [f];
        add_efficiency(TestKind::TcpRr, &mut flows);
        assert_eq!(flows[0].efficiency, None);
        add_efficiency(TestKind::UdpStream, &mut flows);
        assert!(flows[0].efficiency.is_some());
    }

    #[test]
    fn netperfs_definition() {
        // Half of 4 cores for 10 s = 20 CPU s for 10 GiB: 20e6 µs / 10,485,760 KB.
        let cpu = SystemCpu {
            busy_pct: 50.0,
            cores: 4,
            ..SystemCpu::default()
        };
        let sd = service_demand_us_per_kb(Some(cpu), Duration::from_secs(10), 10 << 30).unwrap();
        assert!((sd - 20e6 / 10_485_760.0).abs() < 1e-9, "{sd}");
        assert_eq!(
            service_demand_us_per_kb(None, Duration::from_secs(1), 1),
            None
        );
        assert_eq!(
            service_demand_us_per_kb(Some(cpu), Duration::from_secs(1), 0),
            None
        );
    }
}
