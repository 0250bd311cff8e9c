//! [`Signal`]: a flag raised once and seen by every clone (stop, abort, shutdown, reload), with
//! the instant it was raised. It lives in this lowest crate so that the engine's loops, the
//! runners and the UI share one type without depending on each other; `events::Signal` and
//! `engine::Signal` are this one.
//!
//! Invariants: raising is a Release store and reading an Acquire load, so what the raiser
//! wrote before raising (the instant among it) is seen by whoever sees it raised.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A flag raised once and seen by every clone (stop, abort, shutdown).
#[derive(Debug, Clone)]
pub struct Signal {
    flag: Arc<AtomicBool>,
    raised: Arc<RaisedAt>,
}

/// When a signal was first raised, as nanoseconds after `origin` plus one (0: not recorded).
#[derive(Debug)]
struct RaisedAt {
    origin: Instant,
    after_ns: AtomicU64,
}

impl Default for Signal {
    fn default() -> Self {
        Self {
            flag: Arc::default(),
            raised: Arc::new(RaisedAt {
                origin: Instant::now(),
                after_ns: AtomicU64::new(0),
            }),
        }
    }
}

impl Signal {
    /// A new, lowered signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the signal for every clone; the first raise's instant is kept.
    pub fn raise(&self) {
        let r = &self.raised;
        let ns = u64::try_from(r.origin.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        // Only the first raise since the last `take` records its instant.
        let _ = r
            .after_ns
            .compare_exchange(0, ns + 1, Ordering::Relaxed, Ordering::Relaxed);
        self.flag.store(true, Ordering::Release);
    }

    /// Whether it has been raised.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// When it was raised: `None` while lowered, or when it was raised through [`Signal::flag`]
    /// (a signal handler), which records no instant.
    pub fn raised_at(&self) -> Option<Instant> {
        if !self.is_raised() {
            return None;
        }
        match self.raised.after_ns.load(Ordering::Relaxed) {
            0 => None,
            n => Some(self.raised.origin + Duration::from_nanos(n - 1)),
        }
    }

    /// Lowers the signal and says whether it was raised (a request taken once).
    pub fn take(&self) -> bool {
        let was = self.flag.swap(false, Ordering::AcqRel);
        self.raised.after_ns.store(0, Ordering::Relaxed);
        was
    }

    /// The flag itself, for registering with a signal handler.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_flag() {
        let a = Signal::new();
        let b = a.clone();
        assert!(!b.is_raised());
        a.raise();
        assert!(b.is_raised());
        assert!(a.take(), "a raised signal is taken once");
        assert!(!b.is_raised() && !a.take());
    }

    #[test]
    fn the_first_raise_gives_the_instant() {
        let a = Signal::new();
        assert_eq!(a.raised_at(), None);
        let before = Instant::now();
        a.clone().raise();
        let at = a.raised_at().expect("raised");
        assert!(at >= before && at <= Instant::now());
        std::thread::sleep(Duration::from_millis(2));
        a.raise();
        assert_eq!(
            a.raised_at(),
            Some(at),
            "a second raise keeps the first instant"
        );
        a.take();
        assert_eq!(a.raised_at(), None);
        // Raised by a signal handler through the bare flag: raised, with no instant.
        a.flag().store(true, Ordering::Release);
        assert!(a.is_raised() && a.raised_at().is_none());
    }
}
