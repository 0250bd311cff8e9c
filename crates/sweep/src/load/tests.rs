use super::*;
use crate::testing::{tag, MockRunner};
use analysis::testing::{record_with, rr_with_rtt};
use events::Silent;
use record::{schema::LatencyUnderLoad, RunRecord};
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wire::spec::Params;

fn spec(kind: TestKind, streams: u16) -> TestSpec {
    TestSpec::new(Params::defaults(kind), streams, 1000)
}

fn loads(pcts: &[u64]) -> Vec<SweepValue> {
    pcts.iter()
        .map(|p| SweepValue {
            label: format!("{p}%"),
            number: Some(*p as f64),
        })
        .collect()
}

const PROBE: ProbePlan = ProbePlan {
    kind: TestKind::UdpRr,
    rate_per_s: 100,
    bytes: 64,
    idle: Duration::from_secs(1),
};

/// One TCP stream at 50 % of a capacity the sweep measures first.
fn one_stream_at_half() -> LoadPlan {
    let tcp = spec(TestKind::TcpStream, 1);
    LoadPlan::new(tcp, loads(&[50]), None, RepeatPlan::once(), None).unwrap()
}

/// A 1 Gbit/s path whose queue grows as the load nears it: the probes' median round trip is
/// 50 µs / (1 - load), 50 ms at or past the capacity; the p99 twice the median.
fn queueing_path(s: &TestSpec) -> RunRecord {
    let offered = s
        .tcp()
        .and_then(|t| t.pacing_bps)
        .map(|p| p as f64 * f64::from(s.streams));
    let mut r = record_with("tcp", offered.unwrap_or(1e9).min(1e9));
    if let Some(offered) = offered {
        let load = offered / 1e9;
        let p50 = if load < 1.0 {
            50.0 / (1.0 - load)
        } else {
            50_000.0
        };
        let mut rr = *rr_with_rtt(p50).summary.rr().unwrap();
        rr.latency_us.as_mut().unwrap().p99 = 2.0 * p50;
        let figures = LatencyUnderLoad {
            probe_kind: TestKind::UdpRr,
            probe_rate_per_s: 100,
            probe_bytes: 64,
            idle_s: 1.0,
            idle: rr,
            loaded: rr,
            loaded_s: 1.0,
            added_p50_us: None,
            added_p99_us: None,
        };
        r.summary.set_latency_under_load(figures).unwrap();
    }
    r
}

#[test]
fn capacity_first_then_each_share_paced_over_the_streams() {
    let plan = LoadPlan::new(
        spec(TestKind::TcpStream, 2),
        loads(&[10, 50, 90, 120]),
        None,
        RepeatPlan::once(),
        Some(PROBE),
    )
    .unwrap();
    let mut runner = MockRunner::new(queueing_path);
    let r = run_load(&plan, &mut runner, &AtomicBool::new(false), &mut Silent);
    assert_eq!(r.stopped, None);
    let first = &runner.asked[0];
    assert_eq!(first.spec.tcp().unwrap().pacing_bps, None, "unpaced");
    assert_eq!(first.probe, None);
    assert_eq!(tag(first, "load_pct"), Some("capacity"));
    assert_eq!(tag(first, "sweep_id"), Some(r.sweep_id.as_str()));
    // 50 % of 1 Gbit/s over 2 streams: 250 Mbit/s each, with the probes beside.
    let half = &runner.asked[2];
    assert_eq!(half.spec.tcp().unwrap().pacing_bps, Some(250_000_000));
    assert_eq!(half.probe, Some(PROBE));
    assert_eq!(tag(half, "load_pct"), Some("50"));
    let load = r.load.unwrap();
    assert_eq!((load.unit, load.capacity), (LoadUnit::BitsPerS, 1e9));
    assert!(!load.capacity_given);
    assert_eq!(load.capacity_run.unwrap().run_id, Some(1));
    let offered: Vec<f64> = load.points.iter().map(|p| p.offered).collect();
    assert_eq!(offered, [1e8, 5e8, 9e8, 1.2e9]);
    assert_eq!(load.points[1].rtt_p50_us, Some(100.0));
    // p50 at 10 %: 55.6 µs; at 50 %: 100 (under 2×); at 90 %: 500, the knee.
    assert_eq!(load.knee_pct, Some(90.0));
    assert_eq!(r.points[3].loaded_rtt_p99_us, Some(100_000.0));
}

#[test]
fn request_response_loads_are_transactions_and_their_own_round_trips() {
    let plan = LoadPlan::new(
        spec(TestKind::TcpRr, 4),
        loads(&[25, 100]),
        None,
        RepeatPlan::once(),
        Some(PROBE),
    )
    .unwrap();
    assert_eq!(plan.probe, None, "no probes beside a request/response load");
    let mut runner = MockRunner::new(|s: &TestSpec| {
        let rate = s.rr().unwrap().transactions_per_sec;
        rr_with_rtt(if rate.is_some() { 30.0 } else { 20.0 })
    });
    let r = run_load(&plan, &mut runner, &AtomicBool::new(false), &mut Silent);
    // rr_with_rtt(20): 50,000 transactions/s; 25 % over 4 streams: 3125 each.
    assert_eq!(
        runner.asked[0].spec.rr().unwrap().transactions_per_sec,
        None
    );
    assert_eq!(
        runner.asked[1].spec.rr().unwrap().transactions_per_sec,
        Some(3125)
    );
    let load = r.load.unwrap();
    assert_eq!(load.unit, LoadUnit::TransactionsPerS);
    assert_eq!(load.points[0].rtt_p50_us, Some(30.0));
    assert_eq!(load.points[0].offered, 12_500.0);
}

#[test]
fn a_given_capacity_skips_the_capacity_run() {
    let plan = LoadPlan::new(
        spec(TestKind::UdpStream, 1),
        loads(&[50]),
        Some(2e8),
        RepeatPlan::once(),
        None,
    )
    .unwrap();
    let mut runner = MockRunner::new(|_: &TestSpec| record_with("udp", 1e8));
    let r = run_load(&plan, &mut runner, &AtomicBool::new(false), &mut Silent);
    assert_eq!(runner.asked.len(), 1);
    assert_eq!(
        runner.asked[0].spec.udp().unwrap().rate,
        UdpRate::BitsPerSec(100_000_000)
    );
    let load = r.load.unwrap();
    assert!(load.capacity_given && load.capacity_run.is_none());
}

#[test]
fn a_failed_capacity_run_ends_the_sweep_and_says_so() {
    let plan = one_stream_at_half();
    let mut runner = MockRunner::new(queueing_path);
    runner.fail_at = Some(0);
    let r = run_load(&plan, &mut runner, &AtomicBool::new(false), &mut Silent);
    assert!(r.points.is_empty() && r.load.is_none());
    match r.stopped {
        Some(Stopped::Failed { message }) => {
            assert!(
                message.starts_with("the capacity run: cannot connect"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_interrupted_or_empty_capacity_run_is_kept_and_ends_the_sweep() {
    let plan = one_stream_at_half();
    let mut runner = MockRunner::new(|_: &TestSpec| {
        let mut r = record_with("tcp", 1e9);
        r.summary.interrupted = true;
        r
    });
    let r = run_load(&plan, &mut runner, &AtomicBool::new(false), &mut Silent);
    assert_eq!(r.stopped, Some(Stopped::Interrupted));
    assert_eq!(
        runner.asked.len(),
        1,
        "no point after an interrupted capacity run"
    );
    let kept = r.load.unwrap().capacity_run.unwrap();
    assert_eq!(kept.run_id, Some(1), "the stored run is in the result");
    let mut runner = MockRunner::new(|_: &TestSpec| record_with("tcp", 0.0));
    let r = run_load(&plan, &mut runner, &AtomicBool::new(false), &mut Silent);
    match &r.stopped {
        Some(Stopped::Failed { message }) => {
            assert!(message.contains("give --capacity"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(r.load.unwrap().capacity_run.is_some());
}

#[test]
fn bad_plans_are_refused_naming_the_fix() {
    let err = LoadPlan::new(
        spec(TestKind::TcpStream, 1),
        loads(&[50, 500]),
        None,
        RepeatPlan::once(),
        None,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "--values 500%: a load is a share of the capacity, at most 400%"
    );
    let mut bidir = spec(TestKind::TcpStream, 1);
    bidir.stream_mut().unwrap().direction = Direction::Bidir;
    let err = LoadPlan::new(bidir, loads(&[50]), None, RepeatPlan::once(), None).unwrap_err();
    assert!(err.to_string().contains("drop --bidir"), "{err}");
}
