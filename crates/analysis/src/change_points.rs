//! Change points in a metric's history: E-divisive means (Matteson & James, "A Nonparametric
//! Approach for Multiple Change Point Analysis of Multivariate Data", JASA 109(505), 2014),
//! the method hunter / Apache Otava uses on benchmark histories.
//!
//! For a split of a segment at `t`, the divergence between the left part X (m values) and the
//! right part Y (n values) with exponent 1 is
//! `E = 2/(mn) Σ|x−y| − 1/C(m,2) Σ|x−x'| − 1/C(n,2) Σ|y−y'|`, weighted `Q = mn/(m+n) · E`;
//! the best split maximizes Q over every left end `t` and right end `k` of Y. Its significance
//! is a permutation test: the segment's values are shuffled [`PERMUTATIONS`] times, and the
//! split is a change point when `p = (shuffles whose best Q ≥ it + 1) / (shuffles + 1) ≤
//! alpha` ([`ALPHA`], 0.01, by default). A significant split is still no change point when the
//! medians either side differ by less than [`MIN_CHANGE_PCT`] (1 % by default): on a quiet
//! path a 0.1 % drift is significant yet no regression anyone acts on. Found change points
//! split the series and each part is searched again, until no part has a significant split. A
//! series without a change has one found in about `alpha` of histories (the test's false-alarm
//! rate; 1 in 100 measured below).
//!
//! The shuffles are seeded from the values, so a history gives the same answer every time.
//! Pure arithmetic: nothing here reads a store or prints.

use serde::{Deserialize, Serialize};

use crate::stats::{median, SplitMix64};

/// Shuffles per significance test.
pub const PERMUTATIONS: usize = 199;
/// The significance `trend` uses by default.
pub const ALPHA: f64 = 0.01;
/// The smallest change, in percent of the level before it, `trend` reports by default.
pub const MIN_CHANGE_PCT: f64 = 1.0;
/// Fewest values on each side of a split.
pub const MIN_SEGMENT: usize = 3;

/// When a split is a change point: significant at `alpha` and at least `min_change_pct` apart.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// The permutation test's p at most this.
    pub alpha: f64,
    /// The medians either side at least this many percent apart (of the one before).
    pub min_change_pct: f64,
}

/// A [`Threshold`] out of range, named by the `trend` flag that sets it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ThresholdError {
    /// A significance outside 0.005..=0.5.
    #[error("--alpha {0}: give a significance from 0.005 to 0.5, e.g. 0.01")]
    Alpha(f64),
    /// A minimum change outside 0..100 percent.
    #[error("--min-change {0}: give a percent from 0 to below 100, e.g. 1")]
    MinChange(f64),
}

impl Threshold {
    /// A threshold, when both values are in range: a permutation test of 199 shuffles cannot
    /// tell a p below 0.005, and a change of 100 % or more is no level shift to look for.
    pub fn new(alpha: f64, min_change_pct: f64) -> Result<Self, ThresholdError> {
        if !(0.005..=0.5).contains(&alpha) {
            return Err(ThresholdError::Alpha(alpha));
        }
        if !(0.0..100.0).contains(&min_change_pct) {
            return Err(ThresholdError::MinChange(min_change_pct));
        }
        Ok(Threshold {
            alpha,
            min_change_pct,
        })
    }
}

impl Default for Threshold {
    fn default() -> Self {
        Threshold {
            alpha: ALPHA,
            min_change_pct: MIN_CHANGE_PCT,
        }
    }
}

/// One change point of a series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChangePoint {
    /// Index of the first value after the change.
    pub index: usize,
    /// Median of the values from the previous change point (or the start) to this one.
    pub before: f64,
    /// Median of the values from this change point to the next (or the end).
    pub after: f64,
    /// `(after − before) / before × 100`; `None` when `before` is 0.
    pub change_pct: Option<f64>,
    /// `1 − p` of the permutation test, e.g. 0.995.
    pub confidence: f64,
}

/// The change points of `values` (in order: time or a tag's order) by `threshold`, in index
/// order.
pub fn change_points(values: &[f64], threshold: Threshold) -> Vec<ChangePoint> {
    let mut found: Vec<(usize, f64)> = Vec::new();
    let mut segments = vec![(0, values.len())];
    let mut rng = SplitMix64::seeded(values, &[]);
    while let Some((lo, hi)) = segments.pop() {
        let x = &values[lo..hi];
        let Some((at, confidence)) = best_split(x, threshold.alpha, &mut rng) else {
            continue;
        };
        if !far_enough(&x[..at], &x[at..], threshold.min_change_pct) {
            continue;
        }
        found.push((lo + at, confidence));
        segments.push((lo, lo + at));
        segments.push((lo + at, hi));
    }
    found.sort_by_key(|f| f.0);
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(found.iter().map(|f| f.0))
        .chain(std::iter::once(values.len()))
        .collect();
    found
        .iter()
        .enumerate()
        .map(|(i, &(index, confidence))| {
            let before = median(&values[bounds[i]..index]).unwrap_or(f64::NAN);
            let after = median(&values[index..bounds[i + 2]]).unwrap_or(f64::NAN);
            ChangePoint {
                index,
                before,
                after,
                change_pct: (before != 0.0).then(|| (after - before) / before.abs() * 100.0),
                confidence,
            }
        })
        .collect()
}

/// Whether the medians of `before` and `after` are at least `min_pct` percent apart.
fn far_enough(before: &[f64], after: &[f64], min_pct: f64) -> bool {
    let (b, a) = (
        median(before).unwrap_or(f64::NAN),
        median(after).unwrap_or(f64::NAN),
    );
    b == 0.0 && a != 0.0 || (a - b).abs() >= min_pct / 100.0 * b.abs()
}

/// The most divergent split of `x` and its confidence, when significant at `alpha`.
fn best_split(x: &[f64], alpha: f64, rng: &mut SplitMix64) -> Option<(usize, f64)> {
    if x.len() < 2 * MIN_SEGMENT {
        return None;
    }
    let (at, q) = scan(x)?;
    let mut shuffled = x.to_vec();
    let mut hits = 0;
    for _ in 0..PERMUTATIONS {
        shuffle(&mut shuffled, rng);
        if scan(&shuffled).is_some_and(|(_, qp)| qp >= q) {
            hits += 1;
        }
    }
    let p = (hits + 1) as f64 / (PERMUTATIONS + 1) as f64;
    (p <= alpha).then_some((at, 1.0 - p))
}

/// The split of `x` with the largest Q, and that Q. As Matteson & James search, the right
/// part need not reach the end of `x`: Y is `x[t..k]` for every `k`, which finds a step that
/// comes back (a middle segment) that a split into two halves would blur. O(n²) splits, each
/// O(1) from two-dimensional prefix sums of the pairwise distances.
fn scan(x: &[f64]) -> Option<(usize, f64)> {
    let n = x.len();
    let w = n + 1;
    // s[i * w + j]: the sum of |x[a] - x[b]| over a < i, b < j.
    let mut s = vec![0.0; w * w];
    for i in 0..n {
        let mut row = 0.0;
        for j in 0..n {
            row += (x[i] - x[j]).abs();
            s[(i + 1) * w + j + 1] = s[i * w + j + 1] + row;
        }
    }
    let block = |a0: usize, a1: usize, b0: usize, b1: usize| {
        s[a1 * w + b1] - s[a0 * w + b1] - s[a1 * w + b0] + s[a0 * w + b0]
    };
    let mut best: Option<(usize, f64)> = None;
    for t in MIN_SEGMENT..=n.saturating_sub(MIN_SEGMENT) {
        let m = t as f64;
        let within_x = block(0, t, 0, t) / 2.0 / (m * (m - 1.0) / 2.0);
        for k in t + MIN_SEGMENT..=n {
            let r = (k - t) as f64;
            let cross = block(0, t, t, k);
            let within_y = block(t, k, t, k) / 2.0 / (r * (r - 1.0) / 2.0);
            let e = 2.0 * cross / (m * r) - within_x - within_y;
            let q = m * r / (m + r) * e;
            if best.is_none_or(|(_, b)| q > b) {
                best = Some((t, q));
            }
        }
    }
    best
}

/// Fisher–Yates.
fn shuffle(x: &mut [f64], rng: &mut SplitMix64) {
    for i in (1..x.len()).rev() {
        let j = rng.below(i + 1);
        x.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_alpha(alpha: f64) -> Threshold {
        Threshold {
            alpha,
            min_change_pct: MIN_CHANGE_PCT,
        }
    }

    fn series(levels: &[(f64, usize)], cv: f64, salt: u64) -> Vec<f64> {
        let mut rng = SplitMix64::seeded(&[salt as f64], &[]);
        levels
            .iter()
            .flat_map(|&(center, n)| std::iter::repeat_n(center, n))
            .map(|c| rng.near_normal(c, cv))
            .collect()
    }

    #[test]
    fn a_ten_percent_step_after_twelve_runs_is_found_at_run_thirteen() {
        let x = series(&[(200.0, 12), (180.0, 12)], 0.01, 1);
        let cps = change_points(&x, Threshold::default());
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].index, 12);
        let pct = cps[0].change_pct.unwrap();
        assert!((-11.0..-9.0).contains(&pct), "{pct}");
        assert!(cps[0].confidence >= 0.95);
    }

    #[test]
    fn a_step_that_comes_back_is_found_at_both_ends() {
        let x = series(&[(100.0, 10), (80.0, 10), (100.0, 10)], 0.01, 2);
        let at: Vec<usize> = change_points(&x, Threshold::default())
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(at, [10, 20], "{:?}", change_points(&x, at_alpha(0.05)));
    }

    /// The table in docs/METHODOLOGY.md section 21 (`--nocapture` prints it).
    #[test]
    fn false_alarms_and_detection_over_generated_histories() {
        let tries = 100;
        for cv in [0.01, 0.05] {
            let flat = (0..tries)
                .filter(|&s| {
                    !change_points(&series(&[(100.0, 24)], cv, 100 + s), Threshold::default())
                        .is_empty()
                })
                .count();
            let found = |step: f64| {
                (0..tries)
                    .filter(|&s| {
                        let x = series(&[(100.0, 12), (100.0 * (1.0 + step), 12)], cv, 500 + s);
                        change_points(&x, at_alpha(0.05))
                            .iter()
                            .any(|c| c.index.abs_diff(12) <= 1)
                    })
                    .count()
            };
            let (at3, at5) = (found(-3.0 * cv), found(-5.0 * cv));
            println!("cv {cv}: 24 flat runs with a change point {flat}/{tries}; a -3cv step found {at3}/{tries}, -5cv {at5}/{tries}");
            assert!(flat <= 5, "cv {cv}: {flat} false alarms in {tries}");
            assert!(at5 >= 90, "cv {cv}: a -5cv step found in {at5} of {tries}");
        }
    }

    #[test]
    fn short_or_flat_series_have_none() {
        assert!(change_points(&[1.0, 2.0, 3.0], at_alpha(0.05)).is_empty());
        assert!(change_points(&[5.0; 30], at_alpha(0.05)).is_empty());
    }

    /// The CI history that had two change points: a real −10 % step, then a 0.1 % drift as the
    /// shaper warmed, significant at 0.99 on a path this quiet. Under 1 % it is no change point.
    #[test]
    fn a_significant_drift_under_the_minimum_change_is_no_change_point() {
        let mut x = vec![
            192.9, 193.2, 192.8, 193.0, 192.8, 193.1, 192.8, 193.1, 192.9, 193.0,
        ];
        x.extend([
            193.0, 192.9, 173.60, 173.60, 173.58, 173.73, 173.84, 173.78, 173.91,
        ]);
        x.extend([173.76, 173.97, 173.78, 173.98, 173.72]);
        let any = Threshold {
            alpha: ALPHA,
            min_change_pct: 0.0,
        };
        assert_eq!(
            change_points(&x, any).len(),
            2,
            "{:?}",
            change_points(&x, any)
        );
        let cps = change_points(&x, Threshold::default());
        assert_eq!(cps.len(), 1, "{cps:?}");
        assert_eq!(cps[0].index, 12);
    }
}
