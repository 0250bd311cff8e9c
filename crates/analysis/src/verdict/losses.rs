//! Losses on a TCP path: the senders' retransmissions (those the receiver reported as
//! duplicates, D-SACK, are no loss), the congestion rule (losses without a queue: the
//! congestion control backed off) and the reordering hint (many spurious retransmissions).
//! TCP only: the figures are the senders' TCP_INFO.

use measure::tcp_info::TcpInfo;
use record::{LimitedBy, Verdict};

use super::{chrono, limited, rule, Facts};

/// A direction's retransmissions over its senders (Linux 4.2+ for `segs_out`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Retrans {
    /// Segments sent, retransmissions included.
    segs: u64,
    /// Segments retransmitted.
    retrans: u64,
    /// Of those, segments the receiver reported as duplicates (D-SACK, Linux 5.0+): not lost.
    spurious: Option<u64>,
}

impl Retrans {
    pub(super) fn of(f: &Facts) -> Option<Self> {
        let sum = |x: fn(&TcpInfo) -> Option<u32>| {
            f.infos
                .iter()
                .map(|t| x(t).map(u64::from))
                .sum::<Option<u64>>()
        };
        let segs = sum(|t| t.segs_out).filter(|&s| s > 0)?;
        Some(Self {
            segs,
            retrans: f.infos.iter().map(|t| u64::from(t.retransmits)).sum(),
            spurious: sum(|t| t.dsack_dups),
        })
    }

    /// Retransmissions that repaired a loss, % of segments sent.
    pub(super) fn lost_pct(self) -> f64 {
        let lost = self.retrans.saturating_sub(self.spurious.unwrap_or(0));
        lost as f64 / self.segs as f64 * 100.0
    }

    pub(super) fn words(self) -> String {
        let mut s = format!(
            "retransmits {:.2} % of segments ({} of {})",
            self.retrans as f64 / self.segs as f64 * 100.0,
            self.retrans,
            self.segs
        );
        if let Some(d) = self.spurious.filter(|&d| d > 0) {
            s.push_str(&format!(
                ", {d} of them spurious (D-SACK), so {:.2} % repaired losses",
                self.lost_pct()
            ));
        }
        s
    }
}

/// Losses without a queue: the congestion control backed off. Retransmissions the receiver
/// reported as duplicates (reordering) are not losses.
pub(super) fn congestion(f: &Facts) -> Option<LimitedBy> {
    let r = Retrans::of(f)?;
    (r.lost_pct() >= rule::RETRANS_PCT).then(|| {
        let rtt = match (f.flow.rtt_us, chrono(f).and_then(|t| t.min_rtt_us)) {
            (Some(s), Some(m)) => format!("; smoothed RTT {s} us against a minimum of {m} us"),
            _ => String::new(),
        };
        limited(
            Verdict::Congestion,
            format!("{}{rtt}", r.words()),
            "packets were lost on the way: look for drops on both hosts (nstat, ethtool -S, tc -s qdisc, netdev_max_backlog) and on the path; -C bbr shows how much a loss-tolerant congestion control recovers",
        )
    })
}

/// Many spurious retransmissions: the path reordered segments, and each reordering cost a
/// retransmission and a congestion-window undo. Between namespaces on one host (veth) the
/// receiving stack runs on the sending host's cores: a zero-copy sender that sleeps on its
/// buffer leaves its queued data to be sent by whichever core processes the ACKs (the
/// receiver's), so segments leave from two cores (METHODOLOGY 10, 19.1).
pub(super) fn reordering_hint(f: &Facts, r: Retrans) -> &'static str {
    let spurious = r.spurious.unwrap_or(0) as f64 / r.segs as f64 * 100.0;
    if spurious < rule::SPURIOUS_PCT {
        ""
    } else if f.zero_copy {
        "the path reordered segments (spurious retransmissions): between namespaces on one host, a zero-copy sender's queued data also leaves from the core that processes the ACKs; --send-mode write keeps one stream's sending on its own core"
    } else {
        "the path reordered segments (spurious retransmissions): look for several queues or cores carrying one flow (RPS, a bond, ECMP, or namespaces on one host)"
    }
}
