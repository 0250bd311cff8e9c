//! `linerate rpm` as text: a line per interval while it runs; then the short summary
//! ([`crate::rpm_brief`]) or the full report ([`write()`], `-v`): the run's one RPM, then per
//! direction its RPM, the probes' figures beside the idle path's, where the delay sat; and one
//! direction as its stored run keeps it (`linerate show`).
//!
//! Invariants: a direction has one confidence statement, its RPM's ([`confidence_words`]), with
//! why; the goodput's stability is said as a fact, never with a second confidence. Every rate
//! says what it is computed from (issue 47): an interval's goodput is the bytes read in it over
//! its length, a direction's the bytes read in its window (the last MAD intervals) over the
//! window's length (`goodput_words`); runs stored before that say what theirs were.

use std::io::{self, Write};

use record::rpm::{
    Confidence, IdleBaseline, RpmDirection, RpmEnd, RpmOverall, RpmParams, RpmResult, RpmTick,
    RpmWay, Spread, StoredRpm,
};

use measure::units::{format_bits_per_sec as bps, format_bytes};
use record::{End, FlowSummary};

/// A direction in words: `up (client -> server)`.
pub(crate) fn way(w: RpmWay) -> &'static str {
    match w {
        RpmWay::Up => "up (client -> server)",
        RpmWay::Down => "down (server -> client)",
    }
}

/// A confidence as the document spells it: `low`, `medium`, `high`.
pub(crate) fn confidence(c: Confidence) -> &'static str {
    match c {
        Confidence::Low => "low",
        Confidence::Medium => "medium",
        Confidence::High => "high",
    }
}

fn opt_ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2} ms"))
}

/// The line above the live rows: where, what in which order, and the whole run's limit; then
/// what the rows' rates are ([`TIMELINE_WORDS`]).
pub fn live_header(target: &str, ways: &[RpmWay], time_limit_s: f64) -> String {
    let order: Vec<&str> = std::iter::once("the idle path")
        .chain(ways.iter().map(|w| way(*w)))
        .collect();
    format!(
        "linerate rpm to {target}: {}; at most {time_limit_s} s in all (-t)\n{TIMELINE_WORDS}",
        order.join(", then ")
    )
}

/// What a timeline row's rates are, above the rows (live and `linerate show`).
pub const TIMELINE_WORDS: &str = "goodput = the bytes every load connection read in the interval x 8 / its length; avg = the mean of the last MAD intervals' goodput";

/// What `TCP time` says for an rpm direction, which keeps none on purpose.
pub(crate) const TCP_TIME_LEFT_OUT: &str = "not summed for an rpm direction: each connection's kernel keeps busy and limited times over its own life, not over the direction's window";

/// A direction's goodput and what it is: `27.2 Gbit/s: 12.7 GiB read in the last 4.00 s`; a
/// direction stored before issue 47 kept the moving average of its intervals' rates, each a
/// sum of the connections' latest rates, and says so.
pub(crate) fn goodput_words(d: &RpmDirection) -> String {
    match d.window_s > 0.0 {
        true => format!(
            "{}: {} read in the last {:.2} s",
            bps(d.goodput_bps),
            format_bytes(d.received_bytes),
            d.window_s
        ),
        false => format!(
            "{} (the moving average of the intervals' sums of each connection's latest rate)",
            bps(d.goodput_bps)
        ),
    }
}

/// One interval as it closes: `up    3.0 s  3 conns  9.41 Gbit/s (avg …)  self 1.20 ms …`.
pub fn tick_line(w: RpmWay, t: &RpmTick) -> String {
    let dir = w.as_str();
    let rpm = t.rpm.map_or(String::new(), |r| format!("  RPM {r:.0}"));
    format!(
        "{dir:<5}{:>6.1} s {:>3} conn  {:>12} (avg {:>12})  self {:>10}  foreign {:>10}  kernel RTT {:>10}{rpm}",
        t.t_s,
        t.connections,
        bps(t.goodput_bps),
        bps(t.moving_average_bps),
        opt_ms(t.self_p50_ms),
        opt_ms(t.foreign_p50_ms),
        opt_ms(t.kernel_rtt_ms),
    )
}

fn spread_line(w: &mut dyn Write, name: &str, s: &Spread) -> io::Result<()> {
    if s.samples == 0 {
        return writeln!(w, "  {name:<22} no samples");
    }
    writeln!(
        w,
        "  {name:<22} p50 {:>9.3} ms  p90 {:>9.3} ms  p99 {:>9.3} ms  ({} samples)",
        s.p50, s.p90, s.p99, s.samples
    )
}

/// How the direction ended, as words after "stopped".
fn ended_words(e: RpmEnd) -> &'static str {
    match e {
        RpmEnd::Stable => "when stable",
        RpmEnd::TimeLimit => "at the time limit",
        RpmEnd::Interrupted => "at Ctrl-C",
    }
}

/// A direction's one confidence statement, its RPM's, with why (docs/METHODOLOGY.md section
/// 20): `high: RPM stable after 8.0 s`, `low: goodput not stable, stopped at the time limit`.
pub fn confidence_words(d: &RpmDirection, mad: usize) -> String {
    let (n, end) = (d.rpm_intervals, ended_words(d.ended));
    let s = if n == 1 { "" } else { "s" };
    match (d.rpm_confidence, d.rpm_stable_s, d.goodput_stable_s) {
        (Confidence::High, Some(t), _) => format!("high: RPM stable after {t:.1} s"),
        (Confidence::High, None, _) => "high".into(),
        (Confidence::Medium, ..) => {
            format!("medium: RPM not stable over {n} interval{s}, stopped {end}")
        }
        (Confidence::Low, _, None) => format!("low: goodput not stable, stopped {end}"),
        (Confidence::Low, _, Some(_)) => format!(
            "low: stopped {end} {n} interval{s} after goodput was stable, of the {mad} the RPM needs"
        ),
    }
}

/// The RPM line of a direction's figures: the draft's terms beside the figure.
fn rpm_terms(r: &record::rpm::Responsiveness) -> String {
    format!(
        "foreign {:.0} (connect {:.3} ms, request {:.3} ms), loaded {:.0} (self probe {:.3} ms)",
        r.foreign_rpm, r.connect_ms, r.foreign_rr_ms, r.loaded_rpm, r.self_ms
    )
}

/// The run's one figure, and over what.
fn write_overall(w: &mut dyn Write, o: Option<&RpmOverall>) -> io::Result<()> {
    let Some(o) = o else {
        return writeln!(
            w,
            "RPM: not measured (no direction has probes of every kind)"
        );
    };
    let over: Vec<&str> = o.directions.iter().map(|d| d.as_str()).collect();
    let weigh = if over.len() > 1 {
        ", each weighing the same"
    } else {
        ""
    };
    writeln!(
        w,
        "RPM {:.0} (confidence {}) over {}{weigh}: {}",
        o.responsiveness.rpm,
        confidence(o.confidence),
        over.join(" and "),
        rpm_terms(&o.responsiveness)
    )
}

fn write_direction(w: &mut dyn Write, d: &RpmDirection, mad: usize) -> io::Result<()> {
    writeln!(w, "{}", way(d.direction))?;
    let sure = confidence_words(d, mad);
    match &d.responsiveness {
        Some(r) => writeln!(
            w,
            "  RPM {:.0} (confidence {sure}): {}",
            r.rpm,
            rpm_terms(r)
        )?,
        None => writeln!(
            w,
            "  RPM: not measured, a kind of probe has no sample (confidence {sure})"
        )?,
    }
    let stable = d
        .goodput_stable_s
        .map_or("not stable".into(), |s| format!("stable after {s:.1} s"));
    writeln!(
        w,
        "  goodput {} by {} connection{}, {stable}",
        goodput_words(d),
        d.connections,
        if d.connections == 1 { "" } else { "s" },
    )?;
    spread_line(w, "self probes (in band)", &d.self_ms)?;
    spread_line(w, "kernel RTT (TCP_INFO)", &d.kernel_rtt_ms)?;
    spread_line(w, "foreign connect", &d.foreign_connect_ms)?;
    spread_line(w, "foreign request", &d.foreign_rr_ms)?;
    writeln!(
        w,
        "  delay added by the load {}: in socket buffers {}, in the network's queues {}",
        opt_ms(d.loaded_minus_idle_ms),
        opt_ms(d.in_socket_buffers_ms),
        opt_ms(d.in_network_queues_ms)
    )?;
    let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1} %"));
    writeln!(
        w,
        "  CPU of the load's data threads: client {}, server {} of one core",
        pct(d.local_cpu_pct),
        pct(d.remote_cpu_pct)
    )?;
    for n in &d.notes {
        writeln!(w, "  note: {n}")?;
    }
    Ok(())
}

/// The draft and its parameters, in words.
fn params_words(draft: &str, p: &RpmParams) -> String {
    format!(
        "{draft}; intervals of {} s, moving average of {}, {} % tolerance, at most {} connections",
        p.interval_s,
        p.moving_average_intervals,
        p.stability_tolerance * 100.0,
        p.max_connections,
    )
}

fn write_idle(w: &mut dyn Write, idle: &IdleBaseline) -> io::Result<()> {
    writeln!(
        w,
        "idle: RPM {}",
        idle.rpm.map_or("-".into(), |v| format!("{v:.0}"))
    )?;
    spread_line(w, "foreign connect", &idle.connect_ms)?;
    spread_line(w, "foreign request", &idle.rr_ms)
}

/// The full report after the run (`-v`): the run's one RPM, the idle path, each direction.
pub fn write(w: &mut dyn Write, r: &RpmResult) -> io::Result<()> {
    writeln!(
        w,
        "Responsiveness to {}, {:.2} s of a {} s limit ({}){}",
        r.target,
        r.duration_s,
        r.time_limit_s,
        params_words(&r.draft, &r.params),
        if r.interrupted { " INTERRUPTED" } else { "" }
    )?;
    if !r.directions.is_empty() {
        write_overall(w, r.overall.as_ref())?;
    }
    write_idle(w, &r.idle)?;
    for d in &r.directions {
        write_direction(w, d, r.params.moving_average_intervals)?;
    }
    Ok(())
}

/// A stored run's direction of `linerate rpm` (`summary.rpm`, for `linerate show`): the
/// parameters, the idle path measured before it, the direction's figures.
pub fn write_stored(w: &mut dyn Write, s: &StoredRpm) -> io::Result<()> {
    writeln!(w, "Responsiveness ({})", params_words(&s.draft, &s.params))?;
    if let Some(o) = &s.overall {
        write!(w, "the rpm run's ")?;
        write_overall(w, Some(o))?;
    }
    write_idle(w, &s.idle)?;
    write_direction(w, &s.direction, s.params.moving_average_intervals)
}

/// The load's flow of a stored rpm direction (`linerate show`), each rate with what it is
/// computed from: the bytes written and read in the goodput's window over its length, the
/// drain over the connections' whole lives; then the detail every run's flow has.
pub(crate) fn write_flow(w: &mut dyn Write, f: &FlowSummary, rpm: &StoredRpm) -> io::Result<()> {
    let (sender, receiver) = match f.sender {
        End::Client => ("client", "server"),
        End::Server => ("server", "client"),
    };
    let n = f.streams.len();
    writeln!(
        w,
        "{}  {sender} -> {receiver}, {n} load connection{}, each a stream (below: each over its own life)",
        f.flow.label(),
        if n == 1 { "" } else { "s" }
    )?;
    write_rates(w, f, rpm, sender, receiver)?;
    let drained = match f.reconciled {
        true => "all delivered".to_string(),
        false => "NOT all of what was sent".to_string(),
    };
    writeln!(
        w,
        "  drained    {} read by the {receiver} over the connections' whole lives, {drained}; {} in flight when they stopped",
        format_bytes(f.bytes_received_after_drain),
        format_bytes(f.bytes_in_flight)
    )?;
    crate::run_text::write_send_receive(w, f)?;
    crate::run_text::write_flow_detail(w, f, sender, receiver, Some(TCP_TIME_LEFT_OUT))
}

/// The flow's sent, received and interval rates, each with what it is over: the goodput's
/// window, or for a direction stored before issue 47 what its figures were.
fn write_rates(
    w: &mut dyn Write,
    f: &FlowSummary,
    rpm: &StoredRpm,
    sender: &str,
    receiver: &str,
) -> io::Result<()> {
    let (d, p) = (&rpm.direction, &rpm.params);
    let sp = &f.interval_throughput_bps;
    let spread = format!(
        "cur {}  avg {}  min {}  max {}",
        bps(sp.cur),
        bps(sp.avg),
        bps(sp.min),
        bps(sp.max)
    );
    if d.window_s > 0.0 {
        let intervals = (d.window_s / p.interval_s).round();
        writeln!(
            w,
            "  sent       {:>11} by {sender:<6} = {} over the goodput's {:.2} s window (the last {intervals} intervals)",
            format_bytes(f.bytes_sent),
            bps(f.sender_throughput_bps),
            f.window_s
        )?;
        writeln!(
            w,
            "  received   {:>11} by {receiver:<6} = {} goodput over the same window",
            format_bytes(f.bytes_received),
            bps(f.throughput_bps)
        )?;
        writeln!(
            w,
            "  intervals  {spread}: each {} s interval's bytes read over its length",
            p.interval_s
        )?;
    } else {
        writeln!(
            w,
            "  sent       {:>11} by {sender:<6} over the connections' lives; their average rates summed {}",
            format_bytes(f.bytes_sent),
            bps(f.sender_throughput_bps)
        )?;
        writeln!(
            w,
            "  received   {:>11} by {receiver:<6} over the connections' lives; goodput {}",
            format_bytes(f.bytes_received),
            goodput_words(d)
        )?;
        writeln!(
            w,
            "  intervals  {spread}: each the sum of the connections' latest rates"
        )?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "rpm_text_tests.rs"]
mod tests;
