//! [`Signal`]: a flag raised once and seen by every clone (stop, abort, shutdown, reload).
//! It lives in this lowest crate so that the engine's loops, the runners and the UI share one
//! type without depending on each other; `events::Signal` and `engine::Signal` are this one.
//!
//! Invariants: raising is a Release store and reading an Acquire load, so what the raiser
//! wrote before raising is seen by whoever sees it raised.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A flag raised once and seen by every clone (stop, abort, shutdown).
#[derive(Debug, Clone, Default)]
pub struct Signal(Arc<AtomicBool>);

impl Signal {
    /// A new, lowered signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the signal for every clone.
    pub fn raise(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether it has been raised.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Lowers the signal and says whether it was raised (a request taken once).
    pub fn take(&self) -> bool {
        self.0.swap(false, Ordering::AcqRel)
    }

    /// The flag itself, for registering with a signal handler.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
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
}
