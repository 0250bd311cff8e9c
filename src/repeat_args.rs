//! `--repeat N` and `--until-ci LEVEL:PCT`, flattened into the test commands and the sweeps,
//! and their validation into an `analysis::repeat::RepeatPlan`.

use analysis::repeat::{RepeatError, RepeatPlan};
use clap::Args;

/// `--repeat N` and `--until-ci LEVEL:PCT`.
#[derive(Debug, Clone, Default, Args)]
pub struct RepeatArgs {
    /// Run each test N times and report the median, minimum, maximum and spread of every
    /// figure (with --until-ci: at most N times; default 10).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// Repeat until the LEVEL % confidence interval of the mean is at most PCT % of the mean
    /// wide (as netperf -I LEVEL,PCT: 95:2 is mean ± 1 %), after at least 3 runs.
    #[arg(long, value_name = "LEVEL:PCT")]
    pub until_ci: Option<String>,
}

impl RepeatArgs {
    /// The validated plan.
    pub fn plan(&self) -> Result<RepeatPlan, RepeatError> {
        RepeatPlan::new(self.repeat, self.until_ci.as_deref())
    }
}
