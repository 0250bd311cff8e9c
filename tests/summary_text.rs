//! What `tcp`, `udp`, `rr` and `crr` print after the live rows (issue 35): by default a short
//! summary (a header, a line per direction, at most one line of advice, `RESULT` last) whose
//! figures are the stored record's; with `-v` the full report, exactly as `linerate show`
//! prints the stored run; with `--json` the record plus the id it was stored under.

use measure::units::format_bits_per_sec as bps;
use serde_json::Value;

use crate::util::{linerate, linerate_ok, num};

/// A run's stdout and the id it was stored under (from stderr's `stored as #N`).
struct Printed {
    stdout: String,
    id: String,
}

fn run(args: &[&str], db: &str) -> Printed {
    let out = linerate().args(args).args(["--db", db]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("linerate: stored as #"))
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no `stored as` line: {stderr}"))
        .to_string();
    Printed {
        stdout: String::from_utf8(out.stdout).unwrap(),
        id,
    }
}

/// The stored record of run `id`, as `show --json` gives it.
fn stored(id: &str, db: &str) -> Value {
    let shown: Value =
        serde_json::from_str(&linerate_ok(&["show", id, "--db", db, "--json"])).unwrap();
    shown["record"].clone()
}

/// The summary's lines (from its `--- summary:` header to the end), checked for the short
/// summary's shape: at most `max` lines, `RESULT` the last and only there, no ANSI codes when
/// stdout is not a terminal.
fn short_summary(stdout: &str, max: usize) -> Vec<&str> {
    let lines: Vec<&str> = stdout.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("--- summary: "))
        .unwrap_or_else(|| panic!("no summary header:\n{stdout}"));
    let summary = lines[start..].to_vec();
    assert!(
        summary.len() <= max,
        "{} lines, at most {max}:\n{stdout}",
        summary.len()
    );
    assert!(summary.last().unwrap().starts_with("RESULT  "), "{stdout}");
    assert_eq!(stdout.matches("RESULT").count(), 1, "{stdout}");
    assert!(
        !stdout.contains('\x1b'),
        "no ANSI codes into a pipe: {stdout:?}"
    );
    summary
}

fn db_in(dir: &tempfile::TempDir) -> String {
    dir.path().join("runs.db").display().to_string()
}

#[test]
fn tcp_prints_a_short_summary_whose_result_is_the_stored_records() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let p = run(&["tcp", "-t", "0.5"], &db);
    let lines = short_summary(&p.stdout, 6);
    let v = stored(&p.id, &db);
    let s = &v["summary"];
    let f = &s["flows"][0];
    let goodput = bps(num(&f["throughput_bps"]));
    let line = lines.iter().find(|l| l.starts_with("c->s ")).unwrap();
    assert!(line.contains(&format!("{goodput} goodput")), "{line}");
    assert!(line.contains(" CPU client "), "{line}");
    let result = format!(
        "RESULT  {goodput} c->s (1 stream, {:.2} s), retr {}, sender CPU ",
        num(&s["duration_s"]),
        s["retransmits"]
    );
    assert!(
        lines.last().unwrap().starts_with(&result),
        "{result}\n{}",
        p.stdout
    );
    // The full report's own lines are not in the short one.
    for full in ["TCP_INFO", "CPU local", "in flight", "efficiency"] {
        assert!(!p.stdout.contains(full), "{full}: {}", p.stdout);
    }
}

#[test]
fn tcp_bidir_is_a_line_per_direction_and_their_sum() {
    let text = linerate_ok(&["tcp", "-t", "0.5", "--bidir", "--no-store"]);
    let lines = short_summary(&text, 8);
    assert!(lines.iter().any(|l| l.starts_with("c->s ")), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("s->c ")), "{text}");
    let result = lines.last().unwrap();
    assert!(
        result.contains(" total = ") && result.contains(" c->s + ") && result.contains(" s->c "),
        "{text}"
    );
}

#[test]
fn udp_prints_loss_of_sent_as_the_stored_record_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let p = run(&["udp", "-t", "0.5", "-b", "50M"], &db);
    let lines = short_summary(&p.stdout, 6);
    let v = stored(&p.id, &db);
    let s = &v["summary"];
    let lost = format!(
        "lost {}/{} datagrams ({:.3} %)",
        s["packets_lost"],
        s["packets_sent"],
        num(&s["loss_pct"])
    );
    let goodput = bps(num(&s["flows"][0]["throughput_bps"]));
    let line = lines.iter().find(|l| l.starts_with("c->s ")).unwrap();
    assert!(line.contains(&lost) && line.contains(&goodput), "{line}");
    let result = lines.last().unwrap();
    assert!(
        result.starts_with(&format!("RESULT  {goodput} c->s ")),
        "{result}"
    );
    assert!(result.contains(&lost), "{result}");
}

#[test]
fn rr_and_crr_print_their_rate_and_round_trips_as_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    for (kind, unit) in [("rr", "transactions/s"), ("crr", "connections/s")] {
        let p = run(&[kind, "-t", "0.5"], &db);
        let lines = short_summary(&p.stdout, 4);
        let v = stored(&p.id, &db);
        let s = &v["summary"];
        let rate = if kind == "crr" {
            num(&s["connections_per_s"])
        } else {
            num(&s["transactions_per_s"])
        };
        let l = &s["latency_us"];
        let result = format!(
            "RESULT  {rate:.0} {unit}, p50 {:.1} us, p99 {:.1} us (1 stream, ",
            num(&l["p50"]),
            num(&l["p99"])
        );
        assert!(
            lines.last().unwrap().starts_with(&result),
            "{result}\n{}",
            p.stdout
        );
        assert!(
            lines[1].starts_with(&format!("{kind:<6}{rate:.0} {unit}")),
            "{}",
            p.stdout
        );
    }
}

/// `-v`'s summary is `linerate show`'s for the same stored run, line for line.
#[test]
fn verbose_prints_the_full_report_as_show_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    for args in [
        &["tcp", "-t", "0.5", "-v"][..],
        &["udp", "-t", "0.5", "--verbose"],
        &["rr", "-t", "0.5", "-v"],
    ] {
        let p = run(args, &db);
        assert!(!p.stdout.contains("RESULT"), "{args:?}: {}", p.stdout);
        let shown = linerate_ok(&["show", &p.id, "--db", &db]);
        let from = |text: &str| {
            let at = text
                .find("--- summary: ")
                .unwrap_or_else(|| panic!("{args:?}: no summary:\n{text}"));
            text[at..].to_string()
        };
        let full = from(&p.stdout);
        assert_eq!(full, from(&shown), "{args:?}");
        assert!(
            full.contains("CPU local") && full.contains("CPU remote"),
            "{full}"
        );
    }
}

#[test]
fn json_carries_the_id_the_run_was_stored_under() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(&dir);
    let p = run(&["tcp", "-t", "0.3", "--json"], &db);
    let v: Value = serde_json::from_str(&p.stdout).unwrap();
    assert_eq!(
        v["stored_run_id"].to_string(),
        p.id,
        "{}",
        v["stored_run_id"]
    );
    // The record is as stored otherwise.
    let s = stored(&p.id, &db);
    assert_eq!(v["summary"], s["summary"]);
    assert_eq!(v["spec"], s["spec"]);
    let v: Value =
        serde_json::from_str(&linerate_ok(&["udp", "-t", "0.3", "--json", "--no-store"])).unwrap();
    assert!(v["stored_run_id"].is_null(), "{}", v["stored_run_id"]);
    assert!(v["summary"]["flows"].is_array());
}

/// At a terminal's width ($COLUMNS 80 here; a terminal's own size otherwise) every line of the
/// live rows, the short summary and the full report fits it (report::fold: long lines fold at
/// spaces), where a pipe without a width gets them whole and wider.
#[test]
fn text_fits_the_terminals_width() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite").display().to_string();
    let mut widest_whole = 0;
    for args in [
        &["tcp", "-t", "1"][..],
        &["tcp", "-t", "1", "-v"],
        &["udp", "-t", "1", "-b", "50M"],
    ] {
        let folded = linerate()
            .env("COLUMNS", "80")
            .args(args)
            .args(["--db", &db])
            .output()
            .unwrap();
        assert!(folded.status.success(), "{args:?}");
        let text = String::from_utf8(folded.stdout).unwrap();
        assert!(text.lines().count() >= 5, "{text}");
        let wide: Vec<&str> = text.lines().filter(|l| l.chars().count() > 80).collect();
        assert!(
            wide.is_empty(),
            "{args:?}: lines wider than 80:\n{}",
            wide.join("\n")
        );
        let whole = run(args, &db).stdout;
        widest_whole = whole
            .lines()
            .map(|l| l.chars().count())
            .max()
            .unwrap()
            .max(widest_whole);
    }
    assert!(
        widest_whole > 80,
        "a pipe gets lines whole: {widest_whole} columns at most"
    );
}
