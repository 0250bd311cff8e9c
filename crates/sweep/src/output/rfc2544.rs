//! The rfc2544 writers: the RFC 2544 throughput table (section 26.1) with the latency at each
//! answer (26.2), and its CSV. Numbers only come from the search; this file formats them.

use std::io::Write;

use crate::rfc2544::{End, Rfc2544Result};
use measure::units::format_bits_per_sec as bps;

use super::{csv_opt, opt, rate, table, write_stopped, Result};

fn end_name(end: Option<End>) -> &'static str {
    match end {
        None => "-",
        Some(End::LineRate) => "line rate",
        Some(End::SenderLimited) => "sender limited",
        Some(End::Resolution) => "resolution",
        Some(End::MaxTrials) => "max trials",
        Some(End::NothingPassed) => "nothing passed",
    }
}

/// The RFC 2544 throughput table (section 26.1: frame size, frames/s and bits/s, beside the
/// theoretical rate of the medium), with latency at each answer (26.2).
pub fn write_rfc2544_table(w: &mut dyn Write, r: &Rfc2544Result) -> std::io::Result<()> {
    writeln!(
        w,
        "linerate rfc2544 against {}: {} s trials, loss <= {} %, resolution {} %{}",
        r.target,
        r.trial_s,
        r.loss_pct,
        r.resolution_pct,
        r.link_speed_bps
            .map_or_else(String::new, |l| format!(", link {}", bps(l as f64)))
    )?;
    let headers: Vec<String> = [
        "FRAME",
        "THROUGHPUT fps",
        "RATE",
        "LINE RATE fps",
        "% LINE",
        "LOSS %",
        "P50 us",
        "P99 us",
        "TRIALS",
        "END",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = r
        .frames
        .iter()
        .map(|f| {
            vec![
                f.frame_bytes.to_string(),
                opt(f.throughput_fps, |v| format!("{v:.0}")),
                opt(f.throughput_bps, rate),
                opt(f.line_rate_fps, |v| format!("{v:.0}")),
                opt(f.line_rate_pct, |v| format!("{v:.1}")),
                opt(f.loss_pct, |v| format!("{v:.3}")),
                opt(f.latency.and_then(|l| l.rtt_p50_us), |v| format!("{v:.1}")),
                opt(f.latency.and_then(|l| l.rtt_p99_us), |v| format!("{v:.1}")),
                f.trials.len().to_string(),
                end_name(f.end).to_string(),
            ]
        })
        .collect();
    let mut right = vec![true; headers.len()];
    right[headers.len() - 1] = false;
    if rows.is_empty() {
        writeln!(w, "no frame size finished")?;
    } else {
        table(w, &headers, &rows, &right)?;
    }
    writeln!(
        w,
        "RATE counts whole frames (FCS included); latency: round trips of 64-byte probes at the throughput rate"
    )?;
    write_stopped(w, r.stopped.as_ref(), r.frames.len())
}

/// The RFC 2544 table as CSV.
pub fn write_rfc2544_csv(w: &mut dyn Write, r: &Rfc2544Result) -> Result<()> {
    let mut out = csv::Writer::from_writer(w);
    out.write_record([
        "frame_bytes",
        "payload_bytes",
        "throughput_fps",
        "throughput_bps",
        "line_rate_fps",
        "line_rate_pct",
        "loss_pct",
        "rtt_p50_us",
        "rtt_p99_us",
        "trials",
        "end",
    ])?;
    for f in &r.frames {
        out.write_record([
            f.frame_bytes.to_string(),
            f.payload_bytes.to_string(),
            csv_opt(f.throughput_fps),
            csv_opt(f.throughput_bps),
            csv_opt(f.line_rate_fps),
            csv_opt(f.line_rate_pct),
            csv_opt(f.loss_pct),
            csv_opt(f.latency.and_then(|l| l.rtt_p50_us)),
            csv_opt(f.latency.and_then(|l| l.rtt_p99_us)),
            f.trials.len().to_string(),
            end_name(f.end).replace(' ', "_"),
        ])?;
    }
    out.flush()?;
    Ok(())
}
