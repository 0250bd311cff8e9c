//! Sweeps, repetitions and test methodology, independent of how a test is run: the plans of
//! `linerate sweep size|streams|window|mss|rate|payload|knob`, `--repeat N [--until-ci
//! LEVEL:PCT]` and `linerate rfc2544`, and their executors.
//!
//! Layout, one concept per file:
//! - [`ladder`], [`values`], [`param`], [`knob`]: message-size ladders, `--values` lists, the
//!   swept test parameters, and user commands with `{value}`;
//! - [`rfc2544`]: the zero-loss throughput search as a pure state machine;
//! - [`plan`], [`run`]: validated plans and their executors over a [`run::PointRunner`], which
//!   runs and stores one test (the binary's runs `client::run`; tests use a mock);
//! - [`result`]: what a sweep produced; [`progress`]: what executors report while they run;
//! - [`load`]: `sweep load`, round trips against offered load (the capacity first, then
//!   the test paced at shares of it, and the knee);
//! - [`mesh`]: every ordered pair of hosts, scheduled so no host is in two tests at once,
//!   through a [`mesh::PairRunner`];
//! - [`probe`]: the latency probes a point may carry; [`interrupt`]: how Ctrl-C reaches here;
//! - [`output`]: the results as a table, CSV or JSON.
//!
//! Statistics over repetitions are `analysis::repeat`.
//!
//! Invariants: every point is a run handed to the runner, tagged with the sweep and its value;
//! a sweep that stops (Ctrl-C, a failed run or knob command) keeps every finished point;
//! measurement and formatting stay apart (executors return numbers; only [`output`] formats
//! them). Depends on `plan` (a knob command's words), `analysis`, `report`, `record`, `wire`
//! and `measure`.

pub mod interrupt;
pub mod knob;
pub mod ladder;
pub mod load;
pub mod mesh;
pub mod output;
pub mod param;
pub mod plan;
pub mod pps;
pub mod probe;
pub mod progress;
pub mod result;
pub mod rfc2544;
pub mod run;
pub mod values;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

/// The executors report to an [`events::Observer`]; `SweepProgress` and `Quiet` are its and
/// [`events::Silent`]'s old names here, kept for callers not yet renamed.
pub use events::{Observer as SweepProgress, Silent as Quiet};
pub use interrupt::Interrupt;
pub use load::{run_load, LoadPlan};
pub use plan::{Rfc2544Plan, SweepPlan};
pub use probe::ProbePlan;
pub use result::{Stopped, SweepPoint, SweepResult, SweepSummary};
pub use rfc2544::Rfc2544Result;
pub use run::{
    run_repeated, run_rfc2544, run_sweep, Measured, Point, PointRunner, RepeatResult, RunError,
};
