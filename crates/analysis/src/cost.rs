//! Cost per byte: service demand as netperf defines it, microseconds of CPU per kilobyte
//! (1,024 bytes) moved, from a host's machine-wide CPU over the period an end measured it.

use std::time::Duration;

use measure::cpu::SystemCpu;
use results::FlowSummary;
use wire::spec::Flow;

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

#[cfg(test)]
mod tests {
    use super::*;

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
