//! Latency distributions: an HDR histogram (bounded memory, any duration) and its summary.
//!
//! Values are recorded in nanoseconds with 3 significant decimal digits: every reported
//! percentile is within 0.1 % of the true sample value. The summary states its sample count and
//! precision, so a reader can judge the tail percentiles.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Significant decimal digits the histogram keeps.
pub const SIGNIFICANT_DIGITS: u8 = 3;
/// Longest latency recorded, ns (larger values are clamped to it): one minute.
pub const MAX_NS: u64 = 60_000_000_000;

/// A latency histogram in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Latency {
    hist: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    /// An empty histogram.
    pub fn new() -> Self {
        Self {
            hist: Histogram::new_with_bounds(1, MAX_NS, SIGNIFICANT_DIGITS)
                .expect("constant bounds are valid"),
        }
    }

    /// Records one latency, ns (clamped to 1..=MAX_NS).
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.hist.saturating_record(ns.clamp(1, MAX_NS));
    }

    /// Every recorded value, µs, smallest first: each the middle of its histogram bucket
    /// (within 0.1 % of the sample), repeated as often as it was recorded; beyond `limit`
    /// samples, `limit` of them spread evenly over the distribution (every quantile kept).
    pub fn values_us(&self, limit: usize) -> Vec<f64> {
        let total = self.hist.len();
        let keep = (total as usize).min(limit) as u64;
        let mut out = Vec::with_capacity(keep as usize);
        let mut seen = 0u64;
        for v in self.hist.iter_recorded() {
            let us = self.hist.median_equivalent(v.value_iterated_to()) as f64 / 1000.0;
            let count = v.count_at_value();
            // Samples seen..seen + count; keep those whose share of `keep` is new.
            let n = (seen + count) * keep / total - seen * keep / total;
            out.extend(std::iter::repeat_n(us, n as usize));
            seen += count;
        }
        out
    }

    /// Adds every sample of `other`.
    pub fn add(&mut self, other: &Latency) {
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.hist.add(&other.hist);
    }

    /// Empties the histogram.
    pub fn reset(&mut self) {
        self.hist.reset();
    }

    /// Samples recorded.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// Whether no sample was recorded.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// The value at `quantile` (0..=1), µs.
    pub fn quantile_us(&self, quantile: f64) -> f64 {
        self.hist.value_at_quantile(quantile) as f64 / 1000.0
    }

    /// The summary, or `None` when empty.
    pub fn summary(&self) -> Option<LatencySummary> {
        if self.is_empty() {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Some(LatencySummary {
            samples: self.len(),
            min: us(self.hist.min()),
            mean: self.hist.mean() / 1000.0,
            p50: self.quantile_us(0.50),
            p90: self.quantile_us(0.90),
            p99: self.quantile_us(0.99),
            p999: self.quantile_us(0.999),
            p9999: self.quantile_us(0.9999),
            max: us(self.hist.max()),
            stddev: self.hist.stdev() / 1000.0,
            significant_digits: SIGNIFICANT_DIGITS,
        })
    }
}

/// Percentiles of a latency distribution, all in µs (the JSON object `latency_us`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct LatencySummary {
    /// Samples behind these figures.
    pub samples: u64,
    /// Smallest, µs.
    pub min: f64,
    /// Mean, µs.
    pub mean: f64,
    /// Median, µs.
    pub p50: f64,
    /// 90th percentile, µs.
    pub p90: f64,
    /// 99th percentile, µs.
    pub p99: f64,
    /// 99.9th percentile, µs.
    pub p999: f64,
    /// 99.99th percentile, µs.
    pub p9999: f64,
    /// Largest, µs.
    pub max: f64,
    /// Standard deviation, µs.
    pub stddev: f64,
    /// Significant decimal digits of every figure (3: within 0.1 %).
    pub significant_digits: u8,
}

impl LatencySummary {
    /// The highest percentile these samples support (at least 10 samples beyond it), as a
    /// label: a p99.99 from 500 samples is the maximum, not a percentile.
    pub fn supported_percentile(&self) -> &'static str {
        match self.samples {
            n if n >= 100_000 => "p99.99",
            n if n >= 10_000 => "p99.9",
            n if n >= 1_000 => "p99",
            n if n >= 100 => "p90",
            _ => "p50",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= b.abs() * 1e-3 + 1e-9
    }

    #[test]
    fn percentiles_of_crafted_samples() {
        let mut h = Latency::new();
        // 1..=10000 µs, one sample each.
        for us in 1..=10_000u64 {
            h.record_ns(us * 1000);
        }
        let s = h.summary().unwrap();
        assert_eq!(s.samples, 10_000);
        assert!(close(s.min, 1.0) && close(s.max, 10_000.0), "{s:?}");
        assert!(close(s.p50, 5_000.0), "{s:?}");
        assert!(close(s.p90, 9_000.0), "{s:?}");
        assert!(close(s.p99, 9_900.0), "{s:?}");
        assert!(close(s.p999, 9_990.0), "{s:?}");
        assert!(close(s.mean, 5_000.5), "{s:?}");
        assert_eq!(s.supported_percentile(), "p99.9");
    }

    #[test]
    fn values_come_back_in_order_within_the_histograms_precision() {
        let mut h = Latency::new();
        for us in [250.0, 12.5, 12.5, 90_000.0, 3.0] {
            h.record_ns((us * 1000.0) as u64);
        }
        let v = h.values_us(100);
        let want = [3.0, 12.5, 12.5, 250.0, 90_000.0];
        assert_eq!(v.len(), want.len());
        for (got, want) in v.iter().zip(want) {
            assert!(close(*got, want), "{v:?}");
        }
        assert_eq!(h.values_us(2).len(), 2, "at most the limit");
        let mut many = Latency::new();
        for us in 1..=1000u64 {
            many.record_ns(us * 1000);
        }
        let kept = many.values_us(10);
        assert_eq!(kept.len(), 10);
        assert!(
            close(kept[0], 100.0) && close(kept[9], 1000.0),
            "spread evenly: {kept:?}"
        );
        assert!(Latency::new().values_us(10).is_empty());
    }

    #[test]
    fn constant_latency_has_no_spread() {
        let mut h = Latency::new();
        for _ in 0..1000 {
            h.record_ns(57_000);
        }
        let s = h.summary().unwrap();
        assert!(
            close(s.p50, 57.0) && close(s.p9999, 57.0) && s.stddev < 0.1,
            "{s:?}"
        );
    }

    #[test]
    fn add_and_reset() {
        let (mut a, mut b) = (Latency::new(), Latency::new());
        a.record_ns(1000);
        b.record_ns(3000);
        a.add(&b);
        assert_eq!(a.len(), 2);
        a.reset();
        assert!(a.summary().is_none());
        a.record_ns(u64::MAX);
        assert!(close(a.summary().unwrap().max, MAX_NS as f64 / 1000.0));
    }
}
