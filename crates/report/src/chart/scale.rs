//! Axis scales: a rate unit chosen from the data (`Mbit/s` or `Gbit/s` …), axis ranges with
//! headroom, and key points for axes drawn on a logarithm of their values.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

/// A linear f64 axis with the ticks given, not computed. (plotters' own `with_key_points`
/// wrapper loses the label formatter of an f64 axis.)
pub(crate) struct Ticked {
    range: std::ops::Range<f64>,
    ticks: Vec<f64>,
}

impl Ticked {
    /// An axis over `range` with ticks (and grid lines) at `ticks`.
    pub(crate) fn new(range: std::ops::Range<f64>, ticks: Vec<f64>) -> Self {
        Self { range, ticks }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let pixels = limit.1 - limit.0;
        if pixels == 0 || span == 0.0 {
            return limit.1;
        }
        let share = (value - self.range.start) / span;
        limit.0 + (f64::from(pixels) * share + 1e-3).floor() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Bold lines only: the light grid between ticks would be noise.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks
                .iter()
                .copied()
                .filter(|t| self.range.contains(t) || *t == self.range.end)
                .collect()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

/// A unit prefix for an axis: divide values by `divisor` and print `unit`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Unit {
    pub divisor: f64,
    pub prefix: &'static str,
}

/// The decimal prefix under which `max` reads between 1 and 1000 (none for small values).
pub(crate) fn decimal_unit(max: f64) -> Unit {
    const STEPS: [(f64, &str); 4] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")];
    STEPS
        .iter()
        .find(|(d, _)| max >= *d)
        .map(|&(divisor, prefix)| Unit { divisor, prefix })
        .unwrap_or(Unit {
            divisor: 1.0,
            prefix: "",
        })
}

/// `0..max` with 10 % headroom, or `0..1` when there is nothing above zero.
pub(crate) fn upto(max: f64) -> std::ops::Range<f64> {
    if max.is_finite() && max > 0.0 {
        0.0..max * 1.1
    } else {
        0.0..1.0
    }
}

/// The largest finite value of `values`, or 0.
pub(crate) fn max_of(values: impl IntoIterator<Item = f64>) -> f64 {
    values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

/// A number with up to three significant digits and no trailing zeros: `20`, `1.5`, `0.25`.
pub(crate) fn short(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Ticks at 1, 2 and 5 × 10ⁿ between `lo` and `hi` (both > 0), as log10 values.
pub(crate) fn log10_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in [1.0, 2.0, 5.0] {
            let v = decade * m;
            if v >= lo && v <= hi {
                ticks.push(v.log10());
            }
        }
        decade *= 10.0;
    }
    ticks
}

/// Evenly spaced ticks at a 1, 2 or 5 × 10ⁿ step, at most `max` of them, covering `range`.
pub(crate) fn linear_ticks(range: &std::ops::Range<f64>, max: usize) -> Vec<f64> {
    let span = range.end - range.start;
    if !(span.is_finite() && span > 0.0) || max < 2 {
        return vec![range.start];
    }
    let raw = span / (max - 1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= (max - 1) as f64)
        .unwrap_or(10.0 * mag);
    let first = (range.start / step).ceil() as i64;
    let last = (range.end / step).floor() as i64;
    // Multiply rather than accumulate, so ticks are exact multiples of the step.
    (first..=last).map(|k| k as f64 * step).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_from_the_largest_value() {
        assert_eq!(decimal_unit(9.4e9).prefix, "G");
        assert_eq!(decimal_unit(938e6).prefix, "M");
        assert_eq!(decimal_unit(12.0).prefix, "");
    }

    #[test]
    fn short_numbers() {
        assert_eq!(short(20.0), "20");
        assert_eq!(short(1.5), "1.5");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(1234.0), "1234");
    }

    #[test]
    fn linear_ticks_at_round_steps() {
        assert_eq!(
            linear_ticks(&(0.0..11.0), 8),
            [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        );
        assert_eq!(
            linear_ticks(&(0.0..3.3), 8),
            [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
        );
    }

    #[test]
    fn ticks_at_one_two_five() {
        let t: Vec<String> = log10_ticks(8.0, 300.0)
            .into_iter()
            .map(|t| short(10f64.powf(t)))
            .collect();
        assert_eq!(t, ["10", "20", "50", "100", "200"]);
    }
}
