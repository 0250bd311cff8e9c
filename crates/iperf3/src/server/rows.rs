//! An iperf3 client's test's interval rows, taken as the test runs when the server keeps
//! runs: every stream's counts at each tick become an interval sample at once, kept at most
//! `record::bounds::MAX_INTERVALS` ([`BoundedIntervals`]), so a test of any length and any
//! number of streams holds a bounded number of rows, not every stream's counts at every tick.
//!
//! Invariants: with `-O`, the rows start at the end of the omitted seconds and count from
//! there (a tick within them is left out; the first row after runs from their end); the last
//! row ends at `TEST_END` with every stream's counts then, so the rows add up to the run's
//! counts. iperf3's client reports nothing while the test runs, so this server's counts stand
//! for both ends of every stream (as a linerate client's rows against an iperf3 server are
//! its own counts alone), on this server's clock.

use std::time::Duration;

use analysis::{BoundedIntervals, IntervalTracker};
use record::IntervalSample;
use wire::msg::StreamCounts;
use wire::TestSpec;

/// What the streams counted by the end of the omitted seconds (`-O`).
pub(super) struct Omitted {
    pub at: Duration,
    pub counts: Vec<StreamCounts>,
}

/// The rows of a test so far.
pub(super) struct Rows {
    tracker: IntervalTracker,
    kept: BoundedIntervals,
    /// The test has omitted seconds (`-O`).
    omits: bool,
}

impl Rows {
    /// No rows yet of a test of `spec` (`omits`: with `-O`), kept in `kept`.
    pub fn new(spec: &TestSpec, omits: bool, kept: BoundedIntervals) -> Self {
        Self {
            tracker: IntervalTracker::new(spec),
            kept,
            omits,
        }
    }

    /// The row ending at `at` (since the test's start) with every stream's `counts` then;
    /// none while the omitted seconds run.
    pub fn tick(&mut self, at: Duration, counts: &[StreamCounts], omitted: Option<&Omitted>) {
        if self.omits && omitted.is_none_or(|o| at <= o.at) {
            return;
        }
        self.push(at, counts, omitted);
    }

    /// The rows, the last ending at `at` with every stream's `counts` at `TEST_END`.
    pub fn finish(
        mut self,
        at: Duration,
        counts: &[StreamCounts],
        omitted: Option<&Omitted>,
    ) -> Vec<IntervalSample> {
        self.push(at, counts, omitted);
        self.kept.into_vec()
    }

    fn push(&mut self, at: Duration, counts: &[StreamCounts], omitted: Option<&Omitted>) {
        let omit_at = omitted.map_or(Duration::ZERO, |o| o.at);
        let before = |i: usize| omitted.and_then(|o| o.counts.get(i)).map_or(0, |c| c.bytes);
        let counts: Vec<StreamCounts> = (counts.iter().enumerate())
            .map(|(i, c)| StreamCounts {
                bytes: c.bytes.saturating_sub(before(i)),
                ..*c
            })
            .collect();
        let sample = self
            .tracker
            .sample(at.saturating_sub(omit_at), &counts, &counts);
        self.kept.push(sample);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::spec::{Direction, Params, StreamParams};

    fn spec(streams: u16) -> TestSpec {
        let stream = StreamParams::new(Direction::Bidir);
        TestSpec::new(
            Params::TcpStream {
                stream,
                tcp: Default::default(),
            },
            streams,
            3_600_000,
        )
    }

    fn counts(n: usize, bytes: u64) -> Vec<StreamCounts> {
        let c = StreamCounts {
            bytes,
            ..StreamCounts::default()
        };
        vec![c; n]
    }

    /// Issue 48: an hour of 50 ms ticks of 256 streams (72,000 ticks) holds at most the
    /// bound's rows, and every byte is in them.
    #[test]
    fn a_long_test_of_many_streams_holds_at_most_the_bound() {
        let n = 256;
        let mut rows = Rows::new(&spec(128), false, BoundedIntervals::new(64, 100));
        for tick in 1..72_000u64 {
            rows.tick(
                Duration::from_millis(50 * tick),
                &counts(n, 1000 * tick),
                None,
            );
            assert!(rows.kept.len() <= 64);
        }
        let end = Duration::from_secs(3600);
        let kept = rows.finish(end, &counts(n, 72_000_000), None);
        assert!(kept.len() <= 64, "{}", kept.len());
        let bytes: u64 = kept
            .iter()
            .flat_map(|s| &s.flows)
            .map(|f| f.receiver_bytes)
            .sum();
        assert_eq!(bytes, 72_000_000 * n as u64);
        assert_eq!(kept.last().unwrap().end_s, 3600.0);
    }

    #[test]
    fn with_omitted_seconds_the_rows_start_at_their_end() {
        let mut rows = Rows::new(&spec(1), true, BoundedIntervals::default());
        rows.tick(Duration::from_secs(1), &counts(2, 100), None);
        let omitted = Omitted {
            at: Duration::from_millis(1500),
            counts: counts(2, 150),
        };
        rows.tick(Duration::from_secs(2), &counts(2, 200), Some(&omitted));
        let kept = rows.finish(Duration::from_secs(3), &counts(2, 300), Some(&omitted));
        assert_eq!(kept.len(), 2);
        assert_eq!((kept[0].start_s, kept[0].end_s), (0.0, 0.5));
        assert_eq!(kept[0].flows[0].receiver_bytes, 50);
        assert_eq!(kept[1].flows[0].receiver_bytes, 100);
    }
}
