//! `linerate rr`: request/response over TCP (or UDP, `--udp`): its flags and their validation
//! into a spec, and what the request/response commands (`rr`, `crr`, `cc`) share: their run,
//! from flags to printed and stored result, for any flags that are a [`RequestResponse`].

use anyhow::Result;
use clap::Args;
use engine::Signal;
use measure::units::{parse_bits_per_sec, parse_bytes};
use wire::datagram::HEADER_LEN;
use wire::spec::{Params, RrParams, TcpOptions};

use super::{run_client, Measure, RunOutcome};
use crate::repeat_args::RepeatArgs;
use crate::sweep::args::BaseTest;
use crate::test_args::{length, CommonArgs, RunPlan};

pub use RrArgs as Flags;

/// A request/response command's flags: the plan they validate into and the flags every test
/// takes. Each is a [`Measure`] by that alone.
pub trait RequestResponse {
    /// The flags validated into a plan.
    fn plan(&self) -> Result<RunPlan>;

    /// The flags every test takes, and its repetition flags.
    fn flags(&self) -> (&CommonArgs, &RepeatArgs);
}

impl<T: RequestResponse> Measure for T {
    /// Says when the host keeps less busy polling than `--busy-poll` asks for.
    fn run(&self, interrupt: Signal) -> Result<RunOutcome> {
        let plan = self.plan()?;
        if let Some(us) = plan.spec.rr().and_then(|rr| rr.busy_poll_us) {
            let granted = engine::sockopt::granted_busy_poll(us)?;
            if granted != us {
                eprintln!(
                    "linerate: note: --busy-poll {us}: this host keeps {granted} us (0: ignored); \
                     the round trips below are measured without it"
                );
            }
        }
        let (common, repeat) = self.flags();
        run_client(&plan, common, None, None, &repeat.plan()?, interrupt)
    }

    fn check(&self) -> Result<()> {
        self.plan().map(drop)
    }

    fn test_flags(&self) -> Option<(&CommonArgs, &RepeatArgs)> {
        Some(self.flags())
    }

    fn base_test(&self) -> Option<Result<BaseTest>> {
        Some(self.plan().map(|plan| BaseTest {
            common: self.flags().0.clone(),
            plan,
            unix: None,
            probe: None,
        }))
    }
}

/// `linerate rr`.
#[derive(Debug, Args)]
pub struct RrArgs {
    /// Flags every test takes (-R and --bidir do not apply: the client always asks).
    #[command(flatten)]
    pub common: CommonArgs,
    /// Request bytes.
    #[arg(
        long = "length",
        short = 'l',
        value_name = "BYTES",
        default_value = "64"
    )]
    pub length: String,
    /// Response bytes (default: the request's size).
    #[arg(long, value_name = "BYTES")]
    pub response: Option<String>,
    /// Request/response over UDP: one datagram each way (at least 16 bytes each); a request
    /// unanswered within 1 s is counted as lost.
    #[arg(long)]
    pub udp: bool,
    /// Busy-poll the receive path (SO_BUSY_POLL) for this many µs instead of sleeping.
    #[arg(long, value_name = "US", num_args = 0..=1, default_missing_value = "50")]
    pub busy_poll: Option<u32>,
    /// Start transactions at this rate per stream (per second; K, M) instead of back to back,
    /// as sockperf --mps; a round trip longer than the gap delays the next, never bunches them.
    #[arg(long, value_name = "PER_SEC", alias = "mps")]
    pub tps: Option<String>,
    /// Repetitions.
    #[command(flatten)]
    pub repeat: RepeatArgs,
}

impl RequestResponse for RrArgs {
    fn plan(&self) -> Result<RunPlan> {
        self.plan_of(false)
    }

    fn flags(&self) -> (&CommonArgs, &RepeatArgs) {
        (&self.common, &self.repeat)
    }
}

impl RrArgs {
    /// The flags validated into a plan: `rr`'s (over UDP with `--udp`), or with `crr` a TCP
    /// connection per transaction. TCP_NODELAY is always on: a request/response test
    /// measures the round trip, not Nagle's algorithm.
    pub(super) fn plan_of(&self, crr: bool) -> anyhow::Result<RunPlan> {
        if self.common.reverse || self.common.bidir {
            return Err(anyhow::anyhow!(
                "--reverse/--bidir: rr sends requests from the client; omit them"
            ));
        }
        let (min, max) = if self.udp {
            (HEADER_LEN as u64, 65_507)
        } else {
            (1, wire::spec::bounds::MAX_WRITE_LEN_BYTES as u64)
        };
        let request = length(&self.length, min, max, "--length", "a request")?;
        let response = match &self.response {
            None => request,
            Some(r) => {
                let v = parse_bytes(r).map_err(|e| anyhow::anyhow!("--response {r}: {e}"))?;
                if v < min || v > max {
                    return Err(anyhow::anyhow!(
                        "--response {r}: must be between {min} and {max} bytes"
                    ));
                }
                v as u32
            }
        };
        if crr && self.udp {
            return Err(anyhow::anyhow!(
                "--udp: crr opens TCP connections; use rr --udp for UDP"
            ));
        }
        let params = |rr| match (crr, self.udp) {
            (true, _) => Params::TcpCrr {
                rr,
                tcp: TcpOptions::no_delay(),
            },
            (false, true) => Params::UdpRr { rr },
            (false, false) => Params::TcpRr {
                rr,
                tcp: TcpOptions::no_delay(),
            },
        };
        let mut rr = RrParams::new(request, response);
        let mut plan = self.common.plan(params(rr))?;
        rr.omit_ms = warm_up(&self.common, &plan)?;
        if let Some(us) = self.busy_poll {
            wire::spec::bounds::check_busy_poll(us, wire::spec::bounds::MAX_BUSY_POLL_US)?;
        }
        rr.busy_poll_us = self.busy_poll;
        rr.transactions_per_sec = tps(self.tps.as_deref())?;
        plan.spec.params = params(rr);
        Ok(plan)
    }
}

/// The warm-up: `-O`, or the first interval of a test over two intervals long.
pub(super) fn warm_up(common: &CommonArgs, plan: &RunPlan) -> anyhow::Result<u64> {
    let (duration, interval) = (plan.spec.duration_ms, plan.spec.interval_ms);
    match common.omit {
        None if duration > 2 * interval => Ok(interval),
        omit => crate::test_args::omit::omit_ms(omit, &plan.spec, false),
    }
}

/// `--tps`: transactions a second per stream, 1 to 10M.
pub(super) fn tps(text: Option<&str>) -> anyhow::Result<Option<u64>> {
    let Some(t) = text else { return Ok(None) };
    let v = parse_bits_per_sec(t).map_err(|e| anyhow::anyhow!("--tps {t}: {e}"))?;
    if v == 0 || v > 10_000_000 {
        anyhow::bail!("--tps {t}: must be between 1 and 10M transactions per second");
    }
    Ok(Some(v))
}
