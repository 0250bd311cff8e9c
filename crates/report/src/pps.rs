//! [`PpsMatrix`]: the document `linerate pps --json` writes, read back for charts and reports,
//! or gathered from the stored cells of `linerate pps` runs.
//!
//! Invariants: a matrix is one execution of `linerate pps` with one engine: stored cells are
//! grouped by their `pps_id` tag (the execution's start; cells stored before the tag are
//! grouped by engine alone) and their spec's engine, so a socket matrix and an xdp matrix are
//! never one table or one chart.

use std::collections::BTreeMap;

use record::{PpsCell, RunRecord, RunRow, StoredRun, Tags};
use serde::{Deserialize, Serialize};
use wire::spec::{FamilyId, PpsFlows, UdpEngine};
use wire::TestKind;

/// The tag every stored cell of one `linerate pps` execution carries: its start, Unix ms.
pub const PPS_ID_TAG: &str = "pps_id";

/// What the document is (`"kind": "udp_pps_matrix"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatrixKind {
    /// `linerate pps`'s matrix.
    #[default]
    UdpPpsMatrix,
}

/// A packet-rate matrix: one cell per (frame size, flow count), of one execution and engine.
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
    /// The execution's id, its cells' `pps_id` tag; absent for cells stored before the tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pps_id: Option<String>,
    /// The engine that sent the frames (`--engine`).
    #[serde(default)]
    pub engine: UdpEngine,
    /// When the execution began (gathered from the store: its first cell's start), Unix ms.
    #[serde(default)]
    pub started_at_unix_ms: u64,
    /// The cells, in the order they ran.
    pub cells: Vec<PpsCell>,
}

/// Whether a stored run of `kind` with `tags` is a `linerate pps` cell: a UDP run tagged with
/// its frame size and flows (`linerate runs --kind pps` lists these).
pub fn is_cell(kind: TestKind, tags: &Tags) -> bool {
    kind.row().family == FamilyId::Datagram
        && tags.get("frame_bytes").is_some()
        && tags.get("flows").is_some()
}

/// The rows of `rows` that are `linerate pps` cells ([`is_cell`]), the newest `last` of them
/// when given, still oldest first: `linerate runs --kind pps`.
pub fn cells_of(mut rows: Vec<RunRow>, last: Option<usize>) -> Vec<RunRow> {
    rows.retain(|r| is_cell(r.kind, &r.tags));
    let extra = rows.len().saturating_sub(last.unwrap_or(usize::MAX));
    rows.drain(..extra);
    rows
}

impl PpsMatrix {
    /// `(frame_bytes, flows)` of a `linerate pps` cell: a UDP run tagged with both (flows as
    /// `--flows` names them: `100`, or `100d` for 100 destination ports).
    pub fn cell_key(run: &StoredRun) -> Option<(u32, PpsFlows)> {
        if !is_cell(run.record.kind, &run.tags) {
            return None;
        }
        let frame = run.tags.get("frame_bytes")?.parse().ok()?;
        let flows = run.tags.get("flows")?.parse().ok()?;
        Some((frame, flows))
    }

    /// The packet-rate matrices of the `linerate pps` cells among `runs`, one per execution
    /// (`pps_id`) and engine, oldest first: in each, for each (frame size, flow count), the
    /// latest cell; the line rate from the latest cell's link speed.
    pub fn of_cells<'a>(runs: impl IntoIterator<Item = &'a StoredRun>) -> Vec<PpsMatrix> {
        // A cell's place: frame, flow count, and whether the flows are destination ports.
        type Execution<'a> = BTreeMap<(u32, u32, bool), &'a StoredRun>;
        let mut executions: BTreeMap<(Option<String>, &str), Execution> = BTreeMap::new();
        let order = |r: &StoredRun| (r.record.started_at_unix_ms, r.id);
        for run in runs {
            if let Some((frame, flows)) = Self::cell_key(run) {
                let dst = matches!(flows, PpsFlows::Destinations(_));
                let key = (frame, flows.count(), dst);
                let execution = (
                    run.tags.get(PPS_ID_TAG).map(String::from),
                    engine_of(run).name(),
                );
                let latest = executions.entry(execution).or_default();
                let slot = latest.entry(key).or_insert(run);
                if order(run) > order(slot) {
                    *slot = run;
                }
            }
        }
        let mut out: Vec<PpsMatrix> = (executions.into_iter())
            .filter_map(|((pps_id, _), latest)| {
                let newest = latest.values().copied().max_by_key(|r| order(r))?;
                let engine = engine_of(newest);
                let started = latest.values().map(|r| r.record.started_at_unix_ms).min()?;
                let link = newest.record.spec.link_speed_bps;
                let cells = (latest.into_iter())
                    .map(|((frame, flows, _), run)| {
                        let payload = run.record.spec.message_len_bytes();
                        cell(frame, payload, flows, link, run.record.clone())
                    })
                    .collect();
                Some(PpsMatrix {
                    kind: MatrixKind::UdpPpsMatrix,
                    target: newest.record.target.clone(),
                    link_speed_bps: link,
                    pps_id,
                    engine,
                    started_at_unix_ms: started,
                    cells,
                })
            })
            .collect();
        out.sort_by_key(|m| m.started_at_unix_ms);
        out
    }

    /// What tells this matrix from others: `socket engine, 2026-12-06 08:12:03` (local time).
    pub fn caption(&self) -> String {
        format!(
            "{} engine, {}",
            self.engine.name(),
            crate::local_time::format_local(self.started_at_unix_ms)
        )
    }
}

/// The engine of a cell's run (a spec without one is the socket engine's).
fn engine_of(run: &StoredRun) -> UdpEngine {
    run.record.spec.udp().map(|u| u.engine).unwrap_or_default()
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

    /// A stored cell of `frame` bytes, one flow, sent by `engine`, started at `at` s, of the
    /// execution `pps_id` (none: stored before the tag).
    fn stored(id: i64, frame: u32, engine: UdpEngine, pps_id: Option<&str>, at: u64) -> StoredRun {
        let mut record = analysis::testing::udp_trial(1000.0, 900.0, 1.0, 18);
        record.started_at_unix_ms = at * 1000;
        record.spec.params.udp_mut().unwrap().engine = engine;
        let mut tags = vec![format!("frame_bytes={frame}"), "flows=1".to_string()];
        tags.extend(pps_id.map(|p| format!("pps_id={p}")));
        StoredRun {
            id: record::RunId(id),
            stored_at_unix_ms: 0,
            tags: Tags::parse(tags).unwrap(),
            host: Default::default(),
            record,
        }
    }

    /// Issue 47: a socket matrix and an xdp matrix, and two executions of one engine, are
    /// matrices of their own, oldest first; cells stored before the `pps_id` tag group by
    /// engine; a UDP run that is no cell is in none.
    #[test]
    fn issue47_one_matrix_per_execution_and_engine() {
        use UdpEngine::{Socket, Xdp};
        let mut plain = stored(9, 64, Socket, None, 1);
        plain.tags = Tags::new();
        let runs = [
            stored(1, 64, Socket, Some("1000"), 1),
            stored(2, 1518, Socket, Some("1000"), 2),
            stored(3, 64, Xdp, Some("3000"), 3),
            stored(4, 1518, Xdp, Some("3000"), 4),
            stored(5, 64, Socket, Some("5000"), 5),
            stored(6, 64, Xdp, None, 0),
            plain,
        ];
        let ms = PpsMatrix::of_cells(&runs);
        let got: Vec<(Option<&str>, &str, Vec<u32>)> = (ms.iter())
            .map(|m| {
                let frames = m.cells.iter().map(|c| c.frame_bytes).collect();
                (m.pps_id.as_deref(), m.engine.name(), frames)
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (None, "xdp", vec![64]),
                (Some("1000"), "socket", vec![64, 1518]),
                (Some("3000"), "xdp", vec![64, 1518]),
                (Some("5000"), "socket", vec![64]),
            ]
        );
        assert_eq!(ms[1].started_at_unix_ms, 1000);
        assert!(
            ms[2].caption().starts_with("xdp engine, "),
            "{}",
            ms[2].caption()
        );
        assert!(PpsMatrix::of_cells(&runs[6..]).is_empty());
        // pkt-gen's 100 destinations and 100 flows are two cells of one matrix.
        let mut dst = [
            stored(7, 64, Socket, Some("7000"), 7),
            stored(8, 64, Socket, Some("7000"), 8),
        ];
        dst[0].tags = Tags::parse(["frame_bytes=64", "flows=100d", "pps_id=7000"]).unwrap();
        dst[1].tags = Tags::parse(["frame_bytes=64", "flows=100", "pps_id=7000"]).unwrap();
        let ms = PpsMatrix::of_cells(&dst);
        assert_eq!((ms.len(), ms[0].cells.len()), (1, 2));
    }

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
            tx_fallback: None,
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
