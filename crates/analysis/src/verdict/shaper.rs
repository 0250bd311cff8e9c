//! The shaper rule: a direction whose goodput sits at the rate of a shaping qdisc on its
//! sending host's interface (tbf, htb, cake, netem's rate: `hosts.*.qdiscs`) was held there by
//! it, when its counters say it held packets back during the test (METHODOLOGY §19.1).
//!
//! A qdisc's rate counts whole packets as it sees them: payload, transport and IP headers and
//! the 14-byte link header (no preamble, FCS or gap, which the NIC adds after it), so its
//! ceiling for the payload is `rate × payload / (packet + 14)`.

use measure::qdisc::QdiscCounts;
use measure::tcp_info::TcpInfo;
use measure::units::format_bits_per_sec;
use record::{End, Hosts, LimitedBy, Shaper, Verdict};
use wire::spec::{DataPath, Transport};
use wire::TestSpec;

use super::{limited, pct, rule, Facts};

/// A shaping qdisc on a direction's sending host, with what it did over the test.
pub(super) struct Candidate {
    shaper: Shaper,
    /// Its counters over the test (unknown: the rule goes by the rate alone).
    during: Option<QdiscCounts>,
}

/// The shaping qdiscs on the interface of `sender`'s host.
pub(super) fn candidates(hosts: &Hosts, sender: End) -> Vec<Candidate> {
    let host = match sender {
        End::Client => Some(&hosts.client),
        End::Server => hosts.server.as_ref(),
    };
    let Some(host) = host else {
        return Vec::new();
    };
    let interface = host.interface.clone().unwrap_or_default();
    let qdiscs = host.qdiscs.as_deref().unwrap_or_default();
    qdiscs
        .iter()
        .filter_map(|q| {
            Some(Candidate {
                shaper: Shaper {
                    end: sender,
                    interface: interface.clone(),
                    kind: q.kind.clone(),
                    handle: q.handle.clone(),
                    rate_bps: q.shaping_rate_bps()?,
                },
                during: q.during_test,
            })
        })
        .collect()
}

/// Payload bytes per byte a qdisc counts: UDP `payload / (payload + 28 + 14)`, TCP
/// `mss / (pmtu + 14)` from the senders' TCP_INFO (IPv4 headers; IPv6's 20 more bytes a
/// packet are within the rule's tolerance). `None` over a Unix socket.
pub(super) fn qdisc_share(spec: &TestSpec, infos: &[TcpInfo]) -> Option<f64> {
    if spec.kind().row().path == DataPath::Udp {
        let p = f64::from(spec.params.udp()?.payload_len_bytes);
        return Some(p / (p + 28.0 + 14.0));
    }
    if spec.params.stream()?.transport == Transport::Unix {
        return None;
    }
    let t = infos
        .first()
        .filter(|t| t.snd_mss_bytes > 0 && t.pmtu_bytes > 0)?;
    Some(f64::from(t.snd_mss_bytes) / (f64::from(t.pmtu_bytes) + 14.0))
}

/// The slowest shaper whose payload ceiling the goodput sits at, and which held packets back
/// (overlimits or drops) over the test where its counters say; netem counts no overlimits
/// when its rate holds packets, so its rate alone decides.
pub(super) fn shaper(f: &Facts) -> Option<LimitedBy> {
    let share = f.qdisc_share?;
    let (lo, hi) = rule::SHAPER_SHARE;
    let held = |c: &Candidate| {
        c.shaper.kind == "netem" || c.during.is_none_or(|d| d.overlimits + d.drops > 0)
    };
    let c = f
        .shapers
        .iter()
        .filter(|c| {
            let at = f.goodput() / (c.shaper.rate_bps as f64 * share);
            (lo..=hi).contains(&at) && held(c)
        })
        .min_by_key(|c| c.shaper.rate_bps)?;
    let ceiling = c.shaper.rate_bps as f64 * share;
    let mut evidence = format!(
        "goodput {} is {} of what {} ({} {}) lets through as payload ({})",
        format_bits_per_sec(f.goodput()),
        pct(f.goodput() / ceiling * 100.0),
        c.shaper.words(),
        c.shaper.kind,
        c.shaper.handle,
        format_bits_per_sec(ceiling)
    );
    if let Some(d) = c.during {
        evidence.push_str(&format!(
            "; over the test it held packets back {} times (overlimits) and dropped {}",
            d.overlimits, d.drops
        ));
    }
    let hint = format!(
        "the {} qdisc on the {}'s {} sets the rate: change its rate, or remove it to measure what is beyond it (tc qdisc show dev {})",
        c.shaper.kind,
        match c.shaper.end {
            End::Client => "client",
            End::Server => "server",
        },
        c.shaper.interface,
        c.shaper.interface
    );
    let mut l = limited(Verdict::Shaper, evidence, &hint);
    l.shaper = Some(c.shaper.clone());
    Some(l)
}
