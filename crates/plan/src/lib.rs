//! linerate plan files: a TOML list of linerate commands (steps) run in order by `linerate
//! plan FILE`, read and validated here; running them is the binary's. The format, for users,
//! is docs/PLANS.md.
//!
//! Layout:
//! - [`parse`] and [`load`] turn a file into a [`Plan`] of [`Step`]s, or a [`PlanError`] whose
//!   `Display` names the file, line and column and says what to do (the document walk is
//!   `read`, one step is `step`);
//! - [`split_words`] splits a command string as a POSIX shell splits words, without a shell,
//!   and [`join_words`] writes words back as one such string;
//! - [`Measuring`]: the registry of measuring commands, the commands a step runs.
//!
//! Invariants of a [`Plan`]: it has at least one step; step names are unique and 1 to 64 of
//! A-Z a-z 0-9 . _ -; every step's words start with its kind, hold no `{host}` left to replace
//! (only `{value}`, `sweep knob --pre`'s) and none of the flags the runner provides (`--db`,
//! `--no-store`, `--tag`); no tag is named `plan` or `step`, which the runner sets. Nothing
//! here runs anything or touches the results store. Depends on no other linerate crate.

#![warn(missing_docs)]

use std::path::Path;

mod error;
mod read;
mod registry;
mod step;
mod words;

#[cfg(test)]
mod tests;

pub use error::{CommandKey, Expected, Location, Place, PlanError, PlanWord, Position, Problem};
pub use registry::{Measuring, UnknownKind};
pub use words::{join_words, split_words, SplitError};

/// A validated plan: its name and tags, and its steps in the file's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The plan's `name`, or the file's stem; the runner tags every run with `plan=NAME`.
    pub name: String,
    /// The plan's `[tags]`, in the file's order (without `plan`, which the runner adds).
    pub tags: Vec<(String, String)>,
    /// The steps, in the file's order; never empty.
    pub steps: Vec<Step>,
}

/// One step: a linerate command, with what runs around it and the tags of its runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The step's name, unique in the plan; the runner tags its runs with `step=NAME`.
    pub name: String,
    /// The 1-based line of the step's `[[step]]` header (of its `{` when the plan writes
    /// `step = [{ … }]`), for messages about the step.
    pub line: usize,
    /// The command, named by the first word of `run`.
    pub kind: Measuring,
    /// `run`'s words with `{host}` replaced, the kind's word first; without the leading
    /// `linerate`.
    pub words: Vec<String>,
    /// The plan's tags, then the step's; a step's tag replaces the plan's of the same key in
    /// place. Without `plan` and `step`, which the runner adds.
    pub tags: Vec<(String, String)>,
    /// `pre`'s words, with `{host}` replaced like `run`'s: a program and its arguments, run
    /// before the step without a shell.
    pub pre: Option<Vec<String>>,
    /// `post`'s words, likewise: run after the step, even when it failed.
    pub post: Option<Vec<String>>,
}

impl Step {
    /// Every tag of the step's runs: the plan's and the step's (`tags`), then `plan=PLAN` and
    /// `step=STEP`.
    pub fn run_tags(&self, plan: &Plan) -> Vec<(String, String)> {
        let mut tags = self.tags.clone();
        tags.push(("plan".into(), plan.name.clone()));
        tags.push(("step".into(), self.name.clone()));
        tags
    }

    /// The command line the runner runs (without the program name): the command's words
    /// (two for `sweep`: the sweep's kind too), then `--db DB` and a `--tag K=V` per
    /// [`Step::run_tags`], then the rest of `run`'s words, so the runner's flags come before
    /// any `--` of the step's.
    pub fn command_line(&self, plan: &Plan, db: &str) -> Vec<String> {
        let depth = self.kind.words().min(self.words.len());
        let mut argv: Vec<String> = self.words[..depth].to_vec();
        argv.extend(["--db".into(), db.into()]);
        for (k, v) in self.run_tags(plan) {
            argv.extend(["--tag".into(), format!("{k}={v}")]);
        }
        argv.extend(self.words[depth..].iter().cloned());
        argv
    }
}

/// Reads and validates the plan `text`. `file_name` is the file as the user named it: it
/// starts every message, and its stem is the plan's name when the plan gives none.
pub fn parse(text: &str, file_name: &str) -> Result<Plan, PlanError> {
    read::plan(text, file_name)
}

/// Reads the plan file at `path` (named in messages as `path` displays) and validates it.
pub fn load(path: &Path) -> Result<Plan, PlanError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| PlanError::Read {
        file: file.clone(),
        error,
    })?;
    parse(&text, &file)
}
