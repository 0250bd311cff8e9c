//! What each end's CPU bought in a stream run's direction, as recorded: goodput per busy core
//! and CPU seconds per gigabyte ([`Efficiency`]). METHODOLOGY.md section 6 ("Efficiency")
//! gives the formulas; `analysis::cost` computes them.
//!
//! Invariant: every figure is derived from its flow's own `throughput_bps`, `sender_cpu_pct`
//! and `receiver_cpu_pct` (and, for packets, `udp.pps_received`), so a reader can recompute
//! it from the record; a figure is absent where that end's CPU is unknown or about zero.
//! Records made before these figures existed read back with `efficiency` absent.

use serde::{Deserialize, Serialize};

/// One direction's efficiency at each end (`tcp_stream` and `udp_stream` runs).
///
/// "A core" of an end is what its `*_cpu_pct` counts: user + system time of that end's data
/// threads for this direction's streams (one worker thread per stream, `getrusage
/// (RUSAGE_THREAD)` from the stream's start to its end), over that end's wall time, 100 % = one
/// core. Not the control thread, nor the rest of the process. Softirq work counts where the
/// kernel charges it: to the data thread it interrupted or ran in (on loopback the receive
/// path often runs in the sender's send call, and the sender's ACK processing in the
/// receiver's), unless the kernel is built with `CONFIG_IRQ_TIME_ACCOUNTING`, which charges
/// softirq time to no thread; softirq work in `ksoftirqd` counts to neither end.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Efficiency {
    /// The direction's receiver goodput per core of the sending end's data threads:
    /// `throughput_bps / (sender_cpu_pct / 100)`, bits/s per core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_goodput_bps_per_core: Option<f64>,
    /// The same per core of the receiving end's data threads:
    /// `throughput_bps / (receiver_cpu_pct / 100)`, bits/s per core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_goodput_bps_per_core: Option<f64>,
    /// CPU seconds of the sending end's data threads per 10⁹ bytes received, at the run's
    /// rates: `(sender_cpu_pct / 100) / (throughput_bps / 8 / 10⁹)`, which is
    /// `8e9 / sender_goodput_bps_per_core`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_cpu_s_per_gb: Option<f64>,
    /// The same for the receiving end's data threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_cpu_s_per_gb: Option<f64>,
    /// Cost per byte of the sending end's data threads: µs of their CPU per KB (1,024 bytes)
    /// received, netperf's unit, `sender_cpu_s_per_gb × 1.024`. netperf's own service demand
    /// counts the whole host's CPU (`FlowSummary::sender_service_demand_us_per_kb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_us_per_kb: Option<f64>,
    /// The same for the receiving end's data threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_us_per_kb: Option<f64>,
    /// UDP: distinct datagrams received per second (`udp.pps_received`) per core of the
    /// sending end's data threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_pps_per_core: Option<f64>,
    /// UDP: the same per core of the receiving end's data threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_pps_per_core: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_figures_are_left_out_and_read_back_absent() {
        let e = Efficiency {
            sender_goodput_bps_per_core: Some(5e10),
            sender_cpu_s_per_gb: Some(0.16),
            ..Efficiency::default()
        };
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(
            json,
            r#"{"sender_goodput_bps_per_core":50000000000.0,"sender_cpu_s_per_gb":0.16}"#
        );
        assert_eq!(serde_json::from_str::<Efficiency>(&json).unwrap(), e);
        assert_eq!(
            serde_json::from_str::<Efficiency>("{}").unwrap(),
            Efficiency::default()
        );
    }
}
