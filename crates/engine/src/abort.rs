//! The abort signal, which also wakes workers blocked on a socket without a timeout.
//!
//! A blocking read with SO_RCVTIMEO arms and cancels a kernel timer every time it sleeps. A
//! request/response loop sleeps in a read once or twice per transaction, so that timer is on its
//! critical path: with both ends on one core, `linerate rr` measured p50 8.70 µs with the
//! timeout and 8.49 µs without (six alternating pairs, 64-byte messages on loopback). Engines
//! that block without a timeout register their socket with [`Abort::wake_on_raise`] while they
//! run; [`Abort::raise`] then shuts each registered socket down (shutdown(2), both directions),
//! which ends a blocked read with end of stream and a blocked write with an error.

use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::Signal;

/// Raised to give up at once; seen by every clone.
#[derive(Debug, Clone, Default)]
pub struct Abort {
    flag: Signal,
    blocked: Arc<Mutex<Vec<Option<RawFd>>>>,
}

impl Abort {
    /// A new, lowered signal.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises the signal and shuts down every registered socket.
    pub fn raise(&self) {
        self.flag.raise();
        for fd in self.slots().iter().flatten() {
            shut_down(*fd);
        }
    }

    /// Whether it has been raised.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.flag.is_raised()
    }

    /// Shuts `fd` down when the signal is raised (at once if it already is), until the guard
    /// is dropped. The guard must be dropped before `fd` is closed: declare it after the
    /// socket that owns `fd`, so it goes first.
    pub fn wake_on_raise(&self, fd: RawFd) -> WakeGuard<'_> {
        let mut slots = self.slots();
        let index = match slots.iter().position(Option::is_none) {
            Some(free) => {
                slots[free] = Some(fd);
                free
            }
            None => {
                slots.push(Some(fd));
                slots.len() - 1
            }
        };
        // `raise` sets the flag before it takes the lock: either it finds this slot, or the
        // flag is already visible here.
        if self.flag.is_raised() {
            shut_down(fd);
        }
        WakeGuard { abort: self, index }
    }

    fn slots(&self) -> MutexGuard<'_, Vec<Option<RawFd>>> {
        self.blocked
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A socket registered with [`Abort::wake_on_raise`]; unregistered when dropped.
#[derive(Debug)]
pub struct WakeGuard<'a> {
    abort: &'a Abort,
    index: usize,
}

impl Drop for WakeGuard<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.abort.slots().get_mut(self.index) {
            *slot = None;
        }
    }
}

fn shut_down(fd: RawFd) {
    // SAFETY: shutdown(2) takes no pointers; `fd` is open, as its guard is still alive and the
    // lock held by the caller keeps the guard from being dropped meanwhile.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::time::{Duration, Instant};

    #[test]
    fn raising_wakes_a_read_blocked_without_timeout() {
        let (mut a, _b) = UnixStream::pair().unwrap();
        let abort = Abort::new();
        let t0 = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                let _wake = abort.wake_on_raise(a.as_raw_fd());
                let mut buf = [0u8; 8];
                assert_eq!(a.read(&mut buf).unwrap(), 0, "end of stream");
            });
            std::thread::sleep(Duration::from_millis(50));
            abort.raise();
        });
        assert!(t0.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn registering_after_the_raise_shuts_down_at_once() {
        let (mut a, _b) = UnixStream::pair().unwrap();
        let abort = Abort::new();
        abort.raise();
        let _wake = abort.wake_on_raise(a.as_raw_fd());
        assert_eq!(a.read(&mut [0u8; 8]).unwrap(), 0);
    }

    #[test]
    fn a_dropped_guard_leaves_its_socket_alone() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let abort = Abort::new();
        drop(abort.wake_on_raise(a.as_raw_fd()));
        let kept = abort.wake_on_raise(b.as_raw_fd());
        assert_eq!(kept.index, 0, "the freed slot is reused");
        drop(kept);
        abort.raise();
        std::io::Write::write_all(&mut b, b"x").unwrap();
        assert_eq!(a.read(&mut [0u8; 8]).unwrap(), 1);
    }
}
