//! Summary statistics over per-interval values: current (last), average, minimum, maximum.

use serde::{Deserialize, Serialize};

/// `cur/avg/min/max` over a series, as nepim prints them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Spread {
    /// The last value.
    pub cur: f64,
    /// The mean of the values.
    pub avg: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; `None` when there are none.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Self> {
        let mut it = values.into_iter();
        let first = it.next()?;
        let (mut sum, mut n, mut min, mut max, mut cur) = (first, 1usize, first, first, first);
        for v in it {
            sum += v;
            n += 1;
            min = min.min(v);
            max = max.max(v);
            cur = v;
        }
        Some(Self {
            cur,
            avg: sum / n as f64,
            min,
            max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_values() {
        let s = Spread::of([3.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            s,
            Spread {
                cur: 2.0,
                avg: 2.0,
                min: 1.0,
                max: 3.0
            }
        );
        assert!(Spread::of(std::iter::empty()).is_none());
    }
}
