//! The command line of `linerate rfc2544` (clap derive; the doc comments are the help) and its
//! validation into an [`Rfc2544Plan`]: frame sizes, loss, resolution, trial length and the
//! UDP test each trial runs, built from test-command words so it reuses their validation.
//! Everything is checked here, before anything runs.

use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;
use sweep::plan::{FramePlan, Rfc2544Plan};
use sweep::values::{parse_list, ValueUnit};
use sweep::ProbePlan;
use wire::spec::TestKind;

use super::args::{base_of, defaults, parse_duration, BaseTest, OutputArgs};
use crate::connection_args::ConnectionArgs;
use crate::measuring::MeasuringArgs;
use crate::store_args::StoreArgs;
use crate::test_args::UdpArgs;

/// `linerate rfc2544`.
#[derive(Debug, Args)]
pub struct Rfc2544Args {
    /// Where to connect.
    #[command(flatten)]
    pub conn: ConnectionArgs,
    /// Ethernet frame sizes in bytes, FCS included, increasing (UDP payload = frame − 46 for
    /// IPv4, − 66 for IPv6).
    #[arg(
        long,
        value_name = "BYTES,...",
        default_value = "64,128,256,512,1024,1280,1518"
    )]
    pub frame: String,
    /// Largest lost share of frames that still passes a trial, percent (RFC 2544: 0).
    #[arg(long, value_name = "PERCENT", default_value_t = 0.0)]
    pub loss: f64,
    /// Length of each trial: 10s, 500ms, 30 (seconds).
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub trial: String,
    /// Stop searching when the best pass is within this many percent of the lowest failure.
    #[arg(long, value_name = "PERCENT", default_value_t = 0.5)]
    pub resolution: f64,
    /// Most trials per frame size.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_trials: u32,
    /// Link speed (bits/s; K, M, G, T): the first trial offers its line rate, and the table
    /// shows the theoretical frame rate beside each result.
    #[arg(long, value_name = "BITS_PER_SEC")]
    pub link_speed: Option<String>,
    /// Parallel streams (the rate is split over them).
    #[arg(
        long = "parallel",
        short = 'P',
        value_name = "STREAMS",
        default_value_t = 1
    )]
    pub parallel: u32,
    /// Datagrams per sendmmsg/recvmmsg call (a paced sender sends a batch back to back).
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub batch: u16,
    /// Accepted from older scripts and ignored: every trial sends each frame as a datagram of
    /// its own (no UDP GSO), so a qdisc, a NIC and the counts see frames, not batches of them.
    #[arg(long, hide = true)]
    pub no_gso: bool,
    /// How each trial sends, as `pps --engine`: with packet or xdp its frames are built here
    /// and also counted at the server's driver (serve --frames), which splits a trial's loss
    /// into the path's and the receiving host's.
    #[arg(long, value_name = "ENGINE", default_value = "socket")]
    pub engine: wire::spec::UdpEngine,
    /// Skip the latency run at each answer.
    #[arg(long)]
    pub no_latency: bool,
    /// Output format.
    #[command(flatten)]
    pub output: OutputArgs,
    /// Results database.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// A validated rfc2544 run and the test it is built on.
#[derive(Debug, Clone)]
pub struct PreparedRfc2544 {
    /// The search.
    pub plan: Rfc2544Plan,
    /// The first frame size's test (for resolving the target).
    pub base: BaseTest,
}

impl Rfc2544Args {
    /// Validates frames, loss, trial length and the UDP test.
    pub fn plan(&self) -> Result<PreparedRfc2544> {
        let frames = parse_list("--frame", &self.frame, ValueUnit::Count)?;
        if !(self.loss.is_finite() && (0.0..100.0).contains(&self.loss)) {
            bail!(
                "--loss {}: a percentage of frames, at least 0 and below 100",
                self.loss
            );
        }
        if !(self.resolution.is_finite() && self.resolution > 0.0 && self.resolution <= 50.0) {
            bail!(
                "--resolution {}: a percentage above 0 and at most 50, e.g. 0.5",
                self.resolution
            );
        }
        if self.max_trials == 0 || self.max_trials > 100 {
            bail!("--max-trials {}: between 1 and 100", self.max_trials);
        }
        let trial = parse_duration("--trial", &self.trial)?;
        let base = self.trial_test(trial)?;
        let link = base.plan.spec.link_speed_bps;
        let sizes: Vec<u32> = frames
            .iter()
            .map(|f| f.number.unwrap_or(0.0) as u32)
            .collect();
        let frames = FramePlan::for_sizes(&sizes, self.conn.ipv6, &base.plan.spec, link)?;
        let latency = (!self.no_latency).then(|| {
            (
                ProbePlan {
                    kind: TestKind::UdpRr,
                    rate_per_s: 100,
                    bytes: 64,
                    idle: Duration::from_secs(1),
                },
                trial.as_millis() as u64,
            )
        });
        Ok(PreparedRfc2544 {
            plan: Rfc2544Plan {
                frames,
                loss_ratio: self.loss / 100.0,
                resolution: self.resolution / 100.0,
                max_trials: self.max_trials,
                latency,
                link_speed_bps: link,
            },
            base,
        })
    }

    /// The UDP test of every trial, `trial` long, at the sender's top speed (the search sets
    /// the rate of each trial).
    fn trial_test(&self, trial: Duration) -> Result<BaseTest> {
        let mut a: UdpArgs = defaults()?;
        a.common.share(&self.conn, trial.as_secs_f64());
        a.common.parallel = self.parallel;
        a.common.link_speed = self.link_speed.clone();
        a.rate = Some("max".into());
        a.batch = self.batch;
        a.no_gso = true;
        a.engine = self.engine;
        base_of(MeasuringArgs::Udp(a))
    }
}
