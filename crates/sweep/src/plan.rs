//! Validated sweeps, ready to run: what `args.rs` builds from the command line and `run.rs`
//! executes. Everything a user can get wrong has been checked by the time a plan exists.

use wire::TestSpec;

use crate::knob::KnobPlan;
use crate::probe::ProbePlan;
use crate::result::SweepKind;
use crate::values::SweepValue;
use analysis::repeat::RepeatPlan;

/// What a test takes beyond its duration, as planned: its control connection, the hello and
/// the exchange of results. A test on loopback took 0.03-0.06 s more than its duration; 0.1 s
/// leaves a network's round trips room. (At 1 s, a `pps` matrix of 21 one-second cells was
/// planned at ~42 s and took 22 s.) The time left shown while points run is scaled by what
/// the points so far really took (`report::live_bar::Eta`).
pub const SETUP_S: f64 = 0.1;

/// The seconds a test of `spec` is planned to take: its duration (a warm-up is within it) and
/// its setup.
pub fn planned_test_seconds(spec: &TestSpec) -> f64 {
    spec.duration_ms as f64 / 1000.0 + SETUP_S
}

/// One value of a sweep and the tests it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedPoint {
    /// The value.
    pub value: SweepValue,
    /// The tests, in order (a size point: the stream test, then the request/response test).
    pub specs: Vec<TestSpec>,
}

/// A validated sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPlan {
    /// What is swept.
    pub kind: SweepKind,
    /// The points, in order.
    pub points: Vec<PlannedPoint>,
    /// Runs per test.
    pub repeat: RepeatPlan,
    /// `sweep knob`: the commands.
    pub knob: Option<KnobPlan>,
    /// `--latency` of the test after `--`: probes beside every stream run.
    pub probe: Option<ProbePlan>,
}

impl SweepPlan {
    /// The test of the first spec of each point (size sweeps: the stream test).
    pub fn test(&self) -> Option<wire::TestKind> {
        self.points
            .first()
            .and_then(|p| p.specs.first())
            .map(|s| s.kind())
    }

    /// Planned seconds per point: test durations × the runs expected (the minimum for
    /// `--until-ci`), plus each run's setup ([`SETUP_S`]).
    pub fn planned_seconds(&self) -> Vec<f64> {
        let runs = match self.repeat.ci {
            Some(_) => f64::from(self.repeat.runs.min(analysis::repeat::MIN_RUNS_FOR_CI)),
            None => f64::from(self.repeat.runs),
        };
        let probe_idle = self.probe.map_or(0.0, |p| p.idle.as_secs_f64());
        self.points
            .iter()
            .map(|p| {
                p.specs
                    .iter()
                    .map(|s| (planned_test_seconds(s) + probe_idle) * runs)
                    .sum()
            })
            .collect()
    }
}

/// One frame size of an rfc2544 run.
#[derive(Debug, Clone, PartialEq)]
pub struct FramePlan {
    /// Ethernet frame size, FCS included, bytes.
    pub frame_bytes: u32,
    /// UDP payload, bytes.
    pub payload_bytes: u32,
    /// The trial's test (udp_stream; the search sets its rate).
    pub spec: TestSpec,
    /// The line rate at this size, frames/s (`--link-speed`).
    pub line_rate_pps: Option<f64>,
}

/// A validated `linerate rfc2544`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rfc2544Plan {
    /// Frame sizes, in order.
    pub frames: Vec<FramePlan>,
    /// Allowed loss, a share of frames sent (0.0 to 1.0).
    pub loss_ratio: f64,
    /// Search resolution, a share of the rate.
    pub resolution: f64,
    /// Most trials per frame size.
    pub max_trials: u32,
    /// The latency run at each answer: its probe and duration (`None`: `--no-latency`).
    pub latency: Option<(ProbePlan, u64)>,
    /// `--link-speed`, bits/s.
    pub link_speed_bps: Option<u64>,
}

impl Rfc2544Plan {
    /// Planned seconds per frame size: about eight trials and the latency run.
    pub fn planned_seconds(&self) -> Vec<f64> {
        let latency = self.latency.map_or(0.0, |(p, ms)| {
            p.idle.as_secs_f64() + ms as f64 / 1000.0 + SETUP_S
        });
        self.frames
            .iter()
            .map(|f| {
                let trials = if f.line_rate_pps.is_some() { 6.0 } else { 7.0 };
                trials * planned_test_seconds(&f.spec) + latency
            })
            .collect()
    }
}

/// Why a `--frame` size cannot be a UDP test's frame (`rfc2544`, `pps`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameSizeError {
    /// Below Ethernet's minimum.
    #[error("--frame {0}: Ethernet frames are at least 64 bytes")]
    Short(u32),
    /// No room for linerate's data header above the family's headers.
    #[error("--frame {frame}: too small; {family} headers take {overhead} bytes and linerate's header {header}, so the minimum is {min}")]
    NoHeader {
        /// The size asked for.
        frame: u32,
        /// "IPv4/UDP" or "IPv6/UDP".
        family: &'static str,
        /// Ethernet, IP and UDP headers and the FCS, bytes.
        overhead: u32,
        /// linerate's data header, bytes.
        header: u32,
        /// The smallest frame that holds it.
        min: u32,
    },
    /// A payload larger than a UDP datagram holds.
    #[error("--frame {0}: above the largest UDP datagram")]
    Large(u32),
}

/// The UDP payload of a `frame`-byte Ethernet frame (FCS included) over IPv4 or `ipv6`.
pub fn frame_payload(frame: u32, ipv6: bool) -> Result<u32, FrameSizeError> {
    if frame < 64 {
        return Err(FrameSizeError::Short(frame));
    }
    let header = wire::datagram::HEADER_LEN as u32;
    let payload = measure::line_rate::udp_payload(frame, ipv6)
        .filter(|p| *p >= header)
        .ok_or_else(|| {
            let overhead = if ipv6 { 66 } else { 46 };
            FrameSizeError::NoHeader {
                frame,
                family: if ipv6 { "IPv6/UDP" } else { "IPv4/UDP" },
                overhead,
                header,
                min: overhead + header,
            }
        })?;
    match payload {
        0..=65_507 => Ok(payload),
        _ => Err(FrameSizeError::Large(frame)),
    }
}

impl FramePlan {
    /// A plan per frame size of `frames`: its payload, `base` with that payload, its line rate
    /// at `link_bps`.
    pub fn for_sizes(
        frames: &[u32],
        ipv6: bool,
        base: &TestSpec,
        link_bps: Option<u64>,
    ) -> Result<Vec<Self>, FrameSizeError> {
        frames
            .iter()
            .map(|&frame| {
                let payload = frame_payload(frame, ipv6)?;
                let mut spec = base.clone();
                spec.set_message_len_bytes(payload);
                Ok(Self {
                    frame_bytes: frame,
                    payload_bytes: payload,
                    spec,
                    line_rate_pps: link_bps.map(|l| measure::line_rate::pps(l as f64, frame)),
                })
            })
            .collect()
    }
}
