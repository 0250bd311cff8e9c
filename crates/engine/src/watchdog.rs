//! A hard stop for a set of workers that does not depend on the thread that started them.
//!
//! The thread that runs a test (a server's session thread) raises `stop` when the window
//! closes and `abort` when draining takes too long, but only while it runs: blocked in a write
//! to a peer that does not read, it raises nothing. A [`Watchdog`] is a thread of its own that
//! raises `stop` at one instant and `abort` at a later one, whatever the owner is doing.
//!
//! Invariant: the watchdog never outlives its handle by more than a wake-up: dropping the
//! handle closes the channel its thread waits on, which ends the thread at once.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Instant;

use crate::{Abort, Signal};

/// Raises a worker set's `stop` and then its `abort` at fixed instants; disarmed when dropped.
#[derive(Debug)]
pub struct Watchdog {
    /// Never sent on: dropping it wakes and ends the thread.
    _disarm: Sender<()>,
}

impl Watchdog {
    /// Starts a thread that raises `stop` at `stop_at` and `abort` at `abort_at` (no earlier
    /// than `stop_at`), unless the handle is dropped first.
    pub fn arm(
        stop: Signal,
        abort: Abort,
        stop_at: Instant,
        abort_at: Instant,
    ) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("lr-watchdog".into())
            .spawn(move || {
                if !sleep_until(&rx, stop_at) {
                    return;
                }
                stop.raise();
                if sleep_until(&rx, abort_at.max(stop_at)) {
                    abort.raise();
                }
            })?;
        Ok(Self { _disarm: tx })
    }
}

/// Waits until `when`; `false` if the handle was dropped first.
fn sleep_until(rx: &Receiver<()>, when: Instant) -> bool {
    loop {
        let left = when.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        match rx.recv_timeout(left) {
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return false,
            Ok(()) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn raises_stop_then_abort_on_time() {
        let (stop, abort) = (Signal::new(), Abort::new());
        let t0 = Instant::now();
        let stop_at = t0 + Duration::from_millis(50);
        let abort_at = t0 + Duration::from_millis(150);
        let _dog = Watchdog::arm(stop.clone(), abort.clone(), stop_at, abort_at).unwrap();
        while !stop.is_raised() {
            assert!(t0.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(Instant::now() >= stop_at);
        while !abort.is_raised() {
            assert!(t0.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(Instant::now() >= abort_at);
    }

    #[test]
    fn a_dropped_watchdog_raises_nothing() {
        let (stop, abort) = (Signal::new(), Abort::new());
        let at = Instant::now() + Duration::from_millis(50);
        drop(Watchdog::arm(stop.clone(), abort.clone(), at, at).unwrap());
        std::thread::sleep(Duration::from_millis(150));
        assert!(!stop.is_raised() && !abort.is_raised());
    }
}
