//! What limited each direction of a stream test: a verdict, the numbers behind it and a hint.
//!
//! The rules run in a fixed order and the first with enough evidence wins (METHODOLOGY §19):
//! linerate's own pacing, a shaping qdisc on the sender's interface at whose rate the goodput
//! sat (`shaper.rs`), where a UDP test's datagrams were lost (`udp.rs`), the receiver's
//! window, the sender's buffer, a saturated CPU, a queue or link ceiling on the path, losses
//! without a queue; otherwise `unknown`, with what was checked. Every threshold is in
//! [`rule`]. The inputs are the summary's own figures: both ends' thread CPU and host cores,
//! the senders' TCP_INFO and chrono times, the link speed, and a UDP test's `loss_causes`.

use measure::tcp_info::TcpInfo;
use measure::units::{format_bits_per_sec, format_bytes};
use record::{End, FlowSummary, Hosts, LimitedBy, Summary, Verdict};
use wire::spec::{DataPath, FamilyId, Flow, Transport};
use wire::TestSpec;

mod end_cpu;
mod hints;
mod losses;
mod pacing;
mod shaper;
mod udp;

use end_cpu::{core_words, saturation, EndCpu};
use hints::Advice;
pub use hints::Client;
use losses::{congestion, reordering_hint, Retrans};

/// The thresholds of the rules.
pub mod rule {
    /// Paced: the direction reached this share of the rate asked for.
    pub const RATE_REACHED: f64 = 0.90;
    /// Window or buffer: limited this % of the busy time (kernel chrono figures).
    pub const LIMITED_PCT: f64 = 30.0;
    /// Send buffer: the connection was busy less than this % of the window though the writer
    /// always had data and was not CPU-bound.
    pub const BUSY_BELOW_PCT: f64 = 80.0;
    /// A data thread at this % of a core (per stream) is saturated.
    pub const THREAD_PCT: f64 = 90.0;
    /// A host core at this % busy is saturated ...
    pub const CORE_PCT: f64 = 95.0;
    /// ... and counts against an end whose threads use this % of each core they can occupy
    /// (one per stream, at most the host's cores: 16 streams on 2 cores share 2) ...
    pub const CORE_THREAD_PCT: f64 = 25.0;
    /// ... or when this % of it is interrupt work (irq + softirq: receive processing).
    pub const CORE_IRQ_PCT: f64 = 50.0;
    /// Window: goodput at this share of what a small advertised window allows over the RTT.
    pub const WINDOW_CEILING_SHARE: f64 = 0.70;
    /// A window below this many bytes is small (the most a connection without window scaling
    /// can advertise); a larger one that fills means a reader at full CPU.
    pub const SMALL_WINDOW_BYTES: u32 = 64 << 10;
    /// Congestion: retransmissions that repaired a loss at this % of segments sent (those the
    /// receiver reported as duplicates, D-SACK, do not count).
    pub const RETRANS_PCT: f64 = 0.5;
    /// Reordering: retransmissions the receiver reported as duplicates at this % of segments.
    pub const SPURIOUS_PCT: f64 = 0.5;
    /// A queue on the path: smoothed RTT this many times the minimum ...
    pub const QUEUE_RTT_RATIO: f64 = 4.0;
    /// ... and at least this much above it, µs.
    pub const QUEUE_DELAY_US: u32 = 1000;
    /// A queue on the path needs the connection busy this % of the window.
    pub const QUEUE_BUSY_PCT: f64 = 90.0;
    /// UDP: datagrams lost at this % of those sent make the loss the limit.
    pub const UDP_LOSS_PCT: f64 = 1.0;
    /// UDP: the share of the loss one place must hold to be named.
    pub const UDP_LOSS_SHARE: f64 = 0.5;
    /// Link ceiling: goodput within this share of what the link carries for this traffic.
    pub const LINK_SHARE: (f64, f64) = (0.90, 1.02);
    /// Shaper: goodput within this share of what a shaping qdisc's rate carries as payload.
    /// Below: a TCP start and the window's edges cost a few %, as for a link; above: tbf's
    /// bucket goes out at once (256 KiB over a 2 s test at 100 Mbit/s is 1 %), and headers
    /// are reckoned for IPv4 (IPv6 adds 1.3 % at 1500 bytes).
    pub const SHAPER_SHARE: (f64, f64) = (0.90, 1.05);
}

/// Ethernet's per-frame overhead on the wire beyond the IP packet: header 14, FCS 4,
/// preamble 8, inter-frame gap 12 bytes.
const ETHERNET_OVERHEAD_BYTES: f64 = 38.0;

/// Sets `limited_by` on every flow of a stream test that linerate's client ran
/// (request/response tests have none). `hosts` say whether a link speed read from the drivers
/// is a real one. The tests' shorthand: producers call [`crate::summarize()`].
#[cfg(test)]
pub(crate) fn add_verdicts(summary: &mut Summary, spec: &TestSpec, hosts: &Hosts) {
    add_verdicts_for(summary, spec, hosts, Client::Linerate);
}

/// [`add_verdicts`] for a run whose client end was `client`: its hints name that client's
/// flags and pacing. Run by [`crate::summarize()`], after the link speed is known.
pub(crate) fn add_verdicts_for(
    summary: &mut Summary,
    spec: &TestSpec,
    hosts: &Hosts,
    client: Client,
) {
    if spec.kind().row().family == FamilyId::Transaction {
        return;
    }

    let link = real_link_bps(summary, hosts);
    // Over loopback there is no network: a long RTT is a busy host, not a queue on a path.
    let loopback = hosts.client.interface.as_deref() == Some("lo");
    let mut advice = Advice::of(spec, client);
    advice.one_host = loopback;
    let verdicts: Vec<LimitedBy> = summary
        .flows
        .iter()
        .map(|f| {
            let mut facts = Facts::of(f, summary, spec, link);
            (facts.loopback, facts.advice) = (loopback, advice);
            facts.shapers = shaper::candidates(hosts, f.sender);
            verdict(&facts)
        })
        .collect();
    let tcp = spec.kind().row().family == FamilyId::Stream && advice.tcp();
    // Each note's hint is said once per run, on the first direction it applies to.
    let mut said = pacing::Said::default();
    for (f, mut v) in summary.flows.iter_mut().zip(verdicts) {
        if tcp {
            let congestion = hosts.congestion_of(spec, f.flow);
            pacing::note_paced_sending(&mut v, congestion, &mut said);
            pacing::note_receivers_sending(&mut v, f, (loopback, congestion), &mut said);
        }
        f.limited_by = Some(v);
    }
}

/// The summary's link speed, unless it came from a software link's driver (a veth says
/// 10 Gbit/s and carries more): `--link-speed` is always taken at its word.
fn real_link_bps(summary: &Summary, hosts: &Hosts) -> Option<u64> {
    let from_flag = crate::link::from_flag(summary);
    let ends = std::iter::once(&hosts.client).chain(hosts.server.as_ref());
    let nominal = ends.filter_map(|h| h.nic.as_ref()).any(|n| n.is_virtual());
    summary.link_speed_bps.filter(|_| from_flag || !nominal)
}

/// A direction's figures the rules read.
struct Facts<'a> {
    flow: &'a FlowSummary,
    /// The rate asked for, all streams, bits/s (`-b`).
    target_bps: Option<f64>,
    sender: EndCpu,
    receiver: EndCpu,
    /// The senders' TCP_INFO (empty for UDP and Unix sockets).
    infos: Vec<TcpInfo>,
    link_bps: Option<u64>,
    /// The test ran over loopback: no path to blame.
    loopback: bool,
    /// Payload share of each frame on the wire, for a link's ceiling.
    payload_share: Option<f64>,
    /// Payload share of each packet as a qdisc counts it, for a shaper's ceiling.
    qdisc_share: Option<f64>,
    /// The shaping qdiscs on the sending host's interface.
    shapers: Vec<shaper::Candidate>,
    /// Why the figures cannot carry a verdict.
    missing: Option<String>,
    /// TCP senders that hand the kernel pages (splice, sendfile) instead of copying.
    zero_copy: bool,
    /// What the hints may suggest for this run.
    advice: Advice,
    /// The socket buffer size the user asked for (`-w`), if any.
    window_bytes: Option<u32>,
}

impl<'a> Facts<'a> {
    fn of(flow: &'a FlowSummary, s: &Summary, spec: &TestSpec, link_bps: Option<u64>) -> Self {
        let (snd_cores, rcv_cores, snd_pin, rcv_pin) = match flow.sender {
            End::Client => (
                &s.local_cores,
                &s.remote_cores,
                spec.client_cpu,
                spec.server_cpu,
            ),
            End::Server => (
                &s.remote_cores,
                &s.local_cores,
                spec.server_cpu,
                spec.client_cpu,
            ),
        };
        let n = flow.streams.len();
        let infos: Vec<TcpInfo> = flow.streams.iter().filter_map(|x| x.tcp_info).collect();
        // The reason an incomplete run ended is the summary's (`incomplete`), said once there.
        let missing = if s.incomplete.is_some() {
            Some(match s.server_figures_up_to_s.filter(|&t| t > 0.0) {
                Some(t) => format!("the run is incomplete: the server's figures stop at {t:.2} s"),
                None => "the run is incomplete: the server's figures are missing".to_string(),
            })
        } else if flow.streams.iter().any(|x| x.error.is_some()) {
            Some("a stream failed".to_string())
        } else if flow.bytes_received == 0 {
            Some("nothing arrived".to_string())
        } else {
            None
        };
        Self {
            flow,
            target_bps: target_bps(spec, flow.flow).map(|b| b * n as f64),
            sender: EndCpu::of(flow.sender_cpu_pct, n, snd_cores, snd_pin),
            receiver: EndCpu::of(flow.receiver_cpu_pct, n, rcv_cores, rcv_pin),
            payload_share: payload_share(spec, &infos),
            qdisc_share: shaper::qdisc_share(spec, &infos),
            shapers: Vec::new(),
            infos,
            link_bps,
            loopback: false,
            missing,
            zero_copy: flow.sent_zero_copy(spec),
            advice: Advice::of(spec, Client::Linerate),
            window_bytes: spec.window_bytes,
        }
    }

    fn goodput(&self) -> f64 {
        self.flow.throughput_bps
    }

    /// What to try when the receiving host's CPU is the limit, for this run.
    fn receiver_cpu_hint(&self) -> String {
        hints::receiver_cpu(&self.advice, self.receiver.cores)
    }
}

/// The rate per stream the spec asks for in `flow`'s direction, bits/s of payload.
fn target_bps(spec: &TestSpec, flow: Flow) -> Option<f64> {
    match (spec.params.tcp(), spec.params.udp()) {
        (Some(tcp), _) => tcp.pacing_of(flow).map(|b| b as f64),
        (_, Some(udp)) => udp.rate_of(flow).bps(udp.payload_len_bytes),
        _ => None,
    }
}

/// Payload bytes per byte on an Ethernet wire: TCP `mss / (pmtu + 38)` from the senders'
/// TCP_INFO; UDP `payload / (payload + 28 + 38)` (IPv4). `None` over a Unix socket.
fn payload_share(spec: &TestSpec, infos: &[TcpInfo]) -> Option<f64> {
    if spec.kind().row().path == DataPath::Udp {
        let p = f64::from(spec.params.udp()?.payload_len_bytes);
        return Some(p / (p + 28.0 + ETHERNET_OVERHEAD_BYTES));
    }
    if spec.params.stream()?.transport == Transport::Unix {
        return None;
    }
    let t = infos
        .first()
        .filter(|t| t.snd_mss_bytes > 0 && t.pmtu_bytes > 0)?;
    Some(f64::from(t.snd_mss_bytes) / (f64::from(t.pmtu_bytes) + ETHERNET_OVERHEAD_BYTES))
}

fn limited(verdict: Verdict, evidence: String, hint: &str) -> LimitedBy {
    LimitedBy {
        verdict,
        evidence,
        hint: hint.to_string(),
        shaper: None,
    }
}

/// The first rule with enough evidence, or `unknown` with what was checked.
fn verdict(f: &Facts) -> LimitedBy {
    if let Some(why) = &f.missing {
        return limited(Verdict::Unknown, format!("no verdict: {why}"), "");
    }
    application(f)
        .or_else(|| shaper::shaper(f))
        .or_else(|| udp::datagram_loss(f))
        .or_else(|| receive_window(f))
        .or_else(|| send_buffer(f))
        .or_else(|| cpu(f))
        .or_else(|| path(f))
        .or_else(|| congestion(f))
        .unwrap_or_else(|| unknown(f))
}

fn pct(x: f64) -> String {
    format!("{x:.0} %")
}

/// linerate's own pacing: the direction reached the rate asked for.
fn application(f: &Facts) -> Option<LimitedBy> {
    let target = f.target_bps?;
    let share = f.goodput() / target;
    (share >= rule::RATE_REACHED).then(|| {
        limited(
            Verdict::Application,
            format!(
                "goodput {} is {} of the {} asked for (-b)",
                format_bits_per_sec(f.goodput()),
                pct(share * 100.0),
                format_bits_per_sec(target)
            ),
            &hints::application(&f.advice),
        )
    })
}

/// The senders' chrono figures, when their kernel keeps them.
fn chrono(f: &Facts) -> Option<record::TcpTime> {
    f.flow.tcp_time
}

/// The smallest window a receiver advertised at the end, bytes (Linux 5.4+).
fn advertised_window(f: &Facts) -> Option<u32> {
    f.infos.iter().filter_map(|t| t.snd_wnd_bytes).min()
}

/// What the advertised windows allow over the smoothed RTTs, bits/s, summed over streams
/// (a window's worth per round trip).
fn window_ceiling_bps(f: &Facts) -> Option<f64> {
    f.infos
        .iter()
        .map(|t| {
            let w = f64::from(t.snd_wnd_bytes?);
            (t.rtt_us > 0).then(|| w * 8.0 / (f64::from(t.rtt_us) / 1e6))
        })
        .sum()
}

/// The sender waited for the receiver's window much of the time, or the goodput is close to
/// what the advertised window allows over the RTT: a small window, or a reader at full CPU
/// that let a large one fill.
fn receive_window(f: &Facts) -> Option<LimitedBy> {
    let t = chrono(f)?;
    let ceiling = window_ceiling_bps(f).filter(|&c| c > 0.0);
    let at_ceiling = ceiling.map(|c| f.goodput() / c);
    let window = advertised_window(f);
    let small = window.is_some_and(|w| w < rule::SMALL_WINDOW_BYTES);
    let by_ceiling = small && at_ceiling.is_some_and(|a| a >= rule::WINDOW_CEILING_SHARE);
    if t.rwnd_limited_pct < rule::LIMITED_PCT && !by_ceiling {
        return None;
    }
    let mut evidence = format!("rwnd-limited {} of the busy time", pct(t.rwnd_limited_pct));
    if let Some(w) = window {
        evidence.push_str(&format!(
            "; the receiver advertised {} at the end",
            format_bytes(u64::from(w))
        ));
    }
    // The window and RTT are the last snapshot's: shown only when they account for the rate.
    if let (Some(c), Some(a)) = (ceiling, at_ceiling.filter(|&a| a <= 1.2)) {
        evidence.push_str(&format!(
            ", which over the RTT allows {}: goodput is {} of that",
            format_bits_per_sec(c),
            pct(a * 100.0)
        ));
    }
    // A large window that filled: the reader did not keep up. Its CPU, when its thread or its
    // host's busiest core (busy with its work) was saturated.
    let large = window.is_some() && !small;
    if large && f.receiver.thread_saturated() {
        evidence.push_str(&format!(
            "; the receiver's thread at {} of a core could not read faster",
            pct(f.receiver.thread_pct)
        ));
        evidence.push_str(&f.receiver.core_clause("receiver"));
        return Some(limited(
            Verdict::ReceiverCpu,
            evidence,
            &f.receiver_cpu_hint(),
        ));
    }
    if let Some(core) = f.receiver.core_saturated().filter(|_| large) {
        evidence.push_str(&format!(
            "; the receiver's {}, {}, with its work, could not read faster",
            f.receiver.core_name(),
            core_words(&core)
        ));
        return Some(limited(
            Verdict::ReceiverCpu,
            evidence,
            &f.receiver_cpu_hint(),
        ));
    }
    Some(limited(
        Verdict::ReceiveWindow,
        evidence,
        "raise the receiver's buffer: -w, or the maximum of net.ipv4.tcp_rmem (net.core.rmem_max for -w) on the receiving host",
    ))
}

/// The sender's buffer ran out: limited by it much of the busy time, or idle much of the
/// window though linerate always had data to write and its thread was not saturated.
fn send_buffer(f: &Facts) -> Option<LimitedBy> {
    let t = chrono(f)?;
    const HINT: &str = "raise the sender's buffer: -w, or the maximum of net.ipv4.tcp_wmem (net.core.wmem_max for -w) on the sending host";
    if t.sndbuf_limited_pct >= rule::LIMITED_PCT {
        let evidence = format!(
            "sndbuf-limited {} of the busy time",
            pct(t.sndbuf_limited_pct)
        );
        return Some(limited(Verdict::SendBuffer, evidence, HINT));
    }
    let sender_free = !f.sender.thread_saturated() && f.sender.core_saturated().is_none();
    if t.busy_pct < rule::BUSY_BELOW_PCT && sender_free {
        let evidence = format!(
            "the connection sat idle {} of the window though linerate always had data to write and its thread used {} of a core: the send buffer emptied between writes (sndbuf-limited {})",
            pct(100.0 - t.busy_pct),
            pct(f.sender.thread_pct),
            pct(t.sndbuf_limited_pct)
        );
        return Some(limited(Verdict::SendBuffer, evidence, HINT));
    }
    None
}

/// A saturated data thread or host core on one end; where both are, the stronger.
fn cpu(f: &Facts) -> Option<LimitedBy> {
    let (s, r) = (saturation(&f.sender), saturation(&f.receiver));
    let sender = match (s, r) {
        (None, None) => return None,
        (Some(_), None) => true,
        (None, Some(_)) => false,
        (Some(a), Some(b)) => a.0 > b.0 || (a.0 == b.0 && a.1 >= b.1),
    };
    let (end, name, verdict, hint) = if sender {
        let hint = hints::sender_cpu(&f.advice, f.sender.cores);
        (&f.sender, "sender", Verdict::SenderCpu, hint)
    } else {
        let hint = f.receiver_cpu_hint();
        (&f.receiver, "receiver", Verdict::ReceiverCpu, hint)
    };
    let (other, other_end) = if sender {
        ("receiver", &f.receiver)
    } else {
        ("sender", &f.sender)
    };
    let mut evidence = format!(
        "{name} thread at {} of a core per stream ({other} {})",
        pct(end.thread_pct),
        pct(other_end.thread_pct)
    );
    if end.core_share_pct > end.thread_pct {
        evidence.push_str(&format!(
            "; its streams share the host's cores at {} of each",
            pct(end.core_share_pct)
        ));
    }
    evidence.push_str(&end.core_clause(name));
    Some(limited(verdict, evidence, &hint))
}

/// The smoothed RTT far above the minimum (a queue at a bottleneck), or goodput at the link's
/// ceiling.
fn path(f: &Facts) -> Option<LimitedBy> {
    if f.loopback {
        return None;
    }
    const HINT: &str = "the network delivered what it could: the limit is a link or shaper on the way (a faster link, or the shaper's rate, changes it)";
    if let (Some(t), Some(srtt)) = (chrono(f), f.flow.rtt_us) {
        let min = t.min_rtt_us.unwrap_or(srtt);
        let queued = f64::from(srtt) >= rule::QUEUE_RTT_RATIO * f64::from(min)
            && srtt.saturating_sub(min) >= rule::QUEUE_DELAY_US;
        if queued && t.busy_pct >= rule::QUEUE_BUSY_PCT {
            let evidence = format!(
                "a queue built up on the way: smoothed RTT {:.2} ms against a minimum of {:.3} ms, busy {} of the window, losses {}",
                f64::from(srtt) / 1e3,
                f64::from(min) / 1e3,
                pct(t.busy_pct),
                Retrans::of(f).map_or("unknown".into(), |r| format!("{:.2} %", r.lost_pct()))
            );
            return Some(limited(Verdict::Path, evidence, HINT));
        }
    }
    let (link, share) = (f.link_bps? as f64, f.payload_share?);
    let ceiling = link * share;
    let at = f.goodput() / ceiling;
    (at >= rule::LINK_SHARE.0 && at <= rule::LINK_SHARE.1).then(|| {
        let evidence = format!(
            "goodput at {} of the {} link's ceiling for this traffic ({})",
            pct(at * 100.0),
            format_bits_per_sec(link),
            format_bits_per_sec(ceiling)
        );
        limited(Verdict::Path, evidence, HINT)
    })
}

/// No rule fired: what was checked.
fn unknown(f: &Facts) -> LimitedBy {
    let busiest = |e: &EndCpu| e.judged.map_or("?".into(), |c| pct(c.busy_pct));
    let cores = match (f.sender.pinned, f.receiver.pinned) {
        (false, false) => "busiest cores",
        (true, true) => "pinned cores",
        (true, false) | (false, true) => "cores (pinned or busiest)",
    };
    let mut evidence = format!(
        "no end saturated (threads: sender {}, receiver {} of a core per stream; {cores} {} and {})",
        pct(f.sender.thread_pct),
        pct(f.receiver.thread_pct),
        busiest(&f.sender),
        busiest(&f.receiver)
    );
    if let Some(t) = chrono(f) {
        evidence.push_str(&format!(
            "; busy {}, rwnd-limited {}, sndbuf-limited {}",
            pct(t.busy_pct),
            pct(t.rwnd_limited_pct),
            pct(t.sndbuf_limited_pct)
        ));
    }
    let mut hint = "";
    if let Some(r) = Retrans::of(f) {
        evidence.push_str(&format!("; {}", r.words()));
        hint = reordering_hint(f, r);
    }
    if let Some(u) = &f.flow.udp {
        evidence.push_str(&format!("; {:.2} % of datagrams lost", u.loss_pct));
        let causes = f.flow.loss_causes.as_ref().filter(|_| u.packets_lost > 0);
        if let Some((socket, network)) =
            causes.and_then(|c| Some((c.receiver_socket_buffer?, c.network?)))
        {
            let ip = causes
                .and_then(|c| c.receiver_ip)
                .filter(|&n| n > 0)
                .map_or(String::new(), |n| {
                    format!(", {n} in the receiving host's IP layer (a firewall)")
                });
            evidence.push_str(&format!(
                " ({socket} at the receiving sockets' buffers{ip}, {network} in the network: see loss_causes)"
            ));
        }
    }
    limited(Verdict::Unknown, evidence, hint)
}

#[cfg(test)]
mod tests;
