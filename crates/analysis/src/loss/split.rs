//! The split of one direction's loss into its stages (`record::LossCauses`), each at most what
//! is left, so that they always add up to the loss.
//!
//! The socket engine, in order:
//! 1. the counts of this test's own sockets, exact: the receiving sockets' drops when they
//!    count datagrams, and the datagrams of the sends the sender's host refused (`ENOBUFS`);
//! 2. the receiving host's interface and backlog drops, its IP layer's drops
//!    (`IpInReceives − IpInDelivers − IpForwDatagrams`) when its packets were datagrams, and
//!    the sending host's drop counters (all host-wide);
//! 3. the parts counted in coalesced packets: the receiving sockets' drops of GRO batches, and
//!    the IP layer's drops when its packets held several datagrams each (GSO across a virtual
//!    link, GRO). Each packet holds at least one datagram and at most [`super::per_batch_most`],
//!    so the part is a range, and takes what the counters before it left up to the most the
//!    packets can hold (elimination: no other counter saw those datagrams);
//! 4. the network: the rest.
//!
//! A frame engine counts the test's frames at the receiving driver, which cuts the loss in two
//! exact halves: before the driver (the sender's refused frames, then the path: `network`) and
//! after it (the sockets', then the IP layer's, then the rest of the receiving host:
//! `receiver_host`).
//!
//! Whether the IP layer's packets were datagrams: the receiving host's `IpInReceives` over the
//! test is at least the datagrams its sockets took when each was a packet; far fewer when they
//! arrived coalesced. A part that is a range says so in `bounds`, as does the network's when a
//! part before it is.

use record::{LossBounds, LossCauses, LossRange};

use super::LossInputs;

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

    /// `packets` dropped coalesced packets of at least one and at most `per_batch` datagrams:
    /// the part takes what is left up to that most (elimination).
    fn packets(&mut self, packets: u64, per_batch: u64) -> LossRange {
        let at_least = packets.min(self.left);
        let at_most = packets.saturating_mul(per_batch).min(self.left);
        self.left -= at_most;
        LossRange { at_least, at_most }
    }
}

const OTHERS: &str = "other traffic counts there";
const FINS: &str = "the end-of-test (FIN) datagrams it dropped count there too";

/// The receiving sockets' part as a count, or their coalesced batches (a range, later).
enum Socket {
    Count(Option<u64>),
    Batches(u64),
}

fn socket(i: &LossInputs, s: &mut Split) -> Socket {
    match i.socket {
        Some(d) if d.batched && d.count > 0 => Socket::Batches(d.count),
        Some(d) => Socket::Count(Some(d.count)),
        None => Socket::Count(i.receiver.and_then(|r| r.udp_rcvbuf_errors).inspect(|_| {
            s.notes.push("receiver_socket_buffer is the receiving host's Udp RcvbufErrors (this kernel gives no per-socket count)".into());
        })),
    }
}

/// The receiving host's IP-layer drops, and whether its packets were datagrams (module doc).
fn ip_drops(i: &LossInputs) -> Option<(u64, bool)> {
    let r = i.receiver?;
    let dropped = r.ip_dropped()?;
    Some((dropped, r.ip_in_receives? >= i.received))
}

/// The parts taken as ranges: the sockets' batches, then the IP layer's coalesced packets;
/// the IP layer's part when its range is a single figure (then a count, not in `bounds`).
fn ranges(i: &LossInputs, s: &mut Split, sock: &Socket, bounds: &mut LossBounds) -> Option<u64> {
    if let Socket::Batches(b) = *sock {
        s.notes.push(format!(
            "the receiving sockets dropped {b} coalesced (GRO) batches, which the kernel counts once each: receiver_socket_buffer is what the other counters left, up to {} datagrams a batch (bounds gives the range; --no-gro counts datagrams)",
            i.per_batch
        ));
        bounds.receiver_socket_buffer = Some(s.packets(b, i.per_batch));
    }
    let (n, false) = ip_drops(i)? else {
        return None;
    };
    let range = s.packets(n, i.per_batch);
    if range.at_least == range.at_most {
        // Nothing to attribute (a few packets of other traffic, nothing left): a count.
        return Some(range.at_most);
    }
    s.notes.push(format!(
        "the receiving host's IP layer dropped {n} packets holding several datagrams each (GSO across a virtual link, or GRO): receiver_ip is what the other counters left, up to {} datagrams a packet (bounds gives the range)",
        i.per_batch
    ));
    bounds.receiver_ip = Some(range);
    None
}

/// An IP-layer part that is a count of datagrams, noted as host-wide.
fn ip_count(i: &LossInputs, s: &mut Split) -> Option<u64> {
    let (n, per_datagram) = ip_drops(i)?;
    if !per_datagram {
        return None;
    }
    if n > 0 {
        s.notes.push("receiver_ip is the receiving host's IpInReceives − IpInDelivers − IpForwDatagrams, host-wide (a firewall rule, a discard)".into());
    }
    s.take("receiver_ip", Some(n), OTHERS)
}

/// The part a range took, or the count, or unknown.
fn part(count: Option<u64>, range: Option<LossRange>) -> Option<u64> {
    range.map(|r| r.at_most).or(count)
}

/// Splits the loss (module doc).
pub fn attribute(i: &LossInputs) -> LossCauses {
    match i.at_driver {
        Some(d) => at_driver(i, d),
        None => socket_engine(i),
    }
}

/// The socket engine's split: exact counts, host-wide counters, coalesced packets by
/// elimination, the network's rest.
fn socket_engine(i: &LossInputs) -> LossCauses {
    let mut s = Split {
        left: i.lost,
        notes: vec!["receiver_host is a host-wide counter over the test's time".to_string()],
    };
    let sock = socket(i, &mut s);
    let socket_exact = match sock {
        Socket::Count(c) => s.take("receiver_socket_buffer", c, FINS),
        Socket::Batches(_) => None,
    };
    let sender_own = sender_own(i, &mut s);
    let receiver_host = i.receiver.and_then(|r| {
        let parts = [r.nic_rx_dropped, r.backlog_drops];
        parts.iter().flatten().copied().reduce(|a, b| a + b)
    });
    let receiver_host = s.take("receiver_host", receiver_host, OTHERS);
    let ip_exact = ip_count(i, &mut s);
    let sender_wide = sender_wide(i, &mut s);
    let sender_host = match (sender_own, sender_wide) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    let mut bounds = LossBounds::default();
    let ip_exact = ip_exact.or(ranges(i, &mut s, &sock, &mut bounds));
    if !bounds.is_empty() {
        let unsure = [bounds.receiver_socket_buffer, bounds.receiver_ip]
            .iter()
            .flatten()
            .map(|r| r.at_most - r.at_least)
            .sum::<u64>();
        bounds.network = Some(LossRange {
            at_least: s.left,
            at_most: s.left + unsure,
        });
    }
    LossCauses {
        receiver_socket_buffer: part(socket_exact, bounds.receiver_socket_buffer),
        receiver_ip: part(ip_exact, bounds.receiver_ip),
        receiver_host,
        sender_host,
        network: Some(s.left),
        at_driver: None,
        bounds,
        note: s.notes.join("; "),
    }
}

/// A frame engine's split at the receiving driver's count `at`: before it, the sender's
/// refused frames and the path (exact); after it, the sockets', the IP layer's and the rest of
/// the receiving host (the rest exact, the IP layer's host-wide).
fn at_driver(i: &LossInputs, at: u64) -> LossCauses {
    let in_receiver = at.saturating_sub(i.received).min(i.lost);
    let mut before = Split {
        left: i.lost - in_receiver,
        notes: Vec::new(),
    };
    let sender_host = before.take(
        "sender_host",
        i.refused.map(|r| r.datagrams),
        "the sender's refused frames",
    );
    let mut after = Split {
        left: in_receiver,
        notes: before.notes,
    };
    let sock = socket(i, &mut after);
    let socket_exact = match sock {
        Socket::Count(c) => after.take("receiver_socket_buffer", c, FINS),
        Socket::Batches(_) => None,
    };
    let ip_exact = ip_count(i, &mut after);
    let mut bounds = LossBounds::default();
    let ip_exact = ip_exact.or(ranges(i, &mut after, &sock, &mut bounds));
    after.notes.push(format!(
        "{at} frames reached the receiving driver: sender_host and network are before it, the receiver's parts after it, and receiver_host is the rest there"
    ));
    LossCauses {
        receiver_socket_buffer: part(socket_exact, bounds.receiver_socket_buffer),
        receiver_ip: part(ip_exact, bounds.receiver_ip),
        receiver_host: Some(after.left),
        sender_host,
        network: Some(before.left),
        at_driver: Some(at),
        bounds,
        note: after.notes.join("; "),
    }
}

/// The sending host's host-wide counters beyond its own refused sends.
fn sender_wide(i: &LossInputs, s: &mut Split) -> Option<u64> {
    // Udp SndbufErrors also counts each send that failed with ENOBUFS: the sender's own.
    let own_sends = i.refused.map_or(0, |r| r.sends);
    let d = i.sender?;
    let sndbuf = d.udp_sndbuf_errors.map(|n| n.saturating_sub(own_sends));
    let wide = [sndbuf, d.nic_tx_dropped]
        .iter()
        .flatten()
        .copied()
        .reduce(|a, b| a + b);
    if wide.is_some_and(|w| w > 0) {
        s.notes.push(
            "sender_host counts the sending host's Udp SndbufErrors and interface drops, host-wide"
                .into(),
        );
    }
    s.take("sender_host", wide, OTHERS)
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
