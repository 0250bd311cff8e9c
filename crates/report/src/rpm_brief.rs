//! The short summary `linerate rpm` prints by default after the live rows, shaped as `tcp`'s
//! ([`crate::brief_text`]): a header, one line per direction (its RPM, goodput, the loaded and
//! foreign round trips, its one confidence statement), the idle path's line, and a last
//! `RESULT` line with the run's one RPM and the directions' under it. The full report is
//! [`crate::rpm_text::write`] (`-v`).
//!
//! Invariants: every figure is one the full report and `--json` hold, formatted the same way;
//! `RESULT` is always the last line; nothing here computes a figure or a confidence.

use std::io::{self, Write};

use measure::units::format_bits_per_sec as bps;
use record::rpm::{RpmDirection, RpmResult};

use crate::rpm_text::{confidence, confidence_words};

const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// Writes the short summary of an rpm run; `bold` sets the `RESULT` line in bold (ANSI).
pub fn write_brief(w: &mut dyn Write, r: &RpmResult, bold: bool) -> io::Result<()> {
    let status = if r.interrupted {
        " (INTERRUPTED: partial)"
    } else {
        ""
    };
    writeln!(
        w,
        "--- summary: rpm to {}, {:.2} s of a {} s limit{status}; -v for the full report ---",
        r.target, r.duration_s, r.time_limit_s
    )?;
    let mad = r.params.moving_average_intervals;
    for d in &r.directions {
        writeln!(w, "{}", direction_line(d, mad))?;
    }
    let idle_rpm = r.idle.rpm.map_or("-".into(), |v| format!("{v:.0}"));
    if r.idle.rr_ms.samples > 0 {
        writeln!(
            w,
            "{:<6}RPM {idle_rpm:>7}  no load: request p50 {:.3} ms over {} probes",
            "idle", r.idle.rr_ms.p50, r.idle.rr_ms.samples
        )?;
    }
    let result = format!("RESULT  {}{status}", result_words(r, &idle_rpm));
    if bold {
        writeln!(w, "{BOLD}{result}{RESET}")
    } else {
        writeln!(w, "{result}")
    }
}

/// One direction: its RPM, goodput over its connections, the round trips behind the RPM (the
/// self probes' trimmed mean, and the foreign probes' connect and request together), and its
/// confidence with why.
fn direction_line(d: &RpmDirection, mad: usize) -> String {
    let (rpm, trips) = match &d.responsiveness {
        Some(r) => (
            format!("{:>7.0}", r.rpm),
            format!(
                "loaded {:.2} ms, foreign {:.2} ms",
                r.self_ms,
                (r.connect_ms + r.foreign_rr_ms) / 2.0
            ),
        ),
        None => (
            format!("{:>7}", "-"),
            "a kind of probe has no sample".into(),
        ),
    };
    // The goodput with its window: the bytes read in the last MAD intervals over their length.
    let window = match d.window_s > 0.0 {
        true => format!(" in the last {:.0} s", d.window_s),
        false => String::new(),
    };
    format!(
        "{:<6}RPM {rpm}  {:>11}{window} over {} conn{}  {trips}  confidence {}",
        d.direction.as_str(),
        bps(d.goodput_bps),
        d.connections,
        if d.connections == 1 { "" } else { "s" },
        confidence_words(d, mad)
    )
}

/// The headline: the run's one RPM with its confidence, then each direction's and the idle
/// path's.
fn result_words(r: &RpmResult, idle_rpm: &str) -> String {
    let parts: Vec<String> = r
        .directions
        .iter()
        .map(|d| {
            let rpm = d
                .responsiveness
                .map_or("-".into(), |x| format!("{:.0}", x.rpm));
            format!("{} {rpm}", d.direction.as_str())
        })
        .chain(std::iter::once(format!("idle {idle_rpm}")))
        .collect();
    match (&r.overall, r.directions.is_empty()) {
        (_, true) => format!("idle RPM {idle_rpm} (no load: --direction idle)"),
        (Some(o), false) => format!(
            "RPM {:.0} (confidence {}): {}",
            o.responsiveness.rpm,
            confidence(o.confidence),
            parts.join(", ")
        ),
        (None, false) => format!("RPM not measured: {}", parts.join(", ")),
    }
}
