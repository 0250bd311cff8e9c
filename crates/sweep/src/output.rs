//! Writers for sweep, repetition and rfc2544 results: a plain-text table (the one renderer,
//! `report::TextTable`), CSV (via the csv crate) and JSON (the result types as serde
//! serializes them), each result a `report::Exporter` (`documents.rs`). Writers only format: every figure was computed in `result.rs`,
//! `analysis::repeat` or `rfc2544.rs`, and no executor formats. Output is deterministic for the
//! same result, so it can be compared in tests.

use std::io::Write;

use measure::units::format_bits_per_sec as bps;
use report::{Align, Result, TableStyle, TextTable};

use crate::knob::Phase;
use crate::result::{Stopped, SweepKind, SweepParameter, SweepPoint, SweepResult};
use crate::run::RepeatResult;
use analysis::metric_id::MetricId;
use analysis::repeat::RepeatStats;

/// A plain table (the one renderer, `report::TextTable`): `right` marks the columns of figures.
fn table(
    w: &mut dyn Write,
    headers: &[String],
    rows: &[Vec<String>],
    right: &[bool],
) -> std::io::Result<()> {
    let mut t = headers
        .iter()
        .enumerate()
        .fold(TextTable::new(), |t, (i, h)| {
            let align = if right.get(i).copied().unwrap_or(false) {
                Align::Right
            } else {
                Align::Left
            };
            t.column(h.clone(), align)
        });
    for r in rows {
        t.row(r.clone());
    }
    w.write_all(t.render(TableStyle::Plain).as_bytes())
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}

/// `12,13,14,20` → `#12-14, #20`.
pub fn id_ranges(ids: &[i64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("#{}-{}", ids[i], ids[j])
        } else {
            format!("#{}", ids[i])
        });
        i = j + 1;
    }
    out.join(", ")
}

/// A rate in a table cell, in its own unit (`9.41 Gbit/s`, `150 Mbit/s`): sweeps span
/// kbit/s to tens of Gbit/s, where one fixed unit reads as `17778.12` or `0.00`.
fn rate(bps: f64) -> String {
    measure::units::format_bits_per_sec(bps)
}

fn value_header(parameter: SweepParameter) -> &'static str {
    match parameter {
        SweepParameter::SizeBytes => "BYTES",
        SweepParameter::Streams => "STREAMS",
        SweepParameter::WindowBytes => "WINDOW",
        SweepParameter::MssBytes => "MSS",
        SweepParameter::RateBps => "RATE",
        SweepParameter::PayloadBytes => "PAYLOAD",
        SweepParameter::Knob => "VALUE",
        SweepParameter::LoadPct => "LOAD",
    }
}

fn knob_status(p: &SweepPoint) -> String {
    p.knob
        .iter()
        .map(|k| {
            let phase = match k.phase {
                Phase::Pre => "pre",
                Phase::Post => "post",
            };
            let status = match (k.exit_code, &k.spawn_error) {
                _ if k.timed_out => "timed out".to_string(),
                (_, Some(_)) => "not run".to_string(),
                (Some(c), None) => c.to_string(),
                (None, None) => format!("signal {}", k.signal.unwrap_or(0)),
            };
            format!("{phase} {status}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A table column: its header, its cell for a point, and whether it is right-aligned.
type Col<'a> = (String, Box<dyn Fn(&SweepPoint) -> String + 'a>, bool);

/// The sweep as a table, its summary and how it ended.
pub fn write_sweep_table(w: &mut dyn Write, r: &SweepResult) -> std::io::Result<()> {
    writeln!(
        w,
        "linerate {}: {} against {}",
        r.kind.name().replace('_', " "),
        r.test.as_str(),
        r.target
    )?;
    if let Some(k) = &r.knob {
        write!(w, "  --pre {}", k.pre.text)?;
        if let Some(post) = &k.post {
            write!(w, "  --post {}", post.text)?;
        }
        writeln!(w)?;
    }
    let cols = sweep_columns(r);
    let headers: Vec<String> = cols.iter().map(|c| c.0.clone()).collect();
    let right: Vec<bool> = cols.iter().map(|c| c.2).collect();
    let rows: Vec<Vec<String>> = r
        .points
        .iter()
        .map(|p| cols.iter().map(|c| (c.1)(p)).collect())
        .collect();
    if rows.is_empty() {
        writeln!(w, "no points finished")?;
    } else {
        table(w, &headers, &rows, &right)?;
    }
    write_sweep_summary(w, r)
}

/// The sweep table's columns: the value, then only the figures some point has.
fn sweep_columns(r: &SweepResult) -> Vec<Col<'_>> {
    let points = &r.points;
    let any = |f: fn(&SweepPoint) -> bool| points.iter().any(f);
    let size = r.kind == SweepKind::Size;
    let mut cols: Vec<Col> = vec![(
        value_header(r.parameter).to_string(),
        Box::new(|p: &SweepPoint| {
            format!("{}{}", p.value.label, if p.interrupted { "*" } else { "" })
        }),
        size || r.load.is_some(),
    )];
    cols.extend(load::offered_column(r));
    if any(|p| p.throughput_bps.is_some()) {
        cols.push((
            "RATE".into(),
            Box::new(|p| opt(p.throughput_bps, rate)),
            true,
        ));
    }
    if any(|p| !p.repeat.is_empty()) {
        cols.extend(repeat_columns(points));
    }
    if points.iter().find_map(|p| p.repeat.first()?.ci).is_some() {
        cols.push((
            "CI".into(),
            Box::new(|p| match p.repeat.first().and_then(|s| s.ci) {
                Some(c) if c.reached => "ok".into(),
                Some(_) => "no".into(),
                None => "-".into(),
            }),
            false,
        ));
    }
    if any(|p| p.rtt_p50_us.is_some()) {
        cols.push((
            "RTT P50 us".into(),
            Box::new(|p| opt(p.rtt_p50_us, |v| format!("{v:.1}"))),
            true,
        ));
    }
    cols.extend(load::columns(r));
    if !size && any(|p| p.transactions_per_s.is_some()) {
        cols.push((
            "TRANS/S".into(),
            Box::new(|p| opt(p.transactions_per_s, |v| format!("{v:.0}"))),
            true,
        ));
    }
    cols.extend(cost_columns(points));
    cols
}

/// With `--repeat`: the spread of each point's primary metric, bits/s for stream tests,
/// transactions/s for request/response ones (the headers say which).
fn repeat_columns(points: &[SweepPoint]) -> Vec<Col<'static>> {
    let stats = |p: &SweepPoint| -> Option<RepeatStats> {
        let s = p.repeat.first()?;
        s.get(&s.primary).copied()
    };
    let in_bits = points
        .iter()
        .find_map(|p| p.repeat.first())
        .is_none_or(|s| Some(s.primary.as_str()) == MetricId::Throughput.key());
    let (unit, fmt): (&str, fn(f64) -> String) = if in_bits {
        ("RATE", rate)
    } else {
        ("TRANS/S", |v| format!("{v:.0}"))
    };
    vec![
        (
            format!("MIN {unit}"),
            Box::new(move |p| opt(stats(p).map(|s| s.min), fmt)),
            true,
        ),
        (
            format!("MAX {unit}"),
            Box::new(move |p| opt(stats(p).map(|s| s.max), fmt)),
            true,
        ),
        (
            "SPREAD %".into(),
            Box::new(move |p| opt(stats(p).and_then(|s| s.spread_pct), |v| format!("{v:.1}"))),
            true,
        ),
        (
            "N".into(),
            Box::new(move |p| stats(p).map_or("-".into(), |s| s.n.to_string())),
            true,
        ),
    ]
}

/// Loss, retransmits and CPU, the knob commands' exits and the stored runs.
fn cost_columns(points: &[SweepPoint]) -> Vec<Col<'static>> {
    let any = |f: fn(&SweepPoint) -> bool| points.iter().any(f);
    let mut cols: Vec<Col> = Vec::new();
    if any(|p| p.loss_pct.is_some()) {
        cols.push((
            "LOSS %".into(),
            Box::new(|p| opt(p.loss_pct, |v| format!("{v:.3}"))),
            true,
        ));
    }
    if any(|p| p.retransmits.is_some()) {
        cols.push((
            "RETR".into(),
            Box::new(|p| opt(p.retransmits, |v| format!("{v:.0}"))),
            true,
        ));
    }
    cols.push((
        "CPU L/R %".into(),
        Box::new(|p| match (p.local_cpu_pct, p.remote_cpu_pct) {
            (Some(l), Some(rm)) => format!("{l:.0}/{rm:.0}"),
            _ => "-".into(),
        }),
        true,
    ));
    if any(|p| !p.knob.is_empty()) {
        cols.push(("KNOB EXIT".into(), Box::new(knob_status), false));
    }
    cols.push((
        "RUNS".into(),
        Box::new(|p| {
            let ids = p.run_ids();
            if ids.is_empty() {
                "-".into()
            } else {
                id_ranges(&ids)
            }
        }),
        false,
    ));
    cols
}

/// The lines under the sweep table: peak, n½, small-message latency, notes, how it ended.
fn write_sweep_summary(w: &mut dyn Write, r: &SweepResult) -> std::io::Result<()> {
    let points = &r.points;
    let s = &r.summary;
    if let (Some(peak), Some(at)) = (s.peak_throughput_bps, s.peak_at) {
        let at = if r.kind == SweepKind::Size {
            format!("{at} bytes")
        } else {
            let label = points
                .iter()
                .find(|p| p.value.number == Some(at))
                .map_or_else(|| at.to_string(), |p| p.value.label.clone());
            format!("{}={label}", r.parameter)
        };
        write!(w, "peak {} at {at}", bps(peak))?;
        if let Some(n) = s.n_half_bytes {
            write!(
                w,
                "; n½ {n} bytes (the smallest size reaching {})",
                bps(peak / 2.0)
            )?;
        }
        writeln!(w)?;
    }
    if let (Some(rtt), Some(b)) = (s.small_message_rtt_us, s.small_message_bytes) {
        writeln!(
            w,
            "small-message round trip {rtt:.1} us (p50, {b}-byte messages)"
        )?;
    }
    if points.iter().any(|p| p.interrupted) {
        writeln!(
            w,
            "* interrupted: the figures cover what ran; left out of the summary"
        )?;
    }
    load::write_summary(w, r)?;
    for note in &r.notes {
        writeln!(w, "note: {note}")?;
    }
    write_stopped(w, r.stopped.as_ref(), points.len())
}

fn write_stopped(w: &mut dyn Write, stopped: Option<&Stopped>, kept: usize) -> std::io::Result<()> {
    match stopped {
        None => Ok(()),
        Some(Stopped::Interrupted) => writeln!(
            w,
            "stopped: interrupted; the {kept} point(s) above are kept"
        ),
        Some(Stopped::Failed { message }) => {
            writeln!(w, "stopped: {message}; the {kept} point(s) above are kept")
        }
    }
}

fn csv_opt(v: Option<f64>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

/// The sweep CSV's columns, in order.
const SWEEP_CSV_COLUMNS: [&str; 29] = [
    "kind",
    "parameter",
    "value",
    "value_num",
    "throughput_bps",
    "repeat_metric",
    "repeat_min",
    "repeat_max",
    "repeat_spread_pct",
    "ci_width_pct",
    "ci_reached",
    "runs",
    "rtt_p50_us",
    "transactions_per_s",
    "loss_pct",
    "retransmits",
    "local_cpu_pct",
    "remote_cpu_pct",
    "knob_pre_exit",
    "knob_post_exit",
    "run_ids",
    "interrupted",
    "rtt_p99_us",
    "loaded_rtt_p50_us",
    "loaded_rtt_p99_us",
    "load_unit",
    "capacity",
    "offered",
    "knee",
];

/// The sweep as CSV: one line per point, plain numbers in the units the header names, empty
/// for none.
pub fn write_sweep_csv(w: &mut dyn Write, r: &SweepResult) -> Result<()> {
    let mut out = csv::Writer::from_writer(w);
    out.write_record(SWEEP_CSV_COLUMNS)?;
    for p in &r.points {
        let summary = p.repeat.first();
        let st = summary.and_then(|s| s.get(&s.primary));
        let exit = |phase: Phase| {
            p.knob
                .iter()
                .find(|k| k.phase == phase)
                .and_then(|k| k.exit_code)
                .map_or_else(String::new, |c| c.to_string())
        };
        out.write_record(
            [
                r.kind.name().to_string(),
                r.parameter.to_string(),
                p.value.label.clone(),
                csv_opt(p.value.number),
                csv_opt(p.throughput_bps),
                summary.map_or_else(String::new, |s| s.primary.clone()),
                csv_opt(st.map(|s| s.min)),
                csv_opt(st.map(|s| s.max)),
                csv_opt(st.and_then(|s| s.spread_pct)),
                csv_opt(st.and_then(|s| s.ci_width_pct)),
                summary
                    .and_then(|s| s.ci)
                    .map_or_else(String::new, |c| c.reached.to_string()),
                p.runs.len().to_string(),
                csv_opt(p.rtt_p50_us),
                csv_opt(p.transactions_per_s),
                csv_opt(p.loss_pct),
                csv_opt(p.retransmits),
                csv_opt(p.local_cpu_pct),
                csv_opt(p.remote_cpu_pct),
                exit(Phase::Pre),
                exit(Phase::Post),
                p.run_ids()
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
                p.interrupted.to_string(),
                csv_opt(p.rtt_p99_us),
                csv_opt(p.loaded_rtt_p50_us),
                csv_opt(p.loaded_rtt_p99_us),
            ]
            .into_iter()
            .chain(load::csv_fields(r, p)),
        )?;
    }
    out.flush()?;
    Ok(())
}

/// A figure of metric `name` in its unit.
fn metric_value(name: &str, v: f64) -> String {
    if name.ends_with("_bps") {
        bps(v)
    } else if name.ends_with("_pct") || name.ends_with("_us") {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

/// A repetition's statistics as a table, with whether `--until-ci` got its interval.
pub fn write_repeat_table(w: &mut dyn Write, r: &RepeatResult) -> std::io::Result<()> {
    let ok = r
        .runs
        .iter()
        .filter(|x| !x.record.summary.interrupted)
        .count();
    writeln!(
        w,
        "linerate {} against {}: {ok} run(s)",
        r.test.as_str(),
        r.target
    )?;
    if let Some(s) = &r.summary {
        let headers: Vec<String> = [
            "METRIC".to_string(),
            "MEDIAN".into(),
            "MIN".into(),
            "MAX".into(),
            "MEAN".into(),
            "STDDEV".into(),
            "SPREAD %".into(),
            format!("CI{} %", s.level_pct),
        ]
        .to_vec();
        let rows: Vec<Vec<String>> = s
            .metrics
            .iter()
            .map(|m| {
                let st = &m.stats;
                let f = |v: f64| metric_value(&m.metric, v);
                vec![
                    m.metric.clone(),
                    f(st.median),
                    f(st.min),
                    f(st.max),
                    f(st.mean),
                    f(st.stddev),
                    opt(st.spread_pct, |v| format!("{v:.1}")),
                    opt(st.ci_width_pct, |v| format!("{v:.1}")),
                ]
            })
            .collect();
        let mut right = vec![true; headers.len()];
        right[0] = false;
        table(w, &headers, &rows, &right)?;
        if let Some(ci) = s.ci {
            let width = opt(ci.width_pct, |v| format!("{v:.2} %"));
            let target = format!("{}:{}", ci.target.level_pct, ci.target.width_pct);
            if ci.reached {
                writeln!(
                    w,
                    "--until-ci {target}: reached after {} runs: the {} % interval of the mean {} is {width} of it wide",
                    s.runs, ci.target.level_pct, s.primary
                )?;
            } else {
                writeln!(
                    w,
                    "--until-ci {target}: NOT reached after {} runs: the {} % interval of the mean {} is {width} of it wide, not within {} %",
                    s.runs, ci.target.level_pct, s.primary, ci.target.width_pct
                )?;
            }
        }
    }
    let ids: Vec<i64> = r.runs.iter().filter_map(|x| x.run_id).collect();
    if !ids.is_empty() {
        writeln!(w, "stored as {}", id_ranges(&ids))?;
    }
    write_stopped(w, r.stopped.as_ref(), r.runs.len())
}

/// A repetition as CSV: one line per metric.
pub fn write_repeat_csv(w: &mut dyn Write, r: &RepeatResult) -> Result<()> {
    let mut out = csv::Writer::from_writer(w);
    out.write_record([
        "test",
        "metric",
        "n",
        "median",
        "min",
        "max",
        "mean",
        "stddev",
        "spread_pct",
        "ci_level_pct",
        "ci_width_pct",
    ])?;
    if let Some(s) = &r.summary {
        for m in &s.metrics {
            let st = &m.stats;
            out.write_record([
                r.test.as_str().to_string(),
                m.metric.clone(),
                st.n.to_string(),
                st.median.to_string(),
                st.min.to_string(),
                st.max.to_string(),
                st.mean.to_string(),
                st.stddev.to_string(),
                csv_opt(st.spread_pct),
                s.level_pct.to_string(),
                csv_opt(st.ci_width_pct),
            ])?;
        }
    }
    out.flush()?;
    Ok(())
}

mod chart;
mod documents;
mod load;
mod rfc2544;
#[cfg(test)]
mod tests;

pub use chart::chart;
pub use rfc2544::{write_rfc2544_csv, write_rfc2544_table};
