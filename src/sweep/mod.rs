//! Sweeps, repetitions and test methodology: `linerate sweep size|streams|window|mss|rate|
//! payload|knob`, `--repeat N [--until-ci LEVEL:PCT]` and `linerate rfc2544`.
//!
//! Layout, one concept per file:
//! - [`args`]: the clap definitions and their validation into plans (all bad input is
//!   refused there, before anything runs);
//! - [`ladder`], [`values`], [`param`], [`knob`]: message-size ladders, `--values` lists, the
//!   swept test parameters, and user commands with `{value}`;
//! - `analysis::repeat` (a crate of its own): statistics over repetitions and the
//!   confidence-interval stopping rule;
//! - [`rfc2544`]: the zero-loss throughput search as a pure state machine;
//! - [`plan`], [`run`]: validated plans and their executors over a [`run::PointRunner`]
//!   (the real one runs `client::run` and stores every run);
//! - [`result`], [`output`], [`progress`]: what a sweep produced, its writers (table, CSV,
//!   JSON), and the progress bar on stderr.
//!
//! Invariants: every point is a stored run, tagged with the sweep and its value; a sweep that
//! stops (Ctrl-C, a failed run or knob command) keeps every finished point; measurement and
//! formatting stay apart (executors return numbers, writers format them).

pub mod args;
pub mod knob;
pub mod ladder;
pub mod output;
pub mod param;
pub mod plan;
pub mod progress;
pub mod result;
pub mod rfc2544;
pub mod run;
pub mod values;

#[cfg(test)]
mod testing;

pub use args::{
    KnobArgs, OutputArgs, ParamArgs, RepeatArgs, Rfc2544Args, SizeArgs, SweepArgs, SweepCommand,
};
pub use plan::{Rfc2544Plan, SweepPlan};
pub use result::{Stopped, SweepPoint, SweepResult, SweepSummary};
pub use rfc2544::Rfc2544Result;
pub use run::{
    run_repeated, run_rfc2544, run_sweep, ClientRunner, Point, PointRunner, RepeatResult,
};
