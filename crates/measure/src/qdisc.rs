//! The queueing disciplines (qdiscs) on one interface, as `tc -s qdisc show dev IF` lists them,
//! read from the kernel over rtnetlink (`RTM_GETQDISC` dump; `RTM_GETTCLASS` for an htb's root
//! classes, which hold its rate). Nothing runs the tc program.
//!
//! Each [`Qdisc`] has its kind, handle and parent, the parameters that shape or bound its queue
//! (rate, burst, limit, latency, CoDel's target and interval, fq's quantum and flow limits) and
//! its counters (`TCA_STATS2`: bytes, packets, drops, overlimits, requeues, backlog). Counters
//! count what the qdisc handled: a GSO super-packet counts once in `packets` and `drops`.
//!
//! Invariants: a parameter the kernel did not report is `None`; a list is at most
//! [`MAX_QDISCS`] long and its strings at most [`MAX_NAME_LEN`] bytes, as read here and as
//! accepted from a peer ([`bounded`]), so a record's share of them is bounded.

#[cfg(target_os = "linux")]
mod netlink;
#[cfg(target_os = "linux")]
mod options;

use serde::{Deserialize, Serialize};

/// Qdiscs one list holds at most (a multiqueue NIC has one per transmit queue under its `mq`:
/// the first ones are kept).
pub const MAX_QDISCS: usize = 64;

/// Bytes a qdisc's kind, handle or parent holds at most (the kernel's `TCA_KIND` is at most
/// 15 bytes; a handle `ffff:ffff` is 9).
pub const MAX_NAME_LEN: usize = 16;

/// Why the qdiscs could not be read.
#[derive(Debug, thiserror::Error)]
pub enum QdiscError {
    /// No interface of that name in this network namespace.
    #[error("no interface named {0:?} here")]
    NoInterface(String),
    /// The netlink socket could not be opened or the kernel's answer read.
    #[error("reading the qdiscs over rtnetlink: {0}")]
    Netlink(#[from] std::io::Error),
    /// The kernel's answer did not parse (a truncated or malformed message).
    #[error("a malformed rtnetlink answer: {0}")]
    Malformed(&'static str),
    /// Not Linux.
    #[error("qdiscs are read on Linux only")]
    Unsupported,
}

/// One qdisc on an interface.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Qdisc {
    /// Its kind (`TCA_KIND`): `tbf`, `htb`, `fq`, `fq_codel`, `cake`, `netem`, `pfifo`,
    /// `noqueue`, `mq`, …
    pub kind: String,
    /// Its handle as tc writes it, e.g. `8001:`.
    pub handle: String,
    /// Its parent: `root`, `ingress`, or a class such as `1:1`.
    pub parent: String,
    /// The rate it shapes to, bits/s: tbf's rate, the sum of an htb's root classes' ceilings,
    /// cake's bandwidth, netem's rate. Absent: it does not shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<u64>,
    /// tbf's peak rate, bits/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rate_bps: Option<u64>,
    /// tbf's bucket, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_bytes: Option<u64>,
    /// Its queue's limit in packets (pfifo, fq, fq_codel, codel, netem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_packets: Option<u32>,
    /// Its queue's limit in bytes (tbf, bfifo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<u32>,
    /// tbf: the longest a packet may wait (limit over rate, less the bucket), µs; netem: the
    /// delay it adds, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<u64>,
    /// netem's jitter, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_us: Option<u64>,
    /// netem's random loss, parts per million of packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_ppm: Option<u32>,
    /// CoDel's target (codel, fq_codel, cake), µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_us: Option<u32>,
    /// CoDel's interval (codel, fq_codel; cake's rtt), µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_us: Option<u32>,
    /// Bytes a flow may send per round (fq, fq_codel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantum_bytes: Option<u32>,
    /// fq_codel's flow buckets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<u32>,
    /// fq's per-flow limit, packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_limit_packets: Option<u32>,
    /// fq's per-flow rate cap (`maxrate`), bits/s; absent when unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_max_rate_bps: Option<u64>,
    /// What its counters added over the test (backlog: at the test's end). Absent when it
    /// was not there at the start, or its counters are unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during_test: Option<QdiscCounts>,
    /// Its counters since it was created, as read (`tc -s`); not stored, not sent.
    #[serde(skip)]
    pub counts: Option<QdiscCounts>,
}

/// A qdisc's counters (`TCA_STATS2`).
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct QdiscCounts {
    /// Bytes it sent.
    pub bytes: u64,
    /// Packets it sent (a GSO super-packet counts once).
    pub packets: u64,
    /// Packets it dropped (a GSO super-packet counts once).
    pub drops: u64,
    /// Times a packet had to wait: over its rate (tbf, htb, cake) or its queue full.
    pub overlimits: u64,
    /// Packets handed back by the driver and queued again.
    pub requeues: u64,
    /// Bytes queued (a level, not a count).
    pub backlog_bytes: u64,
    /// Packets queued (a level, not a count).
    pub backlog_packets: u64,
}

impl QdiscCounts {
    /// What the counters added since `earlier` (a counter that went backwards reads 0); the
    /// backlog is this reading's.
    pub fn since(&self, earlier: &QdiscCounts) -> QdiscCounts {
        QdiscCounts {
            bytes: self.bytes.saturating_sub(earlier.bytes),
            packets: self.packets.saturating_sub(earlier.packets),
            drops: self.drops.saturating_sub(earlier.drops),
            overlimits: self.overlimits.saturating_sub(earlier.overlimits),
            requeues: self.requeues.saturating_sub(earlier.requeues),
            ..*self
        }
    }
}

/// The qdiscs on `interface` now, in the kernel's order (the root first), with their counters
/// since creation in [`Qdisc::counts`].
pub fn read_qdiscs(interface: &str) -> Result<Vec<Qdisc>, QdiscError> {
    #[cfg(target_os = "linux")]
    return netlink::read(interface);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = interface;
        Err(QdiscError::Unsupported)
    }
}

/// `after` with each qdisc's counters over the test: what they added since the same qdisc
/// (same kind, handle and parent) in `before`.
pub fn over_test(before: &[Qdisc], after: Vec<Qdisc>) -> Vec<Qdisc> {
    after
        .into_iter()
        .map(|mut q| {
            let earlier = before
                .iter()
                .find(|b| (&b.kind, &b.handle, &b.parent) == (&q.kind, &q.handle, &q.parent));
            q.during_test = q
                .counts
                .zip(earlier.and_then(|b| b.counts))
                .map(|(a, b)| a.since(&b));
            q
        })
        .collect()
}

/// The qdiscs of the interface a test used, read at its start and at its end.
#[derive(Debug, Clone, Default)]
pub struct QdiscWatch {
    interface: Option<String>,
    before: Option<Vec<Qdisc>>,
}

impl QdiscWatch {
    /// Reads `interface`'s qdiscs now (nothing when it is unknown or cannot be read).
    pub fn start(interface: Option<String>) -> Self {
        let before = interface.as_deref().and_then(|i| read_qdiscs(i).ok());
        Self { interface, before }
    }

    /// The qdiscs now, with their counters over the test; `None` when they could not be read.
    pub fn finish(&self) -> Option<Vec<Qdisc>> {
        let before = self.before.as_ref()?;
        let after = read_qdiscs(self.interface.as_deref()?).ok()?;
        Some(over_test(before, after))
    }
}

/// A list as a peer may send it, cut to the bounds: at most [`MAX_QDISCS`] entries, each
/// string at most [`MAX_NAME_LEN`] bytes (at a character boundary).
pub fn bounded(mut list: Vec<Qdisc>) -> Vec<Qdisc> {
    list.truncate(MAX_QDISCS);
    for q in &mut list {
        for s in [&mut q.kind, &mut q.handle, &mut q.parent] {
            truncate_str(s, MAX_NAME_LEN);
        }
    }
    list
}

fn truncate_str(s: &mut String, max: usize) {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
}

/// Kinds that shape to a rate of their own ([`Qdisc::rate_bps`]).
pub const SHAPING_KINDS: [&str; 4] = ["tbf", "htb", "cake", "netem"];

impl Qdisc {
    /// The rate it shapes to, when it is a shaper with one.
    pub fn shaping_rate_bps(&self) -> Option<u64> {
        self.rate_bps
            .filter(|&r| r > 0 && SHAPING_KINDS.contains(&self.kind.as_str()))
    }

    /// `tbf 100Mbit`, `fq_codel`, `netem 10ms`: its kind and what most sets it apart.
    pub fn words(&self) -> String {
        let mut out = self.kind.clone();
        if let Some(r) = self.rate_bps {
            out.push(' ');
            out.push_str(&tc_rate(r));
        }
        if self.kind == "netem" {
            if let Some(l) = self.latency_us.filter(|&l| l > 0) {
                out.push_str(&format!(" delay {}ms", l as f64 / 1000.0));
            }
            if let Some(p) = self.loss_ppm.filter(|&p| p > 0) {
                out.push_str(&format!(" loss {}%", f64::from(p) / 10_000.0));
            }
        }
        out
    }
}

/// The qdiscs that hold packets, in a few words: `tbf 100Mbit`, `htb 1Gbit, fq_codel`; `none`
/// where there are none (`noqueue`, or `mq` over its per-queue children, counts as none of
/// its own).
pub fn summary(list: &[Qdisc]) -> String {
    let words: Vec<String> = list
        .iter()
        .filter(|q| !["noqueue", "mq", "ingress", "clsact"].contains(&q.kind.as_str()))
        .map(Qdisc::words)
        .collect();
    // A multiqueue NIC's per-queue children repeat: each kind once, with its count.
    let mut seen: Vec<(String, usize)> = Vec::new();
    for w in words {
        match seen.iter_mut().find(|(s, _)| *s == w) {
            Some((_, n)) => *n += 1,
            None => seen.push((w, 1)),
        }
    }
    if seen.is_empty() {
        return "none".to_string();
    }
    let parts: Vec<String> = seen
        .into_iter()
        .map(|(w, n)| if n > 1 { format!("{n} × {w}") } else { w })
        .collect();
    parts.join(", ")
}

/// A rate as tc writes one: `100Mbit`, `1Gbit`, `1500Kbit`, `800bit` (powers of 1000).
pub fn tc_rate(bps: u64) -> String {
    for (unit, name) in [
        (1_000_000_000, "Gbit"),
        (1_000_000, "Mbit"),
        (1_000, "Kbit"),
    ] {
        if bps >= unit && bps % unit == 0 {
            return format!("{}{name}", bps / unit);
        }
    }
    if bps >= 1_000_000 {
        return format!("{:.1}Mbit", bps as f64 / 1e6);
    }
    format!("{bps}bit")
}

/// A handle as tc writes it: `8001:` for a qdisc's (minor 0), `1:10` for a class's.
pub fn handle_words(h: u32) -> String {
    let (major, minor) = (h >> 16, h & 0xffff);
    if minor == 0 {
        format!("{major:x}:")
    } else {
        format!("{major:x}:{minor:x}")
    }
}

/// A parent as tc writes it: `root`, `ingress`, or a handle.
pub fn parent_words(p: u32) -> String {
    match p {
        0xffff_ffff => "root".to_string(),
        0xffff_fff1 => "ingress".to_string(),
        _ => handle_words(p),
    }
}

#[cfg(test)]
mod tests;
