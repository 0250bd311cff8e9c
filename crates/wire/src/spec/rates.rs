//! The rate flags' values (`tcp -b`, `udp -b`, `udp --pps`) into a spec's rates: one rate for
//! every sender, or, in a bidirectional test, `A,B`: the client → server senders' rate, then
//! the server → client senders'. Read here rather than in the binary so that `A,B` has one
//! reading, and what it becomes in the spec one place: a reverse rate only where it differs
//! from the first (`-b 100M,100M` is `-b 100M`), so a spec with one rate stays as it was.
//!
//! Only the text is checked here (a rate, above 0, one or two, two only with `--bidir`); the
//! server's limits are [`super::TestSpec::check`]'s.

use measure::units::{parse_bits_per_sec, UnitError};

use super::{Direction, UdpRate};

/// The rate of each UDP stream when none is given, bits/s: 1 Mbit/s, as iperf3's (UDP has no
/// congestion control).
pub const DEFAULT_UDP_RATE_BPS: u64 = 1_000_000;

/// The rates a flag asks for: every sender's, or the client → server senders' and a different
/// one for the server → client senders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rates<T> {
    /// The client → server senders' rate (every sender's without `reverse`).
    pub rate: T,
    /// The server → client senders' rate, when it differs from `rate`.
    pub reverse: Option<T>,
}

/// A rate flag's value that cannot be used, naming the flag and the value as given.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{flag} {text}: {problem}")]
pub struct RateError {
    /// The flag, e.g. `--rate`.
    pub flag: &'static str,
    /// Its value, as given.
    pub text: String,
    /// What is wrong with it.
    pub problem: RateProblem,
}

/// What is wrong with a rate flag's value.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RateProblem {
    /// A value that is not a rate (`or_max`: `max` would have been one).
    #[error("{unit}{}", if *or_max { ", or max" } else { "" })]
    NotARate {
        /// Why the number did not parse.
        unit: UnitError,
        /// Whether `max` is allowed.
        or_max: bool,
    },
    /// A rate of 0 bits/s.
    #[error("must be above 0{}", if *or_max { " (or max)" } else { "" })]
    Zero {
        /// Whether `max` is allowed.
        or_max: bool,
    },
    /// A rate of 0 datagrams/s.
    #[error("must be at least 1 datagram per second")]
    NoDatagrams,
    /// Two rates in a test that is not bidirectional.
    #[error(
        "two rates need --bidir (the first client -> server, the second server -> client); \
         add --bidir, or give one rate"
    )]
    NeedsBidir,
    /// Not one rate, nor two separated by one comma.
    #[error(
        "give one rate, or two separated by a comma with --bidir \
         (client -> server,server -> client), e.g. 100M,1G"
    )]
    NotOneOrTwo,
}

/// `tcp --rate`: the pacing of each stream, bits/s above 0; `A,B` in a `direction` of
/// [`Direction::Bidir`].
pub fn pacing(text: &str, direction: Direction) -> Result<Rates<u64>, RateError> {
    per_direction("--rate", text, direction, |one| {
        match parse_bits_per_sec(one) {
            Ok(0) => Err(RateProblem::Zero { or_max: false }),
            Ok(bps) => Ok(bps),
            Err(unit) => Err(RateProblem::NotARate {
                unit,
                or_max: false,
            }),
        }
    })
}

/// `udp --rate` (bits/s above 0, or `max`) or `udp --pps` (datagrams/s above 0), at most one
/// of them (the binary refuses both); neither is [`DEFAULT_UDP_RATE_BPS`]. Each may be `A,B`
/// in a `direction` of [`Direction::Bidir`].
pub fn udp_rate(
    rate: Option<&str>,
    pps: Option<&str>,
    direction: Direction,
) -> Result<Rates<UdpRate>, RateError> {
    match (rate, pps) {
        (Some(text), _) => per_direction("--rate", text, direction, |one| {
            if one.trim().eq_ignore_ascii_case("max") {
                return Ok(UdpRate::Max);
            }
            match parse_bits_per_sec(one) {
                Ok(0) => Err(RateProblem::Zero { or_max: true }),
                Ok(bps) => Ok(UdpRate::BitsPerSec(bps)),
                Err(unit) => Err(RateProblem::NotARate { unit, or_max: true }),
            }
        }),
        (None, Some(text)) => {
            per_direction("--pps", text, direction, |one| {
                match parse_bits_per_sec(one) {
                    Ok(0) => Err(RateProblem::NoDatagrams),
                    Ok(pps) => Ok(UdpRate::PacketsPerSec(pps)),
                    Err(unit) => Err(RateProblem::NotARate {
                        unit,
                        or_max: false,
                    }),
                }
            })
        }
        (None, None) => Ok(Rates {
            rate: UdpRate::BitsPerSec(DEFAULT_UDP_RATE_BPS),
            reverse: None,
        }),
    }
}

/// `text` as one value of `one`, or two separated by a comma in a bidirectional test; a
/// second value equal to the first is no reverse rate.
fn per_direction<T: PartialEq>(
    flag: &'static str,
    text: &str,
    direction: Direction,
    one: impl Fn(&str) -> Result<T, RateProblem>,
) -> Result<Rates<T>, RateError> {
    let error = |problem| RateError {
        flag,
        text: text.to_string(),
        problem,
    };
    let parts: Vec<&str> = text.split(',').collect();
    let (first, second) = match parts[..] {
        [first] => (first, None),
        [first, second] if !first.trim().is_empty() && !second.trim().is_empty() => {
            (first, Some(second))
        }
        _ => return Err(error(RateProblem::NotOneOrTwo)),
    };
    if second.is_some() && direction != Direction::Bidir {
        return Err(error(RateProblem::NeedsBidir));
    }
    let rate = one(first).map_err(error)?;
    let reverse = second.map(&one).transpose().map_err(error)?;
    Ok(Rates {
        reverse: reverse.filter(|r| *r != rate),
        rate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIDIR: Direction = Direction::Bidir;

    #[test]
    fn one_rate_is_every_senders() {
        for direction in [Direction::Send, Direction::Reverse, BIDIR] {
            assert_eq!(
                pacing("100M", direction),
                Ok(Rates {
                    rate: 100_000_000,
                    reverse: None
                })
            );
        }
        assert_eq!(
            udp_rate(None, None, BIDIR).unwrap().rate,
            UdpRate::BitsPerSec(DEFAULT_UDP_RATE_BPS)
        );
        assert_eq!(
            udp_rate(Some("MAX"), None, Direction::Reverse),
            Ok(Rates {
                rate: UdpRate::Max,
                reverse: None
            })
        );
    }

    #[test]
    fn two_rates_are_client_to_server_then_server_to_client() {
        assert_eq!(
            pacing("100M,1G", BIDIR),
            Ok(Rates {
                rate: 100_000_000,
                reverse: Some(1_000_000_000)
            })
        );
        assert_eq!(
            udp_rate(Some("max, 50M"), None, BIDIR),
            Ok(Rates {
                rate: UdpRate::Max,
                reverse: Some(UdpRate::BitsPerSec(50_000_000))
            })
        );
        assert_eq!(
            udp_rate(None, Some("10K,20K"), BIDIR),
            Ok(Rates {
                rate: UdpRate::PacketsPerSec(10_000),
                reverse: Some(UdpRate::PacketsPerSec(20_000))
            })
        );
        // The same rate twice is one rate: the spec stays as a one-rate test's.
        assert_eq!(pacing("1G,1000M", BIDIR).unwrap().reverse, None);
    }

    #[test]
    fn errors_name_the_flag_the_value_and_the_fix() {
        let err = |r: Result<Rates<u64>, RateError>| r.unwrap_err().to_string();
        assert_eq!(
            err(pacing("100M,1G", Direction::Send)),
            "--rate 100M,1G: two rates need --bidir (the first client -> server, the second \
             server -> client); add --bidir, or give one rate"
        );
        assert!(err(pacing("100M,1G", Direction::Reverse)).contains("two rates need --bidir"));
        for bad in ["1M,2M,3M", "1M,", ",1M", ","] {
            assert!(
                err(pacing(bad, BIDIR)).contains("give one rate, or two separated by a comma"),
                "{bad}"
            );
        }
        assert_eq!(err(pacing("0", BIDIR)), "--rate 0: must be above 0");
        assert_eq!(err(pacing("1G,0", BIDIR)), "--rate 1G,0: must be above 0");
        assert!(err(pacing("fast", BIDIR)).starts_with("--rate fast: 'fast' is not a number"));
        let udp = |rate, pps| udp_rate(rate, pps, BIDIR).unwrap_err().to_string();
        assert!(udp(Some("10X"), None).starts_with("--rate 10X: unknown suffix 'X'"));
        assert!(udp(Some("10X"), None).ends_with(", or max"));
        assert_eq!(
            udp(Some("1M,0"), None),
            "--rate 1M,0: must be above 0 (or max)"
        );
        assert_eq!(
            udp(None, Some("0")),
            "--pps 0: must be at least 1 datagram per second"
        );
        assert!(udp(None, Some("max")).starts_with("--pps max: 'max' is not a number"));
    }
}
