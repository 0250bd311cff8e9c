//! `linerate rr`, `linerate crr` and `linerate cc`: the request/response tests, one runner.

pub use crate::rr_args::RrArgs as Flags;

use anyhow::Result;
use engine::Signal;

use super::{run_client, Measure, RunOutcome};
use crate::repeat_args::RepeatArgs;
use crate::rr_args::{CcArgs, CrrArgs, RrArgs};
use crate::sweep::args::BaseTest;
use crate::test_args::CommonArgs;

/// The three commands differ only in how their flags become a plan (`crr`'s are `rr`'s).
macro_rules! request_response {
    ($($args:ty),*) => {$(
        impl Measure for $args {
            /// Says when the host keeps less busy polling than `--busy-poll` asks for.
            fn run(&self, interrupt: Signal) -> Result<RunOutcome> {
                let plan = self.plan()?;
                if let Some(us) = plan.spec.rr().and_then(|rr| rr.busy_poll_us) {
                    let granted = engine::sockopt::granted_busy_poll(us)?;
                    if granted != us {
                        eprintln!(
                            "linerate: note: --busy-poll {us}: this host keeps {granted} us (0: ignored); \
                             the round trips below are measured without it"
                        );
                    }
                }
                run_client(&plan, &self.common, None, None, &self.repeat.plan()?, interrupt)
            }

            fn check(&self) -> Result<()> {
                self.plan().map(drop)
            }

            fn test_flags(&self) -> Option<(&CommonArgs, &RepeatArgs)> {
                Some((&self.common, &self.repeat))
            }

            fn base_test(&self) -> Option<Result<BaseTest>> {
                Some(self.plan().map(|plan| BaseTest {
                    common: self.common.clone(),
                    plan,
                    unix: None,
                    probe: None,
                }))
            }
        }
    )*};
}

request_response! {
    RrArgs, CrrArgs, CcArgs
}
