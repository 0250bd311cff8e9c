//! Parsing and printing sizes and rates with SI-style suffixes.
//!
//! Byte sizes use binary multiples as iperf, nuttcp and netperf do for buffer sizes
//! (`128K` = 131072 bytes); bit rates use decimal multiples (`10G` = 10^10 bit/s), as link speeds
//! are quoted.

use thiserror::Error;

/// A size or rate that could not be parsed.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum UnitError {
    /// Nothing was given.
    #[error("empty value")]
    Empty,
    /// The number part did not parse.
    #[error("'{0}' is not a number")]
    NotANumber(String),
    /// The suffix is not known.
    #[error("unknown suffix '{suffix}'; use {allowed}")]
    UnknownSuffix {
        /// The suffix given.
        suffix: String,
        /// What is allowed.
        allowed: &'static str,
    },
    /// Negative, or too large for the type.
    #[error("{0} is out of range")]
    OutOfRange(String),
    /// Not a positive duration.
    #[error("give a duration, e.g. 10s, 500ms or 30")]
    NotADuration,
    /// Outside what a flag allows.
    #[error("must be between {} and {} seconds", *min_ms as f64 / 1e3, *max_ms as f64 / 1e3)]
    OutsideSeconds {
        /// The least allowed, milliseconds.
        min_ms: u64,
        /// The most allowed, milliseconds.
        max_ms: u64,
    },
}

/// `seconds` as a duration where it lies within `min..=max` seconds, what a flag allows (to the
/// millisecond).
pub fn seconds_within(seconds: f64, min: f64, max: f64) -> Result<std::time::Duration, UnitError> {
    match seconds.is_finite() && (min..=max).contains(&seconds) {
        true => Ok(std::time::Duration::from_secs_f64(seconds)),
        false => Err(UnitError::OutsideSeconds {
            min_ms: (min * 1e3).round() as u64,
            max_ms: (max * 1e3).round() as u64,
        }),
    }
}

/// Parses a duration above zero: `10s`, `500ms`, `1.5s`, `30` (seconds).
pub fn parse_duration(input: &str) -> Result<std::time::Duration, UnitError> {
    let t = input.trim();
    let (num, scale) = match (t.strip_suffix("ms"), t.strip_suffix('s')) {
        (Some(ms), _) => (ms, 0.001),
        (None, Some(s)) => (s, 1.0),
        (None, None) => (t, 1.0),
    };
    (num.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| std::time::Duration::from_secs_f64(v * scale))
        .ok_or(UnitError::NotADuration)
}

/// Parses a command-line duration in seconds: a number alone is seconds (`2`, `0.5`, as iperf3
/// takes `-t`), or it carries a unit: `500ms`, `2s`, `5m`, `1h`. Zero and negative numbers
/// are returned as given, for the flag to say what it allows (`-t 0` runs until Ctrl-C).
pub fn parse_seconds(input: &str) -> Result<f64, UnitError> {
    let t = input.trim();
    if t.is_empty() {
        return Err(UnitError::Empty);
    }
    let (num, scale) = [("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)]
        .iter()
        .find_map(|&(unit, scale)| Some((t.strip_suffix(unit)?, scale)))
        .unwrap_or((t, 1.0));
    let value: f64 = (num.trim().parse().ok())
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| UnitError::UnknownSuffix {
            suffix: t
                .trim_start_matches(|c: char| c.is_ascii_digit() || ".-+".contains(c))
                .to_string(),
            allowed: "seconds, or a unit: 500ms, 2s, 5m, 1h",
        })?;
    Ok(value * scale)
}

fn split_number(input: &str) -> Result<(f64, &str), UnitError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(UnitError::Empty);
    }
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(end);
    let value: f64 = num
        .parse()
        .map_err(|_| UnitError::NotANumber(input.trim().to_string()))?;
    Ok((value, suffix.trim()))
}

fn to_u64(value: f64, input: &str) -> Result<u64, UnitError> {
    if !value.is_finite() || value < 0.0 || value > u64::MAX as f64 {
        return Err(UnitError::OutOfRange(input.to_string()));
    }
    Ok(value.round() as u64)
}

/// Parses a byte count: `65536`, `64K`, `1M`, `2G`, also `64KiB`, `64KB`, `100B`
/// (all multiples binary).
pub fn parse_bytes(input: &str) -> Result<u64, UnitError> {
    let (value, suffix) = split_number(input)?;
    let mult: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => {
            return Err(UnitError::UnknownSuffix {
                suffix: suffix.to_string(),
                allowed: "K, M or G (binary multiples of bytes), e.g. 128K",
            })
        }
    };
    to_u64(value * mult as f64, input)
}

/// Parses a bit rate in bits per second: `1000000`, `100M`, `2.5G`, `10G`, `1T`, also with a
/// trailing `bit/s`, `bps` or `b` (all multiples decimal). A capital `B` (bytes) is refused.
pub fn parse_bits_per_sec(input: &str) -> Result<u64, UnitError> {
    let (value, suffix) = split_number(input)?;
    if suffix.contains('B') {
        return Err(UnitError::UnknownSuffix {
            suffix: suffix.to_string(),
            allowed: "bits/s: K, M, G or T, optionally with 'bit/s' or 'b' (a capital B would mean bytes), e.g. 10G",
        });
    }
    let lower = suffix.to_ascii_lowercase();
    let stem = lower
        .strip_suffix("bit/s")
        .or_else(|| lower.strip_suffix("bps"))
        .or_else(|| lower.strip_suffix("b"))
        .unwrap_or(&lower);
    let mult: f64 = match stem {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        _ => {
            return Err(UnitError::UnknownSuffix {
                suffix: suffix.to_string(),
                allowed: "K, M, G or T (bits/s), e.g. 10G",
            })
        }
    };
    to_u64(value * mult, input)
}

/// Bits per second from a byte count and a duration; 0 for a zero duration.
pub fn bits_per_sec(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs
    } else {
        0.0
    }
}

/// Formats a bit rate with a decimal prefix, three significant digits: `31.2 Gbit/s`.
pub fn format_bits_per_sec(bps: f64) -> String {
    let (value, prefix) = scale(bps, 1000.0, &["", "K", "M", "G", "T"]);
    format!("{} {prefix}bit/s", sig3(value))
}

/// Formats a byte count with a binary prefix: `1.50 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    let (value, prefix) = scale(bytes as f64, 1024.0, &["", "Ki", "Mi", "Gi", "Ti"]);
    if prefix.is_empty() {
        format!("{bytes} B")
    } else {
        format!("{} {prefix}B", sig3(value))
    }
}

fn scale(mut value: f64, step: f64, prefixes: &[&'static str]) -> (f64, &'static str) {
    let mut i = 0;
    while value.abs() >= step && i + 1 < prefixes.len() {
        value /= step;
        i += 1;
    }
    (value, prefixes[i])
}

fn sig3(value: f64) -> String {
    let digits = if value.abs() >= 100.0 {
        0
    } else if value.abs() >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{value:.digits$}");
    // A zero, or a value that rounds to one, is written without a sign (never "-0.00").
    match text.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_has_no_sign() {
        assert_eq!(format_bits_per_sec(-0.0), "0.00 bit/s");
        assert_eq!(format_bits_per_sec(-0.001), "0.00 bit/s");
        assert_eq!(format_bits_per_sec(-1500.0), "-1.50 Kbit/s");
    }

    #[test]
    fn bytes_use_binary_multiples() {
        assert_eq!(parse_bytes("128K"), Ok(131_072));
        assert_eq!(parse_bytes("1m"), Ok(1 << 20));
        assert_eq!(parse_bytes("64KiB"), Ok(65_536));
        assert_eq!(parse_bytes("1500"), Ok(1500));
        assert_eq!(parse_bytes("0.5K"), Ok(512));
    }

    #[test]
    fn rates_use_decimal_multiples() {
        assert_eq!(parse_bits_per_sec("10G"), Ok(10_000_000_000));
        assert_eq!(parse_bits_per_sec("2.5g"), Ok(2_500_000_000));
        assert_eq!(parse_bits_per_sec("100Mbit/s"), Ok(100_000_000));
        assert_eq!(parse_bits_per_sec("1000"), Ok(1000));
        assert_eq!(parse_bits_per_sec("10Gb"), Ok(10_000_000_000));
        assert!(
            parse_bits_per_sec("100MB").is_err(),
            "MB is bytes, not bits"
        );
    }

    #[test]
    fn errors_name_the_problem() {
        let err = parse_bits_per_sec("10X").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown suffix 'X'; use K, M, G or T (bits/s), e.g. 10G"
        );
        assert_eq!(parse_bytes(""), Err(UnitError::Empty));
        assert!(matches!(parse_bytes("abc"), Err(UnitError::NotANumber(_))));
        assert!(matches!(
            parse_bytes("1.2.3K"),
            Err(UnitError::NotANumber(_))
        ));
        assert!(matches!(
            parse_bytes("99999999999G"),
            Err(UnitError::OutOfRange(_))
        ));
    }

    #[test]
    fn formats_three_significant_digits() {
        assert_eq!(format_bits_per_sec(31_234_000_000.0), "31.2 Gbit/s");
        assert_eq!(format_bits_per_sec(950_000_000.0), "950 Mbit/s");
        assert_eq!(format_bits_per_sec(0.0), "0.00 bit/s");
        assert_eq!(format_bytes(1536), "1.50 KiB");
        assert_eq!(format_bytes(12), "12 B");
    }

    #[test]
    fn durations_take_seconds_or_a_unit() {
        assert_eq!(parse_seconds("2"), Ok(2.0));
        assert_eq!(parse_seconds("2s"), Ok(2.0));
        assert_eq!(parse_seconds(" 1.5s "), Ok(1.5));
        assert_eq!(parse_seconds("500ms"), Ok(0.5));
        assert_eq!(parse_seconds("5m"), Ok(300.0));
        assert_eq!(parse_seconds("1h"), Ok(3600.0));
        assert_eq!(parse_seconds("0"), Ok(0.0));
        assert_eq!(parse_seconds("-1"), Ok(-1.0));
        assert_eq!(parse_seconds(""), Err(UnitError::Empty));
        let err = parse_seconds("2x").unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown suffix 'x'; use seconds, or a unit: 500ms, 2s, 5m, 1h"
        );
        assert!(parse_seconds("s").is_err() && parse_seconds("nan").is_err());
    }

    #[test]
    fn rate_from_bytes() {
        assert_eq!(bits_per_sec(125_000_000, 1.0), 1e9);
        assert_eq!(bits_per_sec(1, 0.0), 0.0);
    }
}
