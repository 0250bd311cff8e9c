//! `--values` lists: parsing each item in the swept parameter's unit and checking the list's
//! shape before anything runs.
//!
//! Rules (the same for every sweep, so a list means one thing everywhere):
//! - at least one value, none empty;
//! - numeric lists (`streams`, `window`, `mss`, `rate`, `payload`, and a `knob` list whose
//!   items are all plain numbers) must be strictly increasing: `--values 4,2` is refused
//!   rather than silently reordered, since the order points run in is part of the experiment;
//! - a `knob` list with any non-numeric item (`on,off`, `cubic,bbr`) is run in the order
//!   given, and only duplicates are refused.

use measure::units::{parse_bits_per_sec, parse_bytes, UnitError};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// One value of a sweep: as the user wrote it, and as a number in the parameter's unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepValue {
    /// As given (`64K`, `10G`, `4`, `on`), trimmed.
    pub label: String,
    /// In the parameter's unit (bytes, bits/s, streams); `None` for a non-numeric knob value.
    pub number: Option<f64>,
}

impl SweepValue {
    /// A numeric value, labelled with its own digits.
    pub fn number(n: u64) -> Self {
        Self {
            label: n.to_string(),
            number: Some(n as f64),
        }
    }
}

/// How the items of a `--values` list are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueUnit {
    /// Whole numbers (streams, MSS bytes).
    Count,
    /// Byte sizes, K/M/G binary multiples (window, payload).
    Bytes,
    /// Bit rates, K/M/G/T decimal multiples.
    BitsPerSec,
    /// Free text (knob values); numeric order is still checked when every item is a number.
    Text,
    /// A share of a measured capacity, percent: `10%` or `10` (`sweep load`).
    Percent,
}

/// A value list that cannot be used; the message names the flag and the list.
#[derive(Debug, PartialEq, Eq, Error)]
pub enum ValuesError {
    /// No values.
    #[error("{flag}: give at least one value, e.g. {flag} 1,2,4,8")]
    Empty {
        /// The flag (`--values`, `--frame`).
        flag: &'static str,
    },
    /// Two commas in a row, or one at an end.
    #[error("{flag} {text}: an empty value; separate values with single commas")]
    EmptyItem {
        /// The flag.
        flag: &'static str,
        /// The list as given.
        text: String,
    },
    /// A count that is not a whole number.
    #[error("{flag} {text}: '{label}' is not a whole number")]
    NotWhole {
        /// The flag.
        flag: &'static str,
        /// The list as given.
        text: String,
        /// The item.
        label: String,
    },
    /// A percentage that is not a positive number.
    #[error("{flag} {text}: '{label}' is not a percentage; give e.g. 10%,50%,100%")]
    NotPercent {
        /// The flag.
        flag: &'static str,
        /// The list as given.
        text: String,
        /// The item.
        label: String,
    },
    /// A size or rate that did not parse.
    #[error("{flag} {text}: '{label}': {reason}")]
    Unparsable {
        /// The flag.
        flag: &'static str,
        /// The list as given.
        text: String,
        /// The item.
        label: String,
        /// Why it did not parse.
        reason: UnitError,
    },
    /// A numeric list with a value twice.
    #[error("{flag} {text}: {a} and {b} are the same value; give each once")]
    Repeated {
        /// The flag.
        flag: &'static str,
        /// The list as given.
        text: String,
        /// The first of the two, as given.
        a: String,
        /// The second.
        b: String,
    },
    /// A numeric list out of order.
    #[error("{flag} {text}: give the values in increasing order ({b} comes after {a})")]
    Unordered {
        /// The flag.
        flag: &'static str,
        /// The list as given.
        text: String,
        /// The larger value, given first.
        a: String,
        /// The smaller value after it.
        b: String,
    },
    /// A text list with a value twice.
    #[error("{flag} {text}: '{label}' is given twice; give each value once")]
    Twice {
        /// The flag.
        flag: &'static str,
        /// The list as given.
        text: String,
        /// The item.
        label: String,
    },
}

/// Parses `text` (comma-separated) as `--values` for a parameter read in `unit`.
pub fn parse_values(text: &str, unit: ValueUnit) -> Result<Vec<SweepValue>, ValuesError> {
    parse_list("--values", text, unit)
}

/// Parses `text`, given with `flag`, as a list read in `unit`, by the rules of `--values`.
pub fn parse_list(
    flag: &'static str,
    text: &str,
    unit: ValueUnit,
) -> Result<Vec<SweepValue>, ValuesError> {
    if text.trim().is_empty() {
        return Err(ValuesError::Empty { flag });
    }
    let mut values = Vec::new();
    for item in text.split(',') {
        let label = item.trim();
        let unparsable = |reason| ValuesError::Unparsable {
            flag,
            text: text.to_string(),
            label: label.to_string(),
            reason,
        };
        if label.is_empty() {
            return Err(ValuesError::EmptyItem {
                flag,
                text: text.to_string(),
            });
        }
        let number = match unit {
            ValueUnit::Count => Some(label.parse::<u64>().map_err(|_| ValuesError::NotWhole {
                flag,
                text: text.to_string(),
                label: label.to_string(),
            })? as f64),
            ValueUnit::Bytes => Some(parse_bytes(label).map_err(unparsable)? as f64),
            ValueUnit::BitsPerSec => Some(parse_bits_per_sec(label).map_err(unparsable)? as f64),
            ValueUnit::Text => label.parse::<f64>().ok().filter(|v| v.is_finite()),
            ValueUnit::Percent => Some(
                label
                    .strip_suffix('%')
                    .unwrap_or(label)
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v > 0.0)
                    .ok_or_else(|| ValuesError::NotPercent {
                        flag,
                        text: text.to_string(),
                        label: label.to_string(),
                    })?,
            ),
        };
        values.push(SweepValue {
            label: label.to_string(),
            number,
        });
    }
    check_order(flag, text, &values)?;
    Ok(values)
}

/// Numeric lists must increase strictly; any list must not repeat a value.
fn check_order(flag: &'static str, text: &str, values: &[SweepValue]) -> Result<(), ValuesError> {
    let numbers: Option<Vec<f64>> = values.iter().map(|v| v.number).collect();
    match numbers {
        Some(n) => {
            if let Some(w) = n.windows(2).position(|w| w[0] >= w[1]) {
                let (a, b) = (values[w].label.clone(), values[w + 1].label.clone());
                let text = text.to_string();
                if n[w] == n[w + 1] {
                    return Err(ValuesError::Repeated { flag, text, a, b });
                }
                return Err(ValuesError::Unordered { flag, text, a, b });
            }
        }
        None => {
            for (i, v) in values.iter().enumerate() {
                if values[..i].iter().any(|u| u.label == v.label) {
                    return Err(ValuesError::Twice {
                        flag,
                        text: text.to_string(),
                        label: v.label.clone(),
                    });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(v: &[SweepValue]) -> Vec<f64> {
        v.iter().map(|v| v.number.unwrap()).collect()
    }

    #[test]
    fn values_in_their_units() {
        let v = parse_values("1, 2,4,8", ValueUnit::Count).unwrap();
        assert_eq!(numbers(&v), [1.0, 2.0, 4.0, 8.0]);
        assert_eq!(v[1].label, "2");
        let v = parse_values("64K,1M", ValueUnit::Bytes).unwrap();
        assert_eq!(numbers(&v), [65536.0, 1048576.0]);
        let v = parse_values("100M,1G,10G", ValueUnit::BitsPerSec).unwrap();
        assert_eq!(numbers(&v), [1e8, 1e9, 1e10]);
        assert_eq!(v[2].label, "10G");
        let v = parse_values("10%, 50,100 %", ValueUnit::Percent).unwrap();
        assert_eq!(numbers(&v), [10.0, 50.0, 100.0]);
        assert_eq!(v[0].label, "10%");
    }

    #[test]
    fn empty_and_unsorted_lists_are_refused() {
        for (text, unit, needle) in [
            ("", ValueUnit::Count, "--values: give at least one value"),
            ("1,,2", ValueUnit::Count, "an empty value"),
            (
                "4,2",
                ValueUnit::Count,
                "--values 4,2: give the values in increasing order",
            ),
            ("1,2,2", ValueUnit::Count, "2 and 2 are the same value"),
            (
                "1M,64K",
                ValueUnit::Bytes,
                "increasing order (64K comes after 1M)",
            ),
            (
                "1K,1024",
                ValueUnit::Bytes,
                "1K and 1024 are the same value",
            ),
            ("x", ValueUnit::Count, "'x' is not a whole number"),
            ("10X", ValueUnit::BitsPerSec, "'10X': unknown suffix 'X'"),
            ("7,3", ValueUnit::Text, "increasing order"),
            ("on,off,on", ValueUnit::Text, "'on' is given twice"),
            ("50%,20%", ValueUnit::Percent, "increasing order"),
            ("0%", ValueUnit::Percent, "'0%' is not a percentage"),
            ("half", ValueUnit::Percent, "'half' is not a percentage"),
        ] {
            let err = parse_values(text, unit).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn knob_values_may_be_text_in_any_order() {
        let v = parse_values("off,on", ValueUnit::Text).unwrap();
        assert_eq!(v[0].number, None);
        let v = parse_values("0,1,2,3,4,5,6,7", ValueUnit::Text).unwrap();
        assert_eq!(v.len(), 8);
        assert_eq!(v[7].number, Some(7.0));
        // Mixed lists are text: the order is the user's.
        assert!(parse_values("9000,auto,1500", ValueUnit::Text).is_ok());
    }
}
