//! The binary's side of sweeps, repetitions and rfc2544: `linerate sweep size|streams|window|
//! mss|rate|payload|knob`, `--repeat N [--until-ci LEVEL:PCT]` and `linerate rfc2544`.
//!
//! The plans, their executors and what they produce are the `sweep` crate's (statistics over
//! repetitions, `analysis::repeat`); here, one concept per file:
//! - [`args`], [`rfc2544_args`]: the clap definitions and their validation into plans (all
//!   bad input is refused there, before anything runs);
//! - [`runner`]: the real [`sweep::PointRunner`], which runs `client::run` and stores every
//!   run.
//!
//! The progress bar on stderr is `report::live_bar`'s; the writers of tables, CSV and JSON are
//! `sweep::output`.
//!
//! Invariants: every point is a stored run, tagged with the sweep and its value; measurement
//! and formatting stay apart (the executors return numbers, `sweep::output` formats them).

pub mod args;
pub mod rfc2544_args;
pub mod runner;

pub use args::{KnobArgs, OutputArgs, ParamArgs, SizeArgs, SweepArgs, SweepCommand};
pub use rfc2544_args::Rfc2544Args;
pub use runner::ClientRunner;
