//! Latency under load (`--latency`): a low-rate request/response probe stream measured idle,
//! before the load starts, and again while the bulk test runs, as crusader and flent's RRUL
//! do. The probe is a second session to the same server, so it shares the path but not the
//! bulk connections' socket queues.
//!
//! The plan ([`ProbePlan`]) is what a test, a sweep's point or an rfc2544 latency run carries;
//! [`run_with_probes`] runs it beside a bulk test through `session::client::run`.
//!
//! Measurement only: results land in the bulk run's record ([`record::schema::LatencyUnderLoad`] and
//! each interval's `probe`); nothing here prints but one progress line on stderr.

use std::sync::mpsc;
use std::time::Duration;

use events::{Observer, Signal, Silent};
use record::schema::LatencyUnderLoad;
use record::{IntervalSample, RrInterval, RunRecord};
use session::client::{self, ClientConfig, ClientError};
use wire::msg::ServerInfo;
use wire::spec::{DataPath, Params, RrParams, TcpOptions, TestKind};
use wire::TestSpec;

/// A validated `--latency` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbePlan {
    /// `udp_rr` or `tcp_rr`.
    pub kind: TestKind,
    /// Probes started per second.
    pub rate_per_s: u64,
    /// Request and response bytes.
    pub bytes: u32,
    /// Length of the idle phase.
    pub idle: Duration,
}

/// The probe session's spec for `duration` beside `bulk`.
fn probe_spec(bulk: &TestSpec, plan: &ProbePlan, duration: Duration) -> TestSpec {
    let duration_ms = duration.as_millis().max(1) as u64;
    let rr = RrParams {
        transactions_per_sec: Some(plan.rate_per_s),
        ..RrParams::new(plan.bytes, plan.bytes)
    };
    // A TCP probe carries the bulk test's TOS (UDP sockets do not set one).
    let tcp = TcpOptions {
        tos: bulk.tcp().and_then(|t| t.tos),
        ..TcpOptions::no_delay()
    };
    let params = match plan.kind.row().path {
        DataPath::Tcp => Params::TcpRr { rr, tcp },
        DataPath::Udp => Params::UdpRr { rr },
    };
    TestSpec {
        interval_ms: bulk.interval_ms.min(duration_ms),
        ..TestSpec::new(params, 1, duration_ms)
    }
}

/// Hands each probe interval to the bulk run's progress.
struct Forward(mpsc::Sender<RrInterval>);

impl Observer for Forward {
    fn started(&mut self, _: &ServerInfo, _: &TestSpec) {}
    fn interval(&mut self, sample: &IntervalSample) {
        if let Some(rr) = sample.flows.first().and_then(|f| f.rr) {
            let _ = self.0.send(rr);
        }
    }
}

/// Shows the latest probe interval beside each bulk interval.
struct WithProbe<'a> {
    inner: &'a mut dyn Observer,
    probes: mpsc::Receiver<RrInterval>,
}

impl Observer for WithProbe<'_> {
    fn started(&mut self, server: &ServerInfo, spec: &TestSpec) {
        self.inner.started(server, spec);
    }
    fn interval(&mut self, sample: &IntervalSample) {
        let mut sample = sample.clone();
        sample.probe = self.probes.try_iter().last();
        self.inner.interval(&sample);
    }
}

/// Measures idle latency, then runs `bulk` with the probe beside it, and returns the bulk
/// run's record with both phases' latency in it.
pub fn run_with_probes(
    bulk: &ClientConfig,
    plan: &ProbePlan,
    progress: &mut dyn Observer,
) -> Result<RunRecord, ClientError> {
    eprintln!(
        "linerate: measuring idle latency for {:.1} s ({} {}-byte probes/s over {})...",
        plan.idle.as_secs_f64(),
        plan.rate_per_s,
        plan.bytes,
        plan.kind.as_str()
    );
    let idle_config = ClientConfig {
        spec: probe_spec(&bulk.spec, plan, plan.idle),
        ..bulk.clone()
    };
    let idle = client::run(&idle_config, &mut Silent)?;
    if bulk.interrupt.is_raised() {
        return Err(ClientError::Interrupted);
    }
    // The probe runs until the bulk run returns (or a bound well past its duration).
    let probe_stop = Signal::new();
    let loaded_config = ClientConfig {
        spec: probe_spec(
            &bulk.spec,
            plan,
            Duration::from_millis(bulk.spec.duration_ms) + Duration::from_secs(30),
        ),
        interrupt: probe_stop.clone(),
        ..bulk.clone()
    };
    let (tx, rx) = mpsc::channel();
    let (bulk_result, probe_result) = std::thread::scope(|scope| {
        let probe = scope.spawn(|| client::run(&loaded_config, &mut Forward(tx)));
        let mut shown = WithProbe {
            inner: progress,
            probes: rx,
        };
        let bulk_result = client::run(bulk, &mut shown);
        probe_stop.raise();
        let probe_result = probe
            .join()
            .unwrap_or_else(|_| Err(ClientError::Protocol("latency probe panicked".into())));
        (bulk_result, probe_result)
    });
    let mut record = bulk_result?;
    let loaded = probe_result.map_err(|e| ClientError::Protocol(format!("latency probe: {e}")))?;
    for (sample, probe) in record.intervals.iter_mut().zip(&loaded.intervals) {
        sample.probe = probe.flows.first().and_then(|f| f.rr);
    }
    let (idle_rr, loaded_rr) = (
        idle.summary.rr().copied().unwrap_or_default(),
        loaded.summary.rr().copied().unwrap_or_default(),
    );
    let added = |f: fn(&measure::latency::LatencySummary) -> f64| {
        Some(f(loaded_rr.latency_us.as_ref()?) - f(idle_rr.latency_us.as_ref()?))
    };
    let figures = LatencyUnderLoad {
        probe_kind: plan.kind,
        probe_rate_per_s: plan.rate_per_s,
        probe_bytes: plan.bytes,
        idle_s: idle.summary.duration_s,
        idle: idle_rr,
        loaded: loaded_rr,
        loaded_s: loaded.summary.duration_s,
        added_p50_us: added(|l| l.p50),
        added_p99_us: added(|l| l.p99),
    };
    // `--latency` loads tcp and udp runs only, the families that carry it.
    (record.summary)
        .set_latency_under_load(figures)
        .map_err(|e| ClientError::Protocol(format!("latency probe: {e}")))?;
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::spec::TestKind;

    #[test]
    fn probe_spec_is_a_paced_single_stream() {
        let mut bulk = TestSpec::new(Params::defaults(TestKind::TcpStream), 4, 10_000);
        bulk.tcp_mut().unwrap().tos = Some(0x10);
        let mut plan = ProbePlan {
            kind: TestKind::UdpRr,
            rate_per_s: 100,
            bytes: 64,
            idle: Duration::from_secs(2),
        };
        let s = probe_spec(&bulk, &plan, plan.idle);
        assert_eq!((s.kind(), s.streams), (TestKind::UdpRr, 1));
        let rr = RrParams {
            transactions_per_sec: Some(100),
            ..RrParams::new(64, 64)
        };
        assert_eq!(s.rr(), Some(&rr));
        assert_eq!((s.duration_ms, s.interval_ms), (2000, 1000));
        assert!(s.check(&wire::spec::SpecLimits::default()).is_ok());
        plan.kind = TestKind::TcpRr;
        let s = probe_spec(&bulk, &plan, plan.idle);
        assert_eq!(
            (s.rr(), s.tcp().and_then(|t| t.tos)),
            (Some(&rr), Some(0x10))
        );
        assert!(s.tcp().unwrap().no_delay);
    }
}
