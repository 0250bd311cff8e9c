//! The protocol's bounds on a client's numbers that the client's own parser applies too: one
//! home for each, so `linerate`'s flags and a server's [`TestSpec::check`](super::TestSpec::check)
//! refuse the same values with the same words (docs/PROTOCOL.md section 6).

use super::check::SpecError;

/// Most streams per direction the protocol carries (`-P`; a server's `--max-streams` may
/// lower it): each is a thread and a socket at both ends.
pub const MAX_STREAMS: u16 = 128;

/// Longest test the protocol carries, ms (a day: `-t 0` runs this long; a server's
/// `--max-time` may lower it).
pub const MAX_DURATION_MS: u64 = 86_400_000;

/// Largest write length, request or response the protocol carries, bytes (64 MiB: `-l`,
/// `--response`, `serve --max-length`): a request or response is held whole at both ends.
pub const MAX_WRITE_LEN_BYTES: u32 = 64 << 20;

/// Longest live interval the command line takes, ms (`-i 3600`; `-i 0` asks for one interval
/// as long as the test, which the server's check allows too).
pub const MAX_INTERVAL_MS: u64 = 3_600_000;

/// Shortest live interval, ms (`-i 0.05`): each one costs both ends a sample and a frame on
/// the control connection; a record keeps at most `record::bounds::MAX_INTERVALS` of them,
/// merging pairs as a run grows, so this bounds the work per second, not the memory.
pub const MIN_INTERVAL_MS: u64 = 50;

/// Longest `SO_BUSY_POLL` time a spec may ask for, µs (10 ms, longer than a round trip on any
/// network busy polling helps): what `rr --busy-poll` accepts and `serve --allow-busy-poll`
/// lets a client ask of a server.
pub const MAX_BUSY_POLL_US: u32 = 10_000;

/// Longest `SO_BUSY_POLL` time a server takes without `serve --allow-busy-poll`, µs: the
/// kernel's suggested `net.core.busy_poll` (50, 100 for many sockets; Documentation/
/// admin-guide/sysctl/net.rst). A receive spins at most this long before it sleeps, so a
/// client's busy polling costs the server at most this much CPU per receive.
pub const SERVER_BUSY_POLL_US: u32 = 100;

/// An interval in [`MIN_INTERVAL_MS`]..=max(`duration_ms`, 1 s).
pub fn check_interval(interval_ms: u64, duration_ms: u64) -> Result<(), SpecError> {
    let max_ms = duration_ms.max(1000);
    if !(MIN_INTERVAL_MS..=max_ms).contains(&interval_ms) {
        return Err(SpecError::Interval {
            interval_ms,
            max_ms,
        });
    }
    Ok(())
}

/// A busy-poll time in 1..=`max_us` ([`MAX_BUSY_POLL_US`] for a client's own flag,
/// [`SERVER_BUSY_POLL_US`] on a server without `--allow-busy-poll`).
pub fn check_busy_poll(us: u32, max_us: u32) -> Result<(), SpecError> {
    if !(1..=max_us).contains(&us) {
        return Err(SpecError::BusyPoll { us, max_us });
    }
    Ok(())
}

/// What a server's busy-poll limit tells a client: how to get more, when there is more.
pub(super) fn busy_poll_words(max_us: u32) -> String {
    match max_us < MAX_BUSY_POLL_US {
        true => format!(
            " (this server's limit; serve --allow-busy-poll takes up to {MAX_BUSY_POLL_US})"
        ),
        false => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Params, SpecLimits, TestKind, TestSpec};
    use super::*;

    #[test]
    fn an_interval_is_at_least_the_clis_minimum_and_at_most_the_test() {
        assert_eq!(check_interval(50, 10_000), Ok(()));
        assert_eq!(check_interval(10_000, 10_000), Ok(()));
        assert_eq!(
            check_interval(1000, 100),
            Ok(()),
            "up to 1 s for a short test"
        );
        for (asked, duration) in [(0, 1000), (1, 1000), (49, 100_000), (10_001, 10_000)] {
            assert!(
                check_interval(asked, duration).is_err(),
                "{asked} of {duration}"
            );
        }
        assert_eq!(
            check_interval(1, 35_000).unwrap_err().to_string(),
            "interval 1 ms outside 50..=35000 ms (--interval: at least 0.05 s, at most the test \
             duration)"
        );
    }

    #[test]
    fn busy_poll_is_bounded_and_a_server_names_its_flag() {
        assert_eq!(check_busy_poll(50, SERVER_BUSY_POLL_US), Ok(()));
        assert_eq!(check_busy_poll(MAX_BUSY_POLL_US, MAX_BUSY_POLL_US), Ok(()));
        assert_eq!(
            check_busy_poll(0, MAX_BUSY_POLL_US)
                .unwrap_err()
                .to_string(),
            "busy-poll 0 µs (--busy-poll) outside 1..=10000 µs"
        );
        assert_eq!(
            check_busy_poll(2_000_000_000, SERVER_BUSY_POLL_US)
                .unwrap_err()
                .to_string(),
            "busy-poll 2000000000 µs (--busy-poll) outside 1..=100 µs (this server's limit; \
             serve --allow-busy-poll takes up to 10000)"
        );
    }

    /// The spec's check applies both: a server's default limits, the protocol's (a loopback
    /// run's own server, or `serve --allow-busy-poll`).
    #[test]
    fn the_spec_check_applies_the_same_bounds() {
        let mut spec = TestSpec::new(Params::defaults(TestKind::TcpRr), 2, 10_000);
        spec.params.rr_mut().unwrap().busy_poll_us = Some(2_000_000_000);
        let server = SpecLimits::default();
        let err = spec.check(&server).unwrap_err().to_string();
        assert!(err.starts_with("busy-poll 2000000000 µs"), "{err}");
        spec.params.rr_mut().unwrap().busy_poll_us = Some(1000);
        assert!(spec.check(&server).is_err());
        assert_eq!(spec.check(&SpecLimits::protocol()), Ok(()));
        spec.params.rr_mut().unwrap().busy_poll_us = Some(SERVER_BUSY_POLL_US);
        assert_eq!(spec.check(&server), Ok(()));
        spec.interval_ms = 1;
        let err = spec.check(&SpecLimits::protocol()).unwrap_err().to_string();
        assert!(err.starts_with("interval 1 ms outside 50..="), "{err}");
    }
}
