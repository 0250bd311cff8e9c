//! `linerate tcp`: bulk TCP (or Unix-socket) throughput.

pub use crate::test_args::TcpArgs as Flags;

use anyhow::Result;
use engine::Signal;

use super::{run_client, Measure, RunOutcome};
use crate::repeat_args::RepeatArgs;
use crate::sweep::args::BaseTest;
use crate::test_args::{CommonArgs, TcpArgs};

impl Measure for TcpArgs {
    fn run(&self, interrupt: Signal) -> Result<RunOutcome> {
        let plan = self.plan()?;
        if let Some(name) = plan.spec.tcp().and_then(|t| t.congestion.as_ref()) {
            engine::sockopt::check_congestion(name)?;
        }
        if self.unix.is_some() {
            engine::sockopt::SocketOptions::from_spec(&plan.spec).check_unix()?;
        }
        let (probe, repeat) = (self.latency.plan()?, self.repeat.plan()?);
        let unix = self.unix.as_deref();
        run_client(&plan, &self.common, unix, probe, &repeat, interrupt)
    }

    fn check(&self) -> Result<()> {
        self.plan().map(drop)
    }

    fn test_flags(&self) -> Option<(&CommonArgs, &RepeatArgs)> {
        Some((&self.common, &self.repeat))
    }

    fn base_test(&self) -> Option<Result<BaseTest>> {
        Some(self.plan().and_then(|plan| {
            let (common, unix) = (self.common.clone(), self.unix.clone());
            Ok(BaseTest {
                common,
                plan,
                unix,
                probe: self.latency.plan()?,
            })
        }))
    }
}
