//! Pinning a data thread to one CPU (as `iperf3 -A` and `nuttcp -xc` do), so a run's placement
//! of sender, receiver and their softirq work is chosen, repeatable and reported.

use std::io;

/// CPUs online on this host.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} beyond the largest CPU number this build supports"),
        ));
    }
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write within it (cpu checked above);
    // sched_setaffinity(0, ...) applies to the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no arguments and no memory effects.
    let c = unsafe { libc::sched_getcpu() };
    usize::try_from(c).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_thread_runs_there() {
        let last = online_cpus() - 1;
        let on = std::thread::spawn(move || {
            pin_current_thread(last).unwrap();
            std::thread::yield_now();
            current_cpu()
        })
        .join()
        .unwrap();
        assert_eq!(on, Some(last));
        assert!(pin_current_thread(100_000).is_err());
    }
}
