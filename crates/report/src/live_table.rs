//! The terminal's live view of a test: a header saying what runs where, then a row per
//! direction per interval (an [`events::Observer`]: `session`'s client reports to it).

use std::io::Write;

use crate::run_text::{direction_word, test_words};
use events::Observer;
use measure::units::{format_bits_per_sec as bps, format_bytes};
use record::IntervalSample;
use wire::msg::ServerInfo;
use wire::spec::FamilyId;
use wire::TestSpec;

/// Prints live rows to a writer (stdout in the binary).
///
/// The client's progress cannot fail, so the first write error is kept instead of dropped: rows stop
/// there, the run goes on to its end (and is stored), and [`LiveTable::finish`] returns it.
pub struct LiveTable<W: Write> {
    out: W,
    target: String,
    /// Running lost-datagram totals per direction, for the `LOST` column.
    lost: Vec<(wire::spec::Flow, i64)>,
    /// The first failed write; nothing more is written after it.
    error: Option<std::io::Error>,
}

impl<W: Write> LiveTable<W> {
    /// A live table headed with `target`.
    pub fn new(out: W, target: String) -> Self {
        Self {
            out,
            target,
            lost: Vec::new(),
            error: None,
        }
    }

    /// Ends the table: the first write error of its rows, if any.
    pub fn finish(self) -> std::io::Result<()> {
        self.error.map_or(Ok(()), Err)
    }

    /// Runs `write` unless an earlier write failed, keeping its error if it is the first.
    fn emit(&mut self, write: impl FnOnce(&mut Self) -> std::io::Result<()>) {
        if self.error.is_none() {
            if let Err(e) = write(self) {
                self.error = Some(e);
            }
        }
    }

    fn lost_total(&mut self, flow: wire::spec::Flow, delta: i64) -> i64 {
        match self.lost.iter_mut().find(|(f, _)| *f == flow) {
            Some((_, total)) => {
                *total += delta;
                *total
            }
            None => {
                self.lost.push((flow, delta));
                delta
            }
        }
    }
}

impl<W: Write> LiveTable<W> {
    /// The header: what runs where, then the column names.
    fn write_header(&mut self, server: &ServerInfo, spec: &TestSpec) -> std::io::Result<()> {
        let what = test_words(spec);
        writeln!(
            self.out,
            "linerate {} to {}: {}, {} stream{} per direction, {:.2} s, {what}",
            spec.kind().as_str(),
            self.target,
            direction_word(spec),
            spec.streams,
            if spec.streams == 1 { "" } else { "s" },
            spec.duration_ms as f64 / 1000.0,
        )?;
        let host = if server.hostname.is_empty() {
            "?"
        } else {
            &server.hostname
        };
        if server.version == "iperf3" {
            writeln!(
                self.out,
                "server {host} (iperf3: it reports totals only at the end, so these rows are this end's counts)"
            )?;
        } else {
            writeln!(
                self.out,
                "server {host} (linerate {}, {} cores); rates are receiver goodput on the client's clock",
                server.version, server.cores
            )?;
        }
        let family = spec.kind().row().family;
        if family == FamilyId::Transaction {
            writeln!(
                self.out,
                "{:>15}  {:>12}  {:>10}  {:>10}",
                "interval s", "trans/s", "p50 us", "p99 us"
            )
        } else if family == FamilyId::Datagram {
            writeln!(
                self.out,
                "{:>15}  {:<4}  {:>13}  {:>13}  {:>10}  {:>10}  {:>7}  {:>6}  {:>6}  {:>8}",
                "interval s",
                "dir",
                "sent rate",
                "recv rate",
                "snd/s",
                "rcv/s",
                "loss",
                "ooo",
                "dup",
                "LOST"
            )
        } else {
            writeln!(
                self.out,
                "{:>15}  {:<4}  {:>9}  {:>9}  {:>12}  {:>5}  {:>5}  {:>7}",
                "interval s", "dir", "sent", "received", "rate", "retr", "cwnd", "rtt us"
            )
        }
    }

    /// One interval's rows: one per direction, and the probes' round trips.
    fn write_rows(&mut self, s: &IntervalSample) -> std::io::Result<()> {
        // iperf3's mark for a warm-up interval (-O): shown, not in the summary.
        let mark = if s.omitted { "  (omitted)" } else { "" };
        for f in &s.flows {
            if let Some(r) = &f.rr {
                let us = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
                writeln!(
                    self.out,
                    "{:>6.2} - {:>6.2}  {:>12.0}  {:>10}  {:>10}",
                    s.start_s,
                    s.end_s,
                    r.transactions_per_s,
                    us(r.p50_us),
                    us(r.p99_us)
                )?;
                continue;
            }
            if let Some(u) = &f.udp {
                let total_lost = self.lost_total(f.flow, u.packets_lost);
                let sent_bps = measure::units::bits_per_sec(f.sender_bytes, s.end_s - s.start_s);
                writeln!(
                    self.out,
                    "{:>6.2} - {:>6.2}  {:<4}  {:>13}  {:>13}  {:>10.0}  {:>10.0}  {:>7}  {:>6}  {:>6}  {:>8}{}",
                    s.start_s,
                    s.end_s,
                    f.flow.label(),
                    bps(sent_bps),
                    bps(f.throughput_bps),
                    u.pps_sent,
                    u.pps_received,
                    u.packets_lost,
                    u.packets_out_of_order,
                    u.packets_duplicate,
                    total_lost,
                    mark,
                )?;
                continue;
            }
            // The sender's TCP state at the interval's end: retransmits in it, cwnd, RTT.
            let tcp = f.tcp_info.map_or_else(
                || ["-".to_string(), "-".to_string(), "-".to_string()],
                |t| {
                    [
                        t.retransmits.to_string(),
                        t.snd_cwnd_segments.to_string(),
                        t.rtt_us.to_string(),
                    ]
                },
            );
            writeln!(
                self.out,
                // 80 columns: a row fits a terminal's default width.
                "{:>6.2} - {:>6.2}  {:<4}  {:>9}  {:>9}  {:>12}  {:>5}  {:>5}  {:>7}{}",
                s.start_s,
                s.end_s,
                f.flow.label(),
                format_bytes(f.sender_bytes),
                format_bytes(f.receiver_bytes),
                bps(f.throughput_bps),
                tcp[0],
                tcp[1],
                tcp[2],
                mark,
            )?;
        }
        if let Some(p) = &s.probe {
            let us = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
            writeln!(
                self.out,
                "{:>6.2} - {:>6.2}  rtt   probe p50 {} us, p99 {} us ({} probes)",
                s.start_s,
                s.end_s,
                us(p.p50_us),
                us(p.p99_us),
                p.transactions
            )?;
        }
        self.out.flush()
    }
}

/// Shows a test's reports: the header, then the rows of each interval.
impl<W: Write> Observer for LiveTable<W> {
    /// The server accepted the test: the header.
    fn started(&mut self, server: &ServerInfo, spec: &TestSpec) {
        self.emit(|t| t.write_header(server, spec));
    }

    /// One interval finished: its rows.
    fn interval(&mut self, s: &IntervalSample) {
        self.emit(|t| t.write_rows(s));
    }

    /// A line for the user: on stderr, as the live bar says it, so stdout stays the rows.
    fn note(&mut self, line: &str) {
        eprintln!("{line}");
    }
}
