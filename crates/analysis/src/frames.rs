//! A frame engine's run (`udp --engine packet|xdp`): the sender's driver counts, the server's
//! XDP counter and the receiver's sockets, into `summary.frames` (see
//! `record::frames::FrameSummary`: counts, not a breakdown).
//!
//! These counts are stages of the run's one loss, not a second received count: a frame run is
//! received, as every UDP run is, at the test's receiving sockets (`summary.udp`'s
//! `packets_received`; an `xdp` receiver's AF_XDP sockets are its sockets), and the frames at the
//! receiver's driver are where that loss splits: the flow's one breakdown, `loss_causes`, takes
//! them (`crate::loss`, docs/RESULTS.md "Datagram accounting").

use record::{FrameSummary, Summary};

use crate::RawRun;

/// `summary.frames` of `raw`, or `None` for a socket engine's run (or a server that sent no
/// driver counts).
pub fn frame_summary(raw: &RawRun, summary: &Summary) -> Option<FrameSummary> {
    let engine = raw.spec.udp()?.engine;
    let driver = raw.server.driver.as_ref()?;
    let (mut used, mut refused, mut tx_path, mut tx_fallback) = (0u64, 0u64, None, None);
    for s in &raw.local_streams {
        let counts = match &s.result {
            Some(Ok(report)) => {
                tx_path = tx_path.or(report.frame_path);
                tx_fallback = tx_fallback.or(report.frame_fallback.clone());
                &report.counts
            }
            _ => &s.now,
        };
        used += counts.packets;
        refused += counts.send_drops.map_or(0, |d| d.datagrams);
    }
    let frames_sent = used.saturating_sub(refused);
    let window = summary
        .flows
        .first()
        .map_or(summary.duration_s, |f| f.window_s);
    Some(FrameSummary {
        engine,
        tx_path,
        tx_fallback,
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
        pps_at_driver: if window > 0.0 {
            driver.frames as f64 / window
        } else {
            0.0
        },
    })
}
