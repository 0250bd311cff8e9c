//! Snapshots of `linerate rpm`'s short summary and full report (`-v`) over a fixed run built from
//! the stored direction fixture (`tests/fixtures/rpm_run.json`): up stopped at the time limit
//! before its goodput was stable, down stable in both stages; and the properties the snapshots
//! stand on (one confidence statement per direction, `RESULT` last, the overall figure first).

use record::rpm::{Confidence, RpmDirection, RpmDocument, RpmEnd, RpmResult, RpmWay, StoredRpm};

use crate::rpm_brief::write_brief;

fn stored() -> StoredRpm {
    let r: record::RunRecord =
        serde_json::from_str(include_str!("../tests/fixtures/rpm_run.json")).unwrap();
    r.summary.rpm().unwrap().clone()
}

/// Up as stored (never stable, stopped at the limit); down stable after 4 s, its RPM after 8 s.
fn run() -> RpmResult {
    let s = stored();
    let mut up = s.direction.clone();
    up.notes.clear();
    let mut down = RpmDirection {
        direction: RpmWay::Down,
        goodput_bps: 14.2e9,
        connections: 4,
        goodput_stable_s: Some(4.0),
        goodput_confidence: Confidence::High,
        rpm_confidence: Confidence::High,
        rpm_stable_s: Some(8.0),
        rpm_intervals: 4,
        ended: RpmEnd::Stable,
        // Kept since issue 47: the goodput's window and its bytes (14.2 Gbit/s over 4 s).
        window_s: 4.0,
        received_bytes: 7_100_000_000,
        sent_bytes: 7_100_400_000,
        ..up.clone()
    };
    if let Some(r) = down.responsiveness.as_mut() {
        r.self_ms = 2.0;
        r.loaded_rpm = 30_000.0;
        r.rpm = (r.foreign_rpm + r.loaded_rpm) / 2.0;
    }
    let directions = vec![up, down];
    RpmResult {
        kind: RpmDocument::Rpm,
        draft: s.draft,
        target: "127.0.0.1:5301".into(),
        started_at_unix_ms: 1,
        params: s.params,
        time_limit_s: 30.0,
        duration_s: 12.41,
        idle: s.idle,
        overall: analysis_free_overall(&directions),
        directions,
        interrupted: false,
        run_ids: Vec::new(),
    }
}

/// The overall figure as `analysis::rpm::overall` computes it (report does not depend on
/// analysis): the means of the directions' trimmed means, then the draft's formula.
fn analysis_free_overall(ds: &[RpmDirection]) -> Option<record::rpm::RpmOverall> {
    let rs: Vec<_> = ds.iter().filter_map(|d| d.responsiveness).collect();
    let n = rs.len() as f64;
    let mean = |f: fn(&record::rpm::Responsiveness) -> f64| rs.iter().map(f).sum::<f64>() / n;
    let (c, f, l) = (
        mean(|r| r.connect_ms),
        mean(|r| r.foreign_rr_ms),
        mean(|r| r.self_ms),
    );
    let (foreign_rpm, loaded_rpm) = (60_000.0 / ((c + f) / 2.0), 60_000.0 / l);
    Some(record::rpm::RpmOverall {
        directions: ds.iter().map(|d| d.direction).collect(),
        responsiveness: record::rpm::Responsiveness {
            connect_ms: c,
            foreign_rr_ms: f,
            self_ms: l,
            foreign_rpm,
            loaded_rpm,
            rpm: (foreign_rpm + loaded_rpm) / 2.0,
        },
        confidence: ds.iter().map(|d| d.rpm_confidence).min()?,
    })
}

fn brief(r: &RpmResult) -> String {
    let mut out = Vec::new();
    write_brief(&mut out, r, false).unwrap();
    String::from_utf8(out).unwrap()
}

fn full(r: &RpmResult) -> String {
    let mut out = Vec::new();
    super::write(&mut out, r).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn rpm_brief_summary() {
    let text = brief(&run());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "header, up, down, idle, RESULT:\n{text}");
    assert!(lines[4].starts_with("RESULT  RPM "), "{text}");
    assert_eq!(text.matches("RESULT").count(), 1);
    assert_eq!(
        text.matches("confidence").count(),
        3,
        "each direction once, RESULT once"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn rpm_full_report() {
    let text = full(&run());
    let first_rpm = text.lines().nth(1).unwrap();
    assert!(first_rpm.starts_with("RPM ") && first_rpm.contains("over up and down"));
    assert!(!text.contains("stable after 4.0 s (confidence"), "{text}");
    insta::assert_snapshot!(text);
}

/// A run that stopped at the time limit after its goodput was stable never also says it was
/// sure: its one statement says when it stopped and what it lacked.
#[test]
fn a_direction_cut_off_after_stable_goodput_says_so_once() {
    let mut r = run();
    let d = &mut r.directions[1];
    (d.rpm_confidence, d.rpm_stable_s, d.rpm_intervals, d.ended) =
        (Confidence::Low, None, 1, RpmEnd::TimeLimit);
    let line = brief(&r).lines().nth(2).unwrap().to_string();
    assert!(
        line.ends_with(
            "confidence low: stopped at the time limit 1 interval after goodput was stable, of the 4 the RPM needs"
        ),
        "{line}"
    );
    let d = &mut r.directions[1];
    (d.rpm_confidence, d.rpm_intervals) = (Confidence::Medium, 6);
    assert!(brief(&r)
        .contains("confidence medium: RPM not stable over 6 intervals, stopped at the time limit"));
    r.interrupted = true;
    r.directions[1].ended = RpmEnd::Interrupted;
    let text = brief(&r);
    assert!(text.contains("stopped at Ctrl-C"), "{text}");
    assert!(text
        .lines()
        .last()
        .unwrap()
        .ends_with("(INTERRUPTED: partial)"));
}

#[test]
fn an_idle_only_run_has_no_overall_and_says_why() {
    let r = RpmResult {
        directions: Vec::new(),
        overall: None,
        ..run()
    };
    let text = brief(&r);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.ends_with("RESULT  idle RPM 365303 (no load: --direction idle)\n"),
        "{text}"
    );
    assert!(!full(&r).contains("not measured"));
}

/// `linerate show` of a stored direction: each rate says what it is over, the bytes and the
/// window agree with the goodput, and the TCP time left out on purpose is not blamed on the
/// kernel (issue 47). Stored before issue 47 (the fixture as it is): its figures say what
/// they were.
#[test]
fn show_says_what_each_rate_of_a_stored_direction_is_over() {
    let shown = |r: &record::RunRecord| {
        let mut out = Vec::new();
        crate::run_text::write_summary(&mut out, r).unwrap();
        String::from_utf8(out).unwrap()
    };
    let old: record::RunRecord =
        serde_json::from_str(include_str!("../tests/fixtures/rpm_run.json")).unwrap();
    let text = shown(&old);
    assert!(
        text.contains("over the connections' lives; their average rates summed"),
        "{text}"
    );
    assert!(
        text.contains("each the sum of the connections' latest rates"),
        "{text}"
    );
    assert!(!text.contains("not kept by the sender's kernel"), "{text}");
    let mut new = old.clone();
    let s = &mut new.summary;
    let f = &mut s.flows[0];
    (f.window_s, f.bytes_received, f.bytes_sent) = (3.0, 3_000_000_000, 3_000_250_000);
    (f.throughput_bps, f.sender_throughput_bps) = (8e9, 8.000_666_666_666_667e9);
    if let record::Family::Rpm(rpm) = &mut s.family {
        let d = &mut rpm.rpm.direction;
        (d.window_s, d.received_bytes, d.goodput_bps) = (3.0, 3_000_000_000, 8e9);
    }
    let text = shown(&new);
    let line = |start: &str| {
        text.lines()
            .find(|l| l.starts_with(start))
            .unwrap()
            .to_string()
    };
    assert_eq!(
        line("  sent "),
        "  sent          2.79 GiB by client = 8.00 Gbit/s over the goodput's 3.00 s window (the last 3 intervals)"
    );
    assert_eq!(
        line("  received "),
        "  received      2.79 GiB by server = 8.00 Gbit/s goodput over the same window"
    );
    assert!(line("  intervals ").ends_with("each 1 s interval's bytes read over its length"));
    assert!(line("  drained ").contains("over the connections' whole lives, all delivered"));
    assert!(line("  TCP time ").contains("not summed for an rpm direction"));
    assert!(
        text.contains("goodput 8.00 Gbit/s: 2.79 GiB read in the last 3.00 s by 3 connections"),
        "{text}"
    );
}
