//! The list of measuring commands, once: [`MeasuringArgs`], one clap subcommand per entry of the
//! registry (`plan::Measuring`), each variant's flags implementing [`Measure`] in its module
//! under `commands/`. What the rest of the binary asks of a command goes through that trait
//! ([`MeasuringArgs::command`]: `run` is main's and a plan step's dispatch), and two checks
//! every command gets: [`MeasuringArgs::check`] (a plan's `--check`) and
//! [`MeasuringArgs::base_test`] (the test a sweep's point or a mesh's pair runs). `cli::Command` flattens it, so these are `linerate`'s own subcommands;
//! [`MeasuringCli`] parses one alone, as a sweep or mesh reads its test after `--`.
//! tests/registry.rs holds the list against the registry.

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

/// Declares [`MeasuringArgs`], a variant per command (its help text the variant's doc
/// comment) named as its registry entry, and the two matches over it: [`MeasuringArgs::kind`]
/// and [`MeasuringArgs::command`], which reaches each command's [`Measure`].
macro_rules! measuring_commands {
    ($($(#[doc = $doc:literal])* $variant:ident($args:ty),)*) => {
        /// The commands that measure: their help text is the doc comment of each variant.
        #[derive(Debug, Subcommand)]
        pub enum MeasuringArgs {
            $($(#[doc = $doc])* $variant($args),)*
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

measuring_commands! {
    /// Bulk TCP (or Unix-socket) throughput: send, reverse or both ways, N parallel streams.
    Tcp(crate::test_args::TcpArgs),
    /// UDP at a target rate: loss, reordering, duplicates and jitter, exactly accounted.
    Udp(crate::test_args::UdpArgs),
    /// Request/response over TCP: transactions per second and round-trip latency percentiles.
    Rr(crate::rr_args::RrArgs),
    /// Connect, request, response, close, repeat: connections per second and connect +
    /// transaction latency percentiles.
    Crr(crate::rr_args::CrrArgs),
    /// Connect and close, repeat, no data (netperf's TCP_CC): connections per second and
    /// connect latency percentiles.
    Cc(crate::rr_args::CcArgs),
    /// Packet rate matrix: frame sizes x flow counts at max rate, against the line rate
    /// link_bps / 8 / (frame + 20).
    Pps(crate::pps_args::PpsArgs),
    /// Sweep message sizes (NetPIPE-style), a test parameter or your own setting (a command
    /// run before each point); every point a stored run.
    Sweep(crate::sweep::SweepArgs),
    /// RFC 2544 throughput: per frame size, the highest rate with loss within --loss, by
    /// binary search over trials, with latency at that rate and the line rate beside it.
    Rfc2544(crate::sweep::Rfc2544Args),
    /// Every ordered pair of hosts (each a `serve --relay` server) runs the test, the first
    /// as the client: a matrix of throughput (or p50 round trip, connections/s), each cell a
    /// stored run.
    Mesh(crate::commands::mesh::MeshArgs),
    /// Responsiveness under working conditions (RPM, the IETF draft): load connections added
    /// one per second until goodput is stable, foreign and in-band self probes beside them,
    /// where the delay sits (socket buffers, network queues), per direction.
    Rpm(crate::commands::rpm::RpmArgs),
}

impl MeasuringArgs {
    /// Checks the flags as the command does before it runs anything (a plan's `--check`).
    pub fn check(&self) -> Result<()> {
        if (self.command().test_flags()).is_some_and(|(common, _)| common.time == 0.0) {
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
