//! `linerate pps`: the packet-rate matrix.

pub use crate::pps_args::PpsArgs as Flags;

use std::io::Write;

use anyhow::{bail, Context, Result};
use engine::Signal;
use sweep::pps::{run_pps, PpsCellPlan};

use super::{with_progress, Measure, RunOutcome};
use crate::pps_args::PpsArgs;
use crate::reach::target_for;

impl Measure for PpsArgs {
    /// `linerate pps`: every (frame, flows) cell in turn (`sweep::pps`), then one table or JSON
    /// document of the finished cells, also after Ctrl-C or a failed cell.
    fn run(&self, interrupt: Signal) -> Result<RunOutcome> {
        let plan = self.plan()?;
        let first = &plan.cells.first().context("no cells")?.3;
        let store = self.common.store.open()?;
        let reached = target_for(first.route(), &self.common.conn, None)?;
        let link = first.spec.link_speed_bps;
        let cells: Vec<PpsCellPlan> = (plan.cells.iter())
            .map(|(frame, payload, flows, cell)| PpsCellPlan {
                frame_bytes: *frame,
                payload_bytes: *payload,
                flows: *flows,
                spec: cell.spec.clone(),
            })
            .collect();
        let stream = self.common.json_stream;
        let mut runner = reached.runner(interrupt.clone(), store, stream);
        let (run, streamed) = with_progress(stream, |progress| {
            run_pps(&cells, link, &mut runner, &interrupt.flag(), progress)
        })?;
        let mut out = crate::output::stdout(!self.common.json);
        match (streamed, self.common.json) {
            (true, _) => {}
            (false, true) => report::pretty_json(&mut out, &run)?,
            (false, false) => {
                report::pps_text::write_pps(&mut out, &reached.label, link, &run.matrix.cells)?;
                for r in &run.refused {
                    writeln!(
                        out,
                        "refused {:>4} B, {} flows: {}",
                        r.frame_bytes, r.flows, r.reason
                    )?;
                }
            }
        }
        out.flush()?;
        let outcome = RunOutcome::stopped(run.stopped)?;
        if let Some(first) = run.refused.first() {
            bail!(
                "{} of {} cells refused, the others ran; the first: {}",
                run.refused.len(),
                cells.len(),
                first.reason
            );
        }
        run.last
            .context("interrupted before the first cell finished")
            .map(|record| RunOutcome {
                incomplete: record.summary.incomplete.is_some(),
                ..outcome
            })
    }

    fn check(&self) -> Result<()> {
        self.plan().map(drop)
    }
}
