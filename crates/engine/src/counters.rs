//! Shared progress counters and one-way signals between a worker and its orchestrator.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes moved by one worker. Only the worker writes it; anyone may read it at any time.
#[derive(Debug, Default)]
pub struct ByteCounter(AtomicU64);

impl ByteCounter {
    /// Publishes the worker's running total (single writer, so a plain store suffices).
    #[inline]
    pub fn publish(&self, total: u64) {
        self.0.store(total, Ordering::Relaxed);
    }

    /// The last published total.
    #[inline]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

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
        let c = ByteCounter::default();
        c.publish(5);
        assert_eq!(c.get(), 5);
    }
}
