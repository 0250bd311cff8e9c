//! `linerate check`: a candidate group of stored runs against a baseline group, metric by
//! metric, with the A/B statistics of `analysis::ab`, and the one answer a CI gates on.
//!
//! Invariants: both groups hold runs of one kind (the caller refuses a mix); a metric is
//! checked only where both groups have it; the decision is `regressed` when any checked metric
//! regressed, `not_enough_runs` when no metric could be decided for lack of runs, `pass`
//! otherwise. Text, JSON and JUnit XML are written in `check_text`.

use analysis::ab::{self, AbResult, Finding};
use analysis::metric_id::{metrics, Better, Metric, MetricId};
use serde::Serialize;
use wire::TestKind;

use crate::LabeledRuns;

/// The metrics checked when the command line names none: the figures a regression is about
/// (goodput, the cost of a byte, loss, transaction rate, latency, responsiveness), not every
/// row `compare` shows (CPU percentages and per-direction repeats are too noisy to gate on).
pub const DEFAULT_METRICS: [MetricId; 12] = [
    MetricId::Throughput,
    MetricId::ThroughputUp,
    MetricId::ThroughputDown,
    MetricId::SenderCpuPerGb,
    MetricId::ReceiverCpuPerGb,
    MetricId::Loss,
    MetricId::Transactions,
    MetricId::LatencyP50,
    MetricId::LatencyP99,
    MetricId::LoadedLatencyP50,
    MetricId::Rpm,
    MetricId::Received,
];

/// One side of a check.
#[derive(Debug, Clone, Serialize)]
pub struct CheckSide {
    /// The item as given (`#12`, `driver=a`).
    pub label: String,
    /// Runs the side's figures are over.
    pub runs: usize,
    /// Runs left out because they did not run whole.
    pub left_out: usize,
}

/// One metric's check.
#[derive(Debug, Clone, Serialize)]
pub struct MetricCheck {
    /// The metric's name, as `compare` names its row.
    pub metric: &'static str,
    /// The unit of the medians.
    pub unit: &'static str,
    /// Which way is better.
    pub better: Better,
    /// Values on each side that had the metric.
    pub baseline_runs: usize,
    /// As `baseline_runs`, for the candidate.
    pub candidate_runs: usize,
    /// Medians, ratio, interval, threshold, finding.
    #[serde(flatten)]
    pub result: AbResult,
}

/// What a check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// No metric regressed.
    Pass,
    /// At least one metric regressed.
    Regressed,
    /// No metric had [`ab::MIN_RUNS`] runs on both sides.
    NotEnoughRuns,
}

/// A whole check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Always `check` (the JSON's tag, as `trend` and `compare` carry theirs).
    pub kind: &'static str,
    /// The runs' kind.
    pub test: Option<TestKind>,
    /// What the candidate is held against.
    pub baseline: CheckSide,
    /// What is checked.
    pub candidate: CheckSide,
    /// Runs each side needs for a decision.
    pub need_runs: usize,
    /// One per metric both sides have.
    pub metrics: Vec<MetricCheck>,
    /// The answer.
    pub decision: Decision,
}

/// How a check is asked for.
#[derive(Debug, Clone)]
pub struct CheckOptions<'a> {
    /// Metric names to check; empty: [`DEFAULT_METRICS`].
    pub metrics: &'a [String],
    /// A fixed threshold, as a fraction; `None`: each metric's baseline noise.
    pub threshold: Option<f64>,
    /// The intervals' confidence, as a fraction.
    pub level: f64,
}

/// The names `--metric` takes, in row order.
pub fn metric_names() -> Vec<&'static str> {
    MetricId::ALL.iter().map(|m| m.name()).collect()
}

/// The metric `--metric NAME` names, or the refusal that lists every name.
pub fn find_metric(name: &str) -> crate::Result<&'static Metric> {
    let id: MetricId = name.parse().map_err(|_| crate::Error::UnknownMetric {
        name: name.to_string(),
        names: metric_names().join(", "),
    })?;
    Ok(analysis::metric_id::metric(id))
}

/// Checks `candidate` against `baseline` (each already without its unfinished runs, as
/// [`LabeledRuns::leave_out_unfinished`] gives them). Unknown metric names are the caller's to
/// refuse (see [`metric_names`]); a metric named that the runs' kind does not have is refused
/// here ([`crate::Error::NotOfKind`]).
pub fn check(
    baseline: &LabeledRuns,
    candidate: &LabeledRuns,
    opts: &CheckOptions,
) -> crate::Result<Check> {
    let test = baseline
        .runs
        .iter()
        .chain(&candidate.runs)
        .next()
        .map(|r| r.kind);
    if let Some(kind) = test {
        let named = |m: &&Metric| opts.metrics.iter().any(|n| n == m.name);
        if let Some(m) = metrics().iter().filter(named).find(|m| !m.applies(kind)) {
            return Err(crate::Error::NotOfKind {
                metric: m.name,
                kind: kind.as_str().to_string(),
                kinds: m.kinds_having(),
            });
        }
    }
    let wanted = |m: &Metric| match opts.metrics.is_empty() {
        true => DEFAULT_METRICS.contains(&m.id),
        false => opts.metrics.iter().any(|n| n == m.name()),
    };
    let figures: Vec<MetricCheck> = metrics()
        .iter()
        .filter(|m| wanted(m))
        .filter_map(|m| metric_check(m, baseline, candidate, opts))
        .collect();
    let decision = if figures
        .iter()
        .any(|m| m.result.finding == Finding::Regressed)
    {
        Decision::Regressed
    } else if figures
        .iter()
        .all(|m| m.result.finding == Finding::Undecided)
    {
        Decision::NotEnoughRuns
    } else {
        Decision::Pass
    };
    Ok(Check {
        kind: "check",
        test: baseline.runs.first().map(|r| r.kind),
        baseline: side(baseline),
        candidate: side(candidate),
        need_runs: ab::MIN_RUNS,
        metrics: figures,
        decision,
    })
}

fn side(l: &LabeledRuns) -> CheckSide {
    CheckSide {
        label: l.label.clone(),
        runs: l.runs.len(),
        left_out: l.left_out.len(),
    }
}

/// One metric over both sides; `None` when neither side has it.
fn metric_check(
    m: &Metric,
    baseline: &LabeledRuns,
    candidate: &LabeledRuns,
    opts: &CheckOptions,
) -> Option<MetricCheck> {
    let values = |l: &LabeledRuns| -> Vec<f64> {
        l.runs
            .iter()
            .filter_map(|r| m.value(r))
            .filter(|v| v.is_finite())
            .collect()
    };
    let (b, c) = (values(baseline), values(candidate));
    if b.is_empty() && c.is_empty() {
        return None;
    }
    Some(MetricCheck {
        metric: m.name(),
        unit: m.unit,
        better: m.better,
        baseline_runs: b.len(),
        candidate_runs: c.len(),
        result: ab::compare(
            &b,
            &c,
            m.better == Better::Higher,
            opts.threshold,
            opts.level,
        ),
    })
}

impl Check {
    /// The metrics that regressed.
    pub fn regressed(&self) -> impl Iterator<Item = &MetricCheck> {
        self.metrics
            .iter()
            .filter(|m| m.result.finding == Finding::Regressed)
    }

    /// Why nothing could be decided, when nothing could (a check that decided nothing is no
    /// pass: `linerate check` and `plan --check-against` exit 2 with this unless
    /// `--allow-undecided`): how many runs the fewer side had and how many the method needs.
    pub fn undecided(&self) -> Option<String> {
        (self.decision == Decision::NotEnoughRuns).then(|| {
            format!(
                "not enough runs to decide: {} on the fewer side, and check needs {} on each \
                 side (run each side with --repeat {} or store more runs under its tags; \
                 --allow-undecided passes anyway)",
                self.fewest_runs(),
                self.need_runs,
                self.need_runs
            )
        })
    }

    /// The fewest runs a checked metric had on either side.
    pub fn fewest_runs(&self) -> usize {
        self.metrics
            .iter()
            .map(|m| m.baseline_runs.min(m.candidate_runs))
            .min()
            .unwrap_or(0)
    }
}

/// The kinds of `runs`, named, sorted, each once: a check takes one.
pub fn kinds_of<'a>(runs: impl Iterator<Item = &'a record::RunRecord>) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = runs.map(|r| r.kind.as_str()).collect();
    kinds.sort_unstable();
    kinds.dedup();
    kinds
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A metric named that the runs' kind lacks is refused by name, where it would have read
    /// "not enough runs: 0".
    #[test]
    fn a_metric_the_runs_kind_lacks_is_refused_by_name() {
        let runs: Vec<record::RunRecord> =
            serde_json::from_str(include_str!("../tests/fixtures/tcp_runs.json")).unwrap();
        let (a, b) = (
            LabeledRuns::new("a", runs[..2].to_vec()),
            LabeledRuns::new("b", runs[2..4].to_vec()),
        );
        let opts = |metrics| CheckOptions {
            metrics,
            threshold: None,
            level: 0.95,
        };
        let loss = ["loss".to_string()];
        let err = check(&a, &b, &opts(&loss)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--metric loss: tcp_stream runs have no loss; it is a figure of udp_stream"
        );
        let throughput = ["throughput".to_string()];
        let c = check(&a, &b, &opts(&throughput)).unwrap();
        assert_eq!(c.metrics.len(), 1);
        assert!(check(&a, &b, &opts(&[])).is_ok());
    }
}
