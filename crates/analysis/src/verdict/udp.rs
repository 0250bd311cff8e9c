//! The datagram rule: a UDP direction that lost much of what it sent is limited where the
//! datagrams went (`loss_causes`): the receiving sockets' buffers (a reader at full CPU, or a
//! buffer too small for the bursts) or the network between the hosts.

use record::{LimitedBy, Verdict};

use super::{limited, pct, rule, Facts};

/// Loss of at least `rule::UDP_LOSS_PCT`, most of it in one place the counters name.
pub(super) fn datagram_loss(f: &Facts) -> Option<LimitedBy> {
    let u = f.flow.udp.as_ref()?;
    let causes = f.flow.loss_causes.as_ref()?;
    if u.loss_pct < rule::UDP_LOSS_PCT || u.packets_lost == 0 {
        return None;
    }
    let lost = u.packets_lost as f64;
    let share = |n: Option<u64>| n.map_or(0.0, |n| n as f64 / lost);
    let lead = format!(
        "{:.2} % of datagrams lost ({} of {})",
        u.loss_pct, u.packets_lost, u.packets_sent
    );
    let socket = share(causes.receiver_socket_buffer);
    if socket >= rule::UDP_LOSS_SHARE {
        let evidence = format!(
            "{lead}, {} of them at the receiving sockets' full buffers (their own drop counter)",
            pct(socket * 100.0)
        );
        if f.receiver.thread_saturated() || f.receiver.core_saturated().is_some() {
            let evidence = format!(
                "{evidence}; the reader at {} of a core could not keep up",
                pct(f.receiver.thread_pct)
            );
            return Some(limited(
                Verdict::ReceiverCpu,
                evidence,
                &f.receiver_cpu_hint(),
            ));
        }
        return Some(limited(
            Verdict::ReceiveWindow,
            format!("{evidence}, with the reader at {} of a core", pct(f.receiver.thread_pct)),
            "the receiving sockets' buffer overflowed: a larger one (-w, net.core.rmem_max) absorbs the bursts; a lower rate (-b) shows what the receiver sustains",
        ));
    }
    let network = share(causes.network);
    (network >= rule::UDP_LOSS_SHARE).then(|| {
        limited(
            Verdict::Path,
            format!(
                "{lead}, {} of them between the hosts (no host counted them)",
                pct(network * 100.0)
            ),
            "the network dropped what it could not carry: find the bottleneck on the way (a link, a shaper, a switch's buffers), or send at a lower rate (-b)",
        )
    })
}
