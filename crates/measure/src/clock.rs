//! The monotonic clock as nanoseconds, for timestamps carried in datagrams.
//!
//! Only differences between two readings of the same host's clock are meaningful; jitter uses
//! differences of differences, so the two hosts' clocks never need to agree.

/// Nanoseconds of CLOCK_MONOTONIC.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn advances() {
        let a = super::now_ns();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(super::now_ns() - a >= 2_000_000);
    }
}
