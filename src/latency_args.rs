//! `--latency` and its companions, flattened into `linerate tcp` and `linerate udp`, and their
//! validation into a [`ProbePlan`].

use std::time::Duration;

use clap::Args;
use wire::spec::TestKind;

use sweep::ProbePlan;

/// Latency-under-load flags.
#[derive(Debug, Clone, Args)]
pub struct LatencyArgs {
    /// Also measure round-trip latency with a low-rate probe stream, first idle, then under
    /// the load (udp: datagram probes, the default; tcp: a TCP_NODELAY connection). Needs a
    /// server that runs several tests at once (not `serve --one-off`).
    #[arg(long, value_name = "PROTO", num_args = 0..=1, default_missing_value = "udp",
          value_parser = ["udp", "tcp"])]
    pub latency: Option<String>,
    /// Probes per second.
    #[arg(
        long,
        value_name = "PER_SEC",
        default_value_t = 100,
        requires = "latency"
    )]
    pub latency_rate: u64,
    /// Seconds of idle probing before the load starts.
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = measure::units::parse_seconds,
        default_value_t = 2.0,
        requires = "latency"
    )]
    pub latency_idle: f64,
}

impl LatencyArgs {
    /// The probe plan, or `None` without `--latency`.
    pub fn plan(&self) -> anyhow::Result<Option<ProbePlan>> {
        let Some(proto) = &self.latency else {
            return Ok(None);
        };
        if self.latency_rate == 0 || self.latency_rate > 100_000 {
            return Err(anyhow::anyhow!(
                "--latency-rate {}: must be between 1 and 100000 probes per second",
                self.latency_rate
            ));
        }
        if !self.latency_idle.is_finite() || !(0.1..=3600.0).contains(&self.latency_idle) {
            return Err(anyhow::anyhow!(
                "--latency-idle {}: must be between 0.1 and 3600 seconds",
                self.latency_idle
            ));
        }
        Ok(Some(ProbePlan {
            kind: if proto == "tcp" {
                TestKind::TcpRr
            } else {
                TestKind::UdpRr
            },
            rate_per_s: self.latency_rate,
            bytes: 64,
            idle: Duration::from_secs_f64(self.latency_idle),
        }))
    }
}
