//! A qdisc's `TCA_OPTIONS`, by kind, at the layouts of `linux/pkt_sched.h`: the parameters
//! that shape (rates, bucket, limits, latency, CoDel's target and interval, quanta). An
//! attribute shorter than its layout is skipped, never read past.

use super::netlink::{align, u32_at, TcObject};
use super::Qdisc;

/// The attributes of a netlink attribute stream: (type without its flag bits, value).
pub(super) struct Attrs<'a>(pub &'a [u8]);

impl<'a> Iterator for Attrs<'a> {
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.0;
        if b.len() < 4 {
            return None;
        }
        let len = usize::from(u16::from_ne_bytes([b[0], b[1]]));
        if len < 4 || len > b.len() {
            self.0 = &[];
            return None;
        }
        let kind = u16::from_ne_bytes([b[2], b[3]]) & 0x3fff;
        self.0 = &b[align(len).min(b.len())..];
        Some((kind, &b[4..len]))
    }
}

fn u32_of(v: &[u8]) -> Option<u32> {
    (v.len() >= 4).then(|| u32_at(v, 0))
}

fn u64_of(v: &[u8]) -> Option<u64> {
    Some(u64::from_ne_bytes(v.get(..8)?.try_into().ok()?))
}

/// Kernel ticks (`PSCHED_SHIFT` = 6: 64 ns each) to µs.
fn ticks_us(ticks: u32) -> u64 {
    (u64::from(ticks) << 6) / 1000
}

/// Bytes/s to bits/s; `None` for 0 (no rate).
fn bps(bytes_per_s: u64) -> Option<u64> {
    (bytes_per_s > 0).then(|| bytes_per_s.saturating_mul(8))
}

/// Fills `q`'s parameters from its kind's options.
pub(super) fn fill(q: &mut Qdisc, opts: &[u8]) {
    match q.kind.as_str() {
        "tbf" => tbf(q, opts),
        "fq_codel" => fq_codel(q, opts),
        "codel" => {
            for (t, v) in Attrs(opts) {
                match t {
                    1 => q.target_us = u32_of(v),
                    2 => q.limit_packets = u32_of(v),
                    3 => q.interval_us = u32_of(v),
                    _ => {}
                }
            }
        }
        "fq" => fq(q, opts),
        "cake" => {
            for (t, v) in Attrs(opts) {
                match t {
                    2 => q.rate_bps = u64_of(v).and_then(bps),
                    7 => q.interval_us = u32_of(v),
                    8 => q.target_us = u32_of(v),
                    _ => {}
                }
            }
        }
        "netem" => netem(q, opts),
        // `struct tc_fifo_qopt { u32 limit }`.
        "pfifo" | "pfifo_head_drop" => q.limit_packets = u32_of(opts),
        "bfifo" => q.limit_bytes = u32_of(opts),
        _ => {}
    }
}

/// `TCA_TBF_PARMS` (`struct tc_tbf_qopt`: rate and peak `tc_ratespec`s of 12 bytes, their
/// rate at byte 8; limit at 24, buffer in ticks at 28), and the 64-bit rates above 4 GB/s.
fn tbf(q: &mut Qdisc, opts: &[u8]) {
    let (mut rate, mut peak, mut buffer) = (0u64, 0u64, 0u32);
    for (t, v) in Attrs(opts) {
        match t {
            1 if v.len() >= 36 => {
                rate = u64::from(u32_at(v, 8));
                peak = u64::from(u32_at(v, 20));
                q.limit_bytes = Some(u32_at(v, 24));
                buffer = u32_at(v, 28);
            }
            4 => rate = u64_of(v).unwrap_or(rate),
            5 => peak = u64_of(v).unwrap_or(peak),
            _ => {}
        }
    }
    q.rate_bps = bps(rate);
    q.peak_rate_bps = bps(peak);
    if rate > 0 {
        let buffer_us = ticks_us(buffer);
        q.burst_bytes = Some(rate * buffer_us / 1_000_000);
        // As tc computes it: the time the limit takes at the rate, less the bucket's.
        q.latency_us = q
            .limit_bytes
            .map(|l| (u64::from(l) * 1_000_000 / rate).saturating_sub(buffer_us));
    }
}

fn fq_codel(q: &mut Qdisc, opts: &[u8]) {
    for (t, v) in Attrs(opts) {
        match t {
            1 => q.target_us = u32_of(v),
            2 => q.limit_packets = u32_of(v),
            3 => q.interval_us = u32_of(v),
            5 => q.flows = u32_of(v),
            6 => q.quantum_bytes = u32_of(v),
            _ => {}
        }
    }
}

fn fq(q: &mut Qdisc, opts: &[u8]) {
    for (t, v) in Attrs(opts) {
        match t {
            1 => q.limit_packets = u32_of(v),
            2 => q.flow_limit_packets = u32_of(v),
            3 => q.quantum_bytes = u32_of(v),
            // ~0U: unlimited.
            7 => {
                q.flow_max_rate_bps = u32_of(v)
                    .filter(|&r| r != u32::MAX)
                    .and_then(|r| bps(u64::from(r)))
            }
            _ => {}
        }
    }
}

/// `struct tc_netem_qopt` (latency in ticks, limit, loss as a fraction of 2^32, gap,
/// duplicate, jitter in ticks: 24 bytes), then attributes: the rate (`struct
/// tc_netem_rate`, bytes/s first; or 64-bit) and 64-bit latency and jitter in ns.
fn netem(q: &mut Qdisc, opts: &[u8]) {
    let Some(head) = opts.get(..24) else {
        return;
    };
    q.latency_us = Some(ticks_us(u32_at(head, 0)));
    q.limit_packets = Some(u32_at(head, 4));
    let loss = u64::from(u32_at(head, 8));
    q.loss_ppm = Some(((loss * 1_000_000 + (1 << 31)) >> 32) as u32).filter(|&p| p > 0);
    q.jitter_us = Some(ticks_us(u32_at(head, 20))).filter(|&j| j > 0);
    let ns_us = |v: &[u8]| u64_of(v).map(|ns| ns / 1000);
    for (t, v) in Attrs(&opts[24..]) {
        match t {
            6 => q.rate_bps = q.rate_bps.or(u32_of(v).and_then(|r| bps(u64::from(r)))),
            8 => q.rate_bps = u64_of(v).and_then(bps).or(q.rate_bps),
            10 => q.latency_us = ns_us(v),
            11 => q.jitter_us = ns_us(v).filter(|&j| j > 0),
            _ => {}
        }
    }
}

/// The rate of the htb whose handle is `handle`: the sum of its root classes' ceilings
/// (`TCA_HTB_PARMS`, `struct tc_htb_opt`: rate then ceil `tc_ratespec`s, the ceil's rate at
/// byte 20; `TCA_HTB_CEIL64` above 4 GB/s).
pub(super) fn htb_rate(classes: &[TcObject], handle: u32) -> Option<u64> {
    let roots = classes
        .iter()
        .filter(|c| c.kind == "htb" && c.parent == 0xffff_ffff && c.handle >> 16 == handle >> 16);
    let mut total = 0u64;
    for c in roots {
        let mut ceil = 0u64;
        for (t, v) in Attrs(&c.options) {
            match t {
                1 if v.len() >= 24 => ceil = ceil.max(u64::from(u32_at(v, 20))),
                7 => ceil = u64_of(v).unwrap_or(ceil),
                _ => {}
            }
        }
        total = total.saturating_add(ceil);
    }
    bps(total)
}
