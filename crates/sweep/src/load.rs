//! `linerate sweep load`: round trips against offered load. The test's capacity is measured
//! first (the test unpaced, or `--capacity`), then the test runs paced at each share of it and
//! the round trips are read at each point: a stream test's `--latency` probes beside the paced
//! load, a request/response test's own transactions (started on a schedule at the offered
//! rate; TCP rr and crr keep one in flight per stream, see docs/METHODOLOGY.md 15.5).
//!
//! Definitions (docs/METHODOLOGY.md, "Latency against offered load"):
//! - the capacity: a stream test's receiver goodput (bits/s), a request/response test's
//!   transactions/s, over all streams;
//! - a point's offered load: capacity × its share, split evenly over the streams (a stream
//!   test's pacing rate, a UDP test's rate, a request/response test's transactions/s);
//! - the knee: the first point whose median round trip is at least [`KNEE_FACTOR`] times the
//!   lowest load's: where queueing starts to dominate. The median, not the p99: a bursty sender
//!   (UDP's batches, TSO) lifts the tail of a lightly loaded path already, while the median
//!   rises only once a standing queue forms.

use events::Observer;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use wire::spec::{Direction, FamilyId, TestKind, UdpRate};
use wire::TestSpec;

use crate::interrupt::Interrupt;
use crate::plan::{PlannedPoint, SweepPlan};
use crate::probe::ProbePlan;
use crate::result::{PointRun, Stopped, SweepKind, SweepPoint, SweepResult};
use crate::run::{now_unix_ms, one_line, run_sweep_at, Point, PointRunner};
use crate::values::SweepValue;
use analysis::repeat::RepeatPlan;

/// The knee: a point's median round trip at least this many times the lowest load's.
pub const KNEE_FACTOR: f64 = 2.0;
/// The largest share of the capacity a point may offer, percent.
pub const MAX_LOAD_PCT: f64 = 400.0;

/// A `sweep load` that cannot run; the message names what to change.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum LoadError {
    /// A share above [`MAX_LOAD_PCT`].
    #[error("--values {label}: a load is a share of the capacity, at most {MAX_LOAD_PCT}%")]
    TooHigh {
        /// The value as given.
        label: String,
    },
    /// A bidirectional test: its two directions share one capacity figure.
    #[error(
        "sweep load: the test after -- is --bidir; load one direction (drop --bidir, or use -R)"
    )]
    Bidir,
    /// `--capacity` that is not a positive number.
    #[error("--capacity {0}: give the capacity as a positive rate (bits/s for tcp and udp, transactions/s for rr and crr)")]
    Capacity(String),
}

/// The load a point offers: `pct` percent of `capacity`, in the capacity's unit.
pub fn offered(capacity: f64, pct: f64) -> f64 {
    capacity * pct / 100.0
}

/// What the capacity and the offered loads count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadUnit {
    /// Stream tests: receiver goodput, bits/s.
    BitsPerS,
    /// Request/response tests: transactions/s.
    TransactionsPerS,
}

impl LoadUnit {
    /// The unit of a `kind` test's load.
    pub fn of(kind: TestKind) -> Self {
        match kind.row().family {
            FamilyId::Transaction => LoadUnit::TransactionsPerS,
            FamilyId::Stream | FamilyId::Datagram => LoadUnit::BitsPerS,
        }
    }

    /// `v` in this unit, as the table and the notes show it: `9.41 Gbit/s`, `25000/s`.
    pub fn rate_text(self, v: f64) -> String {
        match self {
            LoadUnit::BitsPerS => measure::units::format_bits_per_sec(v),
            LoadUnit::TransactionsPerS => format!("{v:.0}/s"),
        }
    }
}

/// A validated `sweep load`.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPlan {
    /// The test after `--`; its rate is replaced at each point.
    pub base: TestSpec,
    /// The shares of the capacity, percent, increasing.
    pub loads: Vec<SweepValue>,
    /// `--capacity`, in the test's [`LoadUnit`]; `None`: measured first.
    pub capacity: Option<f64>,
    /// Runs per point.
    pub repeat: RepeatPlan,
    /// A stream test's round-trip probes.
    pub probe: Option<ProbePlan>,
}

impl LoadPlan {
    /// Checks the shares and the test.
    pub fn new(
        base: TestSpec,
        loads: Vec<SweepValue>,
        capacity: Option<f64>,
        repeat: RepeatPlan,
        probe: Option<ProbePlan>,
    ) -> Result<Self, LoadError> {
        if let Some(v) = loads
            .iter()
            .find(|v| v.number.is_none_or(|n| n > MAX_LOAD_PCT))
        {
            return Err(LoadError::TooHigh {
                label: v.label.clone(),
            });
        }
        if base.direction() == Direction::Bidir {
            return Err(LoadError::Bidir);
        }
        if let Some(c) = capacity.filter(|c| !c.is_finite() || *c <= 0.0) {
            return Err(LoadError::Capacity(c.to_string()));
        }
        // A request/response test's own transactions are its round trips.
        let rr = base.kind().row().family == FamilyId::Transaction;
        Ok(Self {
            base,
            loads,
            capacity,
            repeat,
            probe: probe.filter(|_| !rr),
        })
    }
}

/// `spec` unpaced: as fast as it goes (the capacity run).
pub fn unpaced(spec: &TestSpec) -> TestSpec {
    let mut s = spec.clone();
    if let Some(tcp) = s.tcp_mut() {
        tcp.pacing_bps = None;
        tcp.reverse_pacing_bps = None;
    }
    if let Some(udp) = s.udp_mut() {
        udp.rate = UdpRate::Max;
        udp.reverse_rate = None;
    }
    if let Some(rr) = s.params.rr_mut() {
        rr.transactions_per_sec = None;
    }
    s
}

/// `spec` offering `total` (in its [`LoadUnit`]) over all its streams.
pub fn paced(spec: &TestSpec, total: f64) -> TestSpec {
    let per_stream = (total / f64::from(spec.streams.max(1))).round().max(1.0) as u64;
    let mut s = unpaced(spec);
    if s.kind().row().family == FamilyId::Transaction {
        if let Some(rr) = s.params.rr_mut() {
            rr.transactions_per_sec = Some(per_stream);
        }
    } else if let Some(udp) = s.udp_mut() {
        udp.rate = UdpRate::BitsPerSec(per_stream);
    } else if let Some(tcp) = s.tcp_mut() {
        tcp.pacing_bps = Some(per_stream);
    }
    s
}

/// One point's load and round trips.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoadFigures {
    /// The share of the capacity offered, percent.
    pub load_pct: f64,
    /// The load offered, in the sweep's unit.
    pub offered: f64,
    /// The load carried (receiver goodput or transactions/s), in the sweep's unit.
    pub achieved: Option<f64>,
    /// Median round trip, µs (the probes' under a stream load, the transactions' own).
    pub rtt_p50_us: Option<f64>,
    /// 99th-percentile round trip, µs.
    pub rtt_p99_us: Option<f64>,
}

/// The load sweep's own figures, beside its points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSummary {
    /// What the capacity and the loads count.
    pub unit: LoadUnit,
    /// The capacity every share is of.
    pub capacity: f64,
    /// Whether it was given (`--capacity`) rather than measured.
    pub capacity_given: bool,
    /// The unpaced run that measured it.
    pub capacity_run: Option<PointRun>,
    /// Each finished point's load and round trips, in order.
    pub points: Vec<LoadFigures>,
    /// The lowest load's median round trip, µs: the knee's reference.
    pub baseline_p50_us: Option<f64>,
    /// The knee: the share of the first point whose median is at least `knee_factor` × the
    /// baseline (absent: none was).
    pub knee_pct: Option<f64>,
    /// [`KNEE_FACTOR`].
    pub knee_factor: f64,
}

impl LoadSummary {
    /// The figures of `points` (run at shares of `capacity`).
    pub fn of(unit: LoadUnit, capacity: f64, points: &[SweepPoint]) -> Self {
        let figures: Vec<LoadFigures> = points
            .iter()
            .filter(|p| !p.interrupted && !p.runs.is_empty())
            .filter_map(|p| {
                let pct = p.value.number?;
                let stream = unit == LoadUnit::BitsPerS;
                Some(LoadFigures {
                    load_pct: pct,
                    offered: offered(capacity, pct),
                    achieved: if stream {
                        p.throughput_bps
                    } else {
                        p.transactions_per_s
                    },
                    rtt_p50_us: if stream {
                        p.loaded_rtt_p50_us
                    } else {
                        p.rtt_p50_us
                    },
                    rtt_p99_us: if stream {
                        p.loaded_rtt_p99_us
                    } else {
                        p.rtt_p99_us
                    },
                })
            })
            .collect();
        let baseline = figures.first().and_then(|f| f.rtt_p50_us);
        let knee_pct = baseline.and_then(|b| {
            figures
                .iter()
                .skip(1)
                .find(|f| f.rtt_p50_us.is_some_and(|p| p >= KNEE_FACTOR * b))
                .map(|f| f.load_pct)
        });
        Self {
            unit,
            capacity,
            capacity_given: false,
            capacity_run: None,
            points: figures,
            baseline_p50_us: baseline,
            knee_pct,
            knee_factor: KNEE_FACTOR,
        }
    }
}

impl LoadSummary {
    /// A note for each point up to the capacity that carried less than 90 % of the load it
    /// offered: its round trips are those of a lighter load than its label says.
    pub fn shortfalls(&self) -> Vec<String> {
        let rate = |v: f64| self.unit.rate_text(v);
        self.points
            .iter()
            .filter(|f| f.load_pct <= 100.0)
            .filter_map(|f| Some((f, f.achieved?)))
            .filter(|(f, got)| *got < 0.9 * f.offered)
            .map(|(f, got)| {
                format!(
                    "at {}% the test carried {} of the {} offered ({:.0}%): the sender did not keep its schedule",
                    f.load_pct,
                    rate(got),
                    rate(f.offered),
                    got / f.offered * 100.0
                )
            })
            .collect()
    }
}

/// Why the sweep ended at its capacity run, with that run when it finished (stored).
type CapacityStop = (Stopped, Option<Box<PointRun>>);

/// The capacity of `plan`'s test: given, or measured by one unpaced run (tagged
/// `load_pct=capacity`, its storing reported to `progress`). A stopped run is the sweep's end.
fn capacity(
    plan: &LoadPlan,
    sweep_id: &str,
    runner: &mut dyn PointRunner,
    interrupt: &dyn Interrupt,
    progress: &mut dyn Observer,
) -> Result<(f64, Option<PointRun>), CapacityStop> {
    if let Some(c) = plan.capacity {
        return Ok((c, None));
    }
    progress.note("linerate: measuring the capacity: the test unpaced");
    let point = Point {
        spec: unpaced(&plan.base),
        tags: vec![
            ("sweep".into(), "load".into()),
            ("sweep_id".into(), sweep_id.to_string()),
            ("load_pct".into(), "capacity".into()),
        ],
        probe: None,
    };
    let m = match runner.run(&point) {
        Err(_) if interrupt.is_raised() => return Err((Stopped::Interrupted, None)),
        Err(e) => {
            let message = format!(
                "the capacity run: {} (or give the capacity: --capacity RATE)",
                one_line(&e)
            );
            return Err((Stopped::Failed { message }, None));
        }
        Ok(m) => m,
    };
    if let Some(id) = m.run_id {
        progress.stored(id);
    }
    let s = &m.record.summary;
    let c = match LoadUnit::of(m.record.kind) {
        LoadUnit::BitsPerS => s.throughput_bps,
        LoadUnit::TransactionsPerS => s.rr().map_or(0.0, |r| r.transactions_per_s),
    };
    let interrupted = s.interrupted;
    let run = PointRun {
        run_id: m.run_id,
        record: m.record,
    };
    if interrupted {
        return Err((Stopped::Interrupted, Some(Box::new(run))));
    }
    if c.is_nan() || c <= 0.0 {
        let message = "the capacity run carried nothing; give --capacity".to_string();
        return Err((Stopped::Failed { message }, Some(Box::new(run))));
    }
    Ok((c, Some(run)))
}

/// Runs `plan`: the capacity, then each share of it; see the module docs.
pub fn run_load(
    plan: &LoadPlan,
    runner: &mut dyn PointRunner,
    interrupt: &dyn Interrupt,
    progress: &mut dyn Observer,
) -> SweepResult {
    let started = now_unix_ms();
    let unit = LoadUnit::of(plan.base.kind());
    let (capacity, capacity_run) =
        match capacity(plan, &started.to_string(), runner, interrupt, progress) {
            Ok(c) => c,
            Err((stopped, run)) => {
                return SweepResult {
                    stopped: Some(stopped),
                    // The capacity run, when it finished, is stored: kept with its id.
                    load: run.map(|run| LoadSummary {
                        capacity_run: Some(*run),
                        ..LoadSummary::of(unit, 0.0, &[])
                    }),
                    ..SweepResult::begun(
                        SweepKind::Load,
                        plan.base.kind(),
                        runner.target(),
                        started,
                    )
                };
            }
        };
    let sweep = plan.points_at(capacity);
    let mut r = run_sweep_at(&sweep, started, runner, interrupt, progress);
    let mut load = LoadSummary::of(unit, capacity, &r.points);
    load.capacity_given = plan.capacity.is_some();
    load.capacity_run = capacity_run;
    r.notes.extend(load.shortfalls());
    r.load = Some(load);
    r
}

impl LoadPlan {
    /// The sweep's points at shares of `capacity`.
    pub fn points_at(&self, capacity: f64) -> SweepPlan {
        SweepPlan {
            kind: SweepKind::Load,
            points: self
                .loads
                .iter()
                .map(|v| PlannedPoint {
                    value: v.clone(),
                    specs: vec![paced(
                        &self.base,
                        offered(capacity, v.number.unwrap_or(0.0)),
                    )],
                })
                .collect(),
            repeat: self.repeat,
            knob: None,
            probe: self.probe,
        }
    }
}

/// A load sweep's chart: round trips against the load, with the knee.
pub fn curve(r: &SweepResult) -> Option<report::chart::LoadCurve> {
    let load = r.load.as_ref()?;
    let capacity = match load.unit {
        LoadUnit::BitsPerS => measure::units::format_bits_per_sec(load.capacity),
        LoadUnit::TransactionsPerS => format!("{:.0} transactions/s", load.capacity),
    };
    Some(report::chart::LoadCurve {
        label: format!("{} {}", r.test.as_str(), r.target),
        capacity,
        points: load
            .points
            .iter()
            .map(|p| report::chart::LoadPoint {
                load_pct: p.load_pct,
                p50_us: p.rtt_p50_us,
                p99_us: p.rtt_p99_us,
            })
            .collect(),
        knee_pct: load.knee_pct,
        knee_rule: format!("p50 ≥ {}× the lowest load's", load.knee_factor),
    })
}

#[cfg(test)]
mod tests;
