//! `linerate cc`: connect and close, repeat, no data (netperf's TCP_CC), run as `rr` runs.

use anyhow::Result;
use clap::Args;
use wire::spec::Params;
use wire::TestKind;

use super::rr::{tps, warm_up, RequestResponse};
use crate::repeat_args::RepeatArgs;
use crate::test_args::{CommonArgs, RunPlan};

pub use CcArgs as Flags;

/// `linerate cc`: connect and close, no data.
#[derive(Debug, Args)]
pub struct CcArgs {
    /// Flags every test takes (-R and --bidir do not apply: the client always connects).
    #[command(flatten)]
    pub common: CommonArgs,
    /// Open connections at this rate per stream (per second; K, M) instead of back to back.
    #[arg(long, value_name = "PER_SEC", alias = "mps")]
    pub tps: Option<String>,
    /// Repetitions.
    #[command(flatten)]
    pub repeat: RepeatArgs,
}

impl RequestResponse for CcArgs {
    fn flags(&self) -> (&CommonArgs, &RepeatArgs) {
        (&self.common, &self.repeat)
    }

    /// Validates the flags into a `tcp_cc` plan: connect and close, TCP_NODELAY on.
    fn plan(&self) -> Result<RunPlan> {
        if self.common.reverse || self.common.bidir {
            anyhow::bail!("--reverse/--bidir: cc connects from the client; omit them");
        }
        let mut plan = self.common.plan(Params::defaults(TestKind::TcpCc))?;
        let omit_ms = warm_up(&self.common, &plan)?;
        let transactions_per_sec = tps(self.tps.as_deref())?;
        if let Some(rr) = plan.spec.params.rr_mut() {
            (rr.omit_ms, rr.transactions_per_sec) = (omit_ms, transactions_per_sec);
        }
        Ok(plan)
    }
}
