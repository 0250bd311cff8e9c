//! The datagram rule: a UDP direction that lost much of what it sent is limited where the
//! datagrams went (`loss_causes`): the receiving sockets' buffers or the network between the
//! hosts (loss in the receiving host's IP layer, a firewall's, limits no rate: other rules).
//!
//! Socket-buffer loss is the receiver's CPU only when the reader's thread was saturated
//! (`rule::THREAD_PCT` of a core): a host's busiest core may be the sender's (namespaces on one
//! host share its cores) and says nothing of the reader. Otherwise the buffer was too small
//! for the bursts: `receive_window`, naming `-w` when the user set it (issue 47: `-w 16K` was
//! called a CPU limit with the reader at 44 % of a core).

use record::{LimitedBy, Verdict};

use measure::units::format_bytes;

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
        return Some(socket_buffer(f, &lead, socket));
    }
    // Loss the receiving host's IP layer counted (a firewall rule) names no limit of the
    // rate: the other rules decide, and the unknown verdict's evidence carries the split.
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

/// Most of the loss at the receiving sockets' full buffers: a reader at full CPU, or a buffer
/// too small (the one `-w` set, when it did).
fn socket_buffer(f: &Facts, lead: &str, socket: f64) -> LimitedBy {
    let evidence = format!(
        "{lead}, {} of them at the receiving sockets' full buffers (their own drop counter)",
        pct(socket * 100.0)
    );
    let reader = pct(f.receiver.thread_pct);
    if f.receiver.thread_saturated() {
        return limited(
            Verdict::ReceiverCpu,
            format!("{evidence}; the reader at {reader} of a core could not keep up"),
            &f.receiver_cpu_hint(),
        );
    }
    match f.window_bytes {
        Some(w) => limited(
            Verdict::ReceiveWindow,
            format!(
                "{evidence}, with the reader at {reader} of a core: the receive buffer -w {} set was too small for the bursts",
                format_bytes(u64::from(w))
            ),
            &format!(
                "the receiving sockets' buffer, set by -w {}, overflowed while the reader had CPU to spare: raise -w (without it linerate asks for 4 MiB; net.core.rmem_max caps it), or lower the rate (-b)",
                format_bytes(u64::from(w))
            ),
        ),
        None => limited(
            Verdict::ReceiveWindow,
            format!("{evidence}, with the reader at {reader} of a core"),
            "the receiving sockets' buffer overflowed while the reader had CPU to spare: a larger one (-w, net.core.rmem_max) absorbs the bursts; a lower rate (-b) shows what the receiver sustains",
        ),
    }
}
