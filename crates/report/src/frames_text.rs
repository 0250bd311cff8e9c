//! A frame engine's run in text (`udp --engine packet|xdp`, `summary.frames`), in the full
//! summary (`-v`): how the frames left the client and reached the server, the counts at the
//! two drivers and the sockets (counts only: the loss's one breakdown is the `lost at` line,
//! `loss_text`), and how they spread over receive queues and flows at the server's driver.

use record::{FrameSummary, Summary};
use wire::spec::{FramePath, FrameRxPath};

/// The lines for `s`'s frames; none for a socket engine's run.
pub fn frame_lines(s: &Summary) -> Vec<String> {
    let Some(f) = s.frames() else {
        return Vec::new();
    };
    let received = s.udp().map_or(0, |u| u.packets_received);
    let mut lines = vec![
        format!(
            "frames     {} engine: sent through {}, received {} on {}",
            f.engine.name(),
            sent_by(f),
            received_through(f),
            f.interface
        ),
        counts_line(f, received),
    ];
    if let Some(q) = f.frames_per_queue.as_ref().filter(|q| q.len() > 1) {
        let each: Vec<String> = q.iter().map(u64::to_string).collect();
        lines.push(format!(
            "  queues     {} frames at the driver by receive queue, queue 0 up",
            each.join(", ")
        ));
    }
    if let Some(spread) = f.flows_at_driver {
        let counted = match spread.counted < spread.flows {
            true => format!(" (of {} counted one by one)", spread.counted),
            false => String::new(),
        };
        lines.push(format!(
            "  flows      {} of {} arrived{counted}, {} to {} frames each",
            spread.seen, spread.flows, spread.min_frames, spread.max_frames
        ));
    }
    lines
}

/// `  counted    1000 sent by the client's driver, 990 at the server's driver (990 frames/s
/// there), 987 received; the loss by stage: "lost at"`, with the frames the sending driver
/// refused when any.
fn counts_line(f: &FrameSummary, received: u64) -> String {
    let refused = match f.frames_refused {
        0 => String::new(),
        n => format!(" ({n} more refused by it, each sent again)"),
    };
    format!(
        "  counted    {} sent by the client's driver{refused}, {} at the server's driver ({:.0} frames/s there), {received} received; the loss by stage: \"lost at\"",
        f.frames_sent, f.frames_at_driver, f.pps_at_driver
    )
}

/// The sender, and why it is not the engine's own where the kernel refused that.
fn sent_by(f: &FrameSummary) -> String {
    match &f.tx_fallback {
        Some(why) => format!("{} (not XDP live frames: {why})", sent_through(f.tx_path)),
        None => sent_through(f.tx_path).into(),
    }
}

fn sent_through(path: Option<FramePath>) -> &'static str {
    match path {
        Some(FramePath::PacketRing) => "an AF_PACKET TX ring",
        Some(FramePath::XdpCopy) => "an AF_XDP socket (copy mode)",
        Some(FramePath::XdpZeroCopy) => "an AF_XDP socket (zero-copy)",
        Some(FramePath::XdpLive) => "XDP live frames",
        None => "the engine's sender",
    }
}

fn received_through(f: &FrameSummary) -> String {
    let queues = f.rx_queues.unwrap_or(0);
    let sockets = |mode: &str| match queues {
        1 => format!("on 1 AF_XDP socket ({mode})"),
        n => format!("on {n} AF_XDP sockets ({mode}), one per receive queue"),
    };
    match f.rx_path {
        Some(FrameRxPath::XdpCopy) => sockets("copy mode"),
        Some(FrameRxPath::XdpZeroCopy) => sockets("zero-copy"),
        Some(FrameRxPath::Sockets) | None => match &f.rx_fallback {
            Some(why) => format!("up the stack to the test's sockets (not AF_XDP: {why})"),
            None => "up the stack to the test's sockets".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::msg::FlowSpread;
    use wire::spec::UdpEngine;

    fn frames() -> FrameSummary {
        FrameSummary {
            engine: UdpEngine::Xdp,
            tx_path: Some(FramePath::XdpLive),
            tx_fallback: None,
            rx_path: Some(FrameRxPath::XdpCopy),
            rx_fallback: None,
            rx_queues: Some(2),
            rx_socket_dropped: Some(3),
            interface: "vb".into(),
            frames_sent: 1000,
            frames_refused: 0,
            frames_at_driver: 990,
            bytes_at_driver: 59_400,
            frames_per_queue: Some(vec![500, 490]),
            flows_at_driver: Some(FlowSpread::of(100, &[10; 99])),
            pps_at_driver: 990.0,
        }
    }

    #[test]
    fn each_figure_of_a_frame_run_is_in_words_with_where_it_was_counted() {
        let lines = lines_of(frames());
        assert_eq!(
            lines,
            [
                "frames     xdp engine: sent through XDP live frames, received on 2 AF_XDP sockets (copy mode), one per receive queue on vb",
                "  counted    1000 sent by the client's driver, 990 at the server's driver (990 frames/s there), 987 received; the loss by stage: \"lost at\"",
                "  queues     500, 490 frames at the driver by receive queue, queue 0 up",
                "  flows      99 of 100 arrived (of 99 counted one by one), 10 to 10 frames each",
            ]
        );
    }

    #[test]
    fn a_sender_and_a_receiver_that_fell_back_say_why() {
        let f = FrameSummary {
            rx_path: Some(FrameRxPath::Sockets),
            rx_fallback: Some("vb has 16 receive queues".into()),
            rx_queues: None,
            rx_socket_dropped: None,
            frames_per_queue: None,
            flows_at_driver: None,
            frames_refused: 2,
            tx_path: Some(FramePath::XdpCopy),
            tx_fallback: Some("bpf(BPF_PROG_RUN, live frames): Operation not permitted".into()),
            ..frames()
        };
        let lines = lines_of(f);
        assert!(lines[0].contains(
            "sent through an AF_XDP socket (copy mode) (not XDP live frames: bpf(BPF_PROG_RUN, live frames): Operation not permitted), "
        ));
        assert!(lines[0].ends_with(
            "received up the stack to the test's sockets (not AF_XDP: vb has 16 receive queues) on vb"
        ));
        assert!(lines[1].contains(" (2 more refused by it, each sent again), "));
        assert_eq!(lines.len(), 2);
    }

    /// The lines of a datagram summary with `f` and 987 datagrams received.
    fn lines_of(f: FrameSummary) -> Vec<String> {
        let mut run = analysis::testing::udp_trial(1000.0, 987.0, 1.0, 18);
        let record::Family::Datagram(d) = &mut run.summary.family else {
            panic!("a udp trial is of the datagram family");
        };
        d.udp.packets_received = 987;
        d.frames = Some(f);
        frame_lines(&run.summary)
    }
}
