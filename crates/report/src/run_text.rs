//! A finished run as text: the summary block `linerate tcp`/`udp`/`rr`/`crr` print at the end
//! and `linerate show` prints for a stored run, the words a live table's header uses for a
//! test. Every figure names its unit and the end that measured it.

use std::io::Write;

use measure::cpu::CoreCpu;
use measure::tcp_info::TcpInfo;
use measure::units::{format_bits_per_sec as bps, format_bytes};
use record::rpm::StoredRpm;
use record::{CpuSummary, End, FlowSummary, RunRecord};
use wire::spec::{FamilyId, Flow, Shape, UdpRate};
use wire::TestSpec;

/// Which way the data flows, in words.
pub fn direction_word(spec: &TestSpec) -> &'static str {
    match spec.direction() {
        wire::Direction::Send => "send (client -> server)",
        wire::Direction::Reverse => "reverse (server -> client)",
        wire::Direction::Bidir => "bidirectional",
    }
}

/// What each stream does, e.g. "128 KiB per call, send mode write".
pub fn test_words(spec: &TestSpec) -> String {
    match spec.params.shape() {
        Shape::TcpConnect { .. } if !spec.kind().row().carries_data => {
            "a new connection per transaction, connect and close, no data".into()
        }
        Shape::TcpConnect { rr, .. } => format!(
            "a new connection per transaction, {}-byte requests, {}-byte responses",
            rr.request_len_bytes, rr.response_len_bytes
        ),
        Shape::TcpRr { rr, .. } | Shape::UdpRr { rr } => format!(
            "{}-byte requests, {}-byte responses, one transaction in flight per stream",
            rr.request_len_bytes, rr.response_len_bytes
        ),
        Shape::TcpStream { stream, tcp } => {
            let pace = |b: Option<u64>| b.map_or("unpaced".into(), |b| bps(b as f64));
            let paced = match (tcp.pacing_bps, tcp.reverse_pacing_bps) {
                (None, None) => String::new(),
                (rate, back) => format!(
                    ", paced at {} per stream",
                    each_way(pace(rate), back.map(|b| pace(Some(b))))
                ),
            };
            format!(
                "{} per call, {}{paced}",
                format_bytes(u64::from(stream.write_len_bytes)),
                crate::send_text::asked(stream.send_mode)
            )
        }
        Shape::UdpStream { udp } => {
            let words = |rate| match rate {
                UdpRate::PacketsPerSec(p) => format!("{p} datagrams/s"),
                UdpRate::BitsPerSec(r) => bps(r as f64),
                UdpRate::Max => "max rate".into(),
            };
            let rate = each_way(words(udp.rate), udp.reverse_rate.map(words));
            let offload = match (udp.gso, udp.gro) {
                (true, true) => "GSO+GRO where available",
                (true, false) => "GSO where available, no GRO",
                (false, true) => "no GSO, GRO where available",
                (false, false) => "no GSO/GRO",
            };
            if udp.engine.sends_frames() {
                return format!(
                    "{}-byte datagrams at {rate} per stream, each in an Ethernet frame built here ({} engine)",
                    udp.payload_len_bytes,
                    udp.engine.name()
                );
            }
            format!(
                "{}-byte datagrams at {rate} per stream, {} per syscall, {offload}",
                udp.payload_len_bytes, udp.batch_packets
            )
        }
    }
}

/// A rate, or a bidirectional test's two: client -> server, then server -> client.
fn each_way(rate: String, reverse: Option<String>) -> String {
    match reverse {
        Some(back) => format!(
            "{rate} {}, {back} {}",
            Flow::ClientToServer.label(),
            Flow::ServerToClient.label()
        ),
        None => rate,
    }
}

fn end_name(end: End) -> &'static str {
    match end {
        End::Client => "client",
        End::Server => "server",
    }
}

fn other(end: End) -> End {
    match end {
        End::Client => End::Server,
        End::Server => End::Client,
    }
}

fn cpu_line(c: &CpuSummary) -> String {
    let mut s = format!(
        "{:.1} % (usr {:.1} sys {:.1}; process {:.1} %",
        c.threads_pct, c.user_pct, c.sys_pct, c.process_pct
    );
    if let Some(busy) = c.system_busy_pct {
        s.push_str(&format!("; host busy {busy:.1} % of all cores"));
    }
    s.push(')');
    s
}

/// One direction of a run: who sent, what arrived, the intervals' spread, what was in flight;
/// an rpm direction's as `rpm_text` says what each of its figures is over.
fn write_flow(w: &mut dyn Write, f: &FlowSummary, rpm: Option<&StoredRpm>) -> std::io::Result<()> {
    if let Some(rpm) = rpm {
        return crate::rpm_text::write_flow(w, f, rpm);
    }
    let sender = end_name(f.sender);
    let receiver = end_name(other(f.sender));
    writeln!(
        w,
        "{}  {} -> {}, {} stream{}",
        f.flow.label(),
        sender,
        receiver,
        f.streams.len(),
        if f.streams.len() == 1 { "" } else { "s" }
    )?;
    writeln!(
        w,
        "  sent       {:>11} by {sender:<6} = {}",
        format_bytes(f.bytes_sent),
        bps(f.sender_throughput_bps)
    )?;
    writeln!(
        w,
        "  received   {:>11} by {receiver:<6} = {} goodput over its {:.2} s window",
        format_bytes(f.bytes_received),
        bps(f.throughput_bps),
        f.window_s
    )?;
    let sp = &f.interval_throughput_bps;
    writeln!(
        w,
        "  intervals  cur {}  avg {}  min {}  max {}",
        bps(sp.cur),
        bps(sp.avg),
        bps(sp.min),
        bps(sp.max)
    )?;
    let drained = if f.reconciled {
        format!("all {} delivered after drain", format_bytes(f.bytes_sent))
    } else {
        format!(
            "NOT reconciled: {} read after drain of {} sent",
            format_bytes(f.bytes_received_after_drain),
            format_bytes(f.bytes_sent)
        )
    };
    if f.udp.is_none() {
        writeln!(
            w,
            "  in flight  {} when the test time ended; {drained}",
            format_bytes(f.bytes_in_flight)
        )?;
    }
    write_send_receive(w, f)?;
    write_flow_detail(w, f, sender, receiver, None)?;
    write_limited_by(w, f)
}

/// The direction's verdict, its evidence, and what to try.
fn write_limited_by(w: &mut dyn Write, f: &FlowSummary) -> std::io::Result<()> {
    let Some(l) = &f.limited_by else {
        return Ok(());
    };
    writeln!(w, "  limited by {}: {}", l.verdict.as_str(), l.evidence)?;
    if !l.hint.is_empty() {
        writeln!(w, "  try        {}", l.hint)?;
    }
    Ok(())
}

/// The busiest core of one host and where its time went (a receive path often sits in one
/// core's softirq, which a process's CPU % hides).
fn write_busiest_core(w: &mut dyn Write, host: &str, cores: &[CoreCpu]) -> std::io::Result<()> {
    let Some(c) = cores
        .iter()
        .max_by(|a, b| a.busy_pct.total_cmp(&b.busy_pct))
    else {
        return Ok(());
    };
    writeln!(
        w,
        "  busiest   {host} core {} at {:.0} %: user {:.0}, system {:.0}, irq {:.0}, softirq {:.0} % of the core",
        c.core, c.busy_pct, c.user_pct, c.system_pct, c.irq_pct, c.softirq_pct
    )
}

/// A direction's TCP time: busy and limited shares, min RTT, pacing, unsent bytes; or why
/// there are none.
fn write_tcp_time(w: &mut dyn Write, f: &FlowSummary, first: &TcpInfo) -> std::io::Result<()> {
    let Some(t) = &f.tcp_time else {
        return writeln!(
            w,
            "  TCP time   not kept by the sender's kernel (it fills {} bytes of tcp_info; Linux 4.10+ keeps busy and limited times)",
            first.info_bytes.map_or("?".to_string(), |b| b.to_string())
        );
    };
    let mut line = format!(
        "  TCP time   busy {:.0} % of the window: rwnd-limited {:.1} %, sndbuf-limited {:.1} % of it",
        t.busy_pct, t.rwnd_limited_pct, t.sndbuf_limited_pct
    );
    if let Some(rtt) = t.min_rtt_us {
        line.push_str(&format!("; min rtt {rtt} us"));
    }
    if let Some(rate) = t.pacing_rate_bps {
        line.push_str(&format!("; pacing {}", bps(rate as f64)));
    }
    if let Some(b) = t.notsent_bytes {
        line.push_str(&format!("; unsent {}", format_bytes(b)));
    }
    writeln!(w, "{line}")
}

/// How a direction's senders wrote and its receivers read (`send`, `receive` lines), where known.
pub(crate) fn write_send_receive(w: &mut dyn Write, f: &FlowSummary) -> std::io::Result<()> {
    if let Some(line) = crate::send_text::line(f) {
        writeln!(w, "  send       {line}")?;
    }
    if let Some(line) = crate::receive_text::line(f) {
        writeln!(w, "  receive    {line}")?;
    }
    Ok(())
}

/// A direction's UDP accounting, TCP_INFO, CPU and (with several streams or an error) its
/// streams; `tcp_time_left_out`: why the run keeps no TCP time, when on purpose.
pub(crate) fn write_flow_detail(
    w: &mut dyn Write,
    f: &FlowSummary,
    sender: &str,
    receiver: &str,
    tcp_time_left_out: Option<&str>,
) -> std::io::Result<()> {
    if let Some(u) = &f.udp {
        writeln!(
            w,
            "  datagrams  sent {} = received {} + lost {} ({:.3} %); out of order {}, duplicate {}, late {}",
            u.packets_sent, u.packets_received, u.packets_lost, u.loss_pct,
            u.packets_out_of_order, u.packets_duplicate, u.packets_late
        )?;
        writeln!(
            w,
            "  rate       {:.0} datagrams/s sent, {:.0} received; jitter {:.1} us (RFC 3550)",
            u.pps_sent, u.pps_received, u.jitter_us
        )?;
        if let Some(i) = &f.interface_frames {
            writeln!(
                w,
                "  frames     {}",
                crate::interface_frames_text::line(i, u)
            )?;
        }
        if let Some(c) = f.loss_causes.as_ref().filter(|_| u.packets_lost > 0) {
            writeln!(w, "  lost at    {}", crate::loss_text::line(c))?;
        }
    }
    if let Some(t) = f.streams.iter().find_map(|s| s.tcp_info) {
        writeln!(
            w,
            "  TCP_INFO   retrans {}, rtt {} us (mean), cwnd {} seg, mss {} B, pmtu {} B (from the {sender}'s sockets)",
            f.retransmits.unwrap_or(0),
            f.rtt_us.unwrap_or(0),
            t.snd_cwnd_segments,
            t.snd_mss_bytes,
            t.pmtu_bytes
        )?;
        match tcp_time_left_out.filter(|_| f.tcp_time.is_none()) {
            Some(why) => writeln!(w, "  TCP time   {why}")?,
            None => write_tcp_time(w, f, &t)?,
        }
    }
    writeln!(
        w,
        "  CPU        sender ({sender}) {:.1} %, receiver ({receiver}) {:.1} % of one core",
        f.sender_cpu_pct, f.receiver_cpu_pct
    )?;
    crate::efficiency_text::write_cost(w, f, sender, receiver)?;
    crate::efficiency_text::write_efficiency(w, f, sender, receiver)?;
    if f.streams.len() > 1 || f.streams.iter().any(|s| s.error.is_some()) {
        write_streams(w, f)?;
    }
    Ok(())
}

/// A direction's streams: how evenly they shared it, then one aligned row per stream, the
/// slowest marked.
fn write_streams(w: &mut dyn Write, f: &FlowSummary) -> std::io::Result<()> {
    if let Some(s) = &f.stream_spread {
        writeln!(
            w,
            "  streams    {}: min {} (#{}, the slowest), median {}, max {}; fairness {:.3} (Jain)",
            s.streams,
            bps(s.min_bps),
            s.slowest,
            bps(s.median_bps),
            bps(s.max_bps),
            s.fairness
        )?;
    }
    let tcp = f.streams.iter().any(|s| s.tcp_info.is_some());
    let tcp_columns =
        |retrans: &dyn std::fmt::Display,
         rtt: &dyn std::fmt::Display,
         cwnd: &dyn std::fmt::Display| { format!("  {retrans:>7} {rtt:>8} {cwnd:>5}") };
    let mut head = format!("    {:<4} {:>13}  {:>11}", "#", "goodput", "received");
    if tcp {
        head.push_str(&tcp_columns(&"retrans", &"rtt us", &"cwnd"));
    }
    writeln!(w, "{head}")?;
    let slowest = f.stream_spread.map(|s| s.slowest);
    for s in &f.streams {
        let mut line = format!(
            "    #{:<3} {:>13}  {:>11}",
            s.stream,
            bps(s.throughput_bps),
            format_bytes(s.bytes_received)
        );
        match s.tcp_info {
            Some(t) => line.push_str(&tcp_columns(
                &t.retransmits,
                &t.rtt_us,
                &t.snd_cwnd_segments,
            )),
            None if tcp => line.push_str(&tcp_columns(&"-", &"-", &"-")),
            None => {}
        }
        if slowest == Some(s.stream) {
            line.push_str("  <- slowest");
        }
        if let Some(e) = &s.error {
            line.push_str(&format!("  ERROR {e}"));
        }
        writeln!(w, "{line}")?;
    }
    Ok(())
}

/// Writes the summary block of a run.
pub fn write_summary(w: &mut dyn Write, r: &RunRecord) -> std::io::Result<()> {
    let s = &r.summary;
    let note = match (&s.incomplete, s.interrupted) {
        (Some(why), _) => format!(" (INCOMPLETE: {why}; {})", partial_mark(s)),
        (None, true) => " (INTERRUPTED: partial)".to_string(),
        (None, false) => String::new(),
    };
    writeln!(
        w,
        "--- summary: {} to {}, {:.2} s on the client's clock{note} ---",
        r.kind.as_str(),
        r.target,
        s.duration_s
    )?;
    if let Some(rr) = s.rr() {
        write_rr(w, rr, s.duration_s)?;
    } else {
        for f in &s.flows {
            write_flow(w, f, s.rpm())?;
        }
    }
    for line in crate::frames_text::frame_lines(s) {
        writeln!(w, "{line}")?;
    }
    if s.flows.len() > 1 {
        writeln!(
            w,
            "total      {} goodput, {} received, {} in flight",
            bps(s.throughput_bps),
            format_bytes(s.bytes_received),
            format_bytes(s.bytes_in_flight)
        )?;
    }
    if let Some(l) = s.latency_under_load() {
        write_latency_under_load(w, l)?;
    }
    if let Some(rpm) = s.rpm() {
        crate::rpm_text::write_stored(w, rpm)?;
    }
    if let Some(line) = crate::congestion_text::congestion_line(r) {
        writeln!(w, "{line}")?;
    }
    for line in crate::qdisc_text::qdisc_lines(r) {
        writeln!(w, "{line}")?;
    }
    let transactions = r.kind.row().family == FamilyId::Transaction;
    if r.spec.client_cpu.is_some() || r.spec.server_cpu.is_some() || transactions {
        let on = |cpu: Option<u32>| cpu.map_or("unpinned".to_string(), |c| format!("CPU {c}"));
        writeln!(
            w,
            "placement  client data threads {}, server data threads {}",
            on(r.spec.client_cpu),
            on(r.spec.server_cpu)
        )?;
    }
    writeln!(w, "CPU local  (client) {}", cpu_line(&s.local_cpu))?;
    write_busiest_core(w, "client", &s.local_cores)?;
    writeln!(w, "CPU remote (server) {}", cpu_line(&s.remote_cpu))?;
    write_busiest_core(w, "server", &s.remote_cores)?;
    if let (Some(pi), Some(link)) = (s.performance_index, s.link_speed_bps) {
        writeln!(
            w,
            "PI         {pi:.3} = T/C x T/L with T {:.1} Mbit/s, C {:.1} % (busier end), L {:.0} Mbit/s ({})",
            s.throughput_bps / 1e6,
            s.local_cpu_pct.max(s.remote_cpu_pct),
            link as f64 / 1e6,
            link_source(s)
        )?;
    } else if let Some(link) = s.link_speed_bps.filter(|_| above_link(s)) {
        // Above 100 % of the link: no PI, and the link speed is what is wrong.
        writeln!(
            w,
            "PI         none: goodput {} is above the link speed {} ({}), so that link speed is wrong",
            bps(s.throughput_bps),
            bps(link as f64),
            link_source(s)
        )?;
    }
    Ok(())
}

/// Where the link speed came from, in the record's words (`--link-speed` when unsaid).
fn link_source(s: &record::Summary) -> String {
    let source = s.link_speed_source.clone();
    source.unwrap_or(record::LinkSpeedSource::Flag).to_string()
}

/// Whether the goodput is above what the link speed carries, once per direction (as
/// `analysis::link::above_link`; this crate reads records only).
fn above_link(s: &record::Summary) -> bool {
    let directions = s.flows.len().max(1) as f64;
    s.link_speed_bps
        .is_some_and(|l| s.throughput_bps > l as f64 * directions)
}

/// What an incomplete run's figures cover: the client's to the end, the server's up to its
/// last answered poll.
pub fn partial_mark(s: &record::Summary) -> String {
    match s.server_figures_up_to_s {
        Some(t) if t > 0.0 => format!("the server's figures up to {t:.2} s"),
        _ => "the client's own figures only".to_string(),
    }
}

fn write_rr(w: &mut dyn Write, rr: &record::RrSummary, secs: f64) -> std::io::Result<()> {
    writeln!(
        w,
        "transactions {} in {:.2} s = {:.0} per second (all streams; client clock; first {:.2} s left out as warm-up)",
        rr.transactions,
        secs - rr.omit_s,
        rr.transactions_per_s,
        rr.omit_s
    )?;
    if let Some(lost) = rr.lost_transactions {
        writeln!(
            w,
            "lost         {lost} requests unanswered within 1 s (UDP)"
        )?;
    }
    if let Some(missed) = rr.slots_missed.filter(|&n| n > 0) {
        writeln!(
            w,
            "pacing       {missed} slots missed: the requester started that many requests late by a gap or more and skipped them (no catch-up burst)"
        )?;
    }
    let Some(l) = rr.latency_us else {
        return writeln!(w, "latency      no completed transactions");
    };
    writeln!(
        w,
        "round trip   min {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  p99.9 {:.1}  p99.99 {:.1}  max {:.1} us",
        l.min, l.p50, l.p90, l.p99, l.p999, l.p9999, l.max
    )?;
    writeln!(
        w,
        "             mean {:.1} us, stddev {:.1} us; {} samples, {} significant digits; percentiles above {} rest on fewer than 10 samples",
        l.mean, l.stddev, l.samples, l.significant_digits, l.supported_percentile()
    )
}

fn write_latency_under_load(
    w: &mut dyn Write,
    l: &record::schema::LatencyUnderLoad,
) -> std::io::Result<()> {
    let phase = |rr: &record::RrSummary| match rr.latency_us {
        Some(q) => format!(
            "p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1} us ({} probes{}{}{})",
            q.p50,
            q.p90,
            q.p99,
            q.max,
            q.samples,
            rr.lost_transactions
                .filter(|&n| n > 0)
                .map_or(String::new(), |n| format!(", {n} lost")),
            rr.slots_missed
                .filter(|&n| n > 0)
                .map_or(String::new(), |n| format!(", {n} slots missed")),
            if q.samples < 1000 {
                format!("; above {} fewer than 10 probes", q.supported_percentile())
            } else {
                String::new()
            }
        ),
        None => "no answered probes".to_string(),
    };
    writeln!(
        w,
        "latency    idle       {}   [{} {}-byte probes at {}/s, {:.1} s before the load]",
        phase(&l.idle),
        l.probe_kind.as_str(),
        l.probe_bytes,
        l.probe_rate_per_s,
        l.idle_s
    )?;
    writeln!(w, "           under load {}", phase(&l.loaded))?;
    if let (Some(p50), Some(p99)) = (l.added_p50_us, l.added_p99_us) {
        writeln!(
            w,
            "           the load added {p50:+.1} us at p50, {p99:+.1} us at p99"
        )?;
    }
    Ok(())
}
