//! The measuring commands' flags as one clap subcommand enum, [`MeasuringArgs`], a variant per
//! entry of the registry (`plan::Measuring`), and what each does: [`MeasuringArgs::run`]
//! (main's and a plan step's dispatch), [`MeasuringArgs::check`] (a plan's `--check`),
//! [`MeasuringArgs::base_test`] (the test a sweep's point or a mesh's pair runs). `cli::Command`
//! flattens it, so these are `linerate`'s own subcommands; [`MeasuringCli`] parses one alone,
//! as a sweep or mesh reads its test after `--`. tests/registry.rs holds the enum against the
//! registry.

use anyhow::{bail, Result};
use clap::{Parser, Subcommand};
use engine::Signal;
use plan::Measuring;

use crate::commands::{self, RunOutcome};
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

/// The commands that measure: their help text is the doc comment of each variant.
#[derive(Debug, Subcommand)]
pub enum MeasuringArgs {
    /// Bulk TCP (or Unix-socket) throughput: send, reverse or both ways, N parallel streams.
    Tcp(crate::test_args::TcpArgs),
    /// UDP at a target rate: loss, reordering, duplicates and jitter, exactly accounted.
    Udp(crate::test_args::UdpArgs),
    /// Request/response over TCP: transactions per second and round-trip latency percentiles.
    Rr(crate::rr_args::RrArgs),
    /// Connect, request, response, close, repeat: connections per second and connect +
    /// transaction latency percentiles.
    Crr(crate::rr_args::RrArgs),
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
    Mesh(crate::mesh_cmd::MeshArgs),
    /// Responsiveness under working conditions (RPM, the IETF draft): load connections added
    /// one per second until goodput is stable, foreign and in-band self probes beside them,
    /// where the delay sits (socket buffers, network queues), per direction.
    Rpm(crate::rpm_cmd::RpmArgs),
}

impl MeasuringArgs {
    /// The registry's entry of this command.
    pub fn kind(&self) -> Measuring {
        match self {
            MeasuringArgs::Tcp(_) => Measuring::Tcp,
            MeasuringArgs::Udp(_) => Measuring::Udp,
            MeasuringArgs::Pps(_) => Measuring::Pps,
            MeasuringArgs::Rr(_) => Measuring::Rr,
            MeasuringArgs::Crr(_) => Measuring::Crr,
            MeasuringArgs::Cc(_) => Measuring::Cc,
            MeasuringArgs::Sweep(_) => Measuring::Sweep,
            MeasuringArgs::Rfc2544(_) => Measuring::Rfc2544,
            MeasuringArgs::Mesh(_) => Measuring::Mesh,
            MeasuringArgs::Rpm(_) => Measuring::Rpm,
        }
    }

    /// Runs the command to its end (or Ctrl-C), printing and storing what it measured.
    pub fn run(&self, interrupt: Signal) -> Result<RunOutcome> {
        match self {
            MeasuringArgs::Tcp(a) => commands::tcp(a, interrupt),
            MeasuringArgs::Udp(a) => commands::udp(a, interrupt),
            MeasuringArgs::Pps(a) => commands::pps(a, interrupt),
            MeasuringArgs::Rr(a) => commands::rr(a.plan()?, &a.common, &a.repeat, interrupt),
            MeasuringArgs::Crr(a) => commands::rr(a.crr_plan()?, &a.common, &a.repeat, interrupt),
            MeasuringArgs::Cc(a) => commands::rr(a.plan()?, &a.common, &a.repeat, interrupt),
            MeasuringArgs::Sweep(a) => commands::sweep(a, interrupt),
            MeasuringArgs::Rfc2544(a) => commands::rfc2544(a, interrupt),
            MeasuringArgs::Mesh(a) => crate::mesh_cmd::mesh(a, interrupt),
            MeasuringArgs::Rpm(a) => crate::rpm_cmd::rpm(a, interrupt),
        }
    }

    /// Checks the flags as the command does before it runs anything (a plan's `--check`).
    pub fn check(&self) -> Result<()> {
        if self
            .test_flags()
            .is_some_and(|(common, _)| common.time == 0.0)
        {
            bail!(
                "-t 0 runs until Ctrl-C, which would hold the plan at this step: give it a duration"
            );
        }
        match self {
            MeasuringArgs::Tcp(a) => a.plan().map(drop),
            MeasuringArgs::Udp(a) => a.plan().map(drop),
            MeasuringArgs::Rr(a) => a.plan().map(drop),
            MeasuringArgs::Crr(a) => a.crr_plan().map(drop),
            MeasuringArgs::Cc(a) => a.plan().map(drop),
            MeasuringArgs::Pps(a) => a.plan().map(drop),
            MeasuringArgs::Sweep(a) => a.plan().map(drop),
            MeasuringArgs::Rfc2544(a) => a.plan().map(drop),
            MeasuringArgs::Mesh(a) => crate::mesh_cmd::check(a).map(drop),
            MeasuringArgs::Rpm(a) => crate::rpm_cmd::check(a),
        }
    }

    /// The shared and repetition flags of a single test (`None`: not one test).
    pub fn test_flags(
        &self,
    ) -> Option<(
        &crate::test_args::CommonArgs,
        &crate::repeat_args::RepeatArgs,
    )> {
        match self {
            MeasuringArgs::Tcp(a) => Some((&a.common, &a.repeat)),
            MeasuringArgs::Udp(a) => Some((&a.common, &a.repeat)),
            MeasuringArgs::Rr(a) | MeasuringArgs::Crr(a) => Some((&a.common, &a.repeat)),
            MeasuringArgs::Cc(a) => Some((&a.common, &a.repeat)),
            _ => None,
        }
    }

    /// The single test validated into what a sweep's point or a mesh's pair runs; an error
    /// for a command that is not one test ([`Measuring::is_test`]).
    pub fn base_test(self) -> Result<BaseTest> {
        let (common, plan, unix, probe) = match self {
            MeasuringArgs::Tcp(a) => (
                a.common.clone(),
                a.plan()?,
                a.unix.clone(),
                a.latency.plan()?,
            ),
            MeasuringArgs::Udp(a) => (a.common.clone(), a.plan()?, None, a.latency.plan()?),
            MeasuringArgs::Rr(a) => (a.common.clone(), a.plan()?, None, None),
            MeasuringArgs::Crr(a) => (a.common.clone(), a.crr_plan()?, None, None),
            MeasuringArgs::Cc(a) => (a.common.clone(), a.plan()?, None, None),
            other => bail!(
                "{}: not one test; give one of {}",
                other.kind(),
                Measuring::list(Measuring::tests())
            ),
        };
        if plan.iperf3 {
            bail!("--iperf3 runs one test: not in a sweep or mesh");
        }
        Ok(BaseTest {
            common,
            plan,
            unix,
            probe,
        })
    }
}

/// `--test` of a mesh: the registry's single tests.
pub fn test_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(Measuring::tests().map(Measuring::as_str))
}
