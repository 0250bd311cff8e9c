//! `linerate udp`: UDP at a target rate.

pub use crate::test_args::UdpArgs as Flags;

use anyhow::Result;
use engine::Signal;

use super::{run_client, warn_buffer_cap, Measure, RunOutcome};
use crate::repeat_args::RepeatArgs;
use crate::sweep::args::BaseTest;
use crate::test_args::{CommonArgs, UdpArgs};

impl Measure for UdpArgs {
    fn run(&self, interrupt: Signal) -> Result<RunOutcome> {
        let plan = self.plan()?;
        let (probe, repeat) = (self.latency.plan()?, self.repeat.plan()?);
        warn_buffer_cap(None, plan.spec.window_bytes.is_none())?;
        run_client(&plan, &self.common, None, probe, &repeat, interrupt)
    }

    fn check(&self) -> Result<()> {
        self.plan().map(drop)
    }

    fn test_flags(&self) -> Option<(&CommonArgs, &RepeatArgs)> {
        Some((&self.common, &self.repeat))
    }

    fn base_test(&self) -> Option<Result<BaseTest>> {
        Some(self.plan().and_then(|plan| {
            Ok(BaseTest {
                common: self.common.clone(),
                plan,
                unix: None,
                probe: self.latency.plan()?,
            })
        }))
    }
}
