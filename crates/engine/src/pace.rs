//! Request pacing for request/response requesters: with a rate, each transaction starts on a
//! fixed schedule (`start + n / rate`) instead of right after the previous one, as a low-rate
//! latency probe or sockperf's `--mps` does. A requester that falls behind (a round trip longer
//! than the gap, a late wake-up) starts the next request at once in the latest slot that has
//! opened and counts the slots before it as missed, so it never sends a catch-up burst and every
//! slot of the schedule is either taken or counted. The schedule runs from the test's start
//! (the worker set's clock, not the requester's first wake-up) to the instant `stop` was
//! raised: slots that opened while the requester was still starting, or busy with the last
//! request when the test ended, are counted missed too, so taken + missed is the window's
//! slots (`rate * duration`).

use std::time::{Duration, Instant};

use crate::StreamControl;

/// Longest single sleep, so `stop` is seen promptly at low rates.
const MAX_NAP: Duration = Duration::from_millis(20);
/// Gaps shorter than this get a 1 µs timer slack on the requesting thread: the kernel's
/// default of 50 µs would wake it late by a large share of the gap, and the slots it misses
/// would lower the rate offered (`sweep load` of rr at tens of thousands a second).
const FINE_SLACK_BELOW: Duration = Duration::from_millis(1);

/// Sets the calling thread's timer slack to 1 µs (PR_SET_TIMERSLACK; per thread, so the
/// requesting worker only). A failure leaves the default, which is only less punctual.
fn fine_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long and touches only this thread's slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong);
    }
}

/// When the next request may start.
#[derive(Debug, Clone)]
pub(crate) struct Pace {
    gap: Option<Duration>,
    next: Instant,
    missed: u64,
}

impl Pace {
    /// Requests `gap` apart, the first at `origin` (the test's start); `None` for back to
    /// back. Call it on the requesting thread: a gap under [`FINE_SLACK_BELOW`] tightens that
    /// thread's timer slack.
    pub(crate) fn new(gap: Option<Duration>, origin: Instant) -> Self {
        if gap.is_some_and(|g| g < FINE_SLACK_BELOW) {
            fine_timer_slack();
        }
        Self {
            gap,
            next: origin,
            missed: 0,
        }
    }

    /// Waits for the next slot; `false` when `stop` or `abort` was raised meanwhile.
    pub(crate) fn wait(&mut self, ctl: &StreamControl<'_>) -> bool {
        if self.gap.is_none() {
            // Back to back: no clock read in the requester's loop.
            return !ctl.stop.is_raised() && !ctl.abort.is_raised();
        }
        loop {
            if ctl.stop.is_raised() || ctl.abort.is_raised() {
                return false;
            }
            let now = Instant::now();
            if self.due(now) {
                return true;
            }
            std::thread::sleep((self.next - now).min(MAX_NAP));
        }
    }

    /// Whether a request may start at `now`; if so, the slot is taken.
    pub(crate) fn due(&mut self, now: Instant) -> bool {
        let Some(gap) = self.gap else {
            return true;
        };
        if now < self.next {
            return false;
        }
        // Slots that opened before the latest one are missed: skipped, not made up in a burst.
        let gap_ns = gap.as_nanos().max(1);
        let behind = (now - self.next).as_nanos() / gap_ns;
        self.missed += behind as u64;
        self.next += Duration::from_nanos(((behind + 1) * gap_ns).min(u128::from(u64::MAX)) as u64);
        true
    }

    /// Slots that opened and passed without a request (the requester was late by a gap or
    /// more), up to `stop` (when the test ended: the slots that opened before it; `None`
    /// counts none after the last request); 0 when unpaced.
    pub(crate) fn missed(&self, stop: Option<Instant>) -> u64 {
        let tail = match (self.gap, stop) {
            (Some(gap), Some(stop)) if stop > self.next => {
                let late = (stop - self.next).as_nanos();
                ((late - 1) / gap.as_nanos().max(1)) as u64 + 1
            }
            _ => 0,
        };
        self.missed + tail
    }

    /// [`Pace::missed`] at the end of a requester's loop: up to the instant `ctl.stop` was
    /// raised.
    pub(crate) fn missed_by_stop(&self, ctl: &StreamControl<'_>) -> u64 {
        self.missed(ctl.stop.raised_at())
    }

    /// When the next slot opens.
    pub(crate) fn next(&self) -> Instant {
        self.next
    }
}

/// The gap between request starts for `per_second` transactions per second.
pub fn gap_for(per_second: Option<u64>) -> Option<Duration> {
    per_second
        .filter(|&r| r > 0)
        .map(|r| Duration::from_nanos(1_000_000_000 / r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Signal, StreamCounters};

    #[test]
    fn holds_the_rate_without_bursts() {
        let (stop, abort, counter) = (
            Signal::new(),
            crate::Abort::new(),
            StreamCounters::default(),
        );
        let ctl = StreamControl {
            stream: 0,
            counter: &counter,
            stop: &stop,
            abort: &abort,
            origin: Instant::now(),
            budget: None,
        };
        let mut pace = Pace::new(gap_for(Some(200)), ctl.origin);
        let t0 = Instant::now();
        for _ in 0..20 {
            assert!(pace.wait(&ctl));
        }
        // 20 slots at 5 ms: the 20th starts 95 ms after the first, never sooner (no burst).
        // Late timer wake-ups on a busy host only stretch it (347 ms seen in CI): the exact
        // schedule is tested over synthetic instants below.
        let took = t0.elapsed();
        assert!(took >= Duration::from_millis(94), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
        stop.raise();
        assert!(!pace.wait(&ctl));
    }

    #[test]
    fn slots_follow_the_schedule_and_a_late_requester_skips_missed_slots() {
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let mut pace = Pace::new(Some(ms(10)), t0);
        assert_eq!(pace.next(), t0);
        // On time, and late by less than a gap: the schedule stays t0 + 10 n.
        assert!(pace.due(t0));
        assert!(!pace.due(t0 + ms(9)));
        assert!(pace.due(t0 + ms(10)));
        assert!(pace.due(t0 + ms(27))); // slot 20, 7 ms late
        assert_eq!(pace.next(), t0 + ms(30));
        assert!(!pace.due(t0 + ms(29)));
        assert_eq!(pace.missed(None), 0);
        // Late by more than a gap: one request now in the latest open slot (50), the two
        // before it (30, 40) counted missed, the next at 60 (no catch-up burst).
        assert!(pace.due(t0 + ms(55)));
        assert_eq!((pace.next(), pace.missed(None)), (t0 + ms(60), 2));
        assert!(!pace.due(t0 + ms(59)));
        assert!(pace.due(t0 + ms(60)));
        // Late by exactly a gap: slot 70 is missed, 80 taken.
        assert!(pace.due(t0 + ms(80)));
        assert_eq!((pace.next(), pace.missed(None)), (t0 + ms(90), 3));
        // Stopped as slot 90 opened: none more missed (the window is up to the stop). Stopped
        // at 105, while the last request ran late: slots 90 and 100 opened untaken, and count.
        assert_eq!(pace.missed(Some(t0 + ms(89))), 3);
        assert_eq!(pace.missed(Some(t0 + ms(90))), 3);
        assert_eq!(pace.missed(Some(t0 + ms(90) + Duration::from_nanos(1))), 4);
        assert_eq!(pace.missed(Some(t0 + ms(105))), 5);
        // Back to back: always due, nothing missed.
        let mut free = Pace::new(None, t0);
        assert!(free.due(t0) && free.due(t0));
        assert_eq!(free.missed(Some(t0 + ms(100))), 0);
    }

    #[test]
    fn a_requester_that_starts_late_misses_the_slots_since_the_start() {
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let mut pace = Pace::new(Some(ms(10)), t0);
        // First look 25 ms after the test started: slot 20 taken, 0 and 10 missed.
        assert!(pace.due(t0 + ms(25)));
        assert_eq!((pace.next(), pace.missed(None)), (t0 + ms(30), 2));
    }

    #[test]
    fn unpaced_never_waits() {
        assert_eq!(gap_for(None), None);
        assert_eq!(gap_for(Some(0)), None);
        assert_eq!(gap_for(Some(100)), Some(Duration::from_millis(10)));
    }
}
