//! How a [`Check`] reads: a table and a `RESULT` line for people, JSON for programs, JUnit XML
//! for CI systems (one test case per metric, a failure per regression).

use std::fmt::Write as _;

use analysis::ab::Finding;

use crate::check::{Check, Decision, MetricCheck};
use crate::format::value;
use crate::{pretty_json, Align, Exporter, Format, TableStyle, TextTable};

/// `linerate check`'s document: [`check_text`], JSON, [`check_junit`].
impl Exporter for Check {
    fn name(&self) -> &'static str {
        "a check"
    }

    fn formats(&self) -> &'static [Format] {
        &[Format::Table, Format::Json, Format::Junit]
    }

    fn json(&self, w: &mut dyn std::io::Write) -> crate::Result<()> {
        pretty_json(w, self)
    }

    fn table(&self, w: &mut dyn std::io::Write, _width: Option<u16>) -> crate::Result<()> {
        Ok(w.write_all(check_text(self).as_bytes())?)
    }

    fn junit(&self, w: &mut dyn std::io::Write) -> crate::Result<()> {
        Ok(w.write_all(check_junit(self).as_bytes())?)
    }
}

/// The table of metrics, then the one-line answer.
pub fn check_text(c: &Check) -> String {
    let level = c.metrics.first().map_or(95.0, |m| m.result.level * 100.0);
    let mut out = format!(
        "check: {} ({}) against baseline {} ({}){}\n",
        c.candidate.label,
        runs(c.candidate.runs, c.candidate.left_out),
        c.baseline.label,
        runs(c.baseline.runs, c.baseline.left_out),
        c.test
            .map_or(String::new(), |k| format!(", {}", k.as_str())),
    );
    let mut t = TextTable::new()
        .column("METRIC", Align::Left)
        .column("UNIT", Align::Left)
        .column("BASELINE", Align::Right)
        .column("CANDIDATE", Align::Right)
        .column("RATIO", Align::Right)
        .column(format!("{level:.0} % INTERVAL"), Align::Right)
        .column("THRESHOLD", Align::Right)
        .column("FINDING", Align::Left);
    for m in &c.metrics {
        t.row(vec![
            m.metric.to_string(),
            m.unit.to_string(),
            median_cell(m.result.baseline_median, m.baseline_runs),
            median_cell(m.result.candidate_median, m.candidate_runs),
            ratio_cell(m),
            interval_cell(m),
            format!("±{:.1} %", m.result.threshold * 100.0),
            finding(m.result.finding).to_string(),
        ]);
    }
    out.push_str(&t.render(TableStyle::Plain));
    out.push_str(&result_line(c));
    out.push('\n');
    out
}

/// The answer in one line: what regressed and by how much, or why nothing could be decided.
pub fn result_line(c: &Check) -> String {
    match c.decision {
        Decision::Regressed => {
            let which: Vec<String> = c.regressed().map(describe).collect();
            format!("RESULT  regressed: {}", which.join("; "))
        }
        Decision::Pass => format!(
            "RESULT  pass: no metric worse than the baseline beyond its threshold ({} checked)",
            c.metrics.len()
        ),
        Decision::NotEnoughRuns => format!(
            "RESULT  not enough runs: {}, need {} on each side (run each side with --repeat {} \
             or store more runs under its tags)",
            c.fewest_runs(),
            c.need_runs,
            c.need_runs
        ),
    }
}

/// `throughput 0.900× (0.897–0.903, threshold 2.0 %)`, or the difference for a zero baseline.
fn describe(m: &MetricCheck) -> String {
    match (m.result.ratio, m.result.interval, m.result.difference) {
        (Some(r), Some((lo, hi)), _) => format!(
            "{} {r:.3}× the baseline ({lo:.3}–{hi:.3}, threshold {:.1} %)",
            m.metric,
            m.result.threshold * 100.0
        ),
        (_, _, Some((d, (lo, hi)))) => format!(
            "{} {} {} where the baseline had 0 ({}–{})",
            m.metric,
            value(d),
            m.unit,
            value(lo),
            value(hi)
        ),
        _ => m.metric.to_string(),
    }
}

fn runs(n: usize, left_out: usize) -> String {
    match left_out {
        0 => format!("{n} runs"),
        out => format!("{n} runs, {out} left out: did not run whole"),
    }
}

fn median_cell(v: f64, n: usize) -> String {
    match v.is_finite() {
        true => format!("{} (n={n})", value(v)),
        false => "-".into(),
    }
}

fn ratio_cell(m: &MetricCheck) -> String {
    match (m.result.ratio, m.result.difference) {
        (Some(r), _) => format!("{r:.3}×"),
        (_, Some((d, _))) => format!("+{}", value(d)),
        _ => "-".into(),
    }
}

fn interval_cell(m: &MetricCheck) -> String {
    match (m.result.interval, m.result.difference) {
        (Some((lo, hi)), _) => format!("{lo:.3}–{hi:.3}"),
        (_, Some((_, (lo, hi)))) => format!("{}–{}", value(lo), value(hi)),
        _ => "-".into(),
    }
}

fn finding(f: Finding) -> &'static str {
    match f {
        Finding::Regressed => "REGRESSED",
        Finding::Improved => "improved",
        Finding::Unchanged => "unchanged",
        Finding::Undecided => "undecided",
    }
}

/// JUnit XML: one suite, a test case per metric; a regression is a failure, an undecided
/// metric is skipped.
pub fn check_junit(c: &Check) -> String {
    let failures = c.regressed().count();
    let skipped = c
        .metrics
        .iter()
        .filter(|m| m.result.finding == Finding::Undecided)
        .count();
    let suite = format!(
        "linerate check: {} against {}",
        c.candidate.label, c.baseline.label
    );
    let class = format!("linerate.check.{}", c.test.map_or("runs", |k| k.as_str()));
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let n = c.metrics.len();
    let _ = writeln!(
        x,
        "<testsuites name=\"linerate check\" tests=\"{n}\" failures=\"{failures}\" skipped=\"{skipped}\">"
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"{}\" tests=\"{n}\" failures=\"{failures}\" skipped=\"{skipped}\">",
        xml(&suite)
    );
    for m in &c.metrics {
        let _ = write!(
            x,
            "    <testcase classname=\"{}\" name=\"{}\"",
            xml(&class),
            xml(m.metric)
        );
        match m.result.finding {
            Finding::Regressed => {
                let _ = writeln!(
                    x,
                    ">\n      <failure type=\"regression\" message=\"{}\"/>\n    </testcase>",
                    xml(&describe(m))
                );
            }
            Finding::Undecided => {
                let _ = writeln!(
                    x,
                    ">\n      <skipped message=\"not enough runs: {} and {}, need {}\"/>\n    </testcase>",
                    m.baseline_runs, m.candidate_runs, c.need_runs
                );
            }
            _ => x.push_str("/>\n"),
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// Text for an XML attribute.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
