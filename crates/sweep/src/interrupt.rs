//! How Ctrl-C reaches the executors and the knob commands: as anything that can say whether it
//! has been raised. The binary passes its interrupt signal's flag (`engine::Signal::flag`, an
//! `Arc<AtomicBool>`), so this crate needs no data-plane types.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether the user asked to stop. Executors look between runs; a knob command running when
/// it is raised gets SIGINT.
pub trait Interrupt {
    /// Whether it has been raised.
    fn is_raised(&self) -> bool;
}

impl Interrupt for AtomicBool {
    fn is_raised(&self) -> bool {
        // Acquire pairs with the raiser's Release store (engine::Signal::raise).
        self.load(Ordering::Acquire)
    }
}

impl<T: Interrupt + ?Sized> Interrupt for Arc<T> {
    fn is_raised(&self) -> bool {
        (**self).is_raised()
    }
}
