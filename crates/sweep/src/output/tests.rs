use super::*;
use crate::knob::{run_command, KnobPlan, DEFAULT_TIMEOUT};
use crate::result::{PointRun, SweepKind, SweepSummary};
use crate::rfc2544::{
    FrameResult, LatencyAtRate, Rfc2544Result, Search, SearchConfig, TrialCounts,
};
use crate::values::SweepValue;
use analysis::repeat::{RepeatPlan, RepeatSummary};
use analysis::testing::{record_with, rr_with_rtt};

fn run(id: i64, record: record::RunRecord) -> PointRun {
    PointRun {
        run_id: Some(id),
        record,
    }
}

fn size_sweep() -> SweepResult {
    let points: Vec<SweepPoint> = [
        (1u64, 2.5e6, 21.25),
        (64, 150e6, 22.5),
        (65536, 9.41e9, 160.0),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(size, bps, rtt))| {
        let id = 2 * i as i64 + 10;
        SweepPoint::new(
            SweepValue::number(size),
            vec![
                run(id, record_with("tcp", bps)),
                run(id + 1, rr_with_rtt(rtt)),
            ],
        )
    })
    .collect();
    SweepResult {
        kind: SweepKind::Size,
        parameter: SweepKind::Size.parameter(),
        test: wire::TestKind::TcpStream,
        target: "127.0.0.1:5301".into(),
        sweep_id: "1".into(),
        started_at_unix_ms: 1,
        knob: None,
        summary: SweepSummary::of(SweepKind::Size, &points),
        points,
        stopped: None,
        notes: vec![],
        load: None,
    }
}

fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    f(&mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn size_sweep_table() {
    let t = text(|o| write_sweep_table(o, &size_sweep()).unwrap());
    assert_eq!(
        t,
        "\
linerate sweep size: tcp_stream against 127.0.0.1:5301
BYTES         RATE  RTT P50 us  RETR  CPU L/R %  RUNS
    1  2.50 Mbit/s        21.2     8      75/65  #10-11
   64   150 Mbit/s        22.5     8      75/65  #12-13
65536  9.41 Gbit/s       160.0     8      75/65  #14-15
peak 9.41 Gbit/s at 65536 bytes; n½ 65536 bytes (the smallest size reaching 4.71 Gbit/s)
small-message round trip 21.2 us (p50, 1-byte messages)
"
    );
}

#[test]
fn size_sweep_csv() {
    let t = text(|o| write_sweep_csv(o, &size_sweep()).unwrap());
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(lines[0].starts_with("kind,parameter,value,value_num,throughput_bps,"));
    assert_eq!(
        lines[1],
        "sweep_size,size_bytes,1,1,2500000,,,,,,,2,21.25,47058.82352941176,,8,74.54916520085041,65.40689827098804,,,10 11,false,41.055,,,,,,"
    );
}

/// A load sweep of a request/response test: 50,000 transactions/s, two loads.
fn load_sweep() -> SweepResult {
    let point = |pct: u64, rtt: f64, id: i64| {
        SweepPoint::new(
            SweepValue {
                label: format!("{pct}%"),
                number: Some(pct as f64),
            },
            vec![PointRun {
                run_id: Some(id),
                record: analysis::testing::rr_with_rtt(rtt),
            }],
        )
    };
    let points = vec![point(50, 20.0, 2), point(100, 90.0, 3)];
    let mut r = size_sweep();
    r.kind = SweepKind::Load;
    r.parameter = SweepKind::Load.parameter();
    r.test = wire::TestKind::TcpRr;
    r.load = Some(crate::load::LoadSummary {
        capacity_run: None,
        ..crate::load::LoadSummary::of(crate::load::LoadUnit::TransactionsPerS, 5e4, &points)
    });
    r.summary = SweepSummary::of(SweepKind::Load, &points);
    r.points = points;
    r
}

#[test]
fn load_sweep_table_offers_and_marks_the_knee() {
    let mut r = load_sweep();
    for p in &mut r.points {
        p.rtt_p99_us = p.rtt_p50_us.map(|v| v * 2.0);
    }
    let points = r.points.clone();
    r.load = Some(crate::load::LoadSummary::of(
        crate::load::LoadUnit::TransactionsPerS,
        5e4,
        &points,
    ));
    let t = text(|o| write_sweep_table(o, &r).unwrap());
    assert!(t.starts_with("linerate sweep load: tcp_rr against"), "{t}");
    assert!(
        t.contains("LOAD  OFFERED  RTT P50 us  RTT P99 us  TRANS/S"),
        "{t}"
    );
    assert!(t.contains(" 50%  25000/s        20.0        40.0"), "{t}");
    assert!(t.contains("capacity 50000/s (measured)"), "{t}");
    assert!(
        t.contains("knee at 100% of the capacity: the first load whose median round trip is at least 2x the lowest load's (20.0 us)"),
        "{t}"
    );
    // The CSV's last four fields: the unit, the capacity, the load offered and the knee.
    let csv = text(|o| write_sweep_csv(o, &r).unwrap());
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].ends_with(",load_unit,capacity,offered,knee"),
        "{csv}"
    );
    assert!(
        lines[1].ends_with(",transactions_per_s,50000,25000,false"),
        "{csv}"
    );
    assert!(
        lines[2].ends_with(",transactions_per_s,50000,50000,true"),
        "{csv}"
    );
    // Other sweeps leave them empty.
    let size = text(|o| write_sweep_csv(o, &size_sweep()).unwrap());
    assert!(size.lines().nth(1).unwrap().ends_with(",,,,"), "{size}");
}

#[test]
fn json_round_trips() {
    let r = size_sweep();
    let t = text(|o| report::pretty_json(o, &r).unwrap());
    let back: SweepResult = serde_json::from_str(&t).unwrap();
    assert_eq!(back, r);
    let v: serde_json::Value = serde_json::from_str(&t).unwrap();
    assert_eq!(v["kind"], "sweep_size");
    assert_eq!(v["summary"]["n_half_bytes"], 65536.0);
    assert_eq!(v["points"][0]["value"]["label"], "1");
}

#[test]
fn knob_sweep_with_repeats_stopped_by_a_failure() {
    let plan = RepeatPlan::new(Some(3), Some("95:2")).unwrap();
    let values = ["1".to_string(), "2".to_string()];
    let knob = KnobPlan::new("echo {value}", None, &values, DEFAULT_TIMEOUT).unwrap();
    let runs: Vec<PointRun> = [1.0e9, 1.01e9, 0.99e9]
        .iter()
        .enumerate()
        .map(|(i, &b)| run(i as i64 + 1, record_with("tcp", b)))
        .collect();
    let records: Vec<&record::RunRecord> = runs.iter().map(|r| &r.record).collect();
    let summary =
        RepeatSummary::of(&records, &plan, analysis::metric_id::summarized_figures).unwrap();
    let mut p1 = SweepPoint::new(
        SweepValue {
            label: "1".into(),
            number: Some(1.0),
        },
        runs,
    );
    p1.repeat = vec![summary];
    p1.knob = vec![run_command(
        Phase::Pre,
        &knob.pre.render("1"),
        "1",
        DEFAULT_TIMEOUT,
        &std::sync::atomic::AtomicBool::new(false),
    )];
    let mut p2 = SweepPoint::new(
        SweepValue {
            label: "2".into(),
            number: Some(2.0),
        },
        vec![],
    );
    p2.knob = vec![run_command(
        Phase::Pre,
        &["sh".into(), "-c".into(), "exit 4".into()],
        "2",
        DEFAULT_TIMEOUT,
        &std::sync::atomic::AtomicBool::new(false),
    )];
    let points = vec![p1, p2];
    let r = SweepResult {
        kind: SweepKind::Knob,
        parameter: SweepKind::Knob.parameter(),
        test: wire::TestKind::TcpStream,
        target: "h:5301".into(),
        sweep_id: "1".into(),
        started_at_unix_ms: 1,
        summary: SweepSummary::of(SweepKind::Knob, &points),
        knob: Some(knob),
        points,
        stopped: Some(Stopped::Failed {
            message: "--pre for value 2: `sh -c 'exit 4'` exited with status 4".into(),
        }),
        notes: vec![],
        load: None,
    };
    let t = text(|o| write_sweep_table(o, &r).unwrap());
    assert_eq!(
        t,
        "\
linerate sweep knob: tcp_stream against h:5301
  --pre echo {value}
VALUE         RATE    MIN RATE     MAX RATE  SPREAD %  N  CI  RETR  CPU L/R %  KNOB EXIT  RUNS
1      1.00 Gbit/s  990 Mbit/s  1.01 Gbit/s       2.0  3  no     8      97/76  pre 0      #1-3
2                -           -            -         -  -  -      -          -  pre 4      -
peak 1.00 Gbit/s at knob=1
stopped: --pre for value 2: `sh -c 'exit 4'` exited with status 4; the 2 point(s) above are kept
"
    );
    let csv = text(|o| write_sweep_csv(o, &r).unwrap());
    let line2: Vec<&str> = csv.lines().nth(2).unwrap().split(',').collect();
    assert_eq!((line2[2], line2[18], line2[11]), ("2", "4", "0"));
}

#[test]
fn repeat_table_says_whether_the_interval_was_reached() {
    let plan = RepeatPlan::new(Some(3), Some("95:5")).unwrap();
    let runs: Vec<PointRun> = [1.0e9, 1.01e9, 0.99e9]
        .iter()
        .enumerate()
        .map(|(i, &b)| run(i as i64 + 7, record_with("tcp", b)))
        .collect();
    let records: Vec<&record::RunRecord> = runs.iter().map(|r| &r.record).collect();
    let r = RepeatResult {
        kind: crate::run::RepeatDocument::Repeat,
        test: wire::TestKind::TcpStream,
        target: "h:5301".into(),
        summary: RepeatSummary::of(&records, &plan, analysis::metric_id::summarized_figures),
        runs,
        stopped: None,
    };
    let t = text(|o| write_repeat_table(o, &r).unwrap());
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[0], "linerate tcp_stream against h:5301: 3 run(s)");
    assert_eq!(
        lines[1],
        "METRIC               MEDIAN         MIN          MAX         MEAN       STDDEV  SPREAD %  CI95 %"
    );
    assert_eq!(
        lines[2],
        "throughput_bps  1.00 Gbit/s  990 Mbit/s  1.01 Gbit/s  1.00 Gbit/s  10.0 Mbit/s       2.0     5.0"
    );
    assert!(lines.contains(&"--until-ci 95:5: reached after 3 runs: the 95 % interval of the mean throughput_bps is 4.97 % of it wide"));
    assert_eq!(lines.last(), Some(&"stored as #7-9"));
    let csv = text(|o| write_repeat_csv(o, &r).unwrap());
    assert!(csv.starts_with("test,metric,n,median,"));
    assert!(csv.contains("\ntcp_stream,throughput_bps,3,1000000000,990000000,1010000000,"));
}

#[test]
fn rfc2544_table_beside_the_line_rate() {
    let line = measure::line_rate::pps(1e9, 64);
    let mut s = Search::new(SearchConfig {
        line_rate_pps: Some(line),
        loss_ratio: 0.0,
        resolution: 0.005,
        max_trials: 20,
        min_pps: 1.0,
    });
    while let Some(o) = s.next_offer() {
        let offered = o.pps().unwrap();
        let sent = (offered * 10.0) as u64;
        let got = sent.min(4_000_000);
        s.record(TrialCounts {
            sent,
            lost: sent - got,
            sent_pps: offered,
            received_pps: got as f64 / 10.0,
        });
    }
    let mut row = FrameResult::from_search(64, 18, &s);
    row.latency = Some(LatencyAtRate {
        rtt_p50_us: Some(35.25),
        rtt_p99_us: Some(80.0),
        samples: 1000,
        loss_pct: 0.0,
        run_id: None,
    });
    let r = Rfc2544Result {
        kind: crate::rfc2544::Rfc2544Document::Rfc2544,
        target: "dut:5301".into(),
        link_speed_bps: Some(1_000_000_000),
        trial_s: 10.0,
        loss_pct: 0.0,
        resolution_pct: 0.5,
        frames: vec![row],
        stopped: None,
    };
    let t = text(|o| write_rfc2544_table(o, &r).unwrap());
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(
        lines[0],
        "linerate rfc2544 against dut:5301: 10 s trials, loss <= 0 %, resolution 0.5 %, link 1.00 Gbit/s"
    );
    assert_eq!(
        lines[1],
        "FRAME  THROUGHPUT fps        RATE  LINE RATE fps  % LINE  LOSS %  P50 us  P99 us  TRIALS  END"
    );
    assert_eq!(
        lines[2],
        "   64          399990  205 Mbit/s        1488095    26.9   0.000    35.2    80.0       4  resolution"
    );
    assert!(lines[2].contains("1488095"), "{}", lines[2]);
    assert!(lines[2].ends_with("resolution"), "{}", lines[2]);
    let csv = text(|o| write_rfc2544_csv(o, &r).unwrap());
    assert!(csv.lines().nth(1).unwrap().starts_with("64,18,39"));
}

#[test]
fn id_ranges_compress_consecutive_runs() {
    assert_eq!(id_ranges(&[12, 13, 14, 20, 22, 23]), "#12-14, #20, #22-23");
    assert_eq!(id_ranges(&[]), "");
}
