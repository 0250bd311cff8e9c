//! The measuring commands as clap subcommands: [`MeasuringArgs`], made from the one list of
//! them (`plan::measuring_commands!`) with a variant per entry holding its module's flags
//! (`commands::<name>::Flags`, which implement [`Measure`]). What the rest of the binary asks of
//! a command goes through that trait ([`MeasuringArgs::command`]: `run` is main's and a plan
//! step's dispatch), and two checks every command gets: [`MeasuringArgs::check`] (a plan's
//! `--check`) and [`MeasuringArgs::base_test`] (the test a sweep's point or a mesh's pair
//! runs). `cli::Command` flattens it, so these are `linerate`'s own subcommands;
//! [`MeasuringCli`] parses one alone, as a sweep or mesh reads its test after `--`.

use anyhow::{bail, Result};
use clap::{Parser, Subcommand};
use plan::Measuring;

use crate::commands::Measure;
use crate::sweep::args::BaseTest;

/// One measuring command, parsed alone (the first word is the program name): a sweep's or
/// mesh's test after `--`.
#[derive(Debug, Parser)]
#[command(name = "linerate", version, propagate_version = true)]
pub struct MeasuringCli {
    /// The command.
    #[command(subcommand)]
    pub command: MeasuringArgs,
}

/// Makes [`MeasuringArgs`] from the list, each variant's help its entry's doc comment, and the
/// two matches over it: [`MeasuringArgs::kind`] and [`MeasuringArgs::command`].
macro_rules! measuring_args {
    ($($(#[doc = $doc:literal])* $variant:ident $name:ident { $($facts:tt)* })*) => {
        /// The commands that measure: their help text is the doc comment of each variant.
        #[derive(Debug, Subcommand)]
        pub enum MeasuringArgs {
            $($(#[doc = $doc])* $variant(crate::commands::$name::Flags),)*
        }

        impl MeasuringArgs {
            /// The registry's entry of this command: the variant's namesake.
            pub fn kind(&self) -> Measuring {
                match self {
                    $(MeasuringArgs::$variant(_) => Measuring::$variant,)*
                }
            }

            /// The command's flags, as its module (`commands::…`) implements them.
            pub fn command(&self) -> &dyn Measure {
                match self {
                    $(MeasuringArgs::$variant(a) => a,)*
                }
            }
        }
    };
}

plan::measuring_commands!(measuring_args);

impl MeasuringArgs {
    /// Checks the flags as the command does before it runs anything (a plan's `--check`).
    pub fn check(&self) -> Result<()> {
        if (self.command().test_flags()).is_some_and(|(common, _)| common.time == Some(0.0)) {
            bail!(
                "-t 0 runs until Ctrl-C, which would hold the plan at this step: give it a duration"
            );
        }
        self.command().check()
    }

    /// The single test validated into what a sweep's point or a mesh's pair runs; an error
    /// for a command that is not one test ([`Measuring::is_test`]).
    pub fn base_test(&self) -> Result<BaseTest> {
        let Some(base) = self.command().base_test() else {
            bail!(
                "{}: not one test; give one of {}",
                self.kind(),
                Measuring::list(Measuring::tests())
            );
        };
        let base = base?;
        if base.plan.iperf3 {
            bail!("--iperf3 runs one test: not in a sweep or mesh");
        }
        Ok(base)
    }
}

/// `--test` of a mesh: the registry's single tests.
pub fn test_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(Measuring::tests().map(Measuring::as_str))
}
