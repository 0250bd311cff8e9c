//! The statistics the analyses share, each said once: the median, its robust spread, a
//! nearest-rank percentile, and the generator the A/B bootstrap and the change-point
//! permutation test draw from (seeded from the data, so the same runs give the same answer).

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
/// NaNs sort last (`f64::total_cmp`): a caller whose values may hold one leaves it out first.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Median absolute deviation × 1.4826 (the standard deviation, for normal data) over the
/// median; 0 for fewer than two values or a median of 0.
pub fn robust_cv(values: &[f64]) -> f64 {
    let m = median(values).unwrap_or(0.0);
    if values.len() < 2 || m == 0.0 {
        return 0.0;
    }
    let deviations: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    1.4826 * median(&deviations).unwrap_or(0.0) / m.abs()
}

/// The nearest-rank `q` quantile (0 < q ≤ 1) of `sorted`, which is not empty and in order:
/// the smallest value with at least `q` of the values at or below it.
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1]
}

/// Steele, Lea & Flood's SplitMix64 (2014): small, fast, and good enough for resampling and
/// permutations.
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// Seeded from the values themselves: the same data give the same draws every time.
    pub fn seeded(a: &[f64], b: &[f64]) -> Self {
        Self(a.iter().chain(b).fold(0x9E37_79B9_7F4A_7C15, |h, v| {
            (h ^ v.to_bits()).wrapping_mul(0x100_0000_01B3)
        }))
    }

    /// Seeded from a number: a test's fixed sequence.
    #[cfg(test)]
    pub(crate) fn from_seed(seed: u64) -> Self {
        Self(seed)
    }

    /// A draw around `center` with a coefficient of variation of `cv`: the sum of four
    /// uniforms, near-normal (the generated runs of the unit tests).
    #[cfg(test)]
    pub(crate) fn near_normal(&mut self, center: f64, cv: f64) -> f64 {
        let u: f64 = (0..4)
            .map(|_| (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
            .sum();
        center * (1.0 + cv * (u - 2.0) * 3f64.sqrt())
    }

    /// The next draw.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A draw below `n` (which is not 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_no_values() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn robust_cv_ignores_one_wild_value() {
        let calm = [100.0, 101.0, 99.0, 100.0, 100.5, 99.5];
        let mut wild = calm.to_vec();
        wild.push(1000.0);
        assert!(robust_cv(&calm) < 0.01);
        assert!(robust_cv(&wild) < 0.02);
        assert_eq!(robust_cv(&[5.0]), 0.0);
    }

    #[test]
    fn nearest_rank_is_a_value_of_the_list() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(nearest_rank(&v, 0.5), 50.0);
        assert_eq!(nearest_rank(&v, 0.99), 99.0);
        assert_eq!(nearest_rank(&v, 1.0), 100.0);
        assert_eq!(nearest_rank(&[7.0], 0.01), 7.0);
    }

    #[test]
    fn the_same_data_draw_the_same_sequence() {
        let (mut a, mut b) = (
            SplitMix64::seeded(&[1.0, 2.0], &[3.0]),
            SplitMix64::seeded(&[1.0, 2.0], &[3.0]),
        );
        assert_eq!(a.next_u64(), b.next_u64());
        assert_ne!(a.next_u64(), SplitMix64::seeded(&[1.0], &[]).next_u64());
        assert!((0..1000).all(|_| a.below(7) < 7));
    }
}
