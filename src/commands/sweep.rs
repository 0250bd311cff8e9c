//! `linerate sweep …`: message sizes, a test parameter or a knob, every point a stored run.

pub use crate::sweep::SweepArgs as Flags;

use std::io::Write;

use anyhow::Result;
use engine::Signal;
use sweep::output as sweep_output;
use sweep::run_sweep;

use super::{chart_format, with_progress, write_chart, Measure, RunOutcome};
use crate::reach::target_for;
use crate::sweep::SweepArgs;

impl Measure for SweepArgs {
    /// `linerate sweep …`: every point a stored run; the table (or JSON/CSV) of the finished
    /// points, also after Ctrl-C or a failed point.
    fn run(&self, interrupt: Signal) -> Result<RunOutcome> {
        let p = self.plan()?;
        if let Some(path) = &self.points().output.chart {
            chart_format(path)?;
        }
        // `--tag`, `--db` and `--no-store` after `--` were refused by `parse_test`.
        let store = self.points().store.open()?;
        let reached = target_for(
            p.base.plan.route(),
            &p.base.common.conn,
            p.base.unix.as_deref(),
        )?;
        let mut runner = reached.runner(interrupt.clone(), store, self.points().output.json_stream);
        let (r, streamed) =
            with_progress(self.points().output.json_stream, |progress| match &p.load {
                Some(load) => ::sweep::run_load(load, &mut runner, &interrupt.flag(), progress),
                None => run_sweep(&p.plan, &mut runner, &interrupt.flag(), progress),
            })?;
        let format = self.points().output.format();
        let mut out = crate::output::stdout(format == report::Format::Table);
        if !streamed {
            report::write(&mut out, &r, format, None)?;
        }
        out.flush()?;
        if let Some(path) = &self.points().output.chart {
            // A sweep that stopped early keeps its own outcome; a chart of too little is said.
            match sweep_output::chart(&r)
                .map_err(Into::into)
                .and_then(|c| write_chart(path, c))
            {
                Ok(()) => eprintln!("linerate: chart written to {}", path.display()),
                Err(e) if r.stopped.is_some() => eprintln!("linerate: no chart: {e:#}"),
                Err(e) => return Err(e),
            }
        }
        RunOutcome::stopped(r.stopped)
    }

    fn check(&self) -> Result<()> {
        self.plan().map(drop)
    }
}
