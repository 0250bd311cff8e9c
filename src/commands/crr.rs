//! `linerate crr`: connect, request, response, close, repeat: `rr`'s flags, a TCP connection
//! per transaction, run as `rr` runs.

use anyhow::Result;
use clap::Args;

use super::rr::{RequestResponse, RrArgs};
use crate::repeat_args::RepeatArgs;
use crate::test_args::{CommonArgs, RunPlan};

pub use CrrArgs as Flags;

/// `linerate crr`: `rr`'s flags, a TCP connection per transaction.
#[derive(Debug, Args)]
pub struct CrrArgs {
    /// The flags, as `rr` takes them.
    #[command(flatten)]
    pub rr: RrArgs,
}

impl RequestResponse for CrrArgs {
    /// `linerate crr`'s flags validated into a plan: a TCP connection per transaction.
    fn plan(&self) -> Result<RunPlan> {
        self.rr.plan_of(true)
    }

    fn flags(&self) -> (&CommonArgs, &RepeatArgs) {
        (&self.rr.common, &self.rr.repeat)
    }
}
