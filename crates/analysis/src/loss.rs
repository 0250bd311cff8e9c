//! Where a UDP direction's lost datagrams went. The sequence numbers give the exact number
//! lost; the parts are taken from it in order, each at most what is left:
//!
//! 1. the counts of this test's own sockets, exact: the receiving sockets' drops when they
//!    count datagrams, and the datagrams of the sends the sender's host refused (`ENOBUFS`);
//! 2. the receiving and the sending host's drop counters (host-wide);
//! 3. the receiving sockets' drops when they count coalesced (GRO) batches: each batch holds
//!    at least one datagram and at most [`per_batch_most`], so the part is a range, and takes
//!    what the counters before it left up to the most the batches can hold (elimination: no
//!    other counter saw those datagrams);
//! 4. the network: the rest.
//!
//! A part that is a range says so in `bounds`, as does the network's when a part before it is.

use measure::drops::HostDrops;
use record::{FlowSummary, LossBounds, LossCauses, LossRange};
use wire::msg::{SendDrops, StreamCounts};
use wire::spec::Flow;
use wire::TestKind;

use crate::RawRun;

/// A direction's receiving sockets' own drop count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketDrops {
    /// Summed over the streams.
    pub count: u64,
    /// Whether any receiver got coalesced (GRO) messages: the count is then of batches.
    pub batched: bool,
}

/// What a direction's loss is split by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LossInputs {
    /// Datagrams lost (sent − unique received).
    pub lost: u64,
    /// The receiving sockets' drops; `None` if any stream's receiver did not give them.
    pub socket: Option<SocketDrops>,
    /// Sends the sending host refused, counted by the senders; `None` if any did not count.
    pub refused: Option<SendDrops>,
    /// Hook for the sending interface's qdisc drop counter over the test (tbf counts a
    /// message it dropped whole once, and each segment of one it accepted in part once): what
    /// it counted beyond the refused sends is segments, one datagram each. `None`: not read.
    pub sender_qdisc_drops: Option<u64>,
    /// The most datagrams one coalesced batch can hold ([`per_batch_most`]).
    pub per_batch: u64,
    /// The sending host's counters over the test.
    pub sender: Option<HostDrops>,
    /// The receiving host's counters over the test.
    pub receiver: Option<HostDrops>,
}

/// The most datagrams of `payload` bytes one coalesced batch can hold: a GSO message holds at
/// most 64 KiB of payload and 128 segments (`UDP_MAX_SEGMENTS`), a GRO batch at most 64
/// (`UDP_GRO_CNT_MAX`, larger ones only with a raised `gro_max_size`).
pub fn per_batch_most(payload: u32) -> u64 {
    (65_507 / u64::from(payload.max(1))).clamp(64, 128)
}

/// The receiving streams' counts of `flow`'s stream `i` and its sending one's.
fn ends(raw: &RawRun, flow: Flow, i: usize) -> (Option<StreamCounts>, Option<StreamCounts>) {
    let server = raw.server.streams.get(i).map(|s| s.total);
    let local = raw.local_streams.get(i).map(|l| match &l.result {
        Some(Ok(r)) => r.counts,
        _ => l.now,
    });
    match flow {
        Flow::ClientToServer => (server, local),
        Flow::ServerToClient => (local, server),
    }
}

/// The receivers' socket drops and the senders' refused sends of `flow`, summed over its
/// streams; each `None` if any stream did not give its figure.
fn own_counts(raw: &RawRun, flow: Flow) -> (Option<SocketDrops>, Option<SendDrops>) {
    let mut socket = Some(SocketDrops {
        count: 0,
        batched: false,
    });
    let mut refused = Some(SendDrops::default());
    for (i, _) in raw
        .spec
        .flows()
        .iter()
        .enumerate()
        .filter(|(_, (_, f))| *f == flow)
    {
        let (rx, tx) = ends(raw, flow, i);
        let rx = rx.and_then(|c| c.rx);
        socket = match (
            socket,
            rx.and_then(|r| Some((r.socket_drops?, r.socket_drops_batched))),
        ) {
            (Some(acc), Some((count, batched))) => Some(SocketDrops {
                count: acc.count + count,
                batched: acc.batched || batched,
            }),
            _ => None,
        };
        refused = match (refused, tx.and_then(|c| c.send_drops)) {
            (Some(acc), Some(d)) => Some(SendDrops {
                datagrams: acc.datagrams + d.datagrams,
                sends: acc.sends + d.sends,
            }),
            _ => None,
        };
    }
    (socket, refused)
}

fn sum(parts: [Option<u64>; 2]) -> Option<u64> {
    parts.iter().flatten().copied().reduce(|a, b| a + b)
}

/// Sets `loss_causes` on every flow of a UDP stream test.
pub(crate) fn add_loss_causes(raw: &RawRun, flows: &mut [FlowSummary]) {
    if raw.spec.kind() != TestKind::UdpStream {
        return;
    }
    let payload = raw.spec.params.udp().map_or(1, |u| u.payload_len_bytes);
    for f in flows {
        let Some(lost) = f.udp.as_ref().map(|u| u.packets_lost) else {
            continue;
        };
        let (sender, receiver) = match f.flow {
            Flow::ClientToServer => (raw.local_drops, raw.server.drops),
            Flow::ServerToClient => (raw.server.drops, raw.local_drops),
        };
        let (socket, refused) = own_counts(raw, f.flow);
        f.loss_causes = Some(attribute(&LossInputs {
            lost,
            socket,
            refused,
            sender_qdisc_drops: None,
            per_batch: per_batch_most(payload),
            sender,
            receiver,
        }));
    }
}

/// Takes parts out of what is left to explain, noting a counter that saw more.
struct Split {
    left: u64,
    notes: Vec<String>,
}

impl Split {
    fn take(&mut self, name: &str, counted: Option<u64>, why: &str) -> Option<u64> {
        let c = counted?;
        if c > self.left {
            self.notes.push(format!(
                "{name} counters saw {c}, more than the {} left to explain: {why}",
                self.left
            ));
        }
        let part = c.min(self.left);
        self.left -= part;
        Some(part)
    }
}

/// Splits the loss (module doc): exact counts, host-wide counters, batches by elimination,
/// the network's rest.
pub fn attribute(i: &LossInputs) -> LossCauses {
    let mut s = Split {
        left: i.lost,
        notes: vec!["receiver_host is a host-wide counter over the test's time".to_string()],
    };
    let others = "other traffic counts there";
    let batches = i
        .socket
        .filter(|d| d.batched && d.count > 0)
        .map(|d| d.count);
    let socket_count = match i.socket {
        Some(_) if batches.is_some() => None,
        Some(d) => Some(d.count),
        None => i.receiver.and_then(|r| r.udp_rcvbuf_errors).inspect(|_| {
            s.notes.push("receiver_socket_buffer is the receiving host's Udp RcvbufErrors (this kernel gives no per-socket count)".into());
        }),
    };
    let fins = "the end-of-test (FIN) datagrams it dropped count there too";
    let socket_exact = s.take("receiver_socket_buffer", socket_count, fins);
    let sender_own = sender_own(i, &mut s);
    let receiver_host = i
        .receiver
        .and_then(|r| sum([r.nic_rx_dropped, r.backlog_drops]));
    let receiver_host = s.take("receiver_host", receiver_host, others);
    // Udp SndbufErrors also counts each send that failed with ENOBUFS: the sender's own.
    let own_sends = i.refused.map_or(0, |r| r.sends);
    let sndbuf = i
        .sender
        .and_then(|d| d.udp_sndbuf_errors)
        .map(|n| n.saturating_sub(own_sends));
    let sender_wide = i.sender.and_then(|d| sum([sndbuf, d.nic_tx_dropped]));
    if sender_wide.is_some_and(|w| w > 0) {
        s.notes.push(
            "sender_host counts the sending host's Udp SndbufErrors and interface drops, host-wide"
                .into(),
        );
    }
    let sender_wide = s.take("sender_host", sender_wide, others);
    let sender_host = match (sender_own, sender_wide) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    let mut bounds = LossBounds::default();
    let receiver_socket_buffer = match batches {
        Some(b) => {
            let range = batched(i, b, &mut s);
            bounds.receiver_socket_buffer = Some(range);
            let unsure = range.at_most - range.at_least;
            bounds.network = Some(LossRange {
                at_least: s.left,
                at_most: s.left + unsure,
            });
            Some(range.at_most)
        }
        None => socket_exact,
    };
    LossCauses {
        receiver_socket_buffer,
        receiver_host,
        sender_host,
        network: Some(s.left),
        bounds,
        note: s.notes.join("; "),
    }
}

/// The sender's own count: the datagrams of the refused sends, and, through the qdisc hook,
/// the segments its qdisc dropped of messages it accepted in part.
fn sender_own(i: &LossInputs, s: &mut Split) -> Option<u64> {
    let refused = i.refused?;
    let own = s.take(
        "sender_host",
        Some(refused.datagrams),
        "the sender's refused sends",
    )?;
    let segments = i
        .sender_qdisc_drops
        .map(|q| q.saturating_sub(refused.sends))
        .filter(|&n| n > 0);
    let segments = s.take("sender_host", segments, "other traffic counts in the qdisc");
    Some(own + segments.unwrap_or(0))
}

/// The receiving sockets' `batches` dropped coalesced batches: at least one datagram each, at
/// most `per_batch`; the part takes what is left up to that most (elimination).
fn batched(i: &LossInputs, batches: u64, s: &mut Split) -> LossRange {
    s.notes.push(format!(
        "the receiving sockets dropped {batches} coalesced (GRO) batches, which the kernel counts once each: receiver_socket_buffer is what the other counters left, up to {} datagrams a batch (bounds gives the range; --no-gro counts datagrams)",
        i.per_batch
    ));
    let at_least = batches.min(s.left);
    let at_most = batches.saturating_mul(i.per_batch).min(s.left);
    s.left -= at_most;
    LossRange { at_least, at_most }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(backlog: u64, sndbuf: u64) -> HostDrops {
        HostDrops {
            udp_rcvbuf_errors: Some(7),
            udp_sndbuf_errors: Some(sndbuf),
            nic_rx_dropped: Some(0),
            nic_tx_dropped: Some(0),
            backlog_drops: Some(backlog),
            ..HostDrops::default()
        }
    }

    fn sockets(count: u64, batched: bool) -> Option<SocketDrops> {
        Some(SocketDrops { count, batched })
    }

    fn refused(datagrams: u64, sends: u64) -> Option<SendDrops> {
        Some(SendDrops { datagrams, sends })
    }

    fn inputs(lost: u64, socket: Option<SocketDrops>) -> LossInputs {
        LossInputs {
            lost,
            socket,
            per_batch: 64,
            sender: Some(host(0, 0)),
            receiver: Some(host(0, 0)),
            ..LossInputs::default()
        }
    }

    fn parts(c: &LossCauses) -> [Option<u64>; 4] {
        [
            c.receiver_socket_buffer,
            c.receiver_host,
            c.sender_host,
            c.network,
        ]
    }

    #[test]
    fn the_parts_add_up_to_the_loss() {
        let i = LossInputs {
            sender: Some(host(0, 50)),
            receiver: Some(host(100, 0)),
            ..inputs(1000, sockets(600, false))
        };
        let c = attribute(&i);
        assert_eq!(parts(&c), [Some(600), Some(100), Some(50), Some(250)]);
        assert!(c.bounds.is_empty());
        assert!(!c.note.contains("more than"), "{}", c.note);
    }

    #[test]
    fn host_wide_counters_never_take_more_than_is_left() {
        let i = LossInputs {
            receiver: Some(host(500, 0)),
            ..inputs(100, sockets(90, false))
        };
        let c = attribute(&i);
        assert_eq!(parts(&c), [Some(90), Some(10), Some(0), Some(0)]);
        assert!(
            c.note
                .contains("receiver_host counters saw 500, more than the 10 left"),
            "{}",
            c.note
        );
    }

    #[test]
    fn without_a_socket_count_the_host_wide_one_stands_in_and_unknown_stays_unknown() {
        let i = LossInputs {
            sender: None,
            ..inputs(10, None)
        };
        let c = attribute(&i);
        assert_eq!(c.receiver_socket_buffer, Some(7));
        assert!(c.note.contains("Udp RcvbufErrors"), "{}", c.note);
        assert_eq!((c.sender_host, c.network), (None, Some(3)));
        let c = attribute(&LossInputs {
            receiver: None,
            ..i
        });
        assert_eq!((c.receiver_socket_buffer, c.receiver_host), (None, None));
        assert_eq!(c.network, Some(10));
    }

    /// The case (a): a small receive buffer under GRO, no other counter moving: all
    /// of it at the socket, a range from one datagram a batch up.
    #[test]
    fn batches_with_nothing_else_counted_are_all_the_sockets_as_a_range() {
        let c = attribute(&inputs(108_268 * 20, sockets(108_268, true)));
        assert_eq!(parts(&c), [Some(108_268 * 20), Some(0), Some(0), Some(0)]);
        let range = c.bounds.receiver_socket_buffer.unwrap();
        assert_eq!((range.at_least, range.at_most), (108_268, 108_268 * 20));
        let network = c.bounds.network.unwrap();
        assert_eq!((network.at_least, network.at_most), (0, 108_268 * 19));
        assert!(
            c.note.contains("108268 coalesced (GRO) batches"),
            "{}",
            c.note
        );
        // More lost than the batches can hold: the rest is the network's, at least.
        let c = attribute(&inputs(1000, sockets(10, true)));
        assert_eq!(parts(&c), [Some(640), Some(0), Some(0), Some(360)]);
        assert_eq!(c.bounds.network.unwrap().at_least, 360);
        // A batched receiver that dropped nothing: every part a count.
        let c = attribute(&inputs(5, sockets(0, true)));
        assert_eq!(parts(&c), [Some(0), Some(0), Some(0), Some(5)]);
        assert!(c.bounds.is_empty());
    }

    /// The case (b): a qdisc dropping whole GSO messages, 35,920 of them holding
    /// 107,739 datagrams: the sender counted them, and the network keeps nothing.
    #[test]
    fn refused_sends_are_the_senders_exactly_before_host_wide_counters() {
        let i = LossInputs {
            refused: refused(107_739, 35_920),
            sender: Some(host(0, 35_920)),
            ..inputs(107_739, sockets(0, true))
        };
        let c = attribute(&i);
        assert_eq!(parts(&c), [Some(0), Some(0), Some(107_739), Some(0)]);
        assert!(c.bounds.is_empty());
        // SndbufErrors counted the refused sends too: not twice.
        assert!(!c.note.contains("SndbufErrors"), "{}", c.note);
        let other = LossInputs {
            sender: Some(host(0, 35_920 + 3)),
            lost: 107_742,
            ..i
        };
        assert_eq!(attribute(&other).sender_host, Some(107_742));
    }

    #[test]
    fn the_qdisc_hook_adds_the_segments_of_messages_accepted_in_part() {
        let i = LossInputs {
            refused: refused(300, 10),
            sender_qdisc_drops: Some(10 + 45),
            ..inputs(400, sockets(0, false))
        };
        let c = attribute(&i);
        assert_eq!(parts(&c), [Some(0), Some(0), Some(345), Some(55)]);
    }

    #[test]
    fn per_batch_most_follows_the_payload() {
        assert_eq!(per_batch_most(1200), 64);
        assert_eq!(per_batch_most(100), 128);
        assert_eq!(per_batch_most(0), 128);
    }
}
