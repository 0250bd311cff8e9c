//! Executors: run a [`SweepPlan`], a repetition or an [`Rfc2544Plan`] point by point through a
//! [`PointRunner`], which runs one test and stores it. [`ClientRunner`] is the real one
//! (`client::run`, then the results database); tests use a mock.
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

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use engine::Signal;
use results::store::{HostFacts, Tag, Tags};
use results::RunRecord;
use serde::{Deserialize, Serialize};
use wire::TestSpec;

use super::knob::{self, Phase};
use super::plan::{Rfc2544Plan, SweepPlan};
use super::progress::SweepProgress;
use super::result::{PointRun, Stopped, SweepKind, SweepPoint, SweepResult, SweepSummary};
use super::rfc2544::{
    FrameResult, LatencyAtRate, Offer, Rfc2544Result, Search, SearchConfig, TrialCounts,
};
use crate::client::{self, ClientConfig, Silent};
use crate::probe::{self, ProbePlan};
use crate::store_cmd::RunStore;
use crate::target::Target;
use analysis::repeat::{metrics_of, primary_metric, RepeatPlan, RepeatSummary};

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

/// Runs one test and stores it.
pub trait PointRunner {
    /// Runs `point` to the end (or until interrupted: the record says so) and stores it.
    fn run(&mut self, point: &Point) -> Result<Measured>;
    /// Where the tests go, for the results (`HOST:PORT`, `… (in-process server)`).
    fn target(&self) -> String {
        String::new()
    }
    /// The largest UDP payload the path carries unfragmented, if known.
    fn max_udp_payload(&self) -> Option<u32> {
        None
    }
}

/// The real runner: `client::run` (with `probe::run_with_probes` for `--latency`) against a
/// resolved target, then the results database.
pub struct ClientRunner {
    target: Target,
    label: String,
    interrupt: Signal,
    store: Option<RunStore>,
    facts: HostFacts,
}

impl ClientRunner {
    /// A runner against `target` (labelled `label` in records), storing into `store` (none with
    /// `--no-store`) with `facts` about this host.
    pub fn new(
        target: Target,
        label: String,
        interrupt: Signal,
        store: Option<RunStore>,
        facts: HostFacts,
    ) -> Self {
        Self {
            target,
            label,
            interrupt,
            store,
            facts,
        }
    }
}

impl PointRunner for ClientRunner {
    fn run(&mut self, point: &Point) -> Result<Measured> {
        let config = ClientConfig::new(
            self.target.clone(),
            self.label.clone(),
            point.spec.clone(),
            self.interrupt.clone(),
        );
        let record = match &point.probe {
            None => client::run(&config, &mut Silent)?,
            Some(p) => probe::run_with_probes(&config, p, &mut Silent)?,
        };
        let run_id = match &mut self.store {
            None => None,
            Some(store) => {
                let mut tags = Tags::new();
                for (key, value) in &point.tags {
                    // Keys are this module's constants; a repeated one keeps its first value.
                    let _ = tags.insert(Tag {
                        key: key.clone(),
                        value: value.clone(),
                    });
                }
                Some(store.save_with(&record, &self.facts, &tags)?.0)
            }
        };
        Ok(Measured { record, run_id })
    }

    fn target(&self) -> String {
        self.label.clone()
    }

    fn max_udp_payload(&self) -> Option<u32> {
        match &self.target {
            Target::Tcp { addr, .. } => engine::udp_socket::max_payload_to(*addr)
                .ok()
                .map(|m| m as u32),
            Target::Unix { .. } => None,
        }
    }
}

fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Runs of one test, repeated as a [`RepeatPlan`] says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatResult {
    /// Always `repeat`.
    pub kind: String,
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

/// Runs `point` until `plan` is satisfied; `after_run(index, seconds)` follows each run.
fn repeat_runs(
    point: &Point,
    plan: &RepeatPlan,
    runner: &mut dyn PointRunner,
    interrupt: &Signal,
    after_run: &mut dyn FnMut(usize, f64),
) -> Repeated {
    let primary = primary_metric(point.spec.kind);
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
                    message: format!("{e:#}"),
                });
                break;
            }
            Ok(m) => {
                let interrupted = m.record.summary.interrupted;
                let value = metrics_of(&m.record)
                    .iter()
                    .find(|(k, _)| *k == primary)
                    .map_or(0.0, |(_, v)| *v);
                values.push(value);
                runs.push(PointRun {
                    run_id: m.run_id,
                    record: m.record,
                });
                after_run(runs.len() - 1, started.elapsed().as_secs_f64());
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
        summary: RepeatSummary::of(&finished, plan),
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
    interrupt: &Signal,
    progress: &mut dyn SweepProgress,
) -> RepeatResult {
    let per_run = point.spec.duration_ms as f64 / 1000.0 + 1.0;
    progress.begin(
        &format!("linerate {} x{}", point.spec.kind.as_str(), plan.runs),
        &vec![per_run; plan.runs as usize],
    );
    let mut point = point.clone();
    point
        .tags
        .push(("repeat_id".into(), now_unix_ms().to_string()));
    let label = point.spec.kind.as_str();
    let out = repeat_runs(&point, plan, runner, interrupt, &mut |i, secs| {
        progress.point_done(i, &format!("{label} run {}", i + 1), secs);
    });
    progress.finish();
    RepeatResult {
        kind: "repeat".into(),
        test: point.spec.kind,
        target: runner.target(),
        runs: out.runs,
        summary: out.summary,
        stopped: out.stopped,
    }
}

/// Runs a sweep point by point; see the module docs for what stops it and what is kept.
pub fn run_sweep(
    plan: &SweepPlan,
    runner: &mut dyn PointRunner,
    interrupt: &Signal,
    progress: &mut dyn SweepProgress,
) -> SweepResult {
    let started_at_unix_ms = now_unix_ms();
    let sweep_id = started_at_unix_ms.to_string();
    let mut plan = plan.clone();
    let mut notes = Vec::new();
    if plan.kind == SweepKind::Size && plan.test().is_some_and(|k| k.is_udp()) {
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
    let parameter = plan.kind.parameter();
    let mut result = SweepResult {
        kind: plan.kind.name(),
        parameter: parameter.to_string(),
        test: plan.test().unwrap_or(wire::TestKind::TcpStream),
        target: runner.target(),
        sweep_id: sweep_id.clone(),
        started_at_unix_ms,
        knob: plan.knob.clone(),
        points: Vec::new(),
        summary: SweepSummary::default(),
        stopped: None,
        notes: notes.clone(),
    };
    progress.begin(
        &format!("linerate {}", result.kind.replace('_', " ")),
        &plan.planned_seconds(),
    );
    for note in &notes {
        progress.note(&format!("linerate: note: {note}"));
    }
    for (i, planned) in plan.points.iter().enumerate() {
        if interrupt.is_raised() {
            result.stopped = Some(Stopped::Interrupted);
            break;
        }
        let value = &planned.value.label;
        let label = format!("{parameter}={value}");
        progress.point_started(i, &label);
        let t0 = Instant::now();
        let mut knob_runs = Vec::new();
        let mut stop = None;
        let mut runs = Vec::new();
        let mut repeats = Vec::new();
        let pre_ok = match &plan.knob {
            None => true,
            Some(k) => {
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
                stop.is_none()
            }
        };
        if pre_ok {
            let mut base_tags = vec![
                (
                    "sweep".to_string(),
                    result.kind.trim_start_matches("sweep_").to_string(),
                ),
                ("sweep_id".to_string(), sweep_id.clone()),
                (parameter.to_string(), tag_value(&planned.value, plan.kind)),
            ];
            // The knob command that set this point, its exit status and output, stored with
            // every run of the point (the sweep's JSON keeps them whole, --post's too).
            if let Some(pre) = knob_runs.first() {
                base_tags.extend(knob_tags(pre));
            }
            for spec in &planned.specs {
                let point = Point {
                    spec: spec.clone(),
                    tags: base_tags.clone(),
                    probe: plan.probe.filter(|_| !spec.kind.is_rr()),
                };
                let out = repeat_runs(&point, &plan.repeat, runner, interrupt, &mut |_, _| {});
                runs.extend(out.runs);
                if plan.repeat.repeats() {
                    repeats.extend(out.summary);
                }
                if let Some(s) = out.stopped {
                    stop = Some(match s {
                        Stopped::Failed { message } => Stopped::Failed {
                            message: format!("{label}: {message}"),
                        },
                        other => other,
                    });
                    break;
                }
            }
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
        if !point.runs.is_empty() || !point.knob.is_empty() {
            result.points.push(point);
        }
        progress.point_done(i, &label, t0.elapsed().as_secs_f64());
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
fn tag_value(value: &super::values::SweepValue, kind: SweepKind) -> String {
    match value.number {
        Some(n) if kind != SweepKind::Knob && n.fract() == 0.0 && n.abs() < 1e18 => {
            format!("{}", n as i64)
        }
        _ => value.label.clone(),
    }
}

/// The trial spec for `offer`: the total rate spread over the streams.
fn trial_spec(base: &TestSpec, offer: Offer) -> TestSpec {
    let mut spec = base.clone();
    spec.rate_bps = None;
    spec.pps = offer
        .pps()
        .map(|p| (p / f64::from(spec.streams.max(1))).round().max(1.0) as u64);
    spec
}

/// Runs an rfc2544 search per frame size, then the latency run at each answer.
pub fn run_rfc2544(
    plan: &Rfc2544Plan,
    runner: &mut dyn PointRunner,
    interrupt: &Signal,
    progress: &mut dyn SweepProgress,
) -> Rfc2544Result {
    let id = now_unix_ms().to_string();
    let trial_ms = plan.frames.first().map_or(0, |f| f.spec.duration_ms);
    let mut result = Rfc2544Result {
        kind: "rfc2544".into(),
        target: runner.target(),
        link_speed_bps: plan.link_speed_bps,
        trial_s: trial_ms as f64 / 1000.0,
        loss_pct: plan.loss_ratio * 100.0,
        resolution_pct: plan.resolution * 100.0,
        frames: Vec::new(),
        stopped: None,
    };
    progress.begin("linerate rfc2544", &plan.planned_seconds());
    for (i, frame) in plan.frames.iter().enumerate() {
        if interrupt.is_raised() {
            result.stopped = Some(Stopped::Interrupted);
            break;
        }
        let label = format!("{}-byte frames", frame.frame_bytes);
        progress.point_started(i, &label);
        let t0 = Instant::now();
        let tags = |trial: String| {
            vec![
                ("rfc2544".to_string(), id.clone()),
                ("frame_bytes".to_string(), frame.frame_bytes.to_string()),
                ("trial".to_string(), trial),
            ]
        };
        let mut search = Search::new(SearchConfig {
            line_rate_pps: frame.line_rate_pps,
            loss_ratio: plan.loss_ratio,
            resolution: plan.resolution,
            max_trials: plan.max_trials,
            min_pps: 1.0,
        });
        let mut run_ids = Vec::new();
        let mut stop = None;
        let mut run_one = |point: Point, stop: &mut Option<Stopped>| -> Option<Measured> {
            match runner.run(&point) {
                Err(_) if interrupt.is_raised() => *stop = Some(Stopped::Interrupted),
                Err(e) => {
                    *stop = Some(Stopped::Failed {
                        message: format!("{label}: {e:#}"),
                    })
                }
                Ok(m) if m.record.summary.interrupted => *stop = Some(Stopped::Interrupted),
                Ok(m) => return Some(m),
            }
            None
        };
        while let Some(offer) = search.next_offer() {
            if interrupt.is_raised() {
                stop = Some(Stopped::Interrupted);
                break;
            }
            let point = Point {
                spec: trial_spec(&frame.spec, offer),
                tags: tags((search.trials().len() + 1).to_string()),
                probe: None,
            };
            let Some(m) = run_one(point, &mut stop) else {
                break;
            };
            let u = m.record.summary.udp.unwrap_or_default();
            run_ids.push(m.run_id);
            search.record(TrialCounts {
                sent: u.packets_sent,
                lost: u.packets_lost,
                sent_pps: u.pps_sent,
                received_pps: u.pps_received,
            });
        }
        let mut row = FrameResult::from_search(frame.frame_bytes, frame.payload_bytes, &search);
        row.run_ids = run_ids;
        if let (None, Some(fps), Some((probe, ms))) = (&stop, row.throughput_fps, plan.latency) {
            let mut spec = trial_spec(&frame.spec, Offer::Pps(fps));
            spec.duration_ms = ms;
            let point = Point {
                spec,
                tags: tags("latency".into()),
                probe: Some(probe),
            };
            if let Some(m) = run_one(point, &mut stop) {
                let s = &m.record.summary;
                let lat = s.latency_under_load.and_then(|l| l.loaded.latency_us);
                row.latency = Some(LatencyAtRate {
                    rtt_p50_us: lat.map(|l| l.p50),
                    rtt_p99_us: lat.map(|l| l.p99),
                    samples: lat.map_or(0, |l| l.samples),
                    loss_pct: s.udp.map_or(0.0, |u| u.loss_pct),
                    run_id: m.run_id,
                });
            }
        }
        result.frames.push(row);
        progress.point_done(i, &label, t0.elapsed().as_secs_f64());
        if let Some(s) = stop {
            // A failure is said once, by the command's error after the points are printed.
            result.stopped = Some(s);
            break;
        }
    }
    progress.finish();
    result
}

#[cfg(test)]
mod tests;
