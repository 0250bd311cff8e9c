//! The message sizes of a `linerate sweep size`, as NetPIPE chooses them: a geometric ladder
//! (powers of two between `--min` and `--max`, plus both ends) with each rung also tested a
//! few bytes below and above (NetPIPE's perturbation, 3 bytes by default), so a size just
//! past an internal buffer or segment boundary shows up as a dip instead of being stepped over.
//!
//! Invariants of a ladder: sorted, no duplicates, every size within `[min, max]`.

use measure::units::{parse_bytes, UnitError};
use thiserror::Error;
use wire::datagram::HEADER_LEN;

/// NetPIPE's default perturbation: each rung is also measured 3 bytes below and above.
pub const DEFAULT_PERTURBATION: u32 = 3;

/// Largest TCP message a size sweep takes (the test commands' write-length limit).
pub const TCP_MAX_BYTES: u32 = 64 << 20;

/// Largest UDP payload (65 535 − 8 UDP − 20 IPv4 header bytes).
pub const UDP_MAX_BYTES: u32 = 65_507;

/// A `--min`/`--max` bound that cannot be used, or a ladder that cannot be built; the message
/// names the flag.
#[derive(Debug, PartialEq, Eq, Error)]
pub enum LadderError {
    /// The size did not parse.
    #[error("{flag} {value}: {reason}")]
    Unparsable {
        /// `--min` or `--max`.
        flag: &'static str,
        /// As given.
        value: String,
        /// Why it did not parse.
        reason: UnitError,
    },
    /// The protocol cannot carry the size in one message.
    #[error("{flag} {value}: a {proto} message is between {lo} and {hi} bytes")]
    OutOfRange {
        /// `--min` or `--max`.
        flag: &'static str,
        /// As given.
        value: String,
        /// `TCP` or `UDP`.
        proto: &'static str,
        /// Smallest message, bytes.
        lo: u32,
        /// Largest message, bytes.
        hi: u32,
    },
    /// `--min 0`.
    #[error("--min 0: the smallest message is 1 byte")]
    ZeroMin,
    /// `--min` above `--max`.
    #[error("--min {min} is above --max {max}: give the smallest size first")]
    MinAboveMax {
        /// `--min`, bytes.
        min: u32,
        /// `--max`, bytes.
        max: u32,
    },
}

/// The sizes a protocol can carry in one message: TCP 1 byte to 64 MiB; UDP linerate's
/// 16-byte datagram header to 65 507 bytes (less where the path's MTU is smaller: the client
/// refuses a datagram the path would fragment).
pub fn size_limits(udp: bool) -> (u32, u32) {
    if udp {
        (HEADER_LEN as u32, UDP_MAX_BYTES)
    } else {
        (1, TCP_MAX_BYTES)
    }
}

/// Parses `--min`/`--max` (bytes; K, M, G are binary multiples) and checks them against the
/// protocol's limits. Errors name the flag.
pub fn parse_bound(flag: &'static str, value: &str, udp: bool) -> Result<u32, LadderError> {
    let (lo, hi) = size_limits(udp);
    let v = parse_bytes(value).map_err(|reason| LadderError::Unparsable {
        flag,
        value: value.to_string(),
        reason,
    })?;
    if v < u64::from(lo) || v > u64::from(hi) {
        return Err(LadderError::OutOfRange {
            flag,
            value: value.to_string(),
            proto: if udp { "UDP" } else { "TCP" },
            lo,
            hi,
        });
    }
    Ok(v as u32)
}

/// The ladder from `min` to `max` with `perturbation` bytes either side of each rung.
///
/// Rungs are `min`, every power of two strictly between, and `max`; each contributes
/// `rung - p`, `rung`, `rung + p`, kept when within `[min, max]`.
pub fn size_ladder(min: u32, max: u32, perturbation: u32) -> Result<Vec<u32>, LadderError> {
    if min == 0 {
        return Err(LadderError::ZeroMin);
    }
    if min > max {
        return Err(LadderError::MinAboveMax { min, max });
    }
    let mut rungs = vec![min];
    let mut p2 = min.next_power_of_two();
    if p2 == min {
        p2 = p2.saturating_mul(2);
    }
    while p2 < max {
        rungs.push(p2);
        p2 = p2.saturating_mul(2);
    }
    rungs.push(max);
    let mut sizes: Vec<u32> = rungs
        .iter()
        .flat_map(|&r| {
            [
                r.checked_sub(perturbation),
                Some(r),
                r.checked_add(perturbation),
            ]
        })
        .flatten()
        .filter(|s| (min..=max).contains(s))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    Ok(sizes)
}

/// The sizes of `sweep size`: from `min` to `max` (K, M: binary multiples; by default 1 and
/// 8M, or 16 and 65507 for UDP), the powers of two between, each `perturbation` bytes either
/// side (by default none, or NetPIPE's [`DEFAULT_PERTURBATION`] on the `full` ladder).
pub fn sweep_sizes(
    udp: bool,
    (min, max): (Option<&str>, Option<&str>),
    perturbation: Option<u32>,
    full: bool,
) -> Result<Vec<u32>, LadderError> {
    let (dmin, dmax) = if udp { ("16", "65507") } else { ("1", "8M") };
    let min = parse_bound("--min", min.unwrap_or(dmin), udp)?;
    let max = parse_bound("--max", max.unwrap_or(dmax), udp)?;
    let p = perturbation.unwrap_or(if full { DEFAULT_PERTURBATION } else { 0 });
    size_ladder(min, max, p)
}

/// Drops the sizes above `limit` (a UDP path's largest unfragmented payload); returns how many
/// were dropped.
pub fn cap_sizes(sizes: &mut Vec<u32>, limit: u32) -> usize {
    let before = sizes.len();
    sizes.retain(|&s| s <= limit);
    before - sizes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netpipe_style_ladder() {
        let sizes = size_ladder(1, 64, 3).unwrap();
        assert_eq!(
            sizes,
            [1, 2, 4, 5, 7, 8, 11, 13, 16, 19, 29, 32, 35, 61, 64]
        );
    }

    #[test]
    fn ladder_is_sorted_unique_and_bounded() {
        for (min, max, p) in [(1, 8 << 20, 3), (100, 1000, 3), (16, 65_507, 0), (7, 7, 3)] {
            let s = size_ladder(min, max, p).unwrap();
            assert!(s.windows(2).all(|w| w[0] < w[1]), "{s:?}");
            assert_eq!((s[0], *s.last().unwrap()), (min, max));
        }
        assert_eq!(size_ladder(7, 7, 3).unwrap(), [7]);
        // 1 byte to 8 MiB: 24 rungs, about three sizes each.
        let n = size_ladder(1, 8 << 20, 3).unwrap().len();
        assert!((60..=72).contains(&n), "{n}");
    }

    #[test]
    fn without_perturbation_the_rungs_are_powers_of_two() {
        assert_eq!(
            size_ladder(100, 1000, 0).unwrap(),
            [100, 128, 256, 512, 1000]
        );
        assert_eq!(size_ladder(64, 256, 0).unwrap(), [64, 128, 256]);
    }

    #[test]
    fn bad_bounds_are_refused() {
        assert!(size_ladder(0, 10, 3)
            .unwrap_err()
            .to_string()
            .contains("--min 0"));
        assert!(size_ladder(10, 5, 3)
            .unwrap_err()
            .to_string()
            .contains("--min 10 is above --max 5"));
        assert_eq!(parse_bound("--max", "8M", false), Ok(8 << 20));
        assert!(parse_bound("--min", "8", true)
            .unwrap_err()
            .to_string()
            .contains("--min 8: a UDP message is between 16 and 65507 bytes"));
        assert!(parse_bound("--max", "1X", false)
            .unwrap_err()
            .to_string()
            .starts_with("--max 1X: unknown suffix"));
    }

    #[test]
    fn capping_drops_the_large_sizes() {
        let mut s = vec![16, 1000, 1472, 1475, 9000];
        assert_eq!(cap_sizes(&mut s, 1472), 2);
        assert_eq!(s, [16, 1000, 1472]);
    }
}
