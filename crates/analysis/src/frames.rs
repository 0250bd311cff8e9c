//! A frame engine's run (`udp --engine packet|xdp`): the sender's driver counts, the server's
//! XDP counter and the receiver's sockets, into `summary.frames` (see
//! `record::frames::FrameSummary`: the loss split on the path and in the receiving host); and
//! what a UDP run delivered where pkt-gen and RFC 2544 count ([`delivered`]), the one reading
//! rfc2544's trials and the pps matrix's cells share.

use record::{FrameSummary, Summary};

use crate::RawRun;

/// `summary.frames` of `raw`, or `None` for a socket engine's run (or a server that sent no
/// driver counts).
pub fn frame_summary(raw: &RawRun, summary: &Summary) -> Option<FrameSummary> {
    let engine = raw.spec.udp()?.engine;
    let driver = raw.server.driver.as_ref()?;
    let (mut used, mut refused, mut tx_path) = (0u64, 0u64, None);
    for s in &raw.local_streams {
        let counts = match &s.result {
            Some(Ok(report)) => {
                tx_path = tx_path.or(report.frame_path);
                &report.counts
            }
            _ => &s.now,
        };
        used += counts.packets;
        refused += counts.send_drops.map_or(0, |d| d.datagrams);
    }
    let frames_sent = used.saturating_sub(refused);
    let received = summary.udp().map_or(0, |u| u.packets_received);
    let window = summary
        .flows
        .first()
        .map_or(summary.duration_s, |f| f.window_s);
    Some(FrameSummary {
        engine,
        tx_path,
        rx_path: driver.rx_path,
        rx_fallback: driver.rx_fallback.clone(),
        rx_queues: (driver.rx_queues > 0).then_some(driver.rx_queues),
        rx_socket_dropped: (driver.rx_queues > 0).then_some(driver.rx_socket_dropped),
        interface: driver.interface.clone(),
        frames_sent,
        frames_refused: refused,
        frames_at_driver: driver.frames,
        bytes_at_driver: driver.bytes,
        frames_per_queue: (!driver.queue_frames.is_empty()).then(|| driver.queue_frames.clone()),
        flows_at_driver: driver.flows,
        lost_on_path: frames_sent.saturating_sub(driver.frames),
        lost_in_receiver: driver.frames.saturating_sub(received),
        pps_at_driver: if window > 0.0 {
            driver.frames as f64 / window
        } else {
            0.0
        },
    })
}

/// A UDP run as the path delivered it, where pkt-gen's receiver and RFC 2544 count.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Delivered {
    /// Frames or datagrams sent.
    pub sent: u64,
    /// Those that did not arrive.
    pub lost: u64,
    /// Send rate the sender achieved, per second.
    pub sent_pps: f64,
    /// Rate that arrived, per second.
    pub received_pps: f64,
    /// `lost` % of `sent` (a socket run: its `loss_pct`).
    pub loss_pct: f64,
}

/// What `summary`'s run delivered. A frame engine's run counts at the receiver's driver: sent
/// is what the sending driver accepted (frames it refused were sent again, never offered to
/// the path), lost is what never reached the server's driver; what the receiving host's stack
/// lost above its driver is the tester's own and stays in `summary.frames.lost_in_receiver`.
/// A socket run counts its datagrams at the sockets.
pub fn delivered(summary: &Summary) -> Delivered {
    let u = summary.udp().copied().unwrap_or_default();
    match summary.frames() {
        Some(f) => Delivered {
            sent: f.frames_sent,
            lost: f.lost_on_path,
            sent_pps: u.pps_sent,
            received_pps: f.pps_at_driver,
            loss_pct: match f.frames_sent {
                0 => 0.0,
                n => f.lost_on_path as f64 * 100.0 / n as f64,
            },
        },
        None => Delivered {
            sent: u.packets_sent,
            lost: u.packets_lost,
            sent_pps: u.pps_sent,
            received_pps: u.pps_received,
            loss_pct: u.loss_pct,
        },
    }
}
