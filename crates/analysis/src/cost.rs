//! Cost per byte: service demand as netperf defines it, microseconds of CPU per kilobyte
//! (1,024 bytes) moved, from a host's machine-wide CPU over the period an end measured it.

use std::time::Duration;

use measure::cpu::SystemCpu;

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
