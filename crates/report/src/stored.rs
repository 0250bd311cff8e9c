//! Stored runs as `linerate runs` lists them (a table whose kind-specific columns appear only
//! when some row has them, or JSON or CSV of every field and the headline) and as `linerate show` prints one in full.

use std::io::Write;

use measure::units::format_bits_per_sec as bps;
use record::{RunRow, RunStatus, StoredRun};
use serde::Serialize;

use crate::headline::{direction_cell, target_label, Headline};

use crate::local_time::format_local;
use crate::{pretty_json, Align, Exporter, Format, TableStyle, TextTable};

/// `linerate runs`' document: the listed runs as [`write_table`], [`write_json`] or
/// [`write_csv`] writes them.
pub struct RunList<'a>(pub &'a [RunRow]);

impl Exporter for RunList<'_> {
    fn name(&self) -> &'static str {
        "a list of runs"
    }

    fn formats(&self) -> &'static [Format] {
        &[Format::Table, Format::Json, Format::Csv]
    }

    fn json(&self, w: &mut dyn Write) -> crate::Result<()> {
        write_json(w, self.0)
    }

    fn table(&self, w: &mut dyn Write, _width: Option<u16>) -> crate::Result<()> {
        Ok(write_table(w, self.0)?)
    }

    fn csv(&self, w: &mut dyn Write) -> crate::Result<()> {
        write_csv(w, self.0)
    }
}

/// `linerate show`'s document: one run in full ([`write_stored`]), or as stored (JSON).
impl Exporter for StoredRun {
    fn name(&self) -> &'static str {
        "a run"
    }

    fn formats(&self) -> &'static [Format] {
        &[Format::Table, Format::Json]
    }

    fn json(&self, w: &mut dyn Write) -> crate::Result<()> {
        pretty_json(w, self)
    }

    fn table(&self, w: &mut dyn Write, _width: Option<u16>) -> crate::Result<()> {
        Ok(write_stored(w, self)?)
    }
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}

/// A `linerate runs` column: its header, its cell for a row, and whether it is shown.
type RunCol = (&'static str, fn(&RunRow) -> String, bool);

/// The `linerate runs` columns: what tells runs apart (target, direction, streams, kind,
/// status), the headline figure in its kind's unit, then kind-specific ones shown only when
/// some row has them.
fn run_columns(rows: &[RunRow]) -> [RunCol; 14] {
    let any = |f: fn(&RunRow) -> bool| rows.iter().any(f);
    [
        ("RUN", |r| r.id.to_string(), true),
        ("STARTED", |r| format_local(r.started_at_unix_ms), true),
        ("KIND", |r| r.kind.as_str().to_string(), true),
        ("TARGET", |r| target_label(&r.target), true),
        ("DIR", |r| direction_cell(r.direction).to_string(), true),
        (
            "STREAMS",
            |r| match r.streams {
                0 => "-".into(),
                n => n.to_string(),
            },
            true,
        ),
        ("STATUS", |r| r.status.as_str().to_string(), true),
        ("RESULT", |r| opt(Headline::of_row(r), |h| h.text()), true),
        (
            "CPU L/R %",
            |r| match (r.local_cpu_pct, r.remote_cpu_pct) {
                (Some(l), Some(rm)) => format!("{l:.0}/{rm:.0}"),
                _ => "-".into(),
            },
            true,
        ),
        (
            "RETR",
            |r| opt(r.retransmits, |x| x.to_string()),
            any(|r| r.retransmits.is_some()),
        ),
        (
            "P50 us",
            |r| opt(r.p50_us, |x| format!("{x:.1}")),
            any(|r| r.p50_us.is_some()),
        ),
        (
            "P99 us",
            |r| opt(r.p99_us, |x| format!("{x:.1}")),
            any(|r| r.p99_us.is_some()),
        ),
        (
            "LOSS %",
            |r| opt(r.loss_pct, |x| format!("{x:.3}")),
            any(|r| r.loss_pct.is_some()),
        ),
        ("TAGS", |r| r.tags.to_string(), true),
    ]
}

/// What each status other than `ok` means, for the lines under the table.
fn status_note(status: RunStatus) -> Option<&'static str> {
    match status {
        RunStatus::Ok => None,
        RunStatus::Interrupted => {
            Some("interrupted: stopped with Ctrl-C; the figures cover what ran")
        }
        RunStatus::Incomplete => Some(
            "incomplete: the server went away mid-test; what only it measures is missing, so \
             figures may read low or zero",
        ),
        RunStatus::Error => Some("error: a stream failed; `linerate show RUN` says why"),
    }
}

/// The `linerate runs` table: kind-specific columns only when some row has them; under it,
/// what each status other than `ok` means, and that such runs stay out of tag-group medians.
pub fn write_table(w: &mut dyn Write, rows: &[RunRow]) -> std::io::Result<()> {
    if rows.is_empty() {
        return writeln!(w, "no runs");
    }
    let cols = run_columns(rows);
    let cols: Vec<&RunCol> = cols.iter().filter(|c| c.2).collect();
    let mut table = cols
        .iter()
        .fold(TextTable::new(), |t, c| t.column(c.0, Align::Left));
    for r in rows {
        table.row(cols.iter().map(|c| (c.1)(r)).collect());
    }
    w.write_all(table.render(TableStyle::Plain).as_bytes())?;
    let mut notes = Vec::new();
    for r in rows {
        if let Some(n) = status_note(r.status).filter(|n| !notes.contains(n)) {
            notes.push(n);
        }
    }
    for n in &notes {
        writeln!(w, "{n}")?;
    }
    if !notes.is_empty() {
        writeln!(
            w,
            "runs not ok are left out of a tag group's median in compare and report \
             (--include-incomplete takes them)"
        )?;
    }
    Ok(())
}

/// A listed run as `linerate runs --json` writes it: every [`RunRow`] field and its headline.
#[derive(Serialize)]
struct Listed<'a> {
    #[serde(flatten)]
    row: &'a RunRow,
    headline: Option<Headline>,
}

/// `linerate runs --json`: one array of every [`RunRow`] field plus `headline` ({figure,
/// value, unit}, `null` when the run has none).
pub fn write_json(w: &mut dyn Write, rows: &[RunRow]) -> crate::Result<()> {
    let listed: Vec<Listed<'_>> = rows
        .iter()
        .map(|row| Listed {
            row,
            headline: Headline::of_row(row),
        })
        .collect();
    serde_json::to_writer_pretty(&mut *w, &listed)?;
    writeln!(w)?;
    Ok(())
}

/// `linerate runs --csv`: every [`RunRow`] field, plain numbers, empty for none; then the
/// headline's value and unit.
pub fn write_csv(w: &mut dyn Write, rows: &[RunRow]) -> crate::Result<()> {
    let mut csv = csv::Writer::from_writer(w);
    csv.write_record([
        "id",
        "started_at_unix_ms",
        "kind",
        "target",
        "tags",
        "interrupted",
        "hostname",
        "duration_s",
        "throughput_bps",
        "local_cpu_pct",
        "remote_cpu_pct",
        "retransmits",
        "rtt_us",
        "transactions_per_s",
        "p50_us",
        "p99_us",
        "loss_pct",
        "pps_received",
        "direction",
        "streams",
        "status",
        "headline_value",
        "headline_unit",
    ])?;
    fn num<T: ToString>(v: Option<T>) -> String {
        v.map_or_else(String::new, |x| x.to_string())
    }
    for r in rows {
        let headline = Headline::of_row(r);
        csv.write_record([
            r.id.0.to_string(),
            r.started_at_unix_ms.to_string(),
            r.kind.as_str().to_string(),
            r.target.clone(),
            r.tags.to_string(),
            r.interrupted.to_string(),
            r.hostname.clone(),
            num(r.duration_s),
            num(r.throughput_bps),
            num(r.local_cpu_pct),
            num(r.remote_cpu_pct),
            num(r.retransmits),
            num(r.rtt_us),
            num(r.transactions_per_s),
            num(r.p50_us),
            num(r.p99_us),
            num(r.loss_pct),
            num(r.pps_received),
            r.direction
                .map_or_else(String::new, |d| record::status::direction_name(d).into()),
            num((r.streams > 0).then_some(r.streams)),
            r.status.as_str().to_string(),
            num(headline.as_ref().map(|h| h.value)),
            headline.map_or_else(String::new, |h| h.unit.to_string()),
        ])?;
    }
    csv.flush()?;
    Ok(())
}

/// `linerate show`: identity, tags, both hosts, the intervals, then the summary as printed
/// when the run finished.
pub fn write_stored(w: &mut dyn Write, run: &StoredRun) -> std::io::Result<()> {
    let r = &run.record;
    let h = &run.host;
    writeln!(w, "run {}: {} to {}", run.id, r.kind.as_str(), r.target)?;
    writeln!(w, "started   {}", format_local(r.started_at_unix_ms))?;
    if !run.tags.is_empty() {
        writeln!(w, "tags      {}", run.tags)?;
    }
    let cpu = h.cpu_model.as_deref().unwrap_or("?");
    writeln!(
        w,
        "client    {} (kernel {}, {} cores, {cpu})",
        if h.hostname.is_empty() {
            "?"
        } else {
            &h.hostname
        },
        h.kernel_release.as_deref().unwrap_or("?"),
        h.cores,
    )?;
    if let Some(iface) = &h.interface {
        writeln!(
            w,
            "interface {iface}, MTU {}, driver {}",
            opt(h.mtu_bytes, |m| m.to_string()),
            h.nic_driver().unwrap_or("none")
        )?;
    }
    writeln!(
        w,
        "server    {} (linerate {}, {} cores)",
        r.server.hostname, r.server.version, r.server.cores
    )?;
    writeln!(w, "intervals")?;
    if let Some(rpm) = r.as_rpm() {
        // A `linerate rpm` direction keeps its time series in its own timeline.
        writeln!(w, "  {}", crate::rpm_text::TIMELINE_WORDS)?;
        for t in &rpm.direction.timeline {
            writeln!(
                w,
                "  {}",
                crate::rpm_text::tick_line(rpm.direction.direction, t)
            )?;
        }
    }
    for iv in &r.intervals {
        for f in &iv.flows {
            // The flow as JSON spells it, e.g. client_to_server.
            let flow = serde_json::to_value(f.flow)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let span = format!("{:.2}-{:.2} s", iv.start_s, iv.end_s);
            let mut line = format!("  {span:<15}  {flow:<16}  {:>12}", bps(f.throughput_bps));
            if let Some(rr) = &f.rr {
                line.push_str(&format!(
                    "  {:.0} trans/s  p50 {} us  p99 {} us",
                    rr.transactions_per_s,
                    opt(rr.p50_us, |x| format!("{x:.1}")),
                    opt(rr.p99_us, |x| format!("{x:.1}"))
                ));
            }
            if let Some(u) = &f.udp {
                line.push_str(&format!(
                    "  {} lost of {} sent",
                    u.packets_lost, u.packets_sent
                ));
            }
            writeln!(w, "{line}")?;
        }
    }
    crate::run_text::write_summary(w, r)
}
