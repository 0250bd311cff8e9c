//! CSV (csv crate): the comparison, wide as the table; and runs, one row per interval per
//! direction. Raw numbers in the units the headers name; an empty cell is a figure the run
//! does not have.

use std::io::Write;

use serde::Serialize;

use crate::{Comparison, LabeledRuns, Result};

/// Writes the comparison: `metric,unit,better,A,B,B / A,…` with the raw values.
pub(crate) fn comparison(w: &mut dyn Write, cmp: &Comparison) -> Result<()> {
    let mut out = csv::Writer::from_writer(w);
    let mut header = vec!["metric".to_string(), "unit".into(), "better".into()];
    for (i, c) in cmp.columns.iter().enumerate() {
        header.push(c.label.clone());
        if i > 0 {
            header.push(crate::format::ratio_header(cmp, i));
        }
    }
    out.write_record(&header)?;
    for row in &cmp.rows {
        let better = match row.better {
            analysis::metric_id::Better::Higher => "higher",
            analysis::metric_id::Better::Lower => "lower",
        };
        let mut rec = vec![row.metric.clone(), row.unit.clone(), better.to_string()];
        for (i, v) in row.values.iter().enumerate() {
            rec.push(num(*v));
            if i > 0 {
                rec.push(num(row.ratios[i]));
            }
        }
        out.write_record(&rec)?;
    }
    out.flush()?;
    Ok(())
}

fn num(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// One direction of one interval of one run.
#[derive(Serialize)]
struct IntervalRow<'a> {
    label: &'a str,
    run: usize,
    kind: &'static str,
    start_s: f64,
    end_s: f64,
    flow: &'static str,
    sender_bytes: u64,
    receiver_bytes: u64,
    throughput_bps: f64,
    packets_sent: Option<u64>,
    packets_received: Option<u64>,
    packets_lost: Option<i64>,
    packets_out_of_order: Option<u64>,
    jitter_us: Option<f64>,
    pps_received: Option<f64>,
    transactions: Option<u64>,
    transactions_per_s: Option<f64>,
    p50_us: Option<f64>,
    p99_us: Option<f64>,
}

/// Writes every interval of every run: `label` is the column's, `run` counts from 1 within it.
pub(crate) fn intervals(w: &mut dyn Write, columns: &[LabeledRuns]) -> Result<()> {
    let mut out = csv::Writer::from_writer(w);
    let mut wrote_any = false;
    for c in columns {
        for (i, r) in c.runs.iter().enumerate() {
            for iv in &r.intervals {
                for f in &iv.flows {
                    out.serialize(IntervalRow {
                        label: &c.label,
                        run: i + 1,
                        kind: r.kind.as_str(),
                        start_s: iv.start_s,
                        end_s: iv.end_s,
                        flow: f.flow.label(),
                        sender_bytes: f.sender_bytes,
                        receiver_bytes: f.receiver_bytes,
                        throughput_bps: f.throughput_bps,
                        packets_sent: f.udp.map(|u| u.packets_sent),
                        packets_received: f.udp.map(|u| u.packets_received),
                        packets_lost: f.udp.map(|u| u.packets_lost),
                        packets_out_of_order: f.udp.map(|u| u.packets_out_of_order),
                        jitter_us: f.udp.map(|u| u.jitter_us),
                        pps_received: f.udp.map(|u| u.pps_received),
                        transactions: f.rr.map(|rr| rr.transactions),
                        transactions_per_s: f.rr.map(|rr| rr.transactions_per_s),
                        p50_us: f.rr.and_then(|rr| rr.p50_us),
                        p99_us: f.rr.and_then(|rr| rr.p99_us),
                    })?;
                    wrote_any = true;
                }
            }
        }
    }
    if !wrote_any {
        // serde writes the header with the first row; with none, still say what the columns are.
        out.write_record(INTERVAL_HEADER)?;
    }
    out.flush()?;
    Ok(())
}

const INTERVAL_HEADER: [&str; 19] = [
    "label",
    "run",
    "kind",
    "start_s",
    "end_s",
    "flow",
    "sender_bytes",
    "receiver_bytes",
    "throughput_bps",
    "packets_sent",
    "packets_received",
    "packets_lost",
    "packets_out_of_order",
    "jitter_us",
    "pps_received",
    "transactions",
    "transactions_per_s",
    "p50_us",
    "p99_us",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_runs_still_has_a_header() {
        let mut buf = Vec::new();
        intervals(&mut buf, &[]).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(text.starts_with("label,run,kind,start_s"), "{text}");
    }
}
