//! The short summary `linerate tcp`/`udp`/`rr`/`crr` print by default after the live rows: a
//! header, one line per direction (receiver goodput, retransmits or loss, both ends' CPU, what
//! limited it in a few words), at most one line of advice, and a last `RESULT` line with the
//! headline figure. The full report is [`crate::run_text::write_summary`] (`-v`, `linerate
//! show`).
//!
//! Invariants: every figure here is one the full report and `--json` hold, formatted the same
//! way (so a reader can find it in either); the `RESULT` line is always the last line; nothing
//! here measures or decides a verdict, it only words what the record says.

use std::io::Write;

use measure::cpu::CoreCpu;
use measure::units::format_bits_per_sec as bps;
use record::{End, FlowSummary, LimitedBy, RrSummary, RunRecord, Summary, Verdict};
use wire::spec::{Amount, AmountUnit, TestKind};

const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// Writes the short summary of a run; `bold` sets the `RESULT` line in bold (ANSI), for a
/// terminal that shows it (the caller decides: a terminal, and `NO_COLOR` unset).
pub fn write_brief(w: &mut dyn Write, r: &RunRecord, bold: bool) -> std::io::Result<()> {
    let s = &r.summary;
    writeln!(
        w,
        "--- summary: {} to {}, {}{}; -v for the full report ---",
        r.kind.as_str(),
        r.target,
        took(r),
        status_note(s, true)
    )?;
    let result = match s.rr() {
        Some(rr) => {
            writeln!(w, "{}", rr_line(r.kind, rr, s))?;
            rr_result(r, rr)
        }
        None => {
            for f in &s.flows {
                writeln!(w, "{}", flow_line(f, s))?;
            }
            stream_result(r)
        }
    };
    if let Some(l) = s.latency_under_load() {
        if let (Some(idle), Some(loaded)) = (l.idle.latency_us, l.loaded.latency_us) {
            writeln!(
                w,
                "{:<6}p50 {:.1} us idle, {:.1} us under load; p99 {:.1} us idle, {:.1} us under load",
                "rtt", idle.p50, loaded.p50, idle.p99, loaded.p99
            )?;
        }
    }
    // The queues of a host whose qdisc limited a direction (the full report lists them all).
    for line in crate::qdisc_text::shaper_lines(r) {
        writeln!(w, "{line}")?;
    }
    for advice in advice(s) {
        writeln!(w, "{:<6}{advice}", "try")?;
    }
    let result = format!("RESULT  {result}{}", status_note(s, false));
    if bold {
        writeln!(w, "{BOLD}{result}{RESET}")
    } else {
        writeln!(w, "{result}")
    }
}

/// A partial run says so in the header (`why`: with its reason and what its figures cover,
/// once) and on the `RESULT` line.
fn status_note(s: &Summary, why: bool) -> String {
    match (&s.incomplete, s.interrupted) {
        (Some(reason), _) if why => format!(
            " (INCOMPLETE: {reason}; {})",
            crate::run_text::partial_mark(s)
        ),
        (Some(_), _) => " (INCOMPLETE: partial)".to_string(),
        (None, true) => " (INTERRUPTED: partial)".to_string(),
        (None, false) => String::new(),
    }
}

/// A CPU share of one core: a decimal below 10 %, where it matters.
fn pct(p: f64) -> String {
    if p < 9.95 {
        format!("{p:.1} %")
    } else {
        format!("{p:.0} %")
    }
}

/// One direction: goodput, its loss or retransmits, both ends' CPU, the verdict.
fn flow_line(f: &FlowSummary, s: &Summary) -> String {
    let mut parts = vec![format!("{:>11} goodput", bps(f.throughput_bps))];
    if let Some(u) = &f.udp {
        parts.push(format!(
            "lost {}/{} datagrams ({:.3} %)",
            u.packets_lost, u.packets_sent, u.loss_pct
        ));
        parts.push(format!("jitter {:.1} us", u.jitter_us));
    } else if let Some(retr) = f.retransmits {
        parts.push(format!("retr {retr:<4}"));
    }
    let (client, server) = match f.sender {
        End::Client => (f.sender_cpu_pct, f.receiver_cpu_pct),
        End::Server => (f.receiver_cpu_pct, f.sender_cpu_pct),
    };
    parts.push(format!(
        "CPU client {}, server {} of a core",
        pct(client),
        pct(server)
    ));
    if let Some(l) = &f.limited_by {
        parts.push(verdict_words(l, f, s));
    }
    format!("{:<6}{}", f.flow.label(), parts.join("  "))
}

/// The verdict in a few words; a CPU verdict adds the end's busiest core when it was much
/// busier than the data threads (the kernel's softirq work on that core is not theirs).
fn verdict_words(l: &LimitedBy, f: &FlowSummary, s: &Summary) -> String {
    let cpu_end = |end: End, thread_pct: f64| {
        let cores = match end {
            End::Client => &s.local_cores,
            End::Server => &s.remote_cores,
        };
        match busiest(cores) {
            Some(c) if c.busy_pct > thread_pct + 10.0 => {
                format!(" (a core of its host at {:.0} %)", c.busy_pct)
            }
            _ => String::new(),
        }
    };
    let receiver = match f.sender {
        End::Client => End::Server,
        End::Server => End::Client,
    };
    match l.verdict {
        Verdict::SenderCpu => format!(
            "limited by sender CPU{}",
            cpu_end(f.sender, f.sender_cpu_pct)
        ),
        Verdict::ReceiverCpu => format!(
            "limited by receiver CPU{}",
            cpu_end(receiver, f.receiver_cpu_pct)
        ),
        Verdict::ReceiveWindow => "limited by the receive window".into(),
        Verdict::SendBuffer => "limited by the send buffer".into(),
        Verdict::Congestion => "limited by congestion (losses)".into(),
        Verdict::Path => "limited by the path (a link or shaper)".into(),
        Verdict::Shaper => match &l.shaper {
            Some(q) => format!("limited by {}", q.words()),
            None => "limited by a shaping qdisc".into(),
        },
        Verdict::Application => "at the rate asked for (-b)".into(),
        Verdict::Unknown => "limit not identified (-v: what was checked)".into(),
    }
}

fn busiest(cores: &[CoreCpu]) -> Option<&CoreCpu> {
    cores
        .iter()
        .max_by(|a, b| a.busy_pct.total_cmp(&b.busy_pct))
}

/// The first clause of each actionable verdict's hint (a setting to change on this run's
/// hosts), each different one once: the full hints are in `-v`.
fn advice(s: &Summary) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in s.flows.iter().filter_map(|f| f.limited_by.as_ref()) {
        let actionable = matches!(
            l.verdict,
            Verdict::SenderCpu
                | Verdict::ReceiverCpu
                | Verdict::ReceiveWindow
                | Verdict::SendBuffer
        );
        let first = l.hint.split("; ").next().unwrap_or_default().trim();
        if actionable && !first.is_empty() && !out.iter().any(|a| a == first) {
            out.push(first.to_string());
        }
    }
    out
}

/// How long the run's window was: `3.00 s`; by amount, what moved and the time it took to
/// three figures (`5.00 MiB in 0.0421 s`, `1024 datagrams in 1.20 s`).
fn took(r: &RunRecord) -> String {
    let secs = r.summary.duration_s;
    let Some(amount) = r.spec.amount else {
        return format!("{secs:.2} s");
    };
    let what = match (amount, r.spec.amount_unit()) {
        (Amount::Bytes(n), _) => measure::units::format_bytes(n),
        (Amount::Blocks(k), Some(AmountUnit::Datagrams)) => format!("{k} datagrams"),
        (Amount::Blocks(k), _) => {
            let len = r.spec.message_len_bytes();
            format!(
                "{k} writes of {}",
                measure::units::format_bytes(u64::from(len))
            )
        }
    };
    let digits = match secs > 0.0 {
        true => (2 - (secs.log10().floor() as i32).max(-9)).clamp(0, 6) as usize,
        false => 2,
    };
    // A direction whose senders had not sent it all when the test ended (at -t, or stopped).
    let len = u64::from(r.spec.message_len_bytes());
    let needed = match r.spec.amount_unit() {
        Some(AmountUnit::Datagrams) => r.spec.amount_units().map(|n| n.saturating_mul(len)),
        _ => r.spec.amount_units(),
    };
    let least = r.summary.flows.iter().map(|f| f.bytes_sent).min();
    match least.zip(needed).filter(|(sent, needed)| sent < needed) {
        Some((sent, _)) => format!(
            "cut short: {} of {what} in {secs:.digits$} s",
            measure::units::format_bytes(sent)
        ),
        None => format!("{what} in {secs:.digits$} s"),
    }
}

/// "1 stream" or "4 streams", with "each way" for a bidirectional run.
fn streams_words(n: usize, flows: usize) -> String {
    let each = if flows > 1 { " each way" } else { "" };
    format!("{n} stream{}{each}", if n == 1 { "" } else { "s" })
}

/// The headline of a stream test: one direction's goodput, or both directions' sum and parts.
fn stream_result(r: &RunRecord) -> String {
    let s = &r.summary;
    let streams = s.flows.first().map_or(0, |f| f.streams.len());
    let run = format!("({}, {})", streams_words(streams, s.flows.len()), took(r));
    let mut line = match s.flows.as_slice() {
        [f] => format!("{} {} {run}", bps(f.throughput_bps), f.flow.label()),
        flows => {
            let parts: Vec<String> = flows
                .iter()
                .map(|f| format!("{} {}", bps(f.throughput_bps), f.flow.label()))
                .collect();
            format!(
                "{} total = {} {run}",
                bps(s.throughput_bps),
                parts.join(" + ")
            )
        }
    };
    if let Some(u) = s.udp() {
        line.push_str(&format!(
            ", lost {}/{} datagrams ({:.3} %)",
            u.packets_lost, u.packets_sent, u.loss_pct
        ));
    } else if let Some(retr) = s.retransmits() {
        line.push_str(&format!(", retr {retr}"));
    }
    if let [f] = s.flows.as_slice() {
        line.push_str(&format!(", sender CPU {}", pct(f.sender_cpu_pct)));
    }
    line
}

/// "transactions/s" or, for a connection per transaction (crr, cc), "connections/s".
fn rate_words(kind: TestKind, rr: &RrSummary) -> String {
    match (kind.row().connects, rr.connections_per_s) {
        (true, Some(c)) => format!("{c:.0} connections/s"),
        _ => format!("{:.0} transactions/s", rr.transactions_per_s),
    }
}

/// A request/response run's one line: its rate, round trips, losses and both ends' CPU.
fn rr_line(kind: TestKind, rr: &RrSummary, s: &Summary) -> String {
    let mut parts = vec![rate_words(kind, rr)];
    let row = kind.row();
    let what = match (row.carries_data, row.connects) {
        (false, _) => "connect",
        (true, true) => "connect + transaction",
        (true, false) => "round trip",
    };
    match rr.latency_us {
        Some(l) => parts.push(format!("{what} p50 {:.1} us, p99 {:.1} us", l.p50, l.p99)),
        None => parts.push("no completed transactions".into()),
    }
    if let Some(lost) = rr.lost_transactions {
        parts.push(format!("lost {lost}"));
    }
    parts.push(format!(
        "CPU client {}, server {} of a core",
        pct(s.local_cpu_pct),
        pct(s.remote_cpu_pct)
    ));
    let label = kind.command().split(' ').next().unwrap_or("rr");
    format!("{label:<6}{}", parts.join("  "))
}

/// The headline of a request/response run: its rate and round trips.
fn rr_result(r: &RunRecord, rr: &RrSummary) -> String {
    let mut line = rate_words(r.kind, rr);
    if let Some(l) = rr.latency_us {
        line.push_str(&format!(", p50 {:.1} us, p99 {:.1} us", l.p50, l.p99));
    }
    if let Some(lost) = rr.lost_transactions.filter(|&n| n > 0) {
        line.push_str(&format!(", lost {lost}"));
    }
    line.push_str(&format!(
        " ({}, {:.2} s)",
        streams_words(usize::from(r.spec.streams), 1),
        r.summary.duration_s
    ));
    line
}

#[cfg(test)]
#[path = "brief_text_tests.rs"]
mod tests;
