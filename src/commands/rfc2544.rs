//! `linerate rfc2544`: the zero-loss throughput search per frame size.

pub use crate::sweep::Rfc2544Args as Flags;

use std::io::Write;

use anyhow::Result;
use engine::Signal;
use sweep::run_rfc2544;

use super::{warn_buffer_cap, with_progress, Measure, RunOutcome};
use crate::reach::target_for;
use crate::sweep::Rfc2544Args;

impl Measure for Rfc2544Args {
    /// `linerate rfc2544`: the zero-loss (or allowed-loss) rate per frame size by binary search.
    fn run(&self, interrupt: Signal) -> Result<RunOutcome> {
        let p = self.plan()?;
        let store = self.store.open()?;
        warn_buffer_cap(None, p.base.plan.spec.window_bytes.is_none())?;
        let reached = target_for(p.base.plan.route(), &p.base.common.conn, None)?;
        let mut runner = reached.runner(interrupt.clone(), store, self.output.json_stream);
        let (r, streamed) = with_progress(self.output.json_stream, |progress| {
            run_rfc2544(&p.plan, &mut runner, &interrupt.flag(), progress)
        })?;
        let format = self.output.format();
        let mut out = crate::output::stdout(format == report::Format::Table);
        if !streamed {
            report::write(&mut out, &r, format, None)?;
        }
        out.flush()?;
        RunOutcome::stopped(r.stopped)
    }

    fn check(&self) -> Result<()> {
        self.plan().map(drop)
    }
}
