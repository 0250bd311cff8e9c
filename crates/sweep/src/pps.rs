//! `linerate pps`'s executor: the packet-rate matrix, every (frame size, flow count) cell in
//! turn through a [`PointRunner`] (which runs the cell's UDP test and stores it, tagged
//! `frame_bytes` and `flows`: `100d` for 100 destination ports, and `pps_id`, the execution's
//! start in Unix ms, so one matrix's cells stay together; the engine is the stored spec's),
//! each set against the line rate; the finished cells are kept whatever stops the matrix
//! (Ctrl-C, a failed cell).

use std::time::Instant;

use events::Observer;
use record::RunRecord;
use report::{pps_cell as cell, MatrixKind, PpsMatrix, PPS_ID_TAG};
use serde::Serialize;
use session::client::ClientError;
use wire::TestSpec;

use crate::interrupt::Interrupt;
use crate::result::Stopped;
use crate::run::{now_unix_ms, one_line, Point, PointRunner, RunError};

/// One cell to measure: its frame size and flows, and the test that measures them.
#[derive(Debug, Clone, PartialEq)]
pub struct PpsCellPlan {
    /// Ethernet frame size, FCS included, bytes.
    pub frame_bytes: u32,
    /// The UDP payload that makes that frame, bytes.
    pub payload_bytes: u32,
    /// Its flows (pkt-gen's pattern: `100` sources, `100d` destinations...).
    pub flows: wire::spec::PpsFlows,
    /// The cell's UDP test (at the sender's top speed).
    pub spec: TestSpec,
}

impl PpsCellPlan {
    /// How the cell is named in progress and events.
    pub fn label(&self) -> String {
        format!(
            "{}-byte frames ({}-byte payload), {} flow(s)",
            self.frame_bytes, self.payload_bytes, self.flows
        )
    }
}

impl PpsCellPlan {
    /// The cell's test, tagged with its frame, flows and the execution's id (`pps_id`).
    fn point(&self, pps_id: u64) -> Point {
        Point {
            spec: self.spec.clone(),
            tags: vec![
                ("frame_bytes".into(), self.frame_bytes.to_string()),
                ("flows".into(), self.flows.to_string()),
                (PPS_ID_TAG.into(), pps_id.to_string()),
            ],
            probe: None,
        }
    }
}

/// A cell that did not run: refused before its test began, by the server or the client.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PpsRefused {
    /// Ethernet frame size, FCS included, bytes.
    pub frame_bytes: u32,
    /// Its flows as `--flows` names them (`100`, `100d`).
    pub flows: String,
    /// Why, in one line (the refusal's own words).
    pub reason: String,
}

/// A matrix as measured: the document `--json` prints (the matrix and the refused cells), the
/// last cell's run (for the exit code) and why it stopped early, if it did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PpsRun {
    /// The finished cells.
    #[serde(flatten)]
    pub matrix: PpsMatrix,
    /// The cells refused before their test began, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<PpsRefused>,
    /// The last cell's run.
    #[serde(skip)]
    pub last: Option<RunRecord>,
    /// Ctrl-C or a failed cell.
    #[serde(skip)]
    pub stopped: Option<Stopped>,
}

/// Runs every cell of `cells` through `runner`, the line rate from `link_bps` where given.
pub fn run_pps(
    cells: &[PpsCellPlan],
    link_bps: Option<u64>,
    runner: &mut dyn PointRunner,
    interrupt: &dyn Interrupt,
    progress: &mut dyn Observer,
) -> PpsRun {
    let planned: Vec<f64> = (cells.iter())
        .map(|c| crate::plan::planned_test_seconds(&c.spec))
        .collect();
    progress.begin("linerate pps", &planned, &[]);
    let mut out = PpsRun {
        matrix: begun(cells, runner.target(), link_bps),
        refused: Vec::new(),
        last: None,
        stopped: None,
    };
    for (i, c) in cells.iter().enumerate() {
        if interrupt.is_raised() {
            out.stopped = Some(Stopped::Interrupted);
            break;
        }
        let label = c.label();
        progress.point_started(i, &label);
        let started = Instant::now();
        let measured = match runner.run(&c.point(out.matrix.started_at_unix_ms)) {
            Ok(m) => m,
            Err(_) if interrupt.is_raised() => {
                out.stopped = Some(Stopped::Interrupted);
                break;
            }
            Err(e) if is_refusal(&e) => {
                let reason = one_line(&e);
                progress.note(&format!("{label}: refused: {reason}"));
                out.refused.push(PpsRefused {
                    frame_bytes: c.frame_bytes,
                    flows: c.flows.to_string(),
                    reason,
                });
                continue;
            }
            Err(e) => {
                out.stopped = Some(Stopped::Failed {
                    message: format!("{label}: {}", one_line(&e)),
                });
                break;
            }
        };
        progress.point_done(i, &label, started.elapsed().as_secs_f64());
        if let Some(id) = measured.run_id {
            progress.stored(id);
        }
        let run = measured.record;
        let done = cell(
            c.frame_bytes,
            c.payload_bytes,
            c.flows.count(),
            link_bps,
            run.clone(),
        );
        progress.point(i, &label, &done);
        out.matrix.cells.push(done);
        let interrupted = run.summary.interrupted;
        out.last = Some(run);
        if interrupted {
            out.stopped = Some(Stopped::Interrupted);
            break;
        }
    }
    progress.finish();
    out
}

/// The matrix of `cells` to `target` before its first cell: its id (its start) and engine.
fn begun(cells: &[PpsCellPlan], target: String, link_bps: Option<u64>) -> PpsMatrix {
    let started_at_unix_ms = now_unix_ms();
    let engine = (cells.first())
        .and_then(|c| c.spec.udp())
        .map(|u| u.engine)
        .unwrap_or_default();
    PpsMatrix {
        kind: MatrixKind::UdpPpsMatrix,
        target,
        link_speed_bps: link_bps,
        pps_id: Some(started_at_unix_ms.to_string()),
        engine,
        started_at_unix_ms,
        cells: Vec::new(),
    }
}

/// Whether `e` turned a cell away before its test began (the server's refusal, or the client's
/// own check of the test), rather than ending a test that ran or losing the server.
fn is_refusal(e: &RunError) -> bool {
    matches!(
        e.downcast_ref::<ClientError>(),
        Some(ClientError::Refused(_) | ClientError::Input(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MockRunner;
    use std::sync::atomic::AtomicBool;
    use wire::spec::{Params, TestKind};

    fn plan(frame: u32, flows: u32) -> PpsCellPlan {
        let flows = wire::spec::PpsFlows::Total(flows);
        let spec = TestSpec::new(Params::defaults(TestKind::UdpStream), 1, 1000);
        PpsCellPlan {
            frame_bytes: frame,
            payload_bytes: frame - 46,
            flows,
            spec,
        }
    }

    #[test]
    fn every_cell_runs_once_tagged_with_its_frame_and_flows() {
        let cells = [plan(64, 1), plan(1518, 100)];
        let mut runner =
            MockRunner::new(|_: &TestSpec| analysis::testing::udp_trial(1e6, 1e6, 1.0, 18));
        let run = run_pps(
            &cells,
            Some(1_000_000_000),
            &mut runner,
            &AtomicBool::new(false),
            &mut events::Silent,
        );
        assert_eq!(run.stopped, None);
        assert_eq!(run.matrix.cells.len(), 2);
        let tags: Vec<_> = runner.asked.iter().map(|p| p.tags.clone()).collect();
        let id = run.matrix.pps_id.clone().unwrap();
        assert_eq!(
            tags[1],
            [
                ("frame_bytes".into(), "1518".into()),
                ("flows".into(), "100".into()),
                ("pps_id".into(), id.clone()),
            ]
        );
        assert_eq!(tags[0][2].1, id, "one id for every cell of the execution");
        assert_eq!(run.matrix.engine, wire::spec::UdpEngine::Socket);
        let line = run.matrix.cells[0].line_rate_pps.unwrap();
        assert!((line - 1_488_095.2).abs() < 0.1, "{line}");
        let json = serde_json::to_value(&run).unwrap();
        assert_eq!(json["kind"], "udp_pps_matrix");
        assert_eq!(json["engine"], "socket");
        assert_eq!(json["pps_id"], id.as_str());
        assert_eq!(json["cells"][1]["frame_bytes"], 1518);
    }

    /// Issue 47: a cell the server refuses is kept, with its reason, and the rest still run.
    #[test]
    fn issue47_a_refused_cell_never_costs_the_others() {
        let mut runner =
            MockRunner::new(|_: &TestSpec| analysis::testing::udp_trial(1e6, 1e6, 1.0, 18));
        runner.refuse_at = Some(1);
        let cells = [plan(64, 1), plan(64, 10_000), plan(1518, 1)];
        let run = run_pps(
            &cells,
            None,
            &mut runner,
            &AtomicBool::new(false),
            &mut events::Silent,
        );
        assert_eq!(run.stopped, None);
        assert_eq!(runner.asked.len(), 3, "every cell was asked for");
        assert_eq!(run.matrix.cells.len(), 2);
        assert_eq!(run.refused.len(), 1);
        assert_eq!(
            (run.refused[0].frame_bytes, run.refused[0].flows.as_str()),
            (64, "10000")
        );
        assert!(
            run.refused[0].reason.contains("serve --max-flows-dst"),
            "{:?}",
            run.refused
        );
        let json = serde_json::to_value(&run).unwrap();
        assert_eq!(json["refused"][0]["flows"], "10000");
    }

    #[test]
    fn ctrl_c_keeps_the_cells_measured_before_it() {
        let mut runner =
            MockRunner::new(|_: &TestSpec| analysis::testing::udp_trial(1e6, 1e6, 1.0, 18));
        let stop = AtomicBool::new(true);
        let run = run_pps(
            &[plan(64, 1)],
            None,
            &mut runner,
            &stop,
            &mut events::Silent,
        );
        assert_eq!(run.stopped, Some(Stopped::Interrupted));
        assert!(run.matrix.cells.is_empty() && runner.asked.is_empty());
    }
}
