//! The responder's side of a paced request/response test: [`AnswerRate`] answers no faster
//! than the spec's transaction rate, whatever rate the requester sends at. A server's
//! `--max-rate` (and a key's `max-rate`) admits a request/response test only at a rate whose
//! larger message stays within the limit (wire's `check_rr`); this makes the responder hold
//! that rate against a requester that ignores it.
//!
//! It is a token bucket (GCRA form: one "theoretical arrival time") holding a burst of
//! [`MIN_BURST`] answers or [`BURST_TIME`] worth, whichever is more, so an honest requester,
//! which starts at most one request per slot (`crate::pace`), is never held back by arrival
//! jitter: only a requester that sends faster than the rate for longer than the burst waits.
//! Unpaced tests (no rate) never read the clock here.

use std::time::{Duration, Instant};

use crate::StreamControl;

/// Fewest answers the bucket holds.
const MIN_BURST: u32 = 2;
/// Time worth of answers the bucket holds at high rates.
const BURST_TIME: Duration = Duration::from_millis(10);
/// Longest single sleep, so an abort is seen promptly at low rates.
const MAX_NAP: Duration = Duration::from_millis(20);

/// When the responder may answer next.
#[derive(Debug, Clone)]
pub(crate) struct AnswerRate {
    gap: Option<Duration>,
    burst: Duration,
    /// The bucket is empty until this instant; `now - burst` or earlier: full.
    tat: Instant,
}

impl AnswerRate {
    /// Answers at most one per `gap` on average (`None`: no limit), starting with a full
    /// bucket.
    pub(crate) fn new(gap: Option<Duration>) -> Self {
        let burst = gap.map_or(Duration::ZERO, |g| (g * MIN_BURST).max(BURST_TIME));
        let now = Instant::now();
        Self {
            gap,
            burst,
            tat: now.checked_sub(burst).unwrap_or(now),
        }
    }

    /// Waits until an answer may go out and takes it; `false` if the test was aborted
    /// meanwhile. (`stop` does not end the wait: requests sent before it are still answered.)
    pub(crate) fn wait(&mut self, ctl: &StreamControl<'_>) -> bool {
        let Some(gap) = self.gap else {
            return true;
        };
        loop {
            let now = Instant::now();
            if let Some(after) = self.take(now, gap) {
                if ctl.abort.is_raised() {
                    return false;
                }
                std::thread::sleep(after.min(MAX_NAP));
            } else {
                return true;
            }
        }
    }

    /// Takes an answer at `now`: `None` if taken, else how long until one may be.
    fn take(&mut self, now: Instant, gap: Duration) -> Option<Duration> {
        let full = now.checked_sub(self.burst).unwrap_or(now);
        self.tat = self.tat.max(full);
        if self.tat > now {
            return Some(self.tat - now);
        }
        self.tat += gap;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate_whatever_the_requester_asks() {
        let ms = Duration::from_millis;
        let gap = ms(10);
        let mut rate = AnswerRate::new(Some(gap));
        let t0 = Instant::now() + ms(1000);
        // A full bucket: a burst of 20 ms worth (plus the one due now) at once, then one per
        // gap.
        for _ in 0..3 {
            assert_eq!(rate.take(t0, gap), None);
        }
        assert_eq!(rate.take(t0, gap), Some(gap));
        let mut answered = 3;
        let mut now = t0;
        // A requester flooding for one second gets one answer per gap beyond the burst.
        while now < t0 + ms(1000) {
            match rate.take(now, gap) {
                None => answered += 1,
                Some(wait) => now += wait,
            }
        }
        assert!((100..=103).contains(&answered), "{answered}");
    }

    #[test]
    fn an_honest_requester_one_per_slot_never_waits() {
        let us = Duration::from_micros;
        let gap = us(100);
        let mut rate = AnswerRate::new(Some(gap));
        let t0 = Instant::now() + us(1_000_000);
        // Arrivals on schedule with up to 3 ms of jitter either way (under the 10 ms burst).
        for n in 0..10_000u64 {
            let jitter = us((n * 7919) % 3000);
            let arrival = t0 + gap * n as u32 + jitter;
            assert_eq!(rate.take(arrival.max(t0), gap), None, "request {n}");
        }
    }
}
