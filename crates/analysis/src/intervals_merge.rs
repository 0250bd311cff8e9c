//! Two adjacent interval samples as one twice as long: the rule
//! [`BoundedIntervals`](crate::BoundedIntervals) applies when it is full (docs/RESULTS.md,
//! "At most 1,024 intervals").
//!
//! Invariant: every count of the merged interval is the sum of the pair's (bytes, datagrams,
//! transactions, retransmits, each stream's bytes; saturating, which no real run reaches), so
//! the intervals still add up to the summary; every rate is its count over the merged span;
//! what is a state at an interval's end (TCP_INFO's window and RTT, jitter) is the later's;
//! CPU shares are weighted by each interval's length. What cannot merge exactly says so: the
//! merged `p50_us` and `p99_us` are the higher of the pair's, an upper bound of the merged
//! span's percentile (which lies between the two), and `self_probe_round_trips_us` is both
//! lists together, smallest first.

use measure::units::bits_per_sec;
use record::{FlowInterval, IntervalCpu, IntervalSample, IntervalTcp, RrInterval, UdpInterval};

use crate::per_sec;

/// `a` and the interval right after it, `b`, as one interval from `a`'s start to `b`'s end.
pub fn merge_pair(a: IntervalSample, b: IntervalSample) -> IntervalSample {
    let (da, db) = (span(&a), span(&b));
    let secs = da + db;
    let mut rest = b.flows;
    let mut flows: Vec<FlowInterval> = Vec::with_capacity(a.flows.len().max(rest.len()));
    for f in a.flows {
        let other = rest.iter().position(|x| x.flow == f.flow);
        flows.push(match other {
            Some(i) => merge_flow(f, rest.remove(i)),
            None => f,
        });
    }
    flows.extend(rest);
    for f in &mut flows {
        rerate(f, secs);
    }
    IntervalSample {
        start_s: a.start_s,
        end_s: b.end_s,
        flows,
        probe: both(a.probe, b.probe, merge_rr).map(|r| rerate_rr(r, secs)),
        cpu: merge_cpu(a.cpu, da, b.cpu, db),
        omitted: a.omitted && b.omitted,
    }
}

/// An interval's length on the client's clock, s (never negative).
fn span(s: &IntervalSample) -> f64 {
    (s.end_s - s.start_s).max(0.0)
}

/// Both present: `f` of them; one: that one.
fn both<T>(a: Option<T>, b: Option<T>, f: impl FnOnce(T, T) -> T) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(f(a, b)),
        (a, b) => a.or(b),
    }
}

/// One direction's counts over both intervals (rates are set after, over the merged span).
fn merge_flow(a: FlowInterval, b: FlowInterval) -> FlowInterval {
    let mut streams = a.stream_receiver_bytes;
    for (i, bytes) in b.stream_receiver_bytes.into_iter().enumerate() {
        match streams.get_mut(i) {
            Some(s) => *s = s.saturating_add(bytes),
            None => streams.push(bytes),
        }
    }
    let mut round_trips = a.self_probe_round_trips_us;
    round_trips.extend(b.self_probe_round_trips_us);
    round_trips.sort_by(f64::total_cmp);
    FlowInterval {
        flow: a.flow,
        sender_bytes: a.sender_bytes.saturating_add(b.sender_bytes),
        receiver_bytes: a.receiver_bytes.saturating_add(b.receiver_bytes),
        throughput_bps: 0.0,
        stream_receiver_bytes: streams,
        udp: both(a.udp, b.udp, merge_udp),
        rr: both(a.rr, b.rr, merge_rr),
        tcp_info: both(a.tcp_info, b.tcp_info, merge_tcp),
        self_probes: both(a.self_probes, b.self_probes, merge_rr),
        self_probe_round_trips_us: round_trips,
    }
}

/// A flow's rates over `secs`, from its counts.
fn rerate(f: &mut FlowInterval, secs: f64) {
    f.throughput_bps = bits_per_sec(f.receiver_bytes, secs);
    f.rr = f.rr.map(|r| rerate_rr(r, secs));
    f.self_probes = f.self_probes.map(|r| rerate_rr(r, secs));
    if let Some(u) = &mut f.udp {
        u.pps_sent = per_sec(u.packets_sent, secs);
        u.pps_received = per_sec(u.packets_received, secs);
    }
}

fn rerate_rr(r: RrInterval, secs: f64) -> RrInterval {
    RrInterval {
        transactions_per_s: per_sec(r.transactions, secs),
        ..r
    }
}

/// Transactions summed; each percentile the higher of the pair's (an upper bound).
fn merge_rr(a: RrInterval, b: RrInterval) -> RrInterval {
    RrInterval {
        transactions: a.transactions.saturating_add(b.transactions),
        transactions_per_s: 0.0,
        p50_us: both(a.p50_us, b.p50_us, f64::max),
        p99_us: both(a.p99_us, b.p99_us, f64::max),
    }
}

/// Datagram counts summed; the jitter, a state at the interval's end, the later's.
fn merge_udp(a: UdpInterval, b: UdpInterval) -> UdpInterval {
    UdpInterval {
        packets_sent: a.packets_sent.saturating_add(b.packets_sent),
        packets_received: a.packets_received.saturating_add(b.packets_received),
        packets_lost: a.packets_lost.saturating_add(b.packets_lost),
        packets_out_of_order: a
            .packets_out_of_order
            .saturating_add(b.packets_out_of_order),
        packets_duplicate: a.packets_duplicate.saturating_add(b.packets_duplicate),
        packets_late: a.packets_late.saturating_add(b.packets_late),
        jitter_us: b.jitter_us,
        pps_sent: 0.0,
        pps_received: 0.0,
    }
}

/// The later's TCP state, with both intervals' retransmits and the lower minimum RTT.
fn merge_tcp(a: IntervalTcp, b: IntervalTcp) -> IntervalTcp {
    IntervalTcp {
        retransmits: a.retransmits.saturating_add(b.retransmits),
        min_rtt_us: both(a.min_rtt_us, b.min_rtt_us, u32::min),
        ..b
    }
}

/// Each end's CPU share over both intervals, weighted by their lengths `da` and `db` (over the
/// one that has a figure when only one does).
fn merge_cpu(
    a: Option<IntervalCpu>,
    da: f64,
    b: Option<IntervalCpu>,
    db: f64,
) -> Option<IntervalCpu> {
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) => (a, b),
        (a, b) => return a.or(b),
    };
    let mean = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) if da + db > 0.0 => Some((x * da + y * db) / (da + db)),
        (x, y) => y.or(x),
    };
    Some(IntervalCpu {
        local_pct: mean(Some(a.local_pct), Some(b.local_pct)).unwrap_or(b.local_pct),
        remote_pct: mean(a.remote_pct, b.remote_pct),
        local_host_busy_pct: mean(a.local_host_busy_pct, b.local_host_busy_pct),
        remote_host_busy_pct: mean(a.remote_host_busy_pct, b.remote_host_busy_pct),
    })
}
