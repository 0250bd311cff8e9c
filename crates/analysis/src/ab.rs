//! A/B statistics for `linerate check`: is a candidate group of runs worse than a baseline
//! group, for one metric, by more than the baseline's own noise, and how sure is that?
//!
//! The figure compared is the ratio of medians, candidate over baseline. Its interval is a
//! bootstrap percentile interval (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993,
//! ch. 13): both groups are resampled with replacement, independently, [`RESAMPLES`] times, and
//! the interval is the middle `level` of the resampled ratios. Medians and a bootstrap assume
//! nothing about the shape of the runs' distribution, which for network figures is skewed (a
//! slow run is far slower, a fast one only a little faster).
//!
//! A metric has *regressed* when both hold: its ratio is worse than the threshold (a change
//! too small to matter is not a regression), and the whole interval lies on the worse side of
//! 1 (the change is not noise). The default threshold is the baseline's own noise: three times
//! its robust coefficient of variation (the median absolute deviation scaled by 1.4826, over
//! the median), at least [`MIN_THRESHOLD`]. Where the baseline's median is 0 (no loss) there is
//! no ratio: the difference of medians and its interval are judged instead (`from_zero`).
//!
//! The resampling is seeded from the data, so the same runs always give the same answer.
//! Pure arithmetic: nothing here reads a store or prints.

use serde::{Deserialize, Serialize};

use crate::stats::{median, robust_cv, SplitMix64};

/// Fewest runs on each side before a check decides anything.
pub const MIN_RUNS: usize = 4;
/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 4000;
/// Smallest default threshold, as a fraction (2 %): tighter than any stored figure's rounding
/// and repeatability on real hosts.
pub const MIN_THRESHOLD: f64 = 0.02;
/// Multiple of the baseline's robust coefficient of variation the default threshold is.
pub const NOISE_FACTOR: f64 = 3.0;

/// What one metric's check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// Worse than the threshold, and the interval excludes no change.
    Regressed,
    /// Better than the threshold, and the interval excludes no change.
    Improved,
    /// Neither: within the threshold, or not distinguishable from noise.
    Unchanged,
    /// Fewer than [`MIN_RUNS`] runs on a side, or a baseline median of 0 (no ratio).
    Undecided,
}

/// The ratio of medians, its interval and what it means for one metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AbResult {
    /// Median of the baseline's values.
    pub baseline_median: f64,
    /// Median of the candidate's values.
    pub candidate_median: f64,
    /// `candidate_median / baseline_median`; `None` when the baseline's median is 0.
    pub ratio: Option<f64>,
    /// The bootstrap interval of the ratio, (low, high).
    pub interval: Option<(f64, f64)>,
    /// Where the baseline's median is 0 (no loss, say) and so there is no ratio: the
    /// candidate's median minus the baseline's, and its bootstrap interval.
    pub difference: Option<(f64, (f64, f64))>,
    /// The confidence level of the interval, as a fraction (0.95).
    pub level: f64,
    /// The threshold the ratio was held to, as a fraction of the baseline (0.05 = 5 %).
    pub threshold: f64,
    /// What the check found.
    pub finding: Finding,
}

/// Compares `candidate` with `baseline` for a metric where higher is better (`higher_better`)
/// or lower is. `threshold`: the fraction a change must exceed to count, or `None` for the
/// baseline's noise (see the module). `level`: the interval's confidence (0.95).
pub fn compare(
    baseline: &[f64],
    candidate: &[f64],
    higher_better: bool,
    threshold: Option<f64>,
    level: f64,
) -> AbResult {
    let (b, c) = (
        median(baseline).unwrap_or(f64::NAN),
        median(candidate).unwrap_or(f64::NAN),
    );
    let threshold = threshold.unwrap_or_else(|| noise_threshold(baseline));
    let mut out = AbResult {
        baseline_median: b,
        candidate_median: c,
        ratio: None,
        interval: None,
        difference: None,
        level,
        threshold,
        finding: Finding::Undecided,
    };
    if baseline.len() < MIN_RUNS || candidate.len() < MIN_RUNS || !b.is_finite() {
        return out;
    }
    if b == 0.0 {
        return from_zero(out, baseline, candidate, higher_better, level);
    }
    let ratio = c / b;
    let (low, high) = bootstrap_ratio(baseline, candidate, level);
    out.ratio = Some(ratio);
    out.interval = Some((low, high));
    // The ratio that would be worse / better, turned so that "up" is always better.
    let (worse, better) = match higher_better {
        true => (
            ratio < 1.0 - threshold && high < 1.0,
            ratio > 1.0 + threshold && low > 1.0,
        ),
        false => (
            ratio > 1.0 + threshold && low > 1.0,
            ratio < 1.0 - threshold && high < 1.0,
        ),
    };
    out.finding = match (worse, better) {
        (true, _) => Finding::Regressed,
        (_, true) => Finding::Improved,
        _ => Finding::Unchanged,
    };
    out
}

/// A baseline whose median is 0 (no loss, no retransmits): any change is infinitely many
/// times it, so the candidate is judged by its difference instead, which must lie wholly on
/// one side of 0 (a figure that appeared in most of the candidate's runs).
fn from_zero(
    mut out: AbResult,
    baseline: &[f64],
    candidate: &[f64],
    higher_better: bool,
    level: f64,
) -> AbResult {
    let diff = out.candidate_median;
    let (low, high) = bootstrap(baseline, candidate, level, |b, c| Some(c - b));
    out.difference = Some((diff, (low, high)));
    let (up, down) = (low > 0.0, high < 0.0);
    out.finding = match (higher_better, up, down) {
        (true, _, true) | (false, true, _) => Finding::Regressed,
        (true, true, _) | (false, _, true) => Finding::Improved,
        _ => Finding::Unchanged,
    };
    out
}

/// The default threshold for a baseline: [`NOISE_FACTOR`] times its robust coefficient of
/// variation, at least [`MIN_THRESHOLD`].
pub fn noise_threshold(baseline: &[f64]) -> f64 {
    (NOISE_FACTOR * robust_cv(baseline)).max(MIN_THRESHOLD)
}

/// The bootstrap percentile interval of median(candidate) / median(baseline) at `level`.
fn bootstrap_ratio(baseline: &[f64], candidate: &[f64], level: f64) -> (f64, f64) {
    bootstrap(baseline, candidate, level, |b, c| (b != 0.0).then(|| c / b))
}

/// The bootstrap percentile interval at `level` of `stat(median(b), median(c))` over
/// resamples of both groups (a resample where `stat` is `None` is skipped).
fn bootstrap(
    baseline: &[f64],
    candidate: &[f64],
    level: f64,
    stat: impl Fn(f64, f64) -> Option<f64>,
) -> (f64, f64) {
    let mut rng = SplitMix64::seeded(baseline, candidate);
    let (mut b, mut c) = (vec![0.0; baseline.len()], vec![0.0; candidate.len()]);
    let mut stats: Vec<f64> = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        resample(&mut rng, baseline, &mut b);
        resample(&mut rng, candidate, &mut c);
        if let (Some(mb), Some(mc)) = (median(&b), median(&c)) {
            stats.extend(stat(mb, mc));
        }
    }
    if stats.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    stats.sort_by(f64::total_cmp);
    let tail = (1.0 - level.clamp(0.5, 0.999)) / 2.0;
    let last = stats.len() - 1;
    let at = |q: f64| stats[((q * last as f64).round() as usize).min(last)];
    (at(tail), at(1.0 - tail))
}

/// Fills `into` with draws from `from`, with replacement.
fn resample(rng: &mut SplitMix64, from: &[f64], into: &mut [f64]) {
    for slot in into.iter_mut() {
        *slot = from[rng.below(from.len())];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` values around `center` with a spread of about `cv` (deterministic).
    fn noisy(center: f64, cv: f64, n: usize, salt: u64) -> Vec<f64> {
        let mut rng = SplitMix64::from_seed(salt);
        (0..n).map(|_| rng.near_normal(center, cv)).collect()
    }

    #[test]
    fn a_ten_percent_drop_in_goodput_is_a_regression_and_the_interval_holds_it() {
        let base = noisy(200.0, 0.01, 12, 1);
        let cand = noisy(180.0, 0.01, 12, 2);
        let r = compare(&base, &cand, true, None, 0.95);
        assert_eq!(r.finding, Finding::Regressed, "{r:?}");
        let (low, high) = r.interval.unwrap();
        assert!(low < 0.9 && 0.9 < high, "{r:?}");
        assert!(r.threshold < 0.1, "{r:?}");
    }

    #[test]
    fn the_same_rise_is_a_regression_for_latency_and_an_improvement_for_goodput() {
        let base = noisy(100.0, 0.01, 8, 3);
        let cand = noisy(120.0, 0.01, 8, 4);
        assert_eq!(
            compare(&base, &cand, false, None, 0.95).finding,
            Finding::Regressed
        );
        assert_eq!(
            compare(&base, &cand, true, None, 0.95).finding,
            Finding::Improved
        );
    }

    /// Of `pairs` pairs of groups of `n` runs at noise `cv`, the candidate's center `change`
    /// away from the baseline's, the share a check calls regressed.
    fn regressed_share(n: usize, cv: f64, change: f64, pairs: u64) -> f64 {
        let hits = (0..pairs)
            .filter(|i| {
                let a = noisy(100.0, cv, n, 10_000 + 2 * i);
                let b = noisy(100.0 * (1.0 + change), cv, n, 10_001 + 2 * i);
                compare(&a, &b, true, None, 0.95).finding == Finding::Regressed
            })
            .count();
        hits as f64 / pairs as f64
    }

    #[test]
    fn false_alarms_stay_rare_and_a_change_of_three_times_the_noise_is_found() {
        // The table in docs/METHODOLOGY.md section 21 (`--nocapture` prints it).
        for n in [4, 6, 12] {
            for cv in [0.01, 0.05] {
                let none = regressed_share(n, cv, 0.0, 400);
                let at3 = regressed_share(n, cv, -3.0 * cv, 200);
                let at5 = regressed_share(n, cv, -5.0 * cv, 200);
                println!(
                    "n {n} cv {cv}: false alarms {none:.3}, found -3cv {at3:.3}, -5cv {at5:.3}"
                );
                assert!(none <= 0.02, "n {n} cv {cv}: {none} false alarms");
                assert!(at5 >= 0.9, "n {n} cv {cv}: a -5 cv change found in {at5}");
            }
        }
    }

    #[test]
    fn too_few_runs_decide_nothing() {
        let r = compare(&[1.0, 2.0, 3.0], &[1.0, 1.0, 1.0, 1.0], true, None, 0.95);
        assert_eq!(r.finding, Finding::Undecided);
    }

    #[test]
    fn loss_that_appears_where_there_was_none_is_judged_by_its_difference() {
        let r = compare(&[0.0; 4], &[0.5, 0.7, 0.6, 0.4], false, None, 0.95);
        assert_eq!((r.finding, r.ratio), (Finding::Regressed, None));
        assert_eq!(r.difference.map(|d| d.0), Some(0.55));
        // One lossy run in five is not a pattern.
        let r = compare(&[0.0; 5], &[0.0, 0.0, 0.0, 0.0, 0.3], false, None, 0.95);
        assert_eq!(r.finding, Finding::Unchanged, "{r:?}");
    }

    #[test]
    fn a_given_threshold_hides_a_smaller_change() {
        let base = noisy(100.0, 0.005, 10, 5);
        let cand = noisy(95.0, 0.005, 10, 6);
        assert_eq!(
            compare(&base, &cand, true, None, 0.95).finding,
            Finding::Regressed
        );
        assert_eq!(
            compare(&base, &cand, true, Some(0.1), 0.95).finding,
            Finding::Unchanged
        );
    }

    #[test]
    fn the_answer_is_the_same_every_time() {
        let base = noisy(100.0, 0.05, 7, 7);
        let cand = noisy(97.0, 0.05, 7, 8);
        assert_eq!(
            compare(&base, &cand, true, None, 0.95),
            compare(&base, &cand, true, None, 0.95)
        );
    }

    #[test]
    fn robust_noise_ignores_one_wild_run() {
        let mut v = vec![100.0, 101.0, 99.0, 100.5, 99.5];
        let calm = robust_cv(&v);
        v.push(10.0);
        assert!(robust_cv(&v) < 2.0 * calm + 0.01, "{}", robust_cv(&v));
    }
}
