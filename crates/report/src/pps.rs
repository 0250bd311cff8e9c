//! [`PpsMatrix`]: the document `linerate pps --json` writes, read back for charts and reports,
//! or gathered from the stored cells of `linerate pps` runs.

use std::collections::BTreeMap;

use record::{PpsCell, RunRecord, StoredRun};
use serde::{Deserialize, Serialize};
use wire::TestKind;

/// What the document is (`"kind": "udp_pps_matrix"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatrixKind {
    /// `linerate pps`'s matrix.
    #[default]
    UdpPpsMatrix,
}

/// A packet-rate matrix: one cell per (frame size, flow count).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PpsMatrix {
    /// What the document is.
    #[serde(default)]
    pub kind: MatrixKind,
    /// Where the matrix was measured.
    #[serde(default)]
    pub target: String,
    /// Link speed the line rate is computed for, bits/s (`--link-speed`).
    #[serde(default)]
    pub link_speed_bps: Option<u64>,
    /// The cells, in the order they ran.
    pub cells: Vec<PpsCell>,
}

impl PpsMatrix {
    /// `(frame_bytes, flows)` of a `linerate pps` cell: a UDP run tagged with both.
    pub fn cell_key(run: &StoredRun) -> Option<(u32, u32)> {
        if run.record.kind != TestKind::UdpStream {
            return None;
        }
        let frame = run.tags.get("frame_bytes")?.parse().ok()?;
        let flows = run.tags.get("flows")?.parse().ok()?;
        Some((frame, flows))
    }

    /// The packet-rate matrix of the `linerate pps` cells among `runs`: for each (frame size,
    /// flow count), the latest cell; the line rate from the latest cell's link speed. `None`
    /// without cells.
    pub fn of_cells<'a>(runs: impl IntoIterator<Item = &'a StoredRun>) -> Option<PpsMatrix> {
        let mut latest: BTreeMap<(u32, u32), &StoredRun> = BTreeMap::new();
        let order = |r: &StoredRun| (r.record.started_at_unix_ms, r.id);
        for run in runs {
            if let Some(key) = Self::cell_key(run) {
                let slot = latest.entry(key).or_insert(run);
                if order(run) > order(slot) {
                    *slot = run;
                }
            }
        }
        let newest = latest.values().copied().max_by_key(|r| order(r))?;
        let link = newest.record.spec.link_speed_bps;
        let cells = latest
            .into_iter()
            .map(|((frame, flows), run)| {
                let payload = run.record.spec.message_len_bytes();
                cell(frame, payload, flows, link, run.record.clone())
            })
            .collect();
        Some(PpsMatrix {
            kind: MatrixKind::UdpPpsMatrix,
            target: newest.record.target.clone(),
            link_speed_bps: link,
            cells,
        })
    }
}

/// The cell of `frame` bytes and `flows` flows that `run` measured, set against the line rate of
/// `link_bps` where known.
pub fn cell(
    frame: u32,
    payload: u32,
    flows: u32,
    link_bps: Option<u64>,
    run: RunRecord,
) -> PpsCell {
    let line = link_bps.map(|l| measure::line_rate::pps(l as f64, frame));
    // The run's one received count and loss (docs/RESULTS.md, "Datagram accounting"), as
    // `runs`, `show` and `--json` give them: a frame engine's frames at the receiver's driver
    // are a stage of that loss (`summary.frames`), not a second received count.
    let u = run.summary.udp().copied().unwrap_or_default();
    PpsCell {
        frame_bytes: frame,
        payload_bytes: payload,
        flows,
        line_rate_pps: line,
        pps_received: u.pps_received,
        pps_sent: u.pps_sent,
        loss_pct: u.loss_pct,
        line_rate_ratio: line.map(|l| u.pps_received / l),
        run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{Family, FrameSummary};

    /// A frame engine's cell reads the run's one received count and loss, the sockets', as
    /// `runs` and `show` do (issue 47: the table said 8.465 % where `runs` said 9.696 %).
    #[test]
    fn issue47_a_frame_cell_is_received_where_every_view_of_its_run_is() {
        let run = analysis::testing::udp_trial(1000.0, 900.0, 1.0, 18);
        let socket = cell(64, 18, 1, None, run.clone());
        assert_eq!(socket.pps_received, run.summary.udp().unwrap().pps_received);
        let mut run = run;
        let Family::Datagram(d) = &mut run.summary.family else {
            panic!("a udp trial is of the datagram family");
        };
        d.frames = Some(FrameSummary {
            engine: wire::spec::UdpEngine::Xdp,
            tx_path: Some(wire::spec::FramePath::XdpLive),
            rx_path: None,
            rx_queues: None,
            rx_fallback: None,
            rx_socket_dropped: None,
            interface: "vb".into(),
            frames_sent: 1000,
            frames_refused: 0,
            frames_at_driver: 990,
            bytes_at_driver: 990 * 60,
            frames_per_queue: None,
            flows_at_driver: None,
            pps_at_driver: 990.0,
        });
        let u = run.summary.udp().copied().unwrap();
        let c = cell(64, 18, 1, Some(1_000_000_000), run);
        assert_eq!((c.pps_received, c.loss_pct), (u.pps_received, u.loss_pct));
        assert_eq!(
            c.line_rate_ratio,
            Some(u.pps_received / c.line_rate_pps.unwrap())
        );
    }
}
