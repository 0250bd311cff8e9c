//! Executors: run a [`SweepPlan`], a repetition or an [`Rfc2544Plan`](crate::Rfc2544Plan)
//! (`frames.rs`) point by point through a [`PointRunner`], which runs one test and stores it.
//! The binary's runner runs `client::run`, then stores into the results database; tests use a
//! mock.
//!
//! Invariants:
//! - every finished point is kept: Ctrl-C (checked between runs, and seen in an interrupted
//!   run's record), a failed run or a failed knob command stop the sweep and set
//!   [`Stopped`], but return every point run until then;
//! - `--post` runs whenever `--pre` succeeded, even if the point's test failed, so a knob is
//!   put back;
//! - every stored run is tagged `sweep=<kind>`, `sweep_id=<start ms>` and
//!   `<parameter>=<value>` (the value in the parameter's unit: `window_bytes=65536` for `64K`;
//!   a knob's as given; plus `repeat=<n>` when repeated), so the points of one sweep can
//!   be found again with `linerate runs --tag sweep_id=…`.

use std::error::Error;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use analysis::metric_id::summarized_figures;
use analysis::repeat::{primary_metric, RepeatPlan, RepeatSummary};
use events::Observer;
use record::RunRecord;
use serde::{Deserialize, Serialize};
use wire::spec::{DataPath, FamilyId};
use wire::TestSpec;

use crate::interrupt::Interrupt;
use crate::knob::{self, Phase};
use crate::plan::{PlannedPoint, SweepPlan};
use crate::probe::ProbePlan;
use crate::progress::PointData;
use crate::result::{PointRun, Stopped, SweepKind, SweepPoint, SweepResult, SweepSummary};

/// One test to run, with the tags to store it under.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The test.
    pub spec: TestSpec,
    /// Extra tags for the stored run (the user's `--tag`s are the runner's business).
    pub tags: Vec<(String, String)>,
    /// Latency probes beside the test (`--latency`), if any.
    pub probe: Option<ProbePlan>,
}

/// A finished (or interrupted) run.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The run.
    pub record: RunRecord,
    /// Its id in the results database, when stored.
    pub run_id: Option<i64>,
}

/// Why a runner could not run or store a point: its own error, whatever the runner is. The
/// executors only record it, as one line with its sources ([`Stopped::Failed`]).
pub type RunError = Box<dyn Error + Send + Sync + 'static>;

/// Runs one test and stores it.
pub trait PointRunner {
    /// Runs `point` to the end (or until interrupted: the record says so) and stores it.
    fn run(&mut self, point: &Point) -> Result<Measured, RunError>;
    /// Where the tests go, for the results (`HOST:PORT`, `… (in-process server)`).
    fn target(&self) -> String {
        String::new()
    }
    /// The largest UDP payload the path carries unfragmented, if known.
    fn max_udp_payload(&self) -> Option<u32> {
        None
    }
}

/// `e` and its sources on one line, `outer: inner: …` (as `anyhow` prints `{:#}`).
pub(crate) fn one_line(e: &RunError) -> String {
    let mut line = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        line.push_str(": ");
        line.push_str(&s.to_string());
        source = s.source();
    }
    line
}

pub(crate) fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The `kind` of a `--repeat` document (JSON `"repeat"`), so readers can tell the documents apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepeatDocument {
    /// Runs of one test.
    Repeat,
}

/// Runs of one test, repeated as a [`RepeatPlan`] says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatResult {
    /// Always `repeat`: what the document is.
    pub kind: RepeatDocument,
    /// The test.
    pub test: wire::TestKind,
    /// Where the server was.
    pub target: String,
    /// Every run, in order.
    pub runs: Vec<PointRun>,
    /// Statistics over the runs that finished.
    pub summary: Option<RepeatSummary>,
    /// Why it ended early, if it did.
    pub stopped: Option<Stopped>,
}

struct Repeated {
    runs: Vec<PointRun>,
    summary: Option<RepeatSummary>,
    stopped: Option<Stopped>,
}

/// Runs `point` until `plan` is satisfied; `after_run(run, seconds)` follows each run (its
/// index is its place in the runs).
fn repeat_runs(
    point: &Point,
    plan: &RepeatPlan,
    runner: &mut dyn PointRunner,
    interrupt: &dyn Interrupt,
    after_run: &mut dyn FnMut(usize, &PointRun, f64),
) -> Repeated {
    let primary = primary_metric(point.spec.kind());
    let mut runs: Vec<PointRun> = Vec::new();
    let mut values = Vec::new();
    let mut stopped = None;
    loop {
        if interrupt.is_raised() {
            stopped = Some(Stopped::Interrupted);
            break;
        }
        let mut this = point.clone();
        if plan.repeats() {
            this.tags
                .push(("repeat".into(), (runs.len() + 1).to_string()));
        }
        let started = Instant::now();
        match runner.run(&this) {
            Err(_) if interrupt.is_raised() => {
                stopped = Some(Stopped::Interrupted);
                break;
            }
            Err(e) => {
                stopped = Some(Stopped::Failed {
                    message: one_line(&e),
                });
                break;
            }
            Ok(m) => {
                let interrupted = m.record.summary.interrupted;
                let value = summarized_figures(&m.record)
                    .iter()
                    .find(|(k, _)| *k == primary)
                    .map_or(0.0, |(_, v)| *v);
                values.push(value);
                runs.push(PointRun {
                    run_id: m.run_id,
                    record: m.record,
                });
                if let Some(run) = runs.last() {
                    after_run(runs.len() - 1, run, started.elapsed().as_secs_f64());
                }
                if interrupted {
                    stopped = Some(Stopped::Interrupted);
                    break;
                }
            }
        }
        if !plan.wants_another(&values) {
            break;
        }
    }
    let finished: Vec<&RunRecord> = runs
        .iter()
        .map(|r| &r.record)
        .filter(|r| !r.summary.interrupted)
        .collect();
    Repeated {
        summary: RepeatSummary::of(&finished, plan, summarized_figures),
        runs,
        stopped,
    }
}

/// `linerate tcp|udp|rr … --repeat N [--until-ci L:P]`: `point` run as `plan` says, one
/// progress step per run.
pub fn run_repeated(
    point: &Point,
    plan: &RepeatPlan,
    runner: &mut dyn PointRunner,
    interrupt: &dyn Interrupt,
    progress: &mut dyn Observer,
) -> RepeatResult {
    let per_run = crate::plan::planned_test_seconds(&point.spec);
    progress.begin(
        &format!("linerate {} x{}", point.spec.kind().as_str(), plan.runs),
        &vec![per_run; plan.runs as usize],
        &[],
    );
    let mut point = point.clone();
    point
        .tags
        .push(("repeat_id".into(), now_unix_ms().to_string()));
    let label = point.spec.kind().as_str();
    let out = repeat_runs(&point, plan, runner, interrupt, &mut |i, run, secs| {
        let label = format!("{label} run {}", i + 1);
        progress.point_done(i, &label, secs);
        PointData::Run(run).report(progress, i, &label);
    });
    progress.finish();
    RepeatResult {
        kind: RepeatDocument::Repeat,
        test: point.spec.kind(),
        target: runner.target(),
        runs: out.runs,
        summary: out.summary,
        stopped: out.stopped,
    }
}

/// `plan` without the sizes a UDP path would fragment (a UDP size sweep), and a note saying
/// how many were left out.
fn fit_to_path(plan: &SweepPlan, runner: &dyn PointRunner) -> (SweepPlan, Vec<String>) {
    let mut plan = plan.clone();
    let mut notes = Vec::new();
    if plan.kind == SweepKind::Size && plan.test().is_some_and(|k| k.row().path == DataPath::Udp) {
        if let Some(limit) = runner.max_udp_payload() {
            let before = plan.points.len();
            plan.points
                .retain(|p| p.value.number.is_some_and(|n| n <= f64::from(limit)));
            if plan.points.len() < before {
                notes.push(format!(
                    "{} sizes above {limit} bytes left out: the path's MTU leaves {limit} bytes of UDP payload",
                    before - plan.points.len()
                ));
            }
        }
    }
    (plan, notes)
}

/// Runs a sweep point by point; see the module docs for what stops it and what is kept.
pub fn run_sweep(
    plan: &SweepPlan,
    runner: &mut dyn PointRunner,
    interrupt: &dyn Interrupt,
    progress: &mut dyn Observer,
) -> SweepResult {
    run_sweep_at(plan, now_unix_ms(), runner, interrupt, progress)
}

/// [`run_sweep`] of a sweep that began at `started_at_unix_ms` (its `sweep_id`).
pub(crate) fn run_sweep_at(
    plan: &SweepPlan,
    started_at_unix_ms: u64,
    runner: &mut dyn PointRunner,
    interrupt: &dyn Interrupt,
    progress: &mut dyn Observer,
) -> SweepResult {
    let (plan, notes) = fit_to_path(plan, runner);
    let parameter = plan.kind.parameter();
    let test = plan.test().unwrap_or(wire::TestKind::TcpStream);
    let mut result = SweepResult {
        knob: plan.knob.clone(),
        notes: notes.clone(),
        ..SweepResult::begun(plan.kind, test, runner.target(), started_at_unix_ms)
    };
    progress.begin(
        &format!("linerate {}", result.kind.name().replace('_', " ")),
        &plan.planned_seconds(),
        &[],
    );
    for note in &notes {
        progress.note(&format!("linerate: note: {note}"));
    }
    let sweep_tags = [
        (
            "sweep".to_string(),
            result.kind.name().trim_start_matches("sweep_").to_string(),
        ),
        ("sweep_id".to_string(), result.sweep_id.clone()),
    ];
    for (i, planned) in plan.points.iter().enumerate() {
        if interrupt.is_raised() {
            result.stopped = Some(Stopped::Interrupted);
            break;
        }
        let label = format!("{parameter}={}", planned.value.label);
        progress.point_started(i, &label);
        let t0 = Instant::now();
        let (point, stop) = run_point(&plan, planned, &label, &sweep_tags, runner, interrupt);
        let measured = point.is_some();
        result.points.extend(point);
        progress.point_done(i, &label, t0.elapsed().as_secs_f64());
        if let Some(p) = result.points.last().filter(|_| measured) {
            PointData::Sweep(p).report(progress, i, &label);
        }
        if let Some(s) = stop {
            // A failure is said once, by the command's error after the points are printed.
            result.stopped = Some(s);
            break;
        }
    }
    result.summary = SweepSummary::of(plan.kind, &result.points);
    progress.finish();
    result
}

/// Runs one point (`label`, e.g. `streams=4`): `--pre`, its tests, then `--post` whenever
/// `--pre` succeeded. Returns the point (`None` when nothing ran) and why the sweep must stop,
/// if it must.
fn run_point(
    plan: &SweepPlan,
    planned: &PlannedPoint,
    label: &str,
    sweep_tags: &[(String, String)],
    runner: &mut dyn PointRunner,
    interrupt: &dyn Interrupt,
) -> (Option<SweepPoint>, Option<Stopped>) {
    let value = &planned.value.label;
    let mut knob_runs = Vec::new();
    let mut stop = None;
    if let Some(k) = &plan.knob {
        let run = knob::run_command(
            Phase::Pre,
            &k.pre.render(value),
            value,
            k.timeout(),
            interrupt,
        );
        stop = match run.failure(value) {
            Some(_) if interrupt.is_raised() => Some(Stopped::Interrupted),
            failed => failed.map(|message| Stopped::Failed { message }),
        };
        knob_runs.push(run);
    }
    let (mut runs, mut repeats) = (Vec::new(), Vec::new());
    if stop.is_none() {
        let mut tags = sweep_tags.to_vec();
        tags.push((
            plan.kind.parameter().to_string(),
            tag_value(&planned.value, plan.kind),
        ));
        // The knob command that set this point, its exit status and output, stored with
        // every run of the point (the sweep's JSON keeps them whole, --post's too).
        if let Some(pre) = knob_runs.first() {
            tags.extend(knob_tags(pre));
        }
        (runs, repeats, stop) = run_tests(plan, planned, &tags, label, runner, interrupt);
        if let Some(
            k @ knob::KnobPlan {
                post: Some(post), ..
            },
        ) = &plan.knob
        {
            let run = knob::run_command(
                Phase::Post,
                &post.render(value),
                value,
                k.timeout(),
                interrupt,
            );
            if stop.is_none() {
                stop = run
                    .failure(value)
                    .map(|message| Stopped::Failed { message });
            }
            knob_runs.push(run);
        }
    }
    let mut point = SweepPoint::new(planned.value.clone(), runs);
    point.repeat = repeats;
    point.knob = knob_runs;
    let ran = !point.runs.is_empty() || !point.knob.is_empty();
    (ran.then_some(point), stop)
}

/// Runs a point's tests in order, each as often as the plan says, until one stops: their runs,
/// with `--repeat` their statistics, and why they stopped, if they did.
fn run_tests(
    plan: &SweepPlan,
    planned: &PlannedPoint,
    tags: &[(String, String)],
    label: &str,
    runner: &mut dyn PointRunner,
    interrupt: &dyn Interrupt,
) -> (Vec<PointRun>, Vec<RepeatSummary>, Option<Stopped>) {
    let (mut runs, mut repeats) = (Vec::new(), Vec::new());
    for spec in &planned.specs {
        let point = Point {
            spec: spec.clone(),
            tags: tags.to_vec(),
            probe: plan
                .probe
                .filter(|_| spec.kind().row().family != FamilyId::Transaction),
        };
        let out = repeat_runs(&point, &plan.repeat, runner, interrupt, &mut |_, _, _| {});
        runs.extend(out.runs);
        if plan.repeat.repeats() {
            repeats.extend(out.summary);
        }
        if let Some(s) = out.stopped {
            let stop = match s {
                Stopped::Failed { message } => Stopped::Failed {
                    message: format!("{label}: {message}"),
                },
                other => other,
            };
            return (runs, repeats, Some(stop));
        }
    }
    (runs, repeats, None)
}

/// Tags recording a `--pre` command's run: `knob_pre` (the command), `knob_pre_exit`, and
/// `knob_pre_output` (stdout then stderr, lines joined with ` | `, at most 500 characters).
fn knob_tags(run: &knob::KnobRun) -> Vec<(String, String)> {
    let output: String = format!("{}\n{}", run.stdout.trim(), run.stderr.trim())
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" | ")
        .chars()
        .take(500)
        .collect();
    vec![
        ("knob_pre".to_string(), run.argv.join(" ")),
        (
            "knob_pre_exit".to_string(),
            run.exit_code.map_or("none".to_string(), |c| c.to_string()),
        ),
        ("knob_pre_output".to_string(), output),
    ]
}

/// A value as its tag: in the parameter's unit (`window_bytes=1048576` for `1M`), the text
/// as given for a knob.
fn tag_value(value: &crate::values::SweepValue, kind: SweepKind) -> String {
    match value.number {
        Some(n) if kind != SweepKind::Knob && n.fract() == 0.0 && n.abs() < 1e18 => {
            format!("{}", n as i64)
        }
        _ => value.label.clone(),
    }
}

mod frames;
#[cfg(test)]
mod tests;

pub use frames::run_rfc2544;
