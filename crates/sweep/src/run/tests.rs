use super::*;
use crate::knob::KnobPlan;
use crate::param::Parameter;
use crate::plan::{FramePlan, PlannedPoint, Rfc2544Plan};
use crate::testing::{tag, MockRunner};
use crate::values::SweepValue;
use analysis::testing::{record_with, rr_with_rtt, udp_trial};
use events::Silent;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use wire::spec::{Params, TestKind, UdpRate};

/// An interrupt flag nobody raises.
fn calm() -> AtomicBool {
    AtomicBool::new(false)
}

fn spec(kind: TestKind, len: u32) -> TestSpec {
    let mut s = TestSpec::new(Params::defaults(kind), 1, 1000);
    s.set_message_len_bytes(len);
    s
}

/// A UDP spec's datagram rate, when it asks for one.
fn pps_of(s: &TestSpec) -> Option<u64> {
    match s.udp().map(|u| u.rate) {
        Some(UdpRate::PacketsPerSec(p)) => Some(p),
        _ => None,
    }
}

fn size_plan(sizes: &[u32]) -> SweepPlan {
    crate::testing::size_plan(sizes, spec)
}

/// A path of 1 Gbit/s with 20 µs of fixed round trip: small writes are per-call bound.
fn netpipe_like(s: &TestSpec) -> RunRecord {
    let size = f64::from(s.message_len_bytes());
    if s.kind().row().family == FamilyId::Transaction {
        rr_with_rtt(20.0 + size * 8.0 / 1e3)
    } else {
        record_with("tcp", (size * 8.0 * 1e6).min(1e9))
    }
}

#[test]
fn size_sweep_runs_both_tests_per_size_and_summarizes() {
    let plan = size_plan(&[1, 16, 64, 128, 1024, 65536]);
    let mut runner = MockRunner::new(netpipe_like);
    let r = run_sweep(&plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(
        (r.kind.name(), r.parameter.as_str()),
        ("sweep_size", "size_bytes")
    );
    assert_eq!(r.stopped, None);
    assert_eq!(r.points.len(), 6);
    assert_eq!(runner.asked.len(), 12);
    let kinds: Vec<TestKind> = runner.asked.iter().take(2).map(|p| p.spec.kind()).collect();
    assert_eq!(kinds, [TestKind::TcpStream, TestKind::TcpRr]);
    let first = &runner.asked[0];
    assert_eq!(tag(first, "sweep"), Some("size"));
    assert_eq!(tag(first, "size_bytes"), Some("1"));
    assert_eq!(tag(first, "sweep_id"), Some(r.sweep_id.as_str()));
    assert_eq!(tag(first, "repeat"), None, "no repeat tag without --repeat");
    // 128 bytes × 8 × 1e6 = 1.024 Gbit/s, capped at the 1 Gbit/s peak; half is 500 Mbit/s,
    // first reached at 64 bytes (512 Mbit/s).
    let s = r.summary;
    assert_eq!(s.peak_throughput_bps, Some(1e9));
    assert_eq!(s.peak_at, Some(128.0));
    assert_eq!(s.n_half_bytes, Some(64.0));
    assert_eq!(
        (s.small_message_bytes, s.small_message_rtt_us),
        (Some(1.0), Some(20.008))
    );
    assert_eq!(r.points[2].run_ids(), [5, 6]);
    assert_eq!(r.stream_records().len(), 6);
}

#[test]
fn ctrl_c_keeps_every_finished_point() {
    let plan = size_plan(&[1, 2, 4, 8]);
    let signal = Arc::new(calm());
    let mut runner = MockRunner::new(netpipe_like);
    // Raised during the fourth run (the second size's rr test): that point finishes, no
    // other starts.
    runner.interrupt_after = Some((3, Arc::clone(&signal)));
    let r = run_sweep(&plan, &mut runner, &signal, &mut Silent);
    assert_eq!(r.stopped, Some(Stopped::Interrupted));
    assert_eq!(r.points.len(), 2);
    assert_eq!(runner.asked.len(), 4);
    assert_eq!(r.summary.points, 2);
}

#[test]
fn an_interrupted_run_is_kept_flagged() {
    let plan = size_plan(&[1, 2]);
    let mut runner = MockRunner::new(|s: &TestSpec| {
        let mut r = netpipe_like(s);
        r.summary.interrupted =
            s.message_len_bytes() == 2 && !(s.kind().row().family == FamilyId::Transaction);
        r
    });
    let r = run_sweep(&plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(r.stopped, Some(Stopped::Interrupted));
    assert_eq!(r.points.len(), 2);
    assert!(r.points[1].interrupted);
    assert_eq!(
        r.points[1].runs.len(),
        1,
        "the rr test of that size never ran"
    );
    assert_eq!(r.summary.points, 1);
}

#[test]
fn a_failed_run_stops_the_sweep_with_the_value_named() {
    let plan = size_plan(&[1, 2, 4]);
    let mut runner = MockRunner::new(netpipe_like);
    runner.fail_at = Some(2);
    let r = run_sweep(&plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(r.points.len(), 1);
    assert_eq!(
        r.stopped,
        Some(Stopped::Failed {
            message: "size_bytes=2: cannot connect to 192.0.2.1:5301: connection refused".into()
        })
    );
}

fn knob_plan(values: &[&str], pre: &str, post: Option<&str>) -> SweepPlan {
    let labels: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    SweepPlan {
        kind: SweepKind::Knob,
        points: values
            .iter()
            .map(|v| PlannedPoint {
                value: SweepValue {
                    label: v.to_string(),
                    number: v.parse().ok(),
                },
                specs: vec![spec(TestKind::TcpStream, 1000)],
            })
            .collect(),
        repeat: RepeatPlan::once(),
        knob: Some(KnobPlan::new(pre, post, &labels, crate::knob::DEFAULT_TIMEOUT).unwrap()),
        probe: None,
    }
}

#[test]
fn knob_commands_run_around_each_point_and_are_stored() {
    let plan = knob_plan(&["0", "1; rm -rf /"], "echo set {value}", Some("true"));
    let mut runner = MockRunner::new(|_: &TestSpec| record_with("tcp", 1e9));
    let r = run_sweep(&plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(r.stopped, None);
    assert_eq!(r.points.len(), 2);
    let k = &r.points[1].knob;
    assert_eq!(k.len(), 2);
    assert_eq!(k[0].argv, ["echo", "set", "1; rm -rf /"]);
    assert_eq!(k[0].stdout, "set 1; rm -rf /\n");
    assert_eq!((k[1].phase, k[1].exit_code), (Phase::Post, Some(0)));
    assert_eq!(tag(&runner.asked[1], "knob"), Some("1; rm -rf /"));
    assert_eq!(tag(&runner.asked[1], "sweep"), Some("knob"));
}

#[test]
fn a_failing_knob_command_stops_the_sweep_with_its_output() {
    let plan = knob_plan(
        &["1", "2", "3"],
        "sh -c 'test \"$1\" != 2 || { echo \"rx-usecs $1: not supported\" >&2; exit 1; }' sh {value}",
        None,
    );
    let mut runner = MockRunner::new(|_: &TestSpec| record_with("tcp", 1e9));
    let r = run_sweep(&plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(runner.asked.len(), 1, "the test never ran for value 2");
    assert_eq!(
        r.points.len(),
        2,
        "value 2 is kept for its command's output"
    );
    assert!(r.points[1].runs.is_empty());
    assert_eq!(r.points[1].knob[0].stderr, "rx-usecs 2: not supported\n");
    let Some(Stopped::Failed { message }) = &r.stopped else {
        panic!("{:?}", r.stopped)
    };
    assert!(
        message.starts_with("--pre for value 2: `sh -c "),
        "{message}"
    );
    assert!(
        message.ends_with("exited with status 1: rx-usecs 2: not supported"),
        "{message}"
    );
    assert_eq!(r.summary.points, 1);
}

#[test]
fn post_runs_even_when_the_test_fails() {
    let plan = knob_plan(&["1", "2"], "true {value}", Some("echo restore {value}"));
    let mut runner = MockRunner::new(|_: &TestSpec| record_with("tcp", 1e9));
    runner.fail_at = Some(0);
    let r = run_sweep(&plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(r.points.len(), 1);
    let k = &r.points[0].knob;
    assert_eq!(k.len(), 2);
    assert_eq!(k[1].stdout, "restore 1\n");
    assert!(matches!(r.stopped, Some(Stopped::Failed { .. })));
}

#[test]
fn repeated_points_carry_statistics_and_tags() {
    let mut plan = SweepPlan {
        kind: SweepKind::Streams,
        points: [1u64, 2]
            .iter()
            .map(|&n| PlannedPoint {
                value: SweepValue::number(n),
                specs: vec![Parameter::Streams
                    .apply(&spec(TestKind::TcpStream, 1000), &SweepValue::number(n))
                    .unwrap()],
            })
            .collect(),
        repeat: RepeatPlan::new(Some(3), None).unwrap(),
        knob: None,
        probe: None,
    };
    let mut i = 0.0;
    let mut runner = MockRunner::new(move |s: &TestSpec| {
        i += 1.0;
        record_with("tcp", f64::from(s.streams) * 1e9 + i * 1e6)
    });
    let r = run_sweep(&plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(runner.asked.len(), 6);
    assert_eq!(tag(&runner.asked[2], "repeat"), Some("3"));
    assert_eq!(tag(&runner.asked[2], "streams"), Some("1"));
    let p = &r.points[1];
    assert_eq!(p.runs.len(), 3);
    assert_eq!(
        p.throughput_bps,
        Some(2.005e9),
        "the median of 2.004, 2.005, 2.006"
    );
    let st = p.repeat[0].get("throughput_bps").unwrap();
    assert_eq!((st.n, st.min, st.max), (3, 2.004e9, 2.006e9));
    assert_eq!(r.summary.peak_at, Some(2.0));
    plan.repeat = RepeatPlan::new(Some(8), Some("95:2")).unwrap();
    let mut runner = MockRunner::new(|_: &TestSpec| record_with("tcp", 1e9));
    let r = run_sweep(&plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(
        runner.asked.len(),
        6,
        "identical runs: the minimum of 3 per point"
    );
    assert!(r.points[0].repeat[0].ci.unwrap().reached);
}

#[test]
fn until_ci_repeats_until_the_interval_or_the_cap() {
    let point = Point {
        spec: spec(TestKind::TcpStream, 1000),
        tags: vec![],
        probe: None,
    };
    let figures = [100.0, 101.0, 99.0, 100.0, 100.0, 100.0];
    let mut n = 0;
    let mut runner = MockRunner::new(move |_: &TestSpec| {
        n += 1;
        record_with("tcp", figures[n - 1] * 1e7)
    });
    let plan = RepeatPlan::new(Some(10), Some("95:2")).unwrap();
    let r = run_repeated(&point, &plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(r.runs.len(), 5, "1.76 % wide after the fifth run");
    let s = r.summary.unwrap();
    assert!(s.ci.unwrap().reached);
    assert_eq!(tag(&runner.asked[4], "repeat"), Some("5"));
    assert!(tag(&runner.asked[0], "repeat_id").is_some());
    let mut flip = false;
    let mut runner = MockRunner::new(move |_: &TestSpec| {
        flip = !flip;
        record_with("tcp", if flip { 1e9 } else { 2e9 })
    });
    let plan = RepeatPlan::new(Some(4), Some("95:2")).unwrap();
    let r = run_repeated(&point, &plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(r.runs.len(), 4);
    let ci = r.summary.unwrap().ci.unwrap();
    assert!(!ci.reached);
    assert!(ci.width_pct.unwrap() > 50.0);
}

struct Mtu1500<R>(R);

impl<R: PointRunner> PointRunner for Mtu1500<R> {
    fn run(&mut self, point: &Point) -> Result<Measured, RunError> {
        self.0.run(point)
    }
    fn max_udp_payload(&self) -> Option<u32> {
        Some(1472)
    }
}

#[test]
fn udp_size_sweeps_leave_out_sizes_the_path_would_fragment() {
    let mut plan = size_plan(&[16, 1024, 1472, 1475, 4096]);
    for p in &mut plan.points {
        let len = p.specs[0].message_len_bytes();
        p.specs[0] = spec(TestKind::UdpStream, len);
        p.specs[1] = spec(TestKind::UdpRr, len);
    }
    let mut runner = Mtu1500(MockRunner::new(|s: &TestSpec| {
        if s.kind().row().family == FamilyId::Transaction {
            rr_with_rtt(30.0)
        } else {
            record_with("udp", 1e8)
        }
    }));
    let r = run_sweep(&plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(r.points.len(), 3);
    assert_eq!(
        r.notes,
        ["2 sizes above 1472 bytes left out: the path's MTU leaves 1472 bytes of UDP payload"]
    );
    assert_eq!(r.points[0].loss_pct, Some(0.0));
}

#[test]
fn rfc2544_finds_the_shaped_rate_and_measures_latency_there() {
    let mut base = spec(TestKind::UdpStream, 18);
    base.duration_ms = 10_000;
    let plan = Rfc2544Plan {
        frames: vec![FramePlan {
            frame_bytes: 64,
            payload_bytes: 18,
            spec: base,
            line_rate_pps: None,
        }],
        loss_ratio: 0.0,
        resolution: 0.005,
        max_trials: 20,
        latency: Some((
            ProbePlan {
                kind: TestKind::UdpRr,
                rate_per_s: 100,
                bytes: 64,
                idle: Duration::from_secs(1),
            },
            5_000,
        )),
        link_speed_bps: None,
    };
    // The path carries 100 000 frames/s; the sender manages 1.2 million.
    let mut runner = MockRunner::new(|s: &TestSpec| {
        let offered = pps_of(s).map_or(1.2e6, |p| p as f64 * f64::from(s.streams));
        udp_trial(
            offered,
            1e5,
            s.duration_ms as f64 / 1000.0,
            s.message_len_bytes(),
        )
    });
    let r = run_rfc2544(&plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(r.stopped, None);
    let row = &r.frames[0];
    let fps = row.throughput_fps.unwrap();
    assert!((99_500.0..=100_000.0).contains(&fps), "{fps}");
    assert_eq!(row.loss_pct, Some(0.0));
    assert_eq!(row.throughput_bps, Some(fps * 64.0 * 8.0));
    assert_eq!(row.run_ids.len(), row.trials.len());
    let first = &runner.asked[0];
    assert_eq!(
        first.spec.udp().map(|u| u.rate),
        Some(UdpRate::Max),
        "max rate first"
    );
    assert_eq!(tag(first, "frame_bytes"), Some("64"));
    let last = runner.asked.last().unwrap();
    assert!(last.probe.is_some(), "the latency run has probes");
    assert_eq!(last.spec.duration_ms, 5_000);
    assert_eq!(pps_of(&last.spec), Some(fps.round() as u64));
    let lat = row.latency.unwrap();
    assert_eq!(lat.loss_pct, 0.0);
}

#[test]
fn rfc2544_keeps_finished_frames_when_stopped() {
    let frame = |bytes: u32| FramePlan {
        frame_bytes: bytes,
        payload_bytes: bytes - 46,
        spec: spec(TestKind::UdpStream, bytes - 46),
        line_rate_pps: Some(measure::line_rate::pps(1e9, bytes)),
    };
    let plan = Rfc2544Plan {
        frames: vec![frame(64), frame(128)],
        loss_ratio: 0.0,
        resolution: 0.005,
        max_trials: 20,
        latency: None,
        link_speed_bps: Some(1_000_000_000),
    };
    let mut runner = MockRunner::new(|s: &TestSpec| {
        udp_trial(pps_of(s).unwrap() as f64, 1e7, 1.0, s.message_len_bytes())
    });
    runner.fail_at = Some(1);
    let r = run_rfc2544(&plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(r.frames.len(), 2);
    assert_eq!(r.frames[0].end, Some(crate::rfc2544::End::LineRate));
    assert_eq!(r.frames[1].throughput_fps, None);
    assert!(
        matches!(&r.stopped, Some(Stopped::Failed { message }) if message.starts_with("128-byte frames: "))
    );
}

#[test]
fn parameter_values_are_tagged_in_their_unit() {
    let plan = SweepPlan {
        kind: SweepKind::Window,
        points: vec![PlannedPoint {
            value: SweepValue {
                label: "64K".into(),
                number: Some(65536.0),
            },
            specs: vec![spec(TestKind::TcpStream, 1000)],
        }],
        repeat: RepeatPlan::once(),
        knob: None,
        probe: None,
    };
    let mut runner = MockRunner::new(|_: &TestSpec| record_with("tcp", 1e9));
    run_sweep(&plan, &mut runner, &calm(), &mut Silent);
    assert_eq!(tag(&runner.asked[0], "window_bytes"), Some("65536"));
    assert_eq!(tag(&runner.asked[0], "sweep"), Some("window"));
}
