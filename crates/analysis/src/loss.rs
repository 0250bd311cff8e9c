//! Where a UDP direction's lost datagrams went: the receiving sockets' own drop counter
//! (exact, this test only), then the receiving and the sending host's drop counters
//! (host-wide), and the rest to the network between them.

use measure::drops::HostDrops;
use results::{FlowSummary, LossCauses};
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

/// The receivers' socket drops of `flow`, summed over its streams; `None` if any stream's
/// receiver did not give the figure.
fn socket_drops(raw: &RawRun, flow: Flow) -> Option<SocketDrops> {
    raw.spec
        .flows()
        .iter()
        .enumerate()
        .filter(|(_, (_, f))| *f == flow)
        .map(|(i, _)| {
            let rx = match flow {
                Flow::ClientToServer => raw.server.streams.get(i)?.total.rx,
                Flow::ServerToClient => {
                    let local = raw.local_streams.get(i)?;
                    match &local.result {
                        Some(Ok(r)) => r.counts.rx,
                        _ => local.now.rx,
                    }
                }
            };
            let rx = rx?;
            Some(SocketDrops {
                count: rx.socket_drops?,
                batched: rx.socket_drops_batched,
            })
        })
        .try_fold(
            SocketDrops {
                count: 0,
                batched: false,
            },
            |acc, s| {
                let s = s?;
                Some(SocketDrops {
                    count: acc.count + s.count,
                    batched: acc.batched || s.batched,
                })
            },
        )
}

fn sum(parts: [Option<u64>; 2]) -> Option<u64> {
    parts.iter().flatten().copied().reduce(|a, b| a + b)
}

/// Sets `loss_causes` on every flow of a UDP stream test.
pub(crate) fn add_loss_causes(raw: &RawRun, flows: &mut [FlowSummary]) {
    if raw.spec.kind() != TestKind::UdpStream {
        return;
    }
    for f in flows {
        let Some(lost) = f.udp.as_ref().map(|u| u.packets_lost) else {
            continue;
        };
        let (sender, receiver) = match f.flow {
            Flow::ClientToServer => (raw.local_drops, raw.server.drops),
            Flow::ServerToClient => (raw.server.drops, raw.local_drops),
        };
        f.loss_causes = Some(attribute(lost, socket_drops(raw, f.flow), sender, receiver));
    }
}

/// Splits `lost` datagrams: the exact socket figure first, then each host's counters, each at
/// most what is left; the network gets the rest.
pub fn attribute(
    lost: u64,
    socket: Option<SocketDrops>,
    sender: Option<HostDrops>,
    receiver: Option<HostDrops>,
) -> LossCauses {
    let mut notes = vec![
        "receiver_host and sender_host are host-wide counters over the test's time".to_string(),
    ];
    if let Some(s) = socket.filter(|s| s.batched && s.count > 0) {
        notes.push(format!(
            "the receiving sockets dropped {} coalesced (GRO) batches of datagrams, which the kernel counts once each, so the loss cannot be split exactly: run with --no-gro for exact counts",
            s.count
        ));
        return LossCauses {
            receiver_socket_buffer: None,
            receiver_host: None,
            sender_host: None,
            network: None,
            note: notes.join("; "),
        };
    }
    let socket = socket.map(|s| s.count).or_else(|| {
        let wide = receiver.and_then(|r| r.udp_rcvbuf_errors)?;
        notes.push("receiver_socket_buffer is the receiving host's Udp RcvbufErrors (this kernel gives no per-socket count)".into());
        Some(wide)
    });
    let receiver_host = receiver.and_then(|r| sum([r.nic_rx_dropped, r.backlog_drops]));
    let sender_host = sender.and_then(|s| sum([s.udp_sndbuf_errors, s.nic_tx_dropped]));
    let mut left = lost;
    let mut take = |name: &str, counted: Option<u64>, why: &str| {
        let c = counted?;
        if c > left {
            notes.push(format!(
                "{name} counters saw {c}, more than the {left} left to explain: {why}"
            ));
        }
        let part = c.min(left);
        left -= part;
        Some(part)
    };
    let others = "other traffic counts there";
    let receiver_socket_buffer = take(
        "receiver_socket_buffer",
        socket,
        "the end-of-test (FIN) datagrams it dropped count there too",
    );
    let receiver_host = take("receiver_host", receiver_host, others);
    let sender_host = take("sender_host", sender_host, others);
    LossCauses {
        receiver_socket_buffer,
        receiver_host,
        sender_host,
        network: Some(left),
        note: notes.join("; "),
    }
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

    fn exact(count: u64) -> Option<SocketDrops> {
        Some(SocketDrops {
            count,
            batched: false,
        })
    }

    #[test]
    fn the_parts_add_up_to_the_loss() {
        let c = attribute(1000, exact(600), Some(host(0, 50)), Some(host(100, 0)));
        assert_eq!(c.receiver_socket_buffer, Some(600));
        assert_eq!(c.receiver_host, Some(100));
        assert_eq!(c.sender_host, Some(50));
        assert_eq!(c.network, Some(250));
        assert!(!c.note.contains("more than"), "{}", c.note);
    }

    #[test]
    fn host_wide_counters_never_take_more_than_is_left() {
        let c = attribute(100, exact(90), Some(host(0, 0)), Some(host(500, 0)));
        assert_eq!(
            (c.receiver_socket_buffer, c.receiver_host),
            (Some(90), Some(10))
        );
        assert_eq!((c.sender_host, c.network), (Some(0), Some(0)));
        assert!(
            c.note
                .contains("receiver_host counters saw 500, more than the 10 left"),
            "{}",
            c.note
        );
    }

    #[test]
    fn without_a_socket_count_the_host_wide_one_stands_in_and_unknown_stays_unknown() {
        let c = attribute(10, None, None, Some(host(0, 0)));
        assert_eq!(c.receiver_socket_buffer, Some(7));
        assert!(c.note.contains("Udp RcvbufErrors"), "{}", c.note);
        assert_eq!(c.sender_host, None);
        assert_eq!(c.network, Some(3));
        let c = attribute(10, None, None, None);
        assert_eq!((c.receiver_socket_buffer, c.receiver_host), (None, None));
        assert_eq!(c.network, Some(10));
    }

    #[test]
    fn batches_counted_once_give_no_split() {
        let batched = Some(SocketDrops {
            count: 32_004,
            batched: true,
        });
        let c = attribute(1_217_496, batched, Some(host(0, 0)), Some(host(0, 0)));
        assert_eq!((c.receiver_socket_buffer, c.network), (None, None));
        assert!(
            c.note.contains("32004 coalesced (GRO) batches"),
            "{}",
            c.note
        );
        // A batched receiver that dropped nothing: the rest is exact.
        let none = Some(SocketDrops {
            count: 0,
            batched: true,
        });
        assert_eq!(attribute(5, none, None, None).network, Some(5));
    }
}
