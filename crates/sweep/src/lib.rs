//! Sweeps, repetitions and test methodology: the plans of `linerate sweep
//! size|streams|window|mss|rate|payload|knob`, `--repeat N [--until-ci LEVEL:PCT]` and
//! `linerate rfc2544` with their executors, and the measurement methods built on the
//! `session` crate's client (`linerate rpm`, latency under load, a mesh's pairs).
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
//!   through a [`mesh::PairRunner`]; `linerate mesh`'s is [`mesh::RelayPairs`], each pair a
//!   third-party test through its `from` host;
//! - [`pps`]: `linerate pps`'s matrix, every cell through the same [`run::PointRunner`];
//! - [`probe`]: latency under load (`--latency`): the plan a point may carry and
//!   [`probe::run_with_probes`], the probe session beside a bulk test;
//! - [`rpm`]: responsiveness under working conditions (`linerate rpm`): the idle path, the ramp
//!   of load sessions, the foreign probes, fed to `analysis::rpm_window`;
//! - [`interrupt`]: how Ctrl-C reaches here; [`output`]: the results as a table, CSV or JSON.
//!
//! Statistics over repetitions are `analysis::repeat`.
//!
//! Why the methods live here and not in `session` or a crate of their own: they are
//! orchestration over the protocol's client, as the sweeps are, and the sweeps carry their
//! parts (a point's [`ProbePlan`], the mesh's [`mesh::PairRunner`]): a methods crate beside this
//! one would depend on it for those two items alone, the thin edge `session` → `sweep` was
//! (tests/architecture/uses.rs). So `session` stays the protocol's two ends, with nothing of
//! the sweeps, and this crate is the one above it.
//!
//! Invariants: every point is a run handed to the runner, tagged with the sweep and its value;
//! a sweep that stops (Ctrl-C, a failed run or knob command) keeps every finished point;
//! measurement and formatting stay apart (executors and methods return numbers; only
//! [`output`] formats them; nothing prints but the latency probe's one progress line on
//! stderr). The executors see tests only through their runner traits, so they run against a
//! mock; the methods (`probe`, `rpm`, `mesh::RelayPairs`) open sessions through
//! `session::client`. Depends on `session`, `plan` (a knob command's words), `analysis`,
//! `report`, `events`, `record`, `wire` and `measure`.

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
pub mod rpm;
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
