//! Where a UDP direction's lost datagrams went: the one loss breakdown of a direction
//! (`record::LossCauses`, docs/RESULTS.md "Datagram accounting"), for every engine. The
//! sequence numbers give the exact number lost; `split` takes the stages out of it, each at
//! most what is left, so they always add up to it. This module gathers the inputs from a run.

use measure::drops::HostDrops;
use record::FlowSummary;
use wire::msg::{SendDrops, StreamCounts};
use wire::spec::Flow;
use wire::spec::Loss;

use crate::RawRun;

/// A direction's receiving sockets' own drop count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketDrops {
    /// Summed over the streams.
    pub count: u64,
    /// Whether any receiver got coalesced (GRO) messages: the count is then of batches.
    pub batched: bool,
}

mod split;
#[cfg(test)]
mod tests;

pub use split::attribute;

/// What a direction's loss is split by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LossInputs {
    /// Datagrams lost (sent − unique received).
    pub lost: u64,
    /// Unique datagrams the receiving sockets took.
    pub received: u64,
    /// A frame engine's test frames at the receiving driver (its XDP counter): the stages
    /// before it and after it are then exact. `None`: the socket engine.
    pub at_driver: Option<u64>,
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

/// Sets `loss_causes` on every flow of a UDP stream test.
pub(crate) fn add_loss_causes(raw: &RawRun, flows: &mut [FlowSummary]) {
    if raw.spec.kind().row().loss != Loss::Datagrams {
        return;
    }
    let payload = raw.spec.params.udp().map_or(1, |u| u.payload_len_bytes);
    for f in flows {
        let Some(lost) = f.udp.as_ref().map(|u| u.packets_lost) else {
            continue;
        };
        let (sender, receiver) = match f.flow {
            Flow::ClientToServer => (raw.local_drops, raw.server.drops.as_deref().copied()),
            Flow::ServerToClient => (raw.server.drops.as_deref().copied(), raw.local_drops),
        };
        let received = f.udp.as_ref().map_or(0, |u| u.packets_received);
        let (mut socket, refused) = own_counts(raw, f.flow);
        // A frame engine's driver count is the server's: of the direction it receives.
        let driver = (raw.spec.udp().is_some_and(|u| u.engine.sends_frames())
            && f.flow == Flow::ClientToServer)
            .then_some(raw.server.driver.as_deref())
            .flatten();
        if let Some(d) = driver.filter(|d| d.rx_queues > 0) {
            // An AF_XDP receiver: its sockets' full rings are its socket drops.
            socket = Some(SocketDrops {
                count: d.rx_socket_dropped,
                batched: false,
            });
        }
        f.loss_causes = Some(attribute(&LossInputs {
            lost,
            received,
            at_driver: driver.map(|d| d.frames),
            socket,
            refused,
            sender_qdisc_drops: None,
            per_batch: per_batch_most(payload),
            sender,
            receiver,
        }));
    }
}
