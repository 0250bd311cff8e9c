//! Repetitions: `--repeat N` runs a test N times and reports each metric's median, minimum,
//! maximum, mean, standard deviation and spread; `--until-ci LEVEL:PCT` repeats until the
//! LEVEL % confidence interval of the mean is at most PCT % of the mean wide, as netperf's
//! `-I LEVEL,PCT` does (`95:2` asks for mean ± 1 %), or until the cap (`--repeat`, default 10)
//! is reached, and says which happened.
//!
//! The interval is Student's t: `mean ± t(1 − (1 − LEVEL)/2, n − 1) · s / √n`, with `s` the
//! sample standard deviation. The t quantile is computed exactly for integer degrees of
//! freedom (Abramowitz & Stegun 26.7.3–4, inverted by bisection), not read from a table, so any
//! level from 50 % to 99.9 % works. docs/METHODOLOGY.md should carry these formulas.
//!
//! Pure arithmetic over numbers and finished records: nothing here runs a test or prints.

use record::RunRecord;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use wire::TestKind;

/// Fewest runs before a confidence interval is trusted to stop a repetition (netperf's
/// default minimum).
pub const MIN_RUNS_FOR_CI: u32 = 3;

/// Most runs `--until-ci` makes when `--repeat` does not say.
pub const DEFAULT_CI_CAP: u32 = 10;

/// Most runs `--repeat` accepts.
pub const MAX_REPEAT: u32 = 1000;

/// `--repeat` or `--until-ci` that cannot be used; the message names the flag.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RepeatError {
    /// `--until-ci` is not `LEVEL:PCT`.
    #[error("--until-ci {text}: give LEVEL:PCT, e.g. --until-ci 95:2 (95 % confidence that the mean is within ±1 %)")]
    CiUsage {
        /// As given.
        text: String,
    },
    /// The confidence level is out of range.
    #[error(
        "--until-ci {text}: the confidence level must be between 50 and 99.9 (percent), e.g. 95"
    )]
    CiLevel {
        /// As given.
        text: String,
    },
    /// The interval width is out of range.
    #[error("--until-ci {text}: the interval width must be above 0 and at most 100 (percent of the mean)")]
    CiWidth {
        /// As given.
        text: String,
    },
    /// `--repeat 0`.
    #[error("--repeat 0: run at least once")]
    Zero,
    /// More runs than [`MAX_REPEAT`].
    #[error("--repeat {runs}: at most {max} runs", max = MAX_REPEAT)]
    TooMany {
        /// As given.
        runs: u32,
    },
    /// Fewer runs than a confidence interval needs, with `--until-ci`.
    #[error(
        "--repeat {runs} with --until-ci: a confidence interval needs at least {min} runs; \
         --repeat is the most runs to make",
        min = MIN_RUNS_FOR_CI
    )]
    TooFewForCi {
        /// As given.
        runs: u32,
    },
}

/// `P(|T| ≤ t)` for Student's t with `df` degrees of freedom, at `t = √df · tan θ`.
fn two_sided_at_angle(theta: f64, df: u32) -> f64 {
    let (s, c) = theta.sin_cos();
    let c2 = c * c;
    if df % 2 == 1 {
        // A&S 26.7.3: (2/π)(θ + sinθ (cosθ + 2/3 cos³θ + … + (2·4…(ν−3))/(3·5…(ν−2)) cos^(ν−2)θ)).
        let mut sum = 0.0;
        if df > 1 {
            let mut term = c;
            sum = term;
            for k in 1..=(df - 3) / 2 {
                term *= c2 * f64::from(2 * k) / f64::from(2 * k + 1);
                sum += term;
            }
        }
        2.0 / std::f64::consts::PI * (theta + s * sum)
    } else {
        // A&S 26.7.4: sinθ (1 + 1/2 cos²θ + … + (1·3…(ν−3))/(2·4…(ν−2)) cos^(ν−2)θ).
        let mut term = 1.0;
        let mut sum = term;
        for k in 1..=(df - 2) / 2 {
            term *= c2 * f64::from(2 * k - 1) / f64::from(2 * k);
            sum += term;
        }
        s * sum
    }
}

/// The two-sided Student t critical value: the `t` with `P(|T| ≤ t) = level` for `df`
/// degrees of freedom (`level` 0.95 gives the 0.975 quantile). `None` for `df` 0 or a level
/// outside (0, 1).
pub fn t_critical(level: f64, df: u32) -> Option<f64> {
    if df == 0 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    // The probability rises monotonically with θ from 0 at θ = 0 to 1 at θ = π/2.
    let (mut lo, mut hi) = (0.0_f64, std::f64::consts::FRAC_PI_2);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if two_sided_at_angle(mid, df) < level {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(f64::from(df).sqrt() * (0.5 * (lo + hi)).tan())
}

/// What `--until-ci LEVEL:PCT` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CiTarget {
    /// Confidence level, percent (e.g. 95).
    pub level_pct: f64,
    /// Widest acceptable interval, percent of the mean (the whole width: 2 is mean ± 1 %).
    pub width_pct: f64,
}

/// Parses `--until-ci LEVEL:PCT`, e.g. `95:2`.
pub fn parse_until_ci(text: &str) -> Result<CiTarget, RepeatError> {
    let usage = || RepeatError::CiUsage {
        text: text.to_string(),
    };
    let (level, width) = text.split_once(':').ok_or_else(usage)?;
    let num = |s: &str| s.trim().trim_end_matches('%').parse::<f64>().ok();
    let (Some(level_pct), Some(width_pct)) = (num(level), num(width)) else {
        return Err(usage());
    };
    if !(50.0..=99.9).contains(&level_pct) {
        return Err(RepeatError::CiLevel {
            text: text.to_string(),
        });
    }
    if !(width_pct > 0.0 && width_pct <= 100.0) {
        return Err(RepeatError::CiWidth {
            text: text.to_string(),
        });
    }
    Ok(CiTarget {
        level_pct,
        width_pct,
    })
}

/// How many times each test runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RepeatPlan {
    /// Without `ci`: exactly this many runs; with it: the most.
    pub runs: u32,
    /// `--until-ci`.
    pub ci: Option<CiTarget>,
}

impl Default for RepeatPlan {
    fn default() -> Self {
        Self::once()
    }
}

impl RepeatPlan {
    /// One run, no statistics.
    pub fn once() -> Self {
        Self { runs: 1, ci: None }
    }

    /// Validates `--repeat` and `--until-ci`.
    pub fn new(repeat: Option<u32>, until_ci: Option<&str>) -> Result<Self, RepeatError> {
        let ci = until_ci.map(parse_until_ci).transpose()?;
        let runs = match (repeat, ci) {
            (Some(0), _) => return Err(RepeatError::Zero),
            (Some(n), _) if n > MAX_REPEAT => return Err(RepeatError::TooMany { runs: n }),
            (Some(n), Some(_)) if n < MIN_RUNS_FOR_CI => {
                return Err(RepeatError::TooFewForCi { runs: n })
            }
            (Some(n), _) => n,
            (None, Some(_)) => DEFAULT_CI_CAP,
            (None, None) => 1,
        };
        Ok(Self { runs, ci })
    }

    /// Whether this plan makes more than one run.
    pub fn repeats(&self) -> bool {
        self.runs > 1
    }

    /// Whether another run is needed after the runs whose primary figures are `values`.
    pub fn wants_another(&self, values: &[f64]) -> bool {
        let n = values.len() as u32;
        if n >= self.runs {
            return false;
        }
        match self.ci {
            None => true,
            Some(_) if n < MIN_RUNS_FOR_CI => true,
            Some(ci) => !ci_reached(values, ci),
        }
    }

    /// The level statistics are reported at: the `--until-ci` level, else 95 %.
    pub fn level_pct(&self) -> f64 {
        self.ci.map_or(95.0, |c| c.level_pct)
    }
}

fn ci_reached(values: &[f64], ci: CiTarget) -> bool {
    RepeatStats::of(values, ci.level_pct)
        .and_then(|s| s.ci_width_pct)
        .is_some_and(|w| w <= ci.width_pct)
}

/// One metric over the repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RepeatStats {
    /// Runs.
    pub n: usize,
    /// Median (the mean of the middle two for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for one run.
    pub stddev: f64,
    /// `(max − min) / median`, percent; `None` when the median is 0.
    pub spread_pct: Option<f64>,
    /// Width of the confidence interval of the mean, percent of the mean
    /// (`2 · t · s / √n / |mean|`); `None` for one run or a zero mean.
    pub ci_width_pct: Option<f64>,
}

impl RepeatStats {
    /// The statistics of `values` with the interval at `level_pct`; `None` when empty.
    pub fn of(values: &[f64], level_pct: f64) -> Option<Self> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = crate::stats::median(&sorted)?;
        let mean = values.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let ci_width_pct = t_critical(level_pct / 100.0, n.saturating_sub(1) as u32)
            .filter(|_| mean != 0.0)
            .map(|t| 2.0 * t * stddev / (n as f64).sqrt() / mean.abs() * 100.0);
        let (min, max) = (sorted[0], sorted[n - 1]);
        Some(Self {
            n,
            median,
            min,
            max,
            mean,
            stddev,
            spread_pct: (median != 0.0).then(|| (max - min) / median.abs() * 100.0),
            ci_width_pct,
        })
    }
}

/// The figure that decides `--until-ci` and leads a summary: transactions/s for a
/// request/response test, receiver throughput otherwise.
pub fn primary_metric(kind: TestKind) -> &'static str {
    // Every headline is a summarized figure (metric_id's tests hold it).
    crate::metric_id::MetricId::headline(kind)
        .key()
        .unwrap_or("throughput_bps")
}

/// Reads the figures of one run that repetitions summarize: `(name with unit, value)`, e.g.
/// `("throughput_bps", 9.4e9)`, leaving out what the run does not have: in production the
/// metric table's keyed figures (`metric_id::summarized_figures`), handed in by the caller so
/// that the statistics here are tested on figures of the tests' own choosing.
pub type Figures = fn(&RunRecord) -> Vec<(&'static str, f64)>;

/// One named metric's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricStats {
    /// Its name, with its unit (`throughput_bps`, `rtt_p50_us`, …).
    pub metric: String,
    /// Over the runs.
    #[serde(flatten)]
    pub stats: RepeatStats,
}

/// Whether `--until-ci` got its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CiOutcome {
    /// What was asked.
    pub target: CiTarget,
    /// The primary metric's interval width at the end, percent of the mean.
    pub width_pct: Option<f64>,
    /// Whether it was within the target.
    pub reached: bool,
}

/// Repetitions of one test, summarized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatSummary {
    /// Runs summarized (interrupted ones are not).
    pub runs: usize,
    /// The metric `--until-ci` watches and tables lead with.
    pub primary: String,
    /// Confidence level of every `ci_width_pct`, percent.
    pub level_pct: f64,
    /// Every metric all the runs have, primary first.
    pub metrics: Vec<MetricStats>,
    /// `--until-ci`: whether the interval was reached.
    pub ci: Option<CiOutcome>,
}

impl RepeatSummary {
    /// Summarizes `records` (runs of one test) under `plan`, over the `figures` each run has;
    /// `None` without records.
    pub fn of(records: &[&RunRecord], plan: &RepeatPlan, figures: Figures) -> Option<Self> {
        let first = records.first()?;
        let primary = primary_metric(first.kind);
        let level = plan.level_pct();
        let per_run: Vec<Vec<(&'static str, f64)>> = records.iter().map(|r| figures(r)).collect();
        let mut names: Vec<&'static str> = per_run[0].iter().map(|(n, _)| *n).collect();
        names.retain(|n| per_run.iter().all(|m| m.iter().any(|(k, _)| k == n)));
        names.sort_by_key(|n| *n != primary);
        let values_of = |name: &str| -> Vec<f64> {
            per_run
                .iter()
                .filter_map(|m| m.iter().find(|(k, _)| *k == name).map(|(_, v)| *v))
                .collect()
        };
        let metrics: Vec<MetricStats> = names
            .iter()
            .filter_map(|name| {
                Some(MetricStats {
                    metric: (*name).to_string(),
                    stats: RepeatStats::of(&values_of(name), level)?,
                })
            })
            .collect();
        let ci = plan.ci.map(|target| {
            let width_pct = metrics
                .iter()
                .find(|m| m.metric == primary)
                .and_then(|m| m.stats.ci_width_pct);
            CiOutcome {
                target,
                width_pct,
                reached: records.len() as u32 >= MIN_RUNS_FOR_CI
                    && width_pct.is_some_and(|w| w <= target.width_pct),
            }
        });
        Some(Self {
            runs: records.len(),
            primary: primary.to_string(),
            level_pct: level,
            metrics,
            ci,
        })
    }

    /// The statistics of `metric`, if every run had it.
    pub fn get(&self, metric: &str) -> Option<&RepeatStats> {
        self.metrics
            .iter()
            .find(|m| m.metric == metric)
            .map(|m| &m.stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::record_with;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        for (level, df, want) in [
            (0.95, 4, 2.776),
            (0.95, 1, 12.706),
            (0.90, 1, 6.314),
            (0.95, 2, 4.303),
            (0.99, 9, 3.250),
            (0.95, 30, 2.042),
            (0.90, 10, 1.812),
            (0.999, 5, 6.869),
            (0.95, 1000, 1.962),
            (0.50, 3, 0.765),
        ] {
            let t = t_critical(level, df).unwrap();
            assert!(
                close(t, want, 0.0015),
                "t({level}, {df}) = {t}, want {want}"
            );
        }
        assert_eq!(t_critical(0.95, 0), None);
        assert_eq!(t_critical(1.0, 3), None);
    }

    #[test]
    fn statistics_of_a_sample() {
        let s = RepeatStats::of(&[10.0, 12.0, 11.0, 9.0, 13.0], 95.0).unwrap();
        assert_eq!(
            (s.n, s.median, s.min, s.max, s.mean),
            (5, 11.0, 9.0, 13.0, 11.0)
        );
        assert!(close(s.stddev, 2.5_f64.sqrt(), 1e-12));
        assert!(close(s.spread_pct.unwrap(), 4.0 / 11.0 * 100.0, 1e-9));
        // 2 · 2.776 · 1.581 / √5 / 11 = 35.7 %.
        assert!(close(s.ci_width_pct.unwrap(), 35.69, 0.01), "{s:?}");
        let even = RepeatStats::of(&[4.0, 1.0, 3.0, 2.0], 95.0).unwrap();
        assert_eq!(even.median, 2.5);
        let one = RepeatStats::of(&[5.0], 95.0).unwrap();
        assert_eq!((one.stddev, one.ci_width_pct), (0.0, None));
        assert!(RepeatStats::of(&[], 95.0).is_none());
    }

    #[test]
    fn until_ci_parsing() {
        assert_eq!(
            parse_until_ci("95:2"),
            Ok(CiTarget {
                level_pct: 95.0,
                width_pct: 2.0
            })
        );
        assert_eq!(parse_until_ci("99.5%:0.5%").unwrap().level_pct, 99.5);
        for (text, needle) in [
            ("95", "give LEVEL:PCT"),
            ("x:2", "give LEVEL:PCT"),
            ("100:2", "between 50 and 99.9"),
            ("95:0", "above 0"),
        ] {
            let err = parse_until_ci(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn repeat_flags() {
        assert_eq!(RepeatPlan::new(None, None), Ok(RepeatPlan::once()));
        assert_eq!(RepeatPlan::new(Some(5), None).unwrap().runs, 5);
        let p = RepeatPlan::new(None, Some("95:2")).unwrap();
        assert_eq!(p.runs, DEFAULT_CI_CAP);
        let err = |r: Result<RepeatPlan, RepeatError>| r.unwrap_err().to_string();
        assert_eq!(
            err(RepeatPlan::new(Some(0), None)),
            "--repeat 0: run at least once"
        );
        assert_eq!(
            err(RepeatPlan::new(Some(1001), None)),
            "--repeat 1001: at most 1000 runs"
        );
        assert_eq!(
            err(RepeatPlan::new(Some(2), Some("95:2"))),
            "--repeat 2 with --until-ci: a confidence interval needs at least 3 runs; \
             --repeat is the most runs to make"
        );
    }

    #[test]
    fn ci_stopping_rule() {
        let plan = RepeatPlan::new(Some(6), Some("95:2")).unwrap();
        // Fewer than three runs: always another, however tight.
        assert!(plan.wants_another(&[100.0, 100.0]));
        // Three identical runs: the interval has zero width.
        assert!(!plan.wants_another(&[100.0, 100.0, 100.0]));
        // 100, 101, 99: 2 · 4.303 · 1 / √3 / 100 = 4.97 % > 2 %: another.
        assert!(plan.wants_another(&[100.0, 101.0, 99.0]));
        // Tight enough by the fifth: 2 · 2.776 · 0.707 / √5 / 100 = 1.76 %.
        assert!(!plan.wants_another(&[100.0, 101.0, 99.0, 100.0, 100.0]));
        // The cap stops it whatever the interval.
        assert!(!plan.wants_another(&[100.0, 150.0, 50.0, 120.0, 80.0, 130.0]));
        // Without --until-ci: exactly --repeat runs.
        let fixed = RepeatPlan::new(Some(3), None).unwrap();
        assert!(fixed.wants_another(&[1.0, 1.0]));
        assert!(!fixed.wants_another(&[1.0, 1.0, 1.0]));
    }

    /// A few figures, as the metric table names them.
    fn figures(r: &RunRecord) -> Vec<(&'static str, f64)> {
        let s = &r.summary;
        let mut m = vec![
            ("throughput_bps", s.throughput_bps),
            ("local_cpu_pct", s.local_cpu_pct),
        ];
        if let Some(rr) = s.rr() {
            m.push(("transactions_per_s", rr.transactions_per_s));
            if let Some(l) = &rr.latency_us {
                m.push(("rtt_p50_us", l.p50));
            }
        }
        m
    }

    #[test]
    fn summary_over_records_says_whether_the_ci_was_reached() {
        let runs: Vec<_> = [9.0e9, 9.1e9, 8.9e9]
            .iter()
            .map(|&bps| record_with("tcp", bps))
            .collect();
        let refs: Vec<&RunRecord> = runs.iter().collect();
        let plan = RepeatPlan::new(Some(3), Some("95:2")).unwrap();
        let s = RepeatSummary::of(&refs, &plan, figures).unwrap();
        assert_eq!((s.runs, s.primary.as_str()), (3, "throughput_bps"));
        assert_eq!(s.metrics[0].metric, "throughput_bps");
        let t = s.get("throughput_bps").unwrap();
        assert_eq!((t.median, t.min, t.max), (9.0e9, 8.9e9, 9.1e9));
        let ci = s.ci.unwrap();
        assert!(!ci.reached, "5.5 % wide is not within 2 %: {ci:?}");
        assert!(s.get("local_cpu_pct").is_some());
        let rr = [record_with("rr", 0.0)];
        let s = RepeatSummary::of(&[&rr[0]], &RepeatPlan::once(), figures).unwrap();
        assert_eq!(s.primary, "transactions_per_s");
        assert!(s.get("rtt_p50_us").is_some());
    }
}
